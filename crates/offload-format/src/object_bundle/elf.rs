//! Minimal ELF reader with the acceptance rules of LLVM's object library.
//!
//! The bundler decides between its object handler and its binary handler by
//! asking LLVM whether the input is an object file, and it reads section
//! names and contents through LLVM's ELF reader. To behave the same we apply
//! the same checks, in the same order, and word our errors like LLVM does.
//! Nothing here trusts a header field: every offset and size is checked
//! against the buffer before use.

use super::error::{ElfError, NotObject};
use super::pieces::Data;

// ELF constants used by this module and by the rewriter.
pub(crate) const SHT_NULL: u32 = 0;
pub(crate) const SHT_PROGBITS: u32 = 1;
pub(crate) const SHT_SYMTAB: u32 = 2;
pub(crate) const SHT_STRTAB: u32 = 3;
pub(crate) const SHT_RELA: u32 = 4;
pub(crate) const SHT_HASH: u32 = 5;
pub(crate) const SHT_DYNAMIC: u32 = 6;
pub(crate) const SHT_NOTE: u32 = 7;
pub(crate) const SHT_NOBITS: u32 = 8;
pub(crate) const SHT_REL: u32 = 9;
pub(crate) const SHT_DYNSYM: u32 = 11;
pub(crate) const SHT_GROUP: u32 = 17;
pub(crate) const SHT_SYMTAB_SHNDX: u32 = 18;
pub(crate) const SHT_GNU_HASH: u32 = 0x6fff_fff6;

pub(crate) const SHF_ALLOC: u64 = 0x2;
pub(crate) const SHF_INFO_LINK: u64 = 0x40;
pub(crate) const SHF_LINK_ORDER: u64 = 0x80;
pub(crate) const SHF_GROUP: u64 = 0x200;
pub(crate) const SHF_TLS: u64 = 0x400;
pub(crate) const SHF_COMPRESSED: u64 = 0x800;
pub(crate) const SHF_MASKOS: u64 = 0x0ff0_0000;
pub(crate) const SHF_MASKPROC: u64 = 0xf000_0000;
pub(crate) const SHF_EXCLUDE: u64 = 0x8000_0000;
pub(crate) const SHF_X86_64_LARGE: u64 = 0x1000_0000;

pub(crate) const SHN_UNDEF: u32 = 0;
pub(crate) const SHN_LORESERVE: u32 = 0xff00;
pub(crate) const SHN_ABS: u32 = 0xfff1;
pub(crate) const SHN_COMMON: u32 = 0xfff2;
pub(crate) const SHN_XINDEX: u32 = 0xffff;

pub(crate) const STB_LOCAL: u8 = 0;
pub(crate) const GRP_COMDAT: u32 = 1;
pub(crate) const PT_TLS: u32 = 7;
pub(crate) const PT_PHDR: u32 = 6;

pub(crate) const EM_MIPS: u16 = 8;
pub(crate) const EM_X86_64: u16 = 62;
pub(crate) const EM_HEXAGON: u16 = 164;
pub(crate) const EM_AMDGPU: u16 = 224;

/// Word size and byte order of an ELF file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Class {
    pub(crate) is64: bool,
    pub(crate) big_endian: bool,
}

impl Class {
    pub(crate) fn ehdr_size(self) -> usize {
        if self.is64 {
            64
        } else {
            52
        }
    }
    pub(crate) fn shdr_size(self) -> usize {
        if self.is64 {
            64
        } else {
            40
        }
    }
    pub(crate) fn phdr_size(self) -> usize {
        if self.is64 {
            56
        } else {
            32
        }
    }
    pub(crate) fn sym_size(self) -> usize {
        if self.is64 {
            24
        } else {
            16
        }
    }
    pub(crate) fn rel_size(self, rela: bool) -> usize {
        match (self.is64, rela) {
            (true, true) => 24,
            (true, false) => 16,
            (false, true) => 12,
            (false, false) => 8,
        }
    }
    /// Size of an address; also the alignment of the 64/32-bit structures.
    pub(crate) fn addr_size(self) -> u64 {
        if self.is64 {
            8
        } else {
            4
        }
    }

    pub(crate) fn u16_at(self, d: &[u8], off: usize) -> Option<u16> {
        let b: [u8; 2] = d.get(off..off.checked_add(2)?)?.try_into().ok()?;
        Some(if self.big_endian {
            u16::from_be_bytes(b)
        } else {
            u16::from_le_bytes(b)
        })
    }
    pub(crate) fn u32_at(self, d: &[u8], off: usize) -> Option<u32> {
        let b: [u8; 4] = d.get(off..off.checked_add(4)?)?.try_into().ok()?;
        Some(if self.big_endian {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    }
    pub(crate) fn u64_at(self, d: &[u8], off: usize) -> Option<u64> {
        let b: [u8; 8] = d.get(off..off.checked_add(8)?)?.try_into().ok()?;
        Some(if self.big_endian {
            u64::from_be_bytes(b)
        } else {
            u64::from_le_bytes(b)
        })
    }
    /// Reads an address-sized word (32 or 64 bits) widened to u64.
    pub(crate) fn word_at(self, d: &[u8], off: usize) -> Option<u64> {
        if self.is64 {
            self.u64_at(d, off)
        } else {
            self.u32_at(d, off).map(u64::from)
        }
    }

    pub(crate) fn put_u16(self, out: &mut [u8], off: usize, v: u16) {
        let b = if self.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        out[off..off + 2].copy_from_slice(&b);
    }
    pub(crate) fn put_u32(self, out: &mut [u8], off: usize, v: u32) {
        let b = if self.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        out[off..off + 4].copy_from_slice(&b);
    }
    pub(crate) fn put_u64(self, out: &mut [u8], off: usize, v: u64) {
        let b = if self.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        out[off..off + 8].copy_from_slice(&b);
    }
    /// Writes an address-sized word; 32-bit files keep the low half, as a
    /// C++ assignment to a 32-bit field would.
    pub(crate) fn put_word(self, out: &mut [u8], off: usize, v: u64) {
        if self.is64 {
            self.put_u64(out, off, v)
        } else {
            self.put_u32(out, off, v as u32)
        }
    }
}

/// The ELF file header fields we use.
#[derive(Clone, Debug)]
pub(crate) struct Ehdr {
    pub(crate) os_abi: u8,
    pub(crate) abi_version: u8,
    pub(crate) e_type: u16,
    pub(crate) machine: u16,
    pub(crate) version: u32,
    pub(crate) entry: u64,
    pub(crate) phoff: u64,
    pub(crate) shoff: u64,
    pub(crate) flags: u32,
    pub(crate) phentsize: u16,
    pub(crate) phnum: u16,
    pub(crate) shentsize: u16,
    pub(crate) shnum: u16,
    pub(crate) shstrndx: u16,
}

/// One section header, widened to 64-bit fields.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Shdr {
    pub(crate) name: u32,
    pub(crate) sh_type: u32,
    pub(crate) flags: u64,
    pub(crate) addr: u64,
    pub(crate) offset: u64,
    pub(crate) size: u64,
    pub(crate) link: u32,
    pub(crate) info: u32,
    pub(crate) addralign: u64,
    pub(crate) entsize: u64,
}

/// One program header, widened to 64-bit fields.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Phdr {
    pub(crate) p_type: u32,
    pub(crate) flags: u32,
    pub(crate) offset: u64,
    pub(crate) vaddr: u64,
    pub(crate) paddr: u64,
    pub(crate) filesz: u64,
    pub(crate) memsz: u64,
    pub(crate) align: u64,
}

/// An ELF file that LLVM's object library would accept as an object.
#[derive(Clone, Debug)]
pub(crate) struct ElfFile<'a> {
    pub(crate) data: Data<'a>,
    pub(crate) class: Class,
    pub(crate) ehdr: Ehdr,
    /// The section header table, including the null entry at index 0.
    pub(crate) shdrs: Vec<Shdr>,
}

/// True when `data` starts like an ELF file as LLVM's magic sniffer sees it.
pub(crate) fn has_elf_magic(data: &[u8]) -> bool {
    data.len() >= 18 && data.starts_with(b"\x7fELF")
}

fn parse_ehdr(data: &[u8], class: Class) -> Option<Ehdr> {
    let c = class;
    let (entry, phoff, shoff, rest) = if c.is64 {
        (
            c.u64_at(data, 24)?,
            c.u64_at(data, 32)?,
            c.u64_at(data, 40)?,
            48,
        )
    } else {
        (
            u64::from(c.u32_at(data, 24)?),
            u64::from(c.u32_at(data, 28)?),
            u64::from(c.u32_at(data, 32)?),
            36,
        )
    };
    Some(Ehdr {
        os_abi: *data.get(7)?,
        abi_version: *data.get(8)?,
        e_type: c.u16_at(data, 16)?,
        machine: c.u16_at(data, 18)?,
        version: c.u32_at(data, 20)?,
        entry,
        phoff,
        shoff,
        flags: c.u32_at(data, rest)?,
        phentsize: c.u16_at(data, rest + 6)?,
        phnum: c.u16_at(data, rest + 8)?,
        shentsize: c.u16_at(data, rest + 10)?,
        shnum: c.u16_at(data, rest + 12)?,
        shstrndx: c.u16_at(data, rest + 14)?,
    })
}

pub(crate) fn parse_shdr(data: &[u8], class: Class, off: usize) -> Option<Shdr> {
    let c = class;
    if c.is64 {
        Some(Shdr {
            name: c.u32_at(data, off)?,
            sh_type: c.u32_at(data, off + 4)?,
            flags: c.u64_at(data, off + 8)?,
            addr: c.u64_at(data, off + 16)?,
            offset: c.u64_at(data, off + 24)?,
            size: c.u64_at(data, off + 32)?,
            link: c.u32_at(data, off + 40)?,
            info: c.u32_at(data, off + 44)?,
            addralign: c.u64_at(data, off + 48)?,
            entsize: c.u64_at(data, off + 56)?,
        })
    } else {
        Some(Shdr {
            name: c.u32_at(data, off)?,
            sh_type: c.u32_at(data, off + 4)?,
            flags: u64::from(c.u32_at(data, off + 8)?),
            addr: u64::from(c.u32_at(data, off + 12)?),
            offset: u64::from(c.u32_at(data, off + 16)?),
            size: u64::from(c.u32_at(data, off + 20)?),
            link: c.u32_at(data, off + 24)?,
            info: c.u32_at(data, off + 28)?,
            addralign: u64::from(c.u32_at(data, off + 32)?),
            entsize: u64::from(c.u32_at(data, off + 36)?),
        })
    }
}

fn parse_phdr(data: &[u8], class: Class, off: usize) -> Option<Phdr> {
    let c = class;
    if c.is64 {
        Some(Phdr {
            p_type: c.u32_at(data, off)?,
            flags: c.u32_at(data, off + 4)?,
            offset: c.u64_at(data, off + 8)?,
            vaddr: c.u64_at(data, off + 16)?,
            paddr: c.u64_at(data, off + 24)?,
            filesz: c.u64_at(data, off + 32)?,
            memsz: c.u64_at(data, off + 40)?,
            align: c.u64_at(data, off + 48)?,
        })
    } else {
        Some(Phdr {
            p_type: c.u32_at(data, off)?,
            offset: u64::from(c.u32_at(data, off + 4)?),
            vaddr: u64::from(c.u32_at(data, off + 8)?),
            paddr: u64::from(c.u32_at(data, off + 12)?),
            filesz: u64::from(c.u32_at(data, off + 16)?),
            memsz: u64::from(c.u32_at(data, off + 20)?),
            flags: c.u32_at(data, off + 24)?,
            align: u64::from(c.u32_at(data, off + 28)?),
        })
    }
}

/// The largest value of the file's address type.
fn word_max(class: Class) -> u64 {
    if class.is64 {
        u64::MAX
    } else {
        u64::from(u32::MAX)
    }
}

impl<'a> ElfFile<'a> {
    /// Opens `data` the way LLVM's `createObjectFile` does for ELF: header
    /// size, class and data encoding, the section header table, and any
    /// `SHT_SYMTAB_SHNDX` tables must be sound. Anything else is left to the
    /// individual accessors, as in LLVM.
    pub(crate) fn parse(data: &'a [u8]) -> Result<Self, NotObject> {
        Self::parse_data(Data::Slice(data))
    }

    /// [`ElfFile::parse`] for any [`Data`].
    pub(crate) fn parse_data(data: Data<'a>) -> Result<Self, NotObject> {
        // The magic and the two identification bytes.
        let head = data.head(18);
        if !has_elf_magic(head) {
            return Err(NotObject::NotElf);
        }
        let class = match (head[4], head[5]) {
            (1, 1) => Class {
                is64: false,
                big_endian: false,
            },
            (1, 2) => Class {
                is64: false,
                big_endian: true,
            },
            (2, 1) => Class {
                is64: true,
                big_endian: false,
            },
            (2, 2) => Class {
                is64: true,
                big_endian: true,
            },
            (1 | 2, _) => return Err(NotObject::InvalidData),
            _ => return Err(NotObject::InvalidClass),
        };
        if data.len() < class.ehdr_size() {
            return Err(NotObject::TooSmall {
                size: data.len() as u64,
                header: class.ehdr_size() as u64,
            });
        }
        let ehdr = data
            .get(0..class.ehdr_size())
            .and_then(|h| parse_ehdr(h, class))
            .ok_or(NotObject::NotElf)?;
        let shdrs = section_table(data, class, &ehdr)?;
        let file = ElfFile {
            data,
            class,
            ehdr,
            shdrs,
        };
        for i in 0..file.shdrs.len() {
            if file.shdrs[i].sh_type == SHT_SYMTAB_SHNDX {
                file.check_shndx_table(i).map_err(NotObject::Section)?;
            }
        }
        Ok(file)
    }

    /// LLVM validates extended section index tables while opening the file.
    fn check_shndx_table(&self, index: usize) -> Result<(), ElfError> {
        let sec = self.shdrs[index];
        let words = self.section_array(index, 4)?;
        let link = sec.link as usize;
        let target = self
            .shdrs
            .get(link)
            .ok_or(ElfError::InvalidSectionIndex { index: sec.link })?;
        if target.sh_type != SHT_SYMTAB && target.sh_type != SHT_DYNSYM {
            return Err(ElfError::ShndxLinkedToWrongType {
                type_name: section_type_name(self.ehdr.machine, target.sh_type),
            });
        }
        let syms = target.size / self.class.sym_size() as u64;
        let entries = words.len() as u64 / 4;
        if entries != syms {
            return Err(ElfError::ShndxCountMismatch {
                entries,
                symbols: syms,
            });
        }
        Ok(())
    }

    /// Number of entries in the section header table (including index 0).
    pub(crate) fn section_count(&self) -> usize {
        self.shdrs.len()
    }

    /// The section name string table, as `getSectionStringTable` finds it.
    /// `Ok(None)` means the file has no section name table (`e_shstrndx` 0).
    pub(crate) fn section_name_table(&self) -> Result<Option<&'a [u8]>, ElfError> {
        let mut index = u32::from(self.ehdr.shstrndx);
        if index == SHN_XINDEX {
            let first = self.shdrs.first().ok_or(ElfError::XindexWithoutSections)?;
            index = first.link;
        }
        if index == 0 {
            return Ok(None);
        }
        if index as usize >= self.shdrs.len() {
            return Err(ElfError::ShstrndxOutOfRange { index });
        }
        self.string_table(index as usize).map(Some)
    }

    /// A string table section's bytes, checked like LLVM's `getStringTable`.
    pub(crate) fn string_table(&self, index: usize) -> Result<&'a [u8], ElfError> {
        let sec = self.shdrs[index];
        if sec.sh_type != SHT_STRTAB {
            return Err(ElfError::NotAStringTable {
                index,
                type_name: section_type_name(self.ehdr.machine, sec.sh_type),
            });
        }
        let data = self.section_bytes(index)?;
        match data.last() {
            None => Err(ElfError::EmptyStringTable { index }),
            Some(0) => Ok(data),
            Some(_) => Err(ElfError::UnterminatedStringTable { index }),
        }
    }

    /// The name of section `index`, given the section name table.
    pub(crate) fn section_name(
        &self,
        index: usize,
        table: Option<&'a [u8]>,
    ) -> Result<&'a [u8], ElfError> {
        let off = self.shdrs[index].name;
        if off == 0 {
            return Ok(&[]);
        }
        let table = table.unwrap_or(&[]);
        let rest = table
            .get(off as usize..)
            .filter(|r| !r.is_empty())
            .ok_or(ElfError::NameOutOfRange { index, offset: off })?;
        Ok(cstr(rest))
    }

    /// Raw section bytes as `ELFFile::getSectionContents` returns them (no
    /// special case for `SHT_NOBITS`).
    pub(crate) fn section_bytes(&self, index: usize) -> Result<&'a [u8], ElfError> {
        self.section_array(index, 1)
    }

    /// `getSectionContentsAsArray<T>` with `size_of::<T>() == elem`. LLVM's
    /// ELF structures are byte-aligned, so no alignment is required.
    pub(crate) fn section_array(&self, index: usize, elem: u64) -> Result<&'a [u8], ElfError> {
        let sec = self.shdrs[index];
        if elem != 1 && sec.entsize != elem {
            return Err(ElfError::BadEntsize {
                index,
                expected: elem,
                got: sec.entsize,
            });
        }
        if sec.size % elem != 0 {
            return Err(ElfError::SizeNotMultiple {
                index,
                size: sec.size,
                entsize: sec.entsize,
            });
        }
        if word_max(self.class) - sec.offset < sec.size {
            return Err(ElfError::OffsetPlusSizeOverflows {
                index,
                offset: sec.offset,
                size: sec.size,
            });
        }
        let end = sec.offset + sec.size;
        if end > self.data.len() as u64 {
            return Err(ElfError::SectionPastEnd {
                index,
                offset: sec.offset,
                size: sec.size,
                file_size: self.data.len() as u64,
            });
        }
        Ok(self.data.slice(sec.offset as usize..end as usize))
    }

    /// Section contents as `ELFObjectFile::getSectionContents` returns them:
    /// empty for `SHT_NOBITS`, otherwise bounds-checked.
    pub(crate) fn object_section_contents(&self, index: usize) -> Result<&'a [u8], ElfError> {
        let sec = self.shdrs[index];
        if sec.sh_type == SHT_NOBITS {
            return Ok(&[]);
        }
        let start = sec.offset;
        match start.checked_add(sec.size) {
            Some(end) if end <= self.data.len() as u64 => {
                Ok(self.data.slice(start as usize..end as usize))
            }
            _ => Err(ElfError::UnexpectedEof),
        }
    }

    /// The program header table, checked like `ELFFile::program_headers`.
    pub(crate) fn program_headers(&self) -> Result<Vec<Phdr>, ElfError> {
        let e = &self.ehdr;
        let phsize = self.class.phdr_size();
        if e.phnum != 0 && usize::from(e.phentsize) != phsize {
            return Err(ElfError::BadPhentsize {
                phentsize: e.phentsize,
            });
        }
        let total = u64::from(e.phnum) * u64::from(e.phentsize);
        match e.phoff.checked_add(total) {
            Some(end) if end <= self.data.len() as u64 => {}
            _ => {
                return Err(ElfError::ProgramHeadersPastEnd {
                    file_size: self.data.len() as u64,
                    phoff: e.phoff,
                    phnum: e.phnum,
                    phentsize: e.phentsize,
                })
            }
        }
        (0..usize::from(e.phnum))
            .map(|i| {
                let at = e.phoff as usize + i * phsize;
                self.data
                    .get(at..at + phsize)
                    .and_then(|h| parse_phdr(h, self.class, 0))
                    .ok_or(ElfError::UnexpectedEof)
            })
            .collect()
    }

    pub(crate) fn is_mips64el(&self) -> bool {
        self.ehdr.machine == EM_MIPS && self.class.is64 && !self.class.big_endian
    }
}

/// The section header table, checked like `ELFFile::sections`.
fn section_table(data: Data<'_>, class: Class, ehdr: &Ehdr) -> Result<Vec<Shdr>, NotObject> {
    let shoff = ehdr.shoff;
    if shoff == 0 {
        return Ok(Vec::new());
    }
    let shsize = class.shdr_size() as u64;
    if u64::from(ehdr.shentsize) != shsize {
        return Err(NotObject::BadShentsize(ehdr.shentsize));
    }
    let file_size = data.len() as u64;
    // LLVM adds in the file's address width, so a 32-bit sum can wrap.
    let first_end = shoff.wrapping_add(shsize) & word_max(class);
    if shoff.checked_add(shsize).is_none_or(|e| e > file_size) || first_end < shoff {
        return Err(NotObject::SectionTableStartPastEnd { shoff });
    }
    let shdr_at = |at: usize| {
        data.get(at..at + shsize as usize)
            .and_then(|h| parse_shdr(h, class, 0))
    };
    let first = shdr_at(shoff as usize).ok_or(NotObject::NotElf)?;
    let count = if ehdr.shnum == 0 {
        first.size
    } else {
        u64::from(ehdr.shnum)
    };
    if count > u64::MAX / shsize {
        return Err(NotObject::BadSectionCount(count));
    }
    let table_size = count * shsize;
    let end = shoff.checked_add(table_size);
    match end {
        None => {
            return Err(NotObject::SectionTableOverflow { shoff, count });
        }
        Some(end) if end > file_size => return Err(NotObject::SectionTablePastEnd),
        Some(_) => {}
    }
    // The table lies inside the buffer, so `count` is bounded by its size.
    (0..count as usize)
        .map(|i| shdr_at(shoff as usize + i * shsize as usize).ok_or(NotObject::NotElf))
        .collect()
}

/// The NUL-terminated string at the start of `bytes` (all of it if there is no NUL).
pub(crate) fn cstr(bytes: &[u8]) -> &[u8] {
    match bytes.iter().position(|&b| b == 0) {
        Some(n) => &bytes[..n],
        None => bytes,
    }
}

/// LLVM's name for a section type, as used in its error messages.
pub(crate) fn section_type_name(machine: u16, sh_type: u32) -> &'static str {
    const EM_ARM: u16 = 40;
    const EM_MIPS_RS3_LE: u16 = 10;
    const EM_MSP430: u16 = 105;
    const EM_AARCH64: u16 = 183;
    const EM_RISCV: u16 = 243;
    let specific = match (machine, sh_type) {
        (EM_ARM, 0x7000_0001) => Some("SHT_ARM_EXIDX"),
        (EM_ARM, 0x7000_0002) => Some("SHT_ARM_PREEMPTMAP"),
        (EM_ARM, 0x7000_0003) => Some("SHT_ARM_ATTRIBUTES"),
        (EM_ARM, 0x7000_0004) => Some("SHT_ARM_DEBUGOVERLAY"),
        (EM_ARM, 0x7000_0005) => Some("SHT_ARM_OVERLAYSECTION"),
        (EM_HEXAGON, 0x7000_0000) => Some("SHT_HEX_ORDERED"),
        (EM_HEXAGON, 0x7000_0003) => Some("SHT_HEXAGON_ATTRIBUTES"),
        (EM_X86_64, 0x7000_0001) => Some("SHT_X86_64_UNWIND"),
        (EM_MIPS | EM_MIPS_RS3_LE, 0x7000_0006) => Some("SHT_MIPS_REGINFO"),
        (EM_MIPS | EM_MIPS_RS3_LE, 0x7000_000d) => Some("SHT_MIPS_OPTIONS"),
        (EM_MIPS | EM_MIPS_RS3_LE, 0x7000_001e) => Some("SHT_MIPS_DWARF"),
        (EM_MIPS | EM_MIPS_RS3_LE, 0x7000_002a) => Some("SHT_MIPS_ABIFLAGS"),
        (EM_MSP430, 0x7000_0003) => Some("SHT_MSP430_ATTRIBUTES"),
        (EM_RISCV, 0x7000_0003) => Some("SHT_RISCV_ATTRIBUTES"),
        (EM_AARCH64, 0x7000_0004) => Some("SHT_AARCH64_AUTH_RELR"),
        (EM_AARCH64, 0x7000_0007) => Some("SHT_AARCH64_MEMTAG_GLOBALS_DYNAMIC"),
        (EM_AARCH64, 0x7000_0008) => Some("SHT_AARCH64_MEMTAG_GLOBALS_STATIC"),
        _ => None,
    };
    if let Some(name) = specific {
        return name;
    }
    match sh_type {
        0 => "SHT_NULL",
        1 => "SHT_PROGBITS",
        2 => "SHT_SYMTAB",
        3 => "SHT_STRTAB",
        4 => "SHT_RELA",
        5 => "SHT_HASH",
        6 => "SHT_DYNAMIC",
        7 => "SHT_NOTE",
        8 => "SHT_NOBITS",
        9 => "SHT_REL",
        10 => "SHT_SHLIB",
        11 => "SHT_DYNSYM",
        14 => "SHT_INIT_ARRAY",
        15 => "SHT_FINI_ARRAY",
        16 => "SHT_PREINIT_ARRAY",
        17 => "SHT_GROUP",
        18 => "SHT_SYMTAB_SHNDX",
        19 => "SHT_RELR",
        0x4000_0014 => "SHT_CREL",
        0x6000_0001 => "SHT_ANDROID_REL",
        0x6000_0002 => "SHT_ANDROID_RELA",
        0x6fff_ff00 => "SHT_ANDROID_RELR",
        0x6fff_4c00 => "SHT_LLVM_ODRTAB",
        0x6fff_4c01 => "SHT_LLVM_LINKER_OPTIONS",
        0x6fff_4c03 => "SHT_LLVM_ADDRSIG",
        0x6fff_4c04 => "SHT_LLVM_DEPENDENT_LIBRARIES",
        0x6fff_4c05 => "SHT_LLVM_SYMPART",
        0x6fff_4c06 => "SHT_LLVM_PART_EHDR",
        0x6fff_4c07 => "SHT_LLVM_PART_PHDR",
        0x6fff_4c08 => "SHT_LLVM_BB_ADDR_MAP_V0",
        0x6fff_4c09 => "SHT_LLVM_CALL_GRAPH_PROFILE",
        0x6fff_4c0a => "SHT_LLVM_BB_ADDR_MAP",
        0x6fff_4c0b => "SHT_LLVM_OFFLOADING",
        0x6fff_4c0c => "SHT_LLVM_LTO",
        0x6fff_4c0d => "SHT_LLVM_JT_SIZES",
        0x6fff_4c0e => "SHT_LLVM_FUNC_MAP",
        0x6fff_fff5 => "SHT_GNU_ATTRIBUTES",
        0x6fff_fff6 => "SHT_GNU_HASH",
        0x6fff_fffd => "SHT_GNU_verdef",
        0x6fff_fffe => "SHT_GNU_verneed",
        0x6fff_ffff => "SHT_GNU_versym",
        _ => "Unknown",
    }
}
