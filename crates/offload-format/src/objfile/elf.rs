//! ELF files (32/64-bit, either byte order) with the acceptance rules of
//! LLVM's object library.
//!
//! [`ElfFile::parse`] applies the checks LLVM's `ELFFile::create` and
//! `ELFFile::sections` apply when a file is opened (identification bytes,
//! header size, the section header table), in LLVM's order and with its
//! messages. Everything else is checked when it is read, as in LLVM: a
//! section's contents, the section name table, program headers, notes,
//! symbols and relocations. Nothing trusts a header field.

use std::marker::PhantomData;

use super::Error;
use crate::bytes::{until_nul, Bytes, Endian, ReadRef};
use crate::identify::{identify, FileKind};

/// `SHT_NULL`.
pub const SHT_NULL: u32 = 0;
/// `SHT_PROGBITS`.
pub const SHT_PROGBITS: u32 = 1;
/// `SHT_SYMTAB`.
pub const SHT_SYMTAB: u32 = 2;
/// `SHT_STRTAB`.
pub const SHT_STRTAB: u32 = 3;
/// `SHT_RELA`.
pub const SHT_RELA: u32 = 4;
/// `SHT_HASH`.
pub const SHT_HASH: u32 = 5;
/// `SHT_DYNAMIC`.
pub const SHT_DYNAMIC: u32 = 6;
/// `SHT_NOTE`.
pub const SHT_NOTE: u32 = 7;
/// `SHT_NOBITS`.
pub const SHT_NOBITS: u32 = 8;
/// `SHT_REL`.
pub const SHT_REL: u32 = 9;
/// `SHT_DYNSYM`.
pub const SHT_DYNSYM: u32 = 11;
/// `SHT_GROUP`.
pub const SHT_GROUP: u32 = 17;
/// `SHT_SYMTAB_SHNDX`.
pub const SHT_SYMTAB_SHNDX: u32 = 18;
/// `SHT_LLVM_OFFLOADING`: embedded offload binaries.
pub const SHT_LLVM_OFFLOADING: u32 = 0x6fff_4c0b;
/// `SHT_GNU_HASH`.
pub const SHT_GNU_HASH: u32 = 0x6fff_fff6;

/// `SHN_UNDEF`.
pub const SHN_UNDEF: u32 = 0;
/// `SHN_LORESERVE`.
pub const SHN_LORESERVE: u32 = 0xff00;
/// `SHN_ABS`.
pub const SHN_ABS: u32 = 0xfff1;
/// `SHN_COMMON`.
pub const SHN_COMMON: u32 = 0xfff2;
/// `SHN_XINDEX`.
pub const SHN_XINDEX: u32 = 0xffff;

/// `PT_LOAD`.
pub const PT_LOAD: u32 = 1;
/// `PT_DYNAMIC`.
pub const PT_DYNAMIC: u32 = 2;
/// `PT_NOTE`.
pub const PT_NOTE: u32 = 4;
/// `PT_PHDR`.
pub const PT_PHDR: u32 = 6;
/// `PT_TLS`.
pub const PT_TLS: u32 = 7;

/// `ET_REL`.
pub const ET_REL: u16 = 1;
/// `ET_EXEC`.
pub const ET_EXEC: u16 = 2;
/// `ET_DYN`.
pub const ET_DYN: u16 = 3;

/// `EM_MIPS`.
pub const EM_MIPS: u16 = 8;
/// `EM_ARM`.
pub const EM_ARM: u16 = 40;
/// `EM_X86_64`.
pub const EM_X86_64: u16 = 62;
/// `EM_HEXAGON`.
pub const EM_HEXAGON: u16 = 164;
/// `EM_AARCH64`.
pub const EM_AARCH64: u16 = 183;
/// `EM_AMDGPU`.
pub const EM_AMDGPU: u16 = 224;
/// `EM_RISCV`.
pub const EM_RISCV: u16 = 243;

/// `R_X86_64_RELATIVE`.
pub const R_X86_64_RELATIVE: u32 = 8;
/// `R_AARCH64_RELATIVE`.
pub const R_AARCH64_RELATIVE: u32 = 1027;

/// `NT_AMDGPU_METADATA` (note name `AMDGPU`).
pub const NT_AMDGPU_METADATA: u32 = 32;

/// Word size and byte order of an ELF file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Class {
    /// ELFCLASS64.
    pub is64: bool,
    /// ELFDATA2MSB.
    pub big_endian: bool,
}

impl Class {
    /// The byte order.
    pub fn endian(self) -> Endian {
        Endian::from_big(self.big_endian)
    }
    /// Size of the file header.
    pub(crate) fn ehdr_size(self) -> usize {
        if self.is64 {
            64
        } else {
            52
        }
    }
    /// Size of a section header.
    pub(crate) fn shdr_size(self) -> usize {
        if self.is64 {
            64
        } else {
            40
        }
    }
    /// Size of a program header.
    pub(crate) fn phdr_size(self) -> usize {
        if self.is64 {
            56
        } else {
            32
        }
    }
    /// Size of a symbol.
    pub(crate) fn sym_size(self) -> usize {
        if self.is64 {
            24
        } else {
            16
        }
    }
    /// Size of a relocation (`rela`: with addend).
    pub(crate) fn rel_size(self, rela: bool) -> usize {
        match (self.is64, rela) {
            (true, true) => 24,
            (true, false) => 16,
            (false, true) => 12,
            (false, false) => 8,
        }
    }
    /// Size of an address.
    #[cfg(feature = "object-edit")]
    pub(crate) fn addr_size(self) -> u64 {
        if self.is64 {
            8
        } else {
            4
        }
    }
    /// The largest value of the file's address type.
    pub(crate) fn word_max(self) -> u64 {
        if self.is64 {
            u64::MAX
        } else {
            u64::from(u32::MAX)
        }
    }
}

/// The ELF file header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Class and byte order.
    pub class: Class,
    /// `EI_OSABI`.
    pub os_abi: u8,
    /// `EI_ABIVERSION`.
    pub abi_version: u8,
    /// `e_type`.
    pub e_type: u16,
    /// `e_machine`.
    pub machine: u16,
    /// `e_version`.
    pub version: u32,
    /// `e_entry`.
    pub entry: u64,
    /// `e_phoff`.
    pub phoff: u64,
    /// `e_shoff`.
    pub shoff: u64,
    /// `e_flags`.
    pub flags: u32,
    /// `e_ehsize`.
    pub ehsize: u16,
    /// `e_phentsize`.
    pub phentsize: u16,
    /// `e_phnum`.
    pub phnum: u16,
    /// `e_shentsize`.
    pub shentsize: u16,
    /// `e_shnum`.
    pub shnum: u16,
    /// `e_shstrndx`.
    pub shstrndx: u16,
}

/// One section header, widened to 64-bit fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SectionHeader {
    /// `sh_name`.
    pub name: u32,
    /// `sh_type`.
    pub sh_type: u32,
    /// `sh_flags`.
    pub flags: u64,
    /// `sh_addr`.
    pub addr: u64,
    /// `sh_offset`.
    pub offset: u64,
    /// `sh_size`.
    pub size: u64,
    /// `sh_link`.
    pub link: u32,
    /// `sh_info`.
    pub info: u32,
    /// `sh_addralign`.
    pub addralign: u64,
    /// `sh_entsize`.
    pub entsize: u64,
}

/// One program header, widened to 64-bit fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProgramHeader {
    /// `p_type`.
    pub p_type: u32,
    /// `p_flags`.
    pub flags: u32,
    /// `p_offset`.
    pub offset: u64,
    /// `p_vaddr`.
    pub vaddr: u64,
    /// `p_paddr`.
    pub paddr: u64,
    /// `p_filesz`.
    pub filesz: u64,
    /// `p_memsz`.
    pub memsz: u64,
    /// `p_align`.
    pub align: u64,
}

/// One note record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Note<'a> {
    /// The owner name, without its NUL.
    pub name: &'a [u8],
    /// `n_type`.
    pub n_type: u32,
    /// The descriptor.
    pub desc: &'a [u8],
}

/// One symbol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Symbol<'a> {
    /// Index in its symbol table.
    pub index: usize,
    /// `st_name`: the name's offset in the linked string table.
    pub st_name: u32,
    /// The name (from the linked string table; empty in
    /// `symbol_entry`'s answers, which do not look names up).
    pub name: &'a [u8],
    /// `st_value`.
    pub value: u64,
    /// `st_size`.
    pub size: u64,
    /// `st_info`.
    pub info: u8,
    /// `st_other`.
    pub other: u8,
    /// `st_shndx` (the raw 16-bit field).
    pub shndx: u16,
}

impl Symbol<'_> {
    /// `STT_*`: the low four bits of `st_info`.
    pub fn sym_type(&self) -> u8 {
        self.info & 0xf
    }
    /// `STB_*`: the high four bits of `st_info`.
    pub fn binding(&self) -> u8 {
        self.info >> 4
    }
}

/// One relocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Relocation {
    /// `r_offset`.
    pub offset: u64,
    /// The relocation type.
    pub r_type: u32,
    /// The symbol index.
    pub symbol: u32,
    /// `r_addend` (`SHT_RELA` only).
    pub addend: Option<i64>,
}

/// An ELF file opened with LLVM's open-time checks.
///
/// `R` is where the bytes are: a slice, or another [`ReadRef`].
#[derive(Clone, Debug)]
pub struct ElfFile<'a, R: ReadRef<'a> = &'a [u8]> {
    data: R,
    header: Header,
    /// The section header table, including the null entry at index 0.
    sections: Vec<SectionHeader>,
    _data: PhantomData<&'a [u8]>,
}

/// The class and byte order from the identification bytes, with LLVM's
/// errors (data encoding is only blamed when the class is valid).
pub(crate) fn ident_class(ident: &[u8]) -> Result<Class, Error> {
    match (ident.get(4), ident.get(5)) {
        (Some(&c @ (1 | 2)), Some(&d @ (1 | 2))) => Ok(Class {
            is64: c == 2,
            big_endian: d == 2,
        }),
        (Some(1 | 2), _) => Err(Error::ElfInvalidData),
        _ => Err(Error::ElfInvalidClass),
    }
}

/// Reads the file header of `data` (at least `Class::ehdr_size` bytes).
pub fn parse_header(data: &[u8], class: Class) -> Option<Header> {
    let b = Bytes::new(data);
    let e = class.endian();
    let w = |off| b.word_at(off, class.is64, e);
    let (entry, phoff, shoff, rest) = if class.is64 {
        (w(24)?, w(32)?, w(40)?, 48)
    } else {
        (w(24)?, w(28)?, w(32)?, 36)
    };
    Some(Header {
        class,
        os_abi: b.u8_at(7)?,
        abi_version: b.u8_at(8)?,
        e_type: b.u16_at(16, e)?,
        machine: b.u16_at(18, e)?,
        version: b.u32_at(20, e)?,
        entry,
        phoff,
        shoff,
        flags: b.u32_at(rest, e)?,
        ehsize: b.u16_at(rest + 4, e)?,
        phentsize: b.u16_at(rest + 6, e)?,
        phnum: b.u16_at(rest + 8, e)?,
        shentsize: b.u16_at(rest + 10, e)?,
        shnum: b.u16_at(rest + 12, e)?,
        shstrndx: b.u16_at(rest + 14, e)?,
    })
}

/// Reads one section header from the start of `data`.
pub(crate) fn parse_section_header(data: &[u8], class: Class) -> Option<SectionHeader> {
    let mut c = Bytes::new(data);
    let e = class.endian();
    let is64 = class.is64;
    Some(SectionHeader {
        name: c.read_u32(e)?,
        sh_type: c.read_u32(e)?,
        flags: c.read_word(is64, e)?,
        addr: c.read_word(is64, e)?,
        offset: c.read_word(is64, e)?,
        size: c.read_word(is64, e)?,
        link: c.read_u32(e)?,
        info: c.read_u32(e)?,
        addralign: c.read_word(is64, e)?,
        entsize: c.read_word(is64, e)?,
    })
}

/// Reads one program header from the start of `data`.
pub(crate) fn parse_program_header(data: &[u8], class: Class) -> Option<ProgramHeader> {
    let mut c = Bytes::new(data);
    let e = class.endian();
    if class.is64 {
        Some(ProgramHeader {
            p_type: c.read_u32(e)?,
            flags: c.read_u32(e)?,
            offset: c.read_u64(e)?,
            vaddr: c.read_u64(e)?,
            paddr: c.read_u64(e)?,
            filesz: c.read_u64(e)?,
            memsz: c.read_u64(e)?,
            align: c.read_u64(e)?,
        })
    } else {
        let p_type = c.read_u32(e)?;
        let offset = u64::from(c.read_u32(e)?);
        let vaddr = u64::from(c.read_u32(e)?);
        let paddr = u64::from(c.read_u32(e)?);
        let filesz = u64::from(c.read_u32(e)?);
        let memsz = u64::from(c.read_u32(e)?);
        let flags = c.read_u32(e)?;
        let align = u64::from(c.read_u32(e)?);
        Some(ProgramHeader {
            p_type,
            flags,
            offset,
            vaddr,
            paddr,
            filesz,
            memsz,
            align,
        })
    }
}

impl<'a, R: ReadRef<'a>> ElfFile<'a, R> {
    /// Opens `data` the way LLVM's `ELFFile::create` and `sections` do:
    /// identification, header size, and the section header table must be
    /// sound, in that order, with LLVM's messages.
    pub fn parse(data: R) -> Result<Self, Error> {
        let head = data.head(18);
        if !matches!(identify(head), FileKind::Elf(_)) {
            return Err(Error::UnknownFormat);
        }
        let class = ident_class(head)?;
        let len = data.len();
        if len < class.ehdr_size() as u64 {
            return Err(Error::ElfTooSmall {
                size: len,
                header: class.ehdr_size() as u64,
            });
        }
        let header = data
            .read_bytes_at(0, class.ehdr_size() as u64)
            .and_then(|h| parse_header(h, class))
            .ok_or(Error::Truncated {
                what: "ELF header",
                offset: 0,
            })?;
        let sections = section_table(data, &header)?;
        Ok(ElfFile {
            data,
            header,
            sections,
            _data: PhantomData,
        })
    }

    /// The bytes of the file.
    pub fn data(&self) -> R {
        self.data
    }

    /// The file header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Class and byte order.
    pub fn class(&self) -> Class {
        self.header.class
    }

    /// The section headers, including the null entry at index 0 (empty
    /// when `e_shoff` is 0).
    pub fn section_headers(&self) -> &[SectionHeader] {
        &self.sections
    }

    /// Section header `index`.
    pub fn section_header(&self, index: usize) -> Result<&SectionHeader, Error> {
        self.sections.get(index).ok_or(Error::InvalidSectionIndex {
            index: index as u64,
        })
    }

    /// The section name string table, as LLVM's `getSectionStringTable`
    /// finds it; `Ok(None)` when the file has none (`e_shstrndx` 0).
    pub(crate) fn section_name_table(&self) -> Result<Option<&'a [u8]>, Error> {
        let mut index = u32::from(self.header.shstrndx);
        if index == SHN_XINDEX {
            let first = self
                .sections
                .first()
                .ok_or(Error::ElfXindexWithoutSections)?;
            index = first.link;
        }
        if index == 0 {
            return Ok(None);
        }
        if index as usize >= self.sections.len() {
            return Err(Error::ElfShstrndxOutOfRange { index });
        }
        self.string_table(index as usize).map(Some)
    }

    /// A string table section's bytes, checked like LLVM's `getStringTable`
    /// (type, non-empty, NUL-terminated).
    pub fn string_table(&self, index: usize) -> Result<&'a [u8], Error> {
        let sec = *self.section_header(index)?;
        if sec.sh_type != SHT_STRTAB {
            return Err(Error::ElfNotAStringTable {
                index,
                type_name: section_type_name(self.header.machine, sec.sh_type),
            });
        }
        let data = self.section_bytes(index)?;
        match data.last() {
            None => Err(Error::ElfEmptyStringTable { index }),
            Some(0) => Ok(data),
            Some(_) => Err(Error::ElfUnterminatedStringTable { index }),
        }
    }

    /// The name of section `index`, given the section name table (LLVM's
    /// `getSectionName`).
    pub fn section_name(&self, index: usize, table: Option<&'a [u8]>) -> Result<&'a [u8], Error> {
        let off = self.section_header(index)?.name;
        if off == 0 {
            return Ok(&[]);
        }
        let table = table.unwrap_or(&[]);
        let rest = Bytes::new(table)
            .tail(u64::from(off))
            .filter(|r| !r.is_empty())
            .ok_or(Error::ElfNameOutOfRange { index, offset: off })?;
        Ok(until_nul(rest))
    }

    /// The index of the first section named `name`.
    pub fn section_index_by_name(&self, name: &[u8]) -> Result<Option<usize>, Error> {
        let table = self.section_name_table()?;
        for i in 0..self.sections.len() {
            if self.section_name(i, table)? == name {
                return Ok(Some(i));
            }
        }
        Ok(None)
    }

    /// Raw section bytes as LLVM's `ELFFile::getSectionContents` returns
    /// them (no special case for `SHT_NOBITS`).
    pub fn section_bytes(&self, index: usize) -> Result<&'a [u8], Error> {
        self.section_array(index, 1)
    }

    /// LLVM's `getSectionContentsAsArray` for elements of `elem` bytes:
    /// entry size, size multiple, offset overflow and file bounds, in that
    /// order.
    pub(crate) fn section_array(&self, index: usize, elem: u64) -> Result<&'a [u8], Error> {
        let sec = *self.section_header(index)?;
        if elem != 1 && sec.entsize != elem {
            return Err(Error::ElfBadEntsize {
                index,
                expected: elem,
                got: sec.entsize,
            });
        }
        if elem == 0 || sec.size % elem != 0 {
            return Err(Error::ElfSizeNotMultiple {
                index,
                size: sec.size,
                entsize: sec.entsize,
            });
        }
        if self.class().word_max().saturating_sub(sec.offset) < sec.size {
            return Err(Error::ElfOffsetPlusSizeOverflows {
                index,
                offset: sec.offset,
                size: sec.size,
            });
        }
        let past_end = Error::ElfSectionPastEnd {
            index,
            offset: sec.offset,
            size: sec.size,
            file_size: self.data.len(),
        };
        let end = sec.offset.checked_add(sec.size).ok_or(past_end.clone())?;
        if end > self.data.len() {
            return Err(past_end);
        }
        Ok(self.data.read_bytes_at(sec.offset, sec.size).unwrap_or(&[]))
    }

    /// Section contents as LLVM's `ELFObjectFile::getSectionContents`
    /// returns them: empty for `SHT_NOBITS`, otherwise bounds-checked.
    pub fn object_section_contents(&self, index: usize) -> Result<&'a [u8], Error> {
        let sec = *self.section_header(index)?;
        if sec.sh_type == SHT_NOBITS {
            return Ok(&[]);
        }
        match sec.offset.checked_add(sec.size) {
            Some(end) if end <= self.data.len() => {
                Ok(self.data.read_bytes_at(sec.offset, sec.size).unwrap_or(&[]))
            }
            _ => Err(Error::UnexpectedEof),
        }
    }

    /// The program header table, checked like LLVM's
    /// `ELFFile::program_headers`.
    pub fn program_headers(&self) -> Result<Vec<ProgramHeader>, Error> {
        let e = &self.header;
        let phsize = self.class().phdr_size() as u64;
        if e.phnum != 0 && u64::from(e.phentsize) != phsize {
            return Err(Error::ElfBadPhentsize {
                phentsize: e.phentsize,
            });
        }
        let total = u64::from(e.phnum) * u64::from(e.phentsize);
        match e.phoff.checked_add(total) {
            Some(end) if end <= self.data.len() => {}
            _ => {
                return Err(Error::ElfProgramHeadersPastEnd {
                    file_size: self.data.len(),
                    phoff: e.phoff,
                    phnum: e.phnum,
                    phentsize: e.phentsize,
                })
            }
        }
        (0..u64::from(e.phnum))
            .map(|i| {
                self.data
                    .read_bytes_at(e.phoff + i * phsize, phsize)
                    .and_then(|h| parse_program_header(h, self.class()))
                    .ok_or(Error::UnexpectedEof)
            })
            .collect()
    }

    /// A segment's file image (`p_offset`, `p_filesz`), bounds-checked.
    pub fn segment_data(&self, ph: &ProgramHeader) -> Result<&'a [u8], Error> {
        match ph.offset.checked_add(ph.filesz) {
            Some(end) if end <= self.data.len() => self
                .data
                .read_bytes_at(ph.offset, ph.filesz)
                .ok_or(Error::UnexpectedEof),
            _ => Err(Error::ElfSegmentPastEnd {
                offset: ph.offset,
                filesz: ph.filesz,
            }),
        }
    }

    /// The notes of section `index` (which should be `SHT_NOTE`).
    pub fn section_notes(&self, index: usize) -> Result<Notes<'a>, Error> {
        let sec = *self.section_header(index)?;
        let data = self.section_bytes(index)?;
        Ok(Notes::new(
            data,
            sec.addralign,
            self.class().endian(),
            sec.offset,
        ))
    }

    /// The notes of a segment (which should be `PT_NOTE`).
    pub fn segment_notes(&self, ph: &ProgramHeader) -> Result<Notes<'a>, Error> {
        let data = self.segment_data(ph)?;
        Ok(Notes::new(data, ph.align, self.class().endian(), ph.offset))
    }

    /// The index of the first section of type `sh_type`.
    pub fn section_of_type(&self, sh_type: u32) -> Option<usize> {
        self.sections.iter().position(|s| s.sh_type == sh_type)
    }

    /// The symbols of symbol table section `index` (`SHT_SYMTAB` or
    /// `SHT_DYNSYM`), the null symbol included, named from the linked
    /// string table.
    pub fn symbols(&self, index: usize) -> Result<Vec<Symbol<'a>>, Error> {
        let class = self.class();
        let sec = *self.section_header(index)?;
        let table = self.section_array(index, class.sym_size() as u64)?;
        let strings = self.string_table(sec.link as usize)?;
        (0..table.len() / class.sym_size())
            .map(|i| {
                let mut sym = symbol_entry(table, class, i).ok_or(Error::Truncated {
                    what: "ELF symbol",
                    offset: sec.offset + (i * class.sym_size()) as u64,
                })?;
                sym.name = symbol_name(strings, sym.st_name)?;
                Ok(sym)
            })
            .collect()
    }

    /// The relocations of relocation section `index` (`SHT_REL` or
    /// `SHT_RELA`).
    pub fn relocations(&self, index: usize) -> Result<Vec<Relocation>, Error> {
        let class = self.class();
        let e = class.endian();
        let sec = *self.section_header(index)?;
        let rela = match sec.sh_type {
            SHT_RELA => true,
            SHT_REL => false,
            _ => {
                return Err(Error::Malformed {
                    what: "not a relocation section",
                    offset: sec.offset,
                })
            }
        };
        let size = class.rel_size(rela);
        let table = self.section_array(index, size as u64)?;
        let mips64el = self.header.machine == EM_MIPS && class.is64 && !class.big_endian;
        Ok(table
            .chunks_exact(size)
            .filter_map(|raw| {
                let mut c = Bytes::new(raw);
                let offset = c.read_word(class.is64, e)?;
                let info = c.read_word(class.is64, e)?;
                let addend = if rela {
                    Some(c.read_word(class.is64, e)?)
                } else {
                    None
                };
                let (symbol, r_type) = if !class.is64 {
                    ((info >> 8) as u32, (info & 0xff) as u32)
                } else if mips64el {
                    // MIPS64 little-endian stores r_info as a LE symbol
                    // followed by four type bytes.
                    (info as u32, (info >> 32) as u32 & 0xff)
                } else {
                    ((info >> 32) as u32, info as u32)
                };
                let addend = addend.map(|a| {
                    if class.is64 {
                        a as i64
                    } else {
                        i64::from(a as u32 as i32)
                    }
                });
                Some(Relocation {
                    offset,
                    r_type,
                    symbol,
                    addend,
                })
            })
            .collect())
    }

    /// The file offset of virtual address `vaddr`, through the `PT_LOAD`
    /// segment holding it in its file image.
    pub fn vaddr_to_offset(&self, vaddr: u64) -> Result<Option<u64>, Error> {
        for ph in self.program_headers()? {
            if ph.p_type != PT_LOAD {
                continue;
            }
            let Some(delta) = vaddr.checked_sub(ph.vaddr) else {
                continue;
            };
            if delta < ph.filesz {
                return Ok(ph.offset.checked_add(delta));
            }
        }
        Ok(None)
    }

    /// `len` bytes at virtual address `vaddr`, when they lie in the file
    /// image of one `PT_LOAD` segment.
    pub fn read_at_vaddr(&self, vaddr: u64, len: u64) -> Result<Option<&'a [u8]>, Error> {
        for ph in self.program_headers()? {
            if ph.p_type != PT_LOAD {
                continue;
            }
            let Some(delta) = vaddr.checked_sub(ph.vaddr) else {
                continue;
            };
            if delta.checked_add(len).is_some_and(|end| end <= ph.filesz) {
                return Ok(ph
                    .offset
                    .checked_add(delta)
                    .and_then(|at| self.data.read_bytes_at(at, len)));
            }
        }
        Ok(None)
    }
}

/// Symbol `i` of a symbol table's bytes, without its name (see
/// [`symbol_name`]); `None` past the end of the table.
pub(crate) fn symbol_entry(table: &[u8], class: Class, i: usize) -> Option<Symbol<'static>> {
    let size = class.sym_size() as u64;
    let b = Bytes::new(Bytes::new(table).slice((i as u64).checked_mul(size)?, size)?);
    let e = class.endian();
    let (value, sz, info, other, shndx) = if class.is64 {
        (
            b.u64_at(8, e)?,
            b.u64_at(16, e)?,
            b.u8_at(4)?,
            b.u8_at(5)?,
            b.u16_at(6, e)?,
        )
    } else {
        (
            u64::from(b.u32_at(4, e)?),
            u64::from(b.u32_at(8, e)?),
            b.u8_at(12)?,
            b.u8_at(13)?,
            b.u16_at(14, e)?,
        )
    };
    Some(Symbol {
        index: i,
        st_name: b.u32_at(0, e)?,
        name: &[],
        value,
        size: sz,
        info,
        other,
        shndx,
    })
}

/// The name at `st_name` in a symbol string table, as LLVM's
/// `Elf_Sym::getName` finds it (up to a NUL or the end of the table).
pub fn symbol_name(strings: &[u8], st_name: u32) -> Result<&[u8], Error> {
    Bytes::new(strings)
        .tail(u64::from(st_name))
        .filter(|r| !r.is_empty())
        .map(until_nul)
        .ok_or(Error::ElfSymbolNameOutOfRange {
            offset: st_name,
            size: strings.len() as u64,
        })
}

/// The section header table, checked like LLVM's `ELFFile::sections`.
fn section_table<'a, R: ReadRef<'a>>(
    data: R,
    header: &Header,
) -> Result<Vec<SectionHeader>, Error> {
    let class = header.class;
    let shoff = header.shoff;
    if shoff == 0 {
        return Ok(Vec::new());
    }
    let shsize = class.shdr_size() as u64;
    if u64::from(header.shentsize) != shsize {
        return Err(Error::ElfBadShentsize(header.shentsize));
    }
    let file_size = data.len();
    // LLVM adds in the file's address width, so a 32-bit sum can wrap.
    let first_end = shoff.wrapping_add(shsize) & class.word_max();
    if shoff.checked_add(shsize).is_none_or(|e| e > file_size) || first_end < shoff {
        return Err(Error::ElfSectionTableStartPastEnd { shoff });
    }
    let shdr_at = |at: u64| {
        data.read_bytes_at(at, shsize)
            .and_then(|h| parse_section_header(h, class))
            .ok_or(Error::Truncated {
                what: "ELF section header",
                offset: at,
            })
    };
    let first = shdr_at(shoff)?;
    let count = if header.shnum == 0 {
        first.size
    } else {
        u64::from(header.shnum)
    };
    if count > u64::MAX / shsize {
        return Err(Error::ElfBadSectionCount(count));
    }
    match shoff.checked_add(count * shsize) {
        None => return Err(Error::ElfSectionTableOverflow { shoff, count }),
        Some(end) if end > file_size => return Err(Error::ElfSectionTablePastEnd),
        Some(_) => {}
    }
    // The table lies inside the buffer, so `count` is bounded by its size.
    (0..count).map(|i| shdr_at(shoff + i * shsize)).collect()
}

/// Iterator over the note records of a note section or segment.
///
/// Records are aligned to 4 bytes, or to 8 when the section or segment
/// says so (as in LLVM). A malformed record yields one error and ends the
/// iteration.
#[derive(Clone, Debug)]
pub struct Notes<'a> {
    data: &'a [u8],
    pos: u64,
    align: u64,
    endian: Endian,
    base: u64,
    done: bool,
}

impl<'a> Notes<'a> {
    /// Notes in `data` (found at file offset `base`), with the alignment
    /// of their section or segment.
    pub fn new(data: &'a [u8], align: u64, endian: Endian, base: u64) -> Notes<'a> {
        Notes {
            data,
            pos: 0,
            align: if align == 8 { 8 } else { 4 },
            endian,
            base,
            done: false,
        }
    }
}

fn align_up(v: u64, a: u64) -> Option<u64> {
    Some(v.checked_add(a - 1)? & !(a - 1))
}

impl<'a> Iterator for Notes<'a> {
    type Item = Result<Note<'a>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.pos >= self.data.len() as u64 {
            return None;
        }
        let b = Bytes::new(self.data);
        let at = self.pos;
        let bad = |what| Error::Malformed {
            what,
            offset: self.base.saturating_add(at),
        };
        let record = (|| {
            let namesz = b
                .u32_at(at, self.endian)
                .ok_or(bad("truncated note header"))?;
            let descsz = b
                .u32_at(at + 4, self.endian)
                .ok_or(bad("truncated note header"))?;
            let n_type = b
                .u32_at(at + 8, self.endian)
                .ok_or(bad("truncated note header"))?;
            let name_at = at + 12;
            let name = b
                .slice(name_at, u64::from(namesz))
                .ok_or(bad("note name goes past the end of its section"))?;
            let desc_at = align_up(name_at + u64::from(namesz), self.align)
                .ok_or(bad("note descriptor offset overflows"))?;
            let desc = b
                .slice(desc_at, u64::from(descsz))
                .ok_or(bad("note descriptor goes past the end of its section"))?;
            let next = align_up(desc_at + u64::from(descsz), self.align)
                .ok_or(bad("note size overflows"))?;
            Ok((
                Note {
                    name: until_nul(name),
                    n_type,
                    desc,
                },
                next,
            ))
        })();
        match record {
            Ok((note, next)) => {
                self.pos = next;
                Some(Ok(note))
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// LLVM's name for a section type, as used in its error messages.
pub fn section_type_name(machine: u16, sh_type: u32) -> &'static str {
    const EM_MIPS_RS3_LE: u16 = 10;
    const EM_MSP430: u16 = 105;
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
