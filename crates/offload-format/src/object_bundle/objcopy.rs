//! In-process equivalent of the two llvm-objcopy invocations the bundler
//! makes on ELF hosts:
//!
//! * bundling: `--add-section=NAME=FILE --set-section-flags=NAME=readonly,exclude`
//!   for every entry;
//! * host extraction: `--regex --remove-section=__CLANG_OFFLOAD_BUNDLE__.*`.
//!
//! llvm-objcopy does not patch files: it reads the object into a model
//! (sections, symbols, relocations, groups, segments), edits the model and
//! serialises it again. Byte identity therefore needs the same model and the
//! same serialiser, which is what this module implements:
//!
//! * every non-allocated string table is rebuilt from the names that still
//!   use it (tail-merged, see [`super::strtab`]);
//! * the symbol table is rewritten with local symbols first, relocation and
//!   symbol-table sections get the word size as alignment and their exact
//!   entry size;
//! * sections inside segments keep their place relative to the segment;
//!   all others are laid out after the segments in order of their original
//!   file offset (new sections count as "infinitely far"), each aligned to
//!   its `sh_addralign`;
//! * the section header table follows, aligned to the word size;
//! * gaps are zero.
//!
//! Everything read from the input is bounds-checked; the output size is
//! capped so that an absurd alignment cannot make us allocate gigabytes.

use super::elf::*;
use super::error::{ElfError, Error};
use super::pieces::{Canvas, Data, Pieces};
use crate::objfile::elf::SectionHeader;
use crate::string_table::Builder as StrTabBuilder;

/// How much larger than its inputs a rewritten object may become. Real
/// objects grow by a few hundred bytes (string table, headers, alignment
/// padding); only hostile alignments or sizes come near this.
pub(crate) const MAX_GROWTH: u64 = 64 << 20;

/// Selects sections by name.
pub(crate) type NamePredicate<'a> = &'a dyn Fn(&[u8]) -> bool;

/// What to do to the object.
pub(crate) struct Edit<'a, 'd> {
    /// Sections whose name satisfies this predicate are removed.
    pub(crate) remove: Option<NamePredicate<'a>>,
    /// Sections to append: (name, contents). Their names also get the
    /// `readonly,exclude` flags, as do existing sections with those names.
    pub(crate) add: &'a [(Vec<u8>, &'d [u8])],
}

type SecId = usize;
type SymId = usize;

#[derive(Debug)]
enum Kind<'a> {
    /// A section copied verbatim, whose `sh_link` may name another section.
    Plain {
        contents: &'a [u8],
        link: Option<SecId>,
        /// The link pointed at the symbol table; it survives only if no
        /// symbol index changes.
        symtab_link: bool,
    },
    /// Copied verbatim; `sh_link`/`sh_info` kept as numbers.
    Raw { contents: &'a [u8] },
    /// A non-allocated string table, rebuilt from its users.
    StrTab(StrTabBuilder),
    SymTab {
        names: Option<SecId>,
        shndx: Option<SecId>,
    },
    /// A non-allocated relocation section, rewritten entry by entry.
    Reloc {
        symtab: bool,
        target: Option<SecId>,
        relocs: Vec<Reloc>,
    },
    /// An allocated relocation section (dynamic relocations), verbatim.
    DynReloc {
        contents: &'a [u8],
        dynsym: Option<SecId>,
        target: Option<SecId>,
    },
    Group {
        contents: &'a [u8],
        symtab: bool,
        signature: Option<SymId>,
        flag_word: u32,
        members: Vec<SecId>,
    },
    /// An extended section index table (`SHT_SYMTAB_SHNDX`).
    Shndx {
        symtab: Option<SecId>,
        indexes: Vec<u32>,
    },
    /// A section added by the edit.
    Added { contents: &'a [u8] },
}

#[derive(Debug, Clone, Copy)]
struct Reloc {
    offset: u64,
    addend: u64,
    r_type: u32,
    symbol: Option<SymId>,
}

#[derive(Debug)]
struct Section<'a, 'd> {
    name: &'a [u8],
    sh_type: u32,
    orig_type: u32,
    flags: u64,
    orig_flags: u64,
    addr: u64,
    orig_offset: u64,
    orig_index: usize,
    offset: u64,
    size: u64,
    link: u32,
    info: u32,
    align: u64,
    entsize: u64,
    kind: Kind<'d>,
    parent: Option<usize>,
    has_symbol: bool,
    removed: bool,
    index: u32,
    name_index: u32,
}

#[derive(Debug, Clone)]
struct Symbol<'a> {
    name: &'a [u8],
    binding: u8,
    sym_type: u8,
    other: u8,
    value: u64,
    size: u64,
    defined_in: Option<SecId>,
    /// Reserved `st_shndx` (e.g. `SHN_ABS`) when not defined in a section.
    shndx_type: u16,
}

#[derive(Debug, Clone)]
struct Segment<'a> {
    p_type: u32,
    flags: u32,
    offset: u64,
    orig_offset: u64,
    vaddr: u64,
    paddr: u64,
    filesz: u64,
    memsz: u64,
    align: u64,
    index: u32,
    parent: Option<usize>,
    contents: &'a [u8],
}

/// `'a` is the lifetime of names, `'d` that of the bytes the output
/// borrows (the input and the added contents), which may be longer.
struct Object<'a, 'd> {
    class: Class,
    mips64el: bool,
    os_abi: u8,
    abi_version: u8,
    e_type: u16,
    machine: u16,
    version: u32,
    entry: u64,
    flags: u32,
    had_shdrs: bool,
    /// All sections ever known, in original order then added ones; removed
    /// ones stay (flagged) so that ids remain stable.
    secs: Vec<Section<'a, 'd>>,
    /// Output order of live sections.
    order: Vec<SecId>,
    symbols: Vec<Symbol<'a>>,
    /// Symbol ids in symbol-table order.
    sym_order: Vec<SymId>,
    /// Final symbol-table index of each symbol id (after `finalize`).
    sym_index: Vec<u32>,
    indices_changed: bool,
    symtab: Option<SecId>,
    section_names: Option<SecId>,
    shndx_table: Option<SecId>,
    /// Real segments, then the ELF header and program header pseudo-segments.
    segs: Vec<Segment<'d>>,
    real_segs: usize,
    shoff: u64,
}

fn with_name(e: impl FnOnce(Vec<u8>) -> ElfError, name: &[u8]) -> ElfError {
    e(name.to_vec())
}

fn is_valid_reserved_index(index: u32, machine: u16) -> bool {
    if index == SHN_ABS || index == SHN_COMMON {
        return true;
    }
    match machine {
        EM_AMDGPU => index == 0xff00,
        EM_MIPS => matches!(index, 0xff00 | 0xff03 | 0xff04),
        EM_HEXAGON => matches!(index, 0xff00..=0xff04),
        _ => false,
    }
}

/// LLVM's `alignTo(Value, Align)`: the rounded-up quotient times `Align`,
/// wrapping like C++ unsigned arithmetic only in that product. (LLVM 22
/// divides before it multiplies; adding `Align - 1` first would wrap for
/// huge alignments and put a section back at a small offset, over the
/// headers.)
fn align_to(value: u64, align: u64) -> u64 {
    (value / align + u64::from(value % align != 0)).wrapping_mul(align)
}

/// LLVM's `alignTo(Value, Align, Skew)`.
fn align_to_skew(value: u64, align: u64, skew: u64) -> u64 {
    let skew = skew % align;
    align_to(value.wrapping_sub(skew), align).wrapping_add(skew)
}

impl<'a, 'd: 'a> Object<'a, 'd> {
    /// Builds the model from the input, with llvm-objcopy's checks.
    fn read(data: &'d [u8]) -> Result<Self, Error> {
        let elf = open(Data::Slice(data))?;
        let class = elf.class();
        let n = elf.section_count();
        let mut obj = Object {
            class,
            mips64el: elf.is_mips64el(),
            os_abi: elf.header().os_abi,
            abi_version: elf.header().abi_version,
            e_type: elf.header().e_type,
            machine: elf.header().machine,
            version: elf.header().version,
            entry: elf.header().entry,
            flags: elf.header().flags,
            had_shdrs: true,
            secs: Vec::with_capacity(n),
            order: Vec::new(),
            symbols: Vec::new(),
            sym_order: Vec::new(),
            sym_index: Vec::new(),
            indices_changed: false,
            symtab: None,
            section_names: None,
            shndx_table: None,
            segs: Vec::new(),
            real_segs: 0,
            shoff: 0,
        };
        obj.read_section_headers(&elf)?;
        obj.read_sections(&elf)?;
        obj.read_program_headers(&elf, data)?;
        obj.order = (0..obj.secs.len()).collect();
        Ok(obj)
    }

    fn read_section_headers(&mut self, elf: &ElfFile<'d>) -> Result<(), Error> {
        let n = elf.section_count();
        for i in 1..n {
            let sh = elf.section_headers()[i];
            let alloc = sh.flags & SHF_ALLOC != 0;
            let kind = match sh.sh_type {
                SHT_REL | SHT_RELA if alloc => Kind::DynReloc {
                    contents: elf.section_bytes(i)?,
                    dynsym: None,
                    target: None,
                },
                SHT_REL | SHT_RELA => Kind::Reloc {
                    symtab: false,
                    target: None,
                    relocs: Vec::new(),
                },
                SHT_STRTAB if alloc => Kind::Plain {
                    contents: elf.section_bytes(i)?,
                    link: None,
                    symtab_link: false,
                },
                SHT_STRTAB => Kind::StrTab(StrTabBuilder::new()),
                SHT_HASH | SHT_GNU_HASH | SHT_DYNSYM | SHT_DYNAMIC => Kind::Plain {
                    contents: elf.section_bytes(i)?,
                    link: None,
                    symtab_link: false,
                },
                SHT_GROUP => Kind::Group {
                    contents: elf.section_bytes(i)?,
                    symtab: false,
                    signature: None,
                    flag_word: 0,
                    members: Vec::new(),
                },
                SHT_SYMTAB => {
                    if self.symtab.is_some() {
                        return Err(ElfError::MultipleSymbolTables.into());
                    }
                    self.symtab = Some(i - 1);
                    Kind::SymTab {
                        names: None,
                        shndx: None,
                    }
                }
                SHT_SYMTAB_SHNDX => {
                    self.shndx_table = Some(i - 1);
                    Kind::Shndx {
                        symtab: None,
                        indexes: Vec::new(),
                    }
                }
                SHT_NOBITS => Kind::Plain {
                    contents: &[],
                    link: None,
                    symtab_link: false,
                },
                _ => {
                    let contents = elf.section_bytes(i)?;
                    if sh.flags & SHF_COMPRESSED != 0 {
                        Kind::Raw { contents }
                    } else {
                        Kind::Plain {
                            contents,
                            link: None,
                            symtab_link: false,
                        }
                    }
                }
            };
            let table = elf.section_name_table()?;
            let name = elf.section_name(i, table)?;
            self.secs.push(Section {
                name,
                sh_type: sh.sh_type,
                orig_type: sh.sh_type,
                flags: sh.flags,
                orig_flags: sh.flags,
                addr: sh.addr,
                orig_offset: sh.offset,
                orig_index: i,
                offset: sh.offset,
                size: sh.size,
                link: sh.link,
                info: sh.info,
                align: sh.addralign,
                entsize: sh.entsize,
                kind,
                parent: None,
                has_symbol: false,
                removed: false,
                index: i as u32,
                name_index: 0,
            });
        }
        Ok(())
    }

    /// `SectionTableRef::getSection`: 1-based index into the section list.
    fn get_section(&self, index: u32) -> Option<SecId> {
        if index == SHN_UNDEF || index as usize > self.secs.len() {
            None
        } else {
            Some(index as usize - 1)
        }
    }

    fn is_strtab_section(&self, id: SecId) -> bool {
        let s = &self.secs[id];
        s.orig_flags & SHF_ALLOC == 0 && s.orig_type == SHT_STRTAB
    }

    fn read_sections(&mut self, elf: &ElfFile<'d>) -> Result<(), Error> {
        let mut shstr = u32::from(elf.header().shstrndx);
        if shstr == SHN_XINDEX {
            shstr = elf
                .section_headers()
                .first()
                .ok_or(ElfError::InvalidSectionIndex { index: 0 })?
                .link;
        }
        if shstr == SHN_UNDEF {
            self.had_shdrs = false;
        } else {
            let id = self
                .get_section(shstr)
                .ok_or(ElfError::ShstrndxInvalid { index: shstr })?;
            if !self.is_strtab_section(id) {
                return Err(ElfError::ShstrndxNotStringTable { index: shstr }.into());
            }
            self.section_names = Some(id);
        }

        if let Some(t) = self.shndx_table {
            self.init_shndx(t)?;
        }
        if let Some(st) = self.symtab {
            let link = self.secs[st].link;
            let names = self
                .get_section(link)
                .ok_or(ElfError::SymtabLinkInvalid { link })?;
            if !self.is_strtab_section(names) {
                return Err(ElfError::SymtabLinkNotStringTable { link }.into());
            }
            if let Kind::SymTab { names: n, .. } = &mut self.secs[st].kind {
                *n = Some(names);
            }
            self.read_symbols(elf, st)?;
        }

        for id in 0..self.secs.len() {
            if Some(id) == self.symtab {
                continue;
            }
            self.init_section(elf, id)?;
        }
        Ok(())
    }

    fn init_shndx(&mut self, t: SecId) -> Result<(), Error> {
        let link = self.secs[t].link;
        let target = match self.get_section(link) {
            Some(s) if Some(s) == self.symtab => s,
            other => {
                return Err(ElfError::ShndxLinkInvalid {
                    link,
                    section: self.secs[t].name.to_vec(),
                    exists: other.is_some(),
                }
                .into())
            }
        };
        if let Kind::Shndx { symtab, .. } = &mut self.secs[t].kind {
            *symtab = Some(target);
        }
        if let Kind::SymTab { shndx, .. } = &mut self.secs[target].kind {
            *shndx = Some(t);
        }
        Ok(())
    }

    fn read_symbols(&mut self, elf: &ElfFile<'d>, st: SecId) -> Result<(), Error> {
        let class = self.class;
        let sh_index = self.secs[st].orig_index;
        let link = elf.section_headers()[sh_index].link;
        if link as usize >= elf.section_count() {
            return Err(ElfError::InvalidSectionIndex { index: link }.into());
        }
        let strtab = elf.string_table(link as usize)?;
        let syms = elf.section_array(sh_index, class.sym_size() as u64)?;
        let count = syms.len() / class.sym_size();
        let shndx_sec = match &self.secs[st].kind {
            Kind::SymTab { shndx, .. } => *shndx,
            _ => None,
        };
        let mut shndx_data: Option<&'d [u8]> = None;
        self.symbols.reserve(count);
        for j in 0..count {
            let off = j * class.sym_size();
            let rd = |o: usize| -> Result<u64, Error> {
                class
                    .word_at(syms, off + o)
                    .ok_or(Error::Elf(ElfError::UnexpectedEof))
            };
            let (st_name, info, other, shndx, value, size) = if class.is64 {
                (
                    class.u32_at(syms, off).unwrap_or(0),
                    syms[off + 4],
                    syms[off + 5],
                    class.u16_at(syms, off + 6).unwrap_or(0),
                    rd(8)?,
                    rd(16)?,
                )
            } else {
                (
                    class.u32_at(syms, off).unwrap_or(0),
                    syms[off + 12],
                    syms[off + 13],
                    class.u16_at(syms, off + 14).unwrap_or(0),
                    rd(4)?,
                    rd(8)?,
                )
            };
            let name = match strtab.get(st_name as usize..) {
                Some(rest) if !rest.is_empty() => cstr(rest),
                _ => {
                    return Err(ElfError::SymbolNameOutOfRange {
                        offset: st_name,
                        size: strtab.len() as u64,
                    }
                    .into())
                }
            };
            let shndx = u32::from(shndx);
            let mut defined_in = None;
            if shndx == SHN_XINDEX {
                let table = shndx_sec.ok_or_else(|| {
                    with_name(|name| ElfError::SymbolXindexWithoutTable { name }, name)
                })?;
                let words = match shndx_data {
                    Some(w) => w,
                    None => {
                        let w = elf.section_array(self.secs[table].orig_index, 4)?;
                        if w.len() / 4 != count {
                            return Err(ElfError::ShndxTableSizeMismatch.into());
                        }
                        shndx_data = Some(w);
                        w
                    }
                };
                let index = class.u32_at(words, j * 4).unwrap_or(0);
                defined_in = Some(self.get_section(index).ok_or_else(|| {
                    with_name(|name| ElfError::SymbolXindexInvalid { name, index }, name)
                })?);
            } else if shndx >= SHN_LORESERVE {
                if !is_valid_reserved_index(shndx, self.machine) {
                    return Err(ElfError::SymbolReservedIndex {
                        name: name.to_vec(),
                        shndx: shndx as u16,
                    }
                    .into());
                }
            } else if shndx != SHN_UNDEF {
                defined_in = Some(self.get_section(shndx).ok_or_else(|| {
                    with_name(
                        |name| ElfError::SymbolSectionInvalid { name, index: shndx },
                        name,
                    )
                })?);
            }
            if let Some(d) = defined_in {
                self.secs[d].has_symbol = true;
            }
            let shndx_type = if defined_in.is_none() && shndx >= SHN_LORESERVE {
                shndx as u16
            } else {
                0
            };
            self.symbols.push(Symbol {
                name,
                binding: info >> 4,
                sym_type: info & 0x0f,
                other,
                value,
                size,
                defined_in,
                shndx_type,
            });
        }
        self.sym_order = (0..self.symbols.len()).collect();
        Ok(())
    }

    fn symbol_by_index(&self, index: u32) -> Result<SymId, Error> {
        self.sym_order
            .get(index as usize)
            .copied()
            .ok_or(Error::Elf(ElfError::InvalidSymbolIndex(index)))
    }

    fn init_section(&mut self, elf: &ElfFile<'d>, id: SecId) -> Result<(), Error> {
        let (link, info, name) = {
            let s = &self.secs[id];
            (s.link, s.info, s.name)
        };
        let class = self.class;
        match self.secs[id].kind {
            Kind::Plain { .. } => {
                if link == SHN_UNDEF {
                    return Ok(());
                }
                let target = self
                    .get_section(link)
                    .ok_or_else(|| ElfError::LinkInvalid {
                        link,
                        section: name.to_vec(),
                    })?;
                let to_symtab = self.secs[target].sh_type == SHT_SYMTAB;
                if let Kind::Plain {
                    link: l,
                    symtab_link,
                    ..
                } = &mut self.secs[id].kind
                {
                    if to_symtab {
                        *symtab_link = true;
                    } else {
                        *l = Some(target);
                    }
                }
            }
            Kind::Shndx { .. } => self.init_shndx(id)?,
            Kind::Reloc { .. } | Kind::DynReloc { .. } => {
                let dynamic = matches!(self.secs[id].kind, Kind::DynReloc { .. });
                let mut sym_link = None;
                if link != SHN_UNDEF {
                    let t = self
                        .get_section(link)
                        .ok_or_else(|| ElfError::LinkInvalid {
                            link,
                            section: name.to_vec(),
                        })?;
                    let wanted = if dynamic { SHT_DYNSYM } else { SHT_SYMTAB };
                    if self.secs[t].orig_type != wanted {
                        return Err(ElfError::LinkNotSymbolTable {
                            link,
                            section: name.to_vec(),
                        }
                        .into());
                    }
                    sym_link = Some(t);
                }
                let mut target_sec = None;
                if info != SHN_UNDEF {
                    target_sec =
                        Some(
                            self.get_section(info)
                                .ok_or_else(|| ElfError::InfoInvalid {
                                    info,
                                    section: name.to_vec(),
                                })?,
                        );
                }
                if dynamic {
                    if let Kind::DynReloc { dynsym, target, .. } = &mut self.secs[id].kind {
                        *dynsym = sym_link;
                        *target = target_sec;
                    }
                    return Ok(());
                }
                let rela = self.secs[id].sh_type == SHT_RELA;
                let esize = class.rel_size(rela);
                let raw = elf.section_array(self.secs[id].orig_index, esize as u64)?;
                let mut relocs = Vec::with_capacity(raw.len() / esize);
                for k in 0..raw.len() / esize {
                    let off = k * esize;
                    let w = class.addr_size() as usize;
                    let r_offset = class.word_at(raw, off).unwrap_or(0);
                    let r_info = class.word_at(raw, off + w).unwrap_or(0);
                    let addend = if rela {
                        if class.is64 {
                            class.u64_at(raw, off + 16).unwrap_or(0)
                        } else {
                            // Sign-extend the 32-bit addend, as LLVM does.
                            class.u32_at(raw, off + 8).unwrap_or(0) as i32 as i64 as u64
                        }
                    } else {
                        0
                    };
                    let (sym, r_type) = decode_r_info(class, self.mips64el, r_info);
                    let symbol = if sym != 0 {
                        if self.symtab.is_none() {
                            return Err(ElfError::RelocationWithoutSymbolTable {
                                section: name.to_vec(),
                                symbol: sym,
                            }
                            .into());
                        }
                        Some(self.symbol_by_index(sym)?)
                    } else {
                        None
                    };
                    relocs.push(Reloc {
                        offset: r_offset,
                        addend,
                        r_type,
                        symbol,
                    });
                }
                if let Kind::Reloc {
                    symtab,
                    target,
                    relocs: r,
                } = &mut self.secs[id].kind
                {
                    *symtab = sym_link.is_some();
                    *target = target_sec;
                    *r = relocs;
                }
            }
            Kind::Group { contents, .. } => {
                let align = self.secs[id].align;
                if align % 4 != 0 {
                    return Err(ElfError::GroupAlignment {
                        align,
                        section: name.to_vec(),
                    }
                    .into());
                }
                let mut has_symtab = false;
                let mut signature = None;
                if link != SHN_UNDEF {
                    let t = self.get_section(link);
                    match t {
                        Some(t) if Some(t) == self.symtab => {}
                        _ => {
                            return Err(ElfError::GroupLink {
                                link,
                                section: name.to_vec(),
                                exists: t.is_some(),
                            }
                            .into())
                        }
                    }
                    let sym = self.sym_order.get(info as usize).copied().ok_or_else(|| {
                        ElfError::GroupInfo {
                            info,
                            section: name.to_vec(),
                        }
                    })?;
                    has_symtab = true;
                    signature = Some(sym);
                }
                if contents.len() % 4 != 0 || contents.is_empty() {
                    return Err(ElfError::GroupMalformed {
                        section: name.to_vec(),
                    }
                    .into());
                }
                let flag_word = class.u32_at(contents, 0).unwrap_or(0);
                let mut members = Vec::with_capacity(contents.len() / 4 - 1);
                for k in 1..contents.len() / 4 {
                    let index = class.u32_at(contents, k * 4).unwrap_or(0);
                    members.push(
                        self.get_section(index)
                            .ok_or_else(|| ElfError::GroupMember {
                                index,
                                section: name.to_vec(),
                            })?,
                    );
                }
                if let Kind::Group {
                    symtab,
                    signature: sig,
                    flag_word: fw,
                    members: m,
                    ..
                } = &mut self.secs[id].kind
                {
                    *symtab = has_symtab;
                    *sig = signature;
                    *fw = flag_word;
                    *m = members;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn read_program_headers(&mut self, elf: &ElfFile<'d>, data: &'d [u8]) -> Result<(), Error> {
        let phdrs = elf.program_headers()?;
        for (i, ph) in phdrs.iter().enumerate() {
            let end = ph.offset.checked_add(ph.filesz);
            let contents = match end {
                Some(end) if end <= data.len() as u64 => &data[ph.offset as usize..end as usize],
                _ => {
                    return Err(ElfError::Read(crate::objfile::Error::ElfSegmentPastEnd {
                        offset: ph.offset,
                        filesz: ph.filesz,
                    })
                    .into())
                }
            };
            let seg_index = self.segs.len();
            self.segs.push(Segment {
                p_type: ph.p_type,
                flags: ph.flags,
                offset: ph.offset,
                orig_offset: ph.offset,
                vaddr: ph.vaddr,
                paddr: ph.paddr,
                filesz: ph.filesz,
                memsz: ph.memsz,
                align: ph.align,
                index: i as u32,
                parent: None,
                contents,
            });
            let seg = &self.segs[seg_index];
            for s in 0..self.secs.len() {
                if section_within_segment(&self.secs[s], seg) {
                    let better = match self.secs[s].parent {
                        None => true,
                        Some(p) => self.segs[p].offset > seg.offset,
                    };
                    if better {
                        self.secs[s].parent = Some(seg_index);
                    }
                }
            }
        }
        self.real_segs = self.segs.len();
        let n = self.real_segs as u32;
        // The ELF header and the program header table act as segments during
        // layout.
        self.segs.push(Segment {
            p_type: PT_PHDR,
            flags: 0,
            offset: 0,
            orig_offset: 0,
            vaddr: 0,
            paddr: 0,
            filesz: self.class.ehdr_size() as u64,
            memsz: self.class.ehdr_size() as u64,
            align: 0,
            index: n,
            parent: None,
            contents: &[],
        });
        let phsize = u64::from(elf.header().phentsize) * u64::from(elf.header().phnum);
        self.segs.push(Segment {
            p_type: PT_PHDR,
            flags: 0,
            offset: elf.header().phoff,
            orig_offset: elf.header().phoff,
            vaddr: elf.header().phoff,
            paddr: 0,
            filesz: phsize,
            memsz: phsize,
            align: self.class.addr_size(),
            index: n + 1,
            parent: None,
            contents: &[],
        });
        for child in 0..self.segs.len() {
            let mut parent: Option<usize> = None;
            for cand in 0..self.real_segs {
                if cand == child {
                    continue;
                }
                let (c, p) = (&self.segs[child], &self.segs[cand]);
                let overlaps = p.orig_offset <= c.orig_offset
                    && p.orig_offset.wrapping_add(p.filesz) > c.orig_offset;
                if overlaps && seg_less(p, c) && parent.is_none_or(|q| seg_less(p, &self.segs[q])) {
                    parent = Some(cand);
                }
            }
            self.segs[child].parent = parent;
        }
        Ok(())
    }

    fn live(&self) -> impl Iterator<Item = SecId> + '_ {
        self.order.iter().copied()
    }

    /// `Object::removeSections`.
    fn remove_sections(
        &mut self,
        pred: &dyn Fn(&Section<'a, 'd>, SecId) -> bool,
    ) -> Result<(), Error> {
        let mut keep = Vec::with_capacity(self.order.len());
        let mut gone = Vec::new();
        for &id in &self.order {
            let s = &self.secs[id];
            let mut remove = pred(s, id);
            if !remove && s.orig_flags & SHF_COMPRESSED == 0 {
                match &s.kind {
                    // Relocations for a removed section go with it.
                    Kind::Reloc {
                        target: Some(t), ..
                    }
                    | Kind::DynReloc {
                        target: Some(t), ..
                    } => remove = pred(&self.secs[*t], *t),
                    // So does a group all of whose members are removed (or
                    // that had none to begin with).
                    Kind::Group { members, .. } if s.sh_type == SHT_GROUP => {
                        remove = members.iter().all(|&m| pred(&self.secs[m], m));
                    }
                    _ => {}
                }
            }
            if remove {
                gone.push(id);
            } else {
                keep.push(id);
            }
        }
        if gone.is_empty() {
            return Ok(());
        }
        for &id in &gone {
            self.secs[id].removed = true;
        }
        if self.symtab.is_some_and(|s| self.secs[s].removed) {
            self.symtab = None;
        }
        if self.section_names.is_some_and(|s| self.secs[s].removed) {
            self.section_names = None;
        }
        if self.shndx_table.is_some_and(|s| self.secs[s].removed) {
            self.shndx_table = None;
        }
        // A removed group no longer groups its members.
        for &id in &gone {
            if let Kind::Group { members, .. } = &self.secs[id].kind {
                for m in members.clone() {
                    self.secs[m].flags &= !SHF_GROUP;
                }
            }
        }
        self.order = keep;
        let symtab_gone = self.symtab_removed();
        for id in self.order.clone() {
            self.remove_references(id, symtab_gone)?;
        }
        Ok(())
    }

    /// `removeSectionReferences` of one kept section.
    fn remove_references(&mut self, id: SecId, symtab_gone: bool) -> Result<(), Error> {
        let name = self.secs[id].name;
        let removed =
            |secs: &[Section<'a, 'd>], s: Option<SecId>| s.is_some_and(|s| secs[s].removed);
        match &self.secs[id].kind {
            Kind::Plain { link, .. } => {
                if let Some(l) = link.filter(|&l| self.secs[l].removed) {
                    return Err(ElfError::LinkedSectionRemoved {
                        removed: self.secs[l].name.to_vec(),
                        user: name.to_vec(),
                    }
                    .into());
                }
            }
            Kind::SymTab { names, shndx } => {
                if let Some(n) = names.filter(|&n| self.secs[n].removed) {
                    return Err(ElfError::StringTableInUse {
                        strtab: self.secs[n].name.to_vec(),
                        symtab: name.to_vec(),
                    }
                    .into());
                }
                let (names, shndx_gone) = (*names, removed(&self.secs, *shndx));
                let shndx = if shndx_gone { None } else { *shndx };
                self.secs[id].kind = Kind::SymTab { names, shndx };
                // Symbols defined in removed sections go too (never the null symbol).
                let before = self.sym_order.len();
                let secs = &self.secs;
                let symbols = &self.symbols;
                let null = self.sym_order.first().copied();
                self.sym_order
                    .retain(|&s| Some(s) == null || !removed(secs, symbols[s].defined_in));
                if self.sym_order.len() < before {
                    self.indices_changed = true;
                }
            }
            Kind::Reloc {
                symtab,
                relocs,
                target,
            } => {
                if *symtab && symtab_gone {
                    return Err(symtab_in_use(self.original_symtab_name(), name, false));
                }
                for r in relocs {
                    let Some(sym) = r.symbol else { continue };
                    let Some(d) = self.symbols[sym].defined_in else {
                        continue;
                    };
                    if self.secs[d].removed {
                        return Err(ElfError::RelocationAgainstRemoved {
                            removed: self.secs[d].name.to_vec(),
                            target: target
                                .map(|t| self.secs[t].name.to_vec())
                                .unwrap_or_default(),
                            offset: r.offset,
                            symbol: self.symbols[sym].name.to_vec(),
                        }
                        .into());
                    }
                }
            }
            Kind::DynReloc { dynsym, .. } => {
                if let Some(d) = dynsym.filter(|&d| self.secs[d].removed) {
                    return Err(symtab_in_use(self.secs[d].name.to_vec(), name, false));
                }
            }
            Kind::Group {
                symtab,
                signature,
                members,
                ..
            } => {
                if *symtab && symtab_gone {
                    return Err(symtab_in_use(self.original_symtab_name(), name, true));
                }
                if let Some(sig) = *signature {
                    if removed(&self.secs, self.symbols[sig].defined_in) {
                        return Err(ElfError::GroupSymbolRemoved {
                            symbol: self.symbols[sig].name.to_vec(),
                            group: name.to_vec(),
                        }
                        .into());
                    }
                }
                let keep: Vec<SecId> = members
                    .iter()
                    .copied()
                    .filter(|&m| !self.secs[m].removed)
                    .collect();
                if let Kind::Group { members, .. } = &mut self.secs[id].kind {
                    *members = keep;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn symtab_removed(&self) -> bool {
        self.secs
            .iter()
            .any(|s| matches!(s.kind, Kind::SymTab { .. }) && s.removed)
    }

    fn original_symtab_name(&self) -> Vec<u8> {
        self.secs
            .iter()
            .find(|s| matches!(s.kind, Kind::SymTab { .. }))
            .map(|s| s.name.to_vec())
            .unwrap_or_default()
    }

    /// `updateSymbols` with no changes: locals first, stably.
    fn partition_symbols(&mut self) {
        if self.symtab.is_none() {
            return;
        }
        let symbols = &self.symbols;
        let (locals, others): (Vec<SymId>, Vec<SymId>) = self
            .sym_order
            .iter()
            .partition(|&&s| symbols[s].binding == STB_LOCAL);
        let new: Vec<SymId> = locals.into_iter().chain(others).collect();
        if new != self.sym_order {
            self.indices_changed = true;
        }
        self.sym_order = new;
    }

    fn add_section(&mut self, name: &'a [u8], contents: &'d [u8]) {
        let note = name.starts_with(b".note") && name != b".note.GNU-stack";
        let sh_type = if note { SHT_NOTE } else { SHT_PROGBITS };
        self.push_new_section(
            name,
            sh_type,
            contents.len() as u64,
            Kind::Added { contents },
        );
    }

    fn push_new_section(&mut self, name: &'a [u8], sh_type: u32, size: u64, kind: Kind<'d>) {
        let id = self.secs.len();
        self.secs.push(Section {
            name,
            sh_type,
            orig_type: sh_type,
            flags: 0,
            orig_flags: 0,
            addr: 0,
            orig_offset: u64::MAX,
            orig_index: 0,
            offset: 0,
            size,
            link: 0,
            info: 0,
            align: 1,
            entsize: 0,
            kind,
            parent: None,
            has_symbol: false,
            removed: false,
            index: 0,
            name_index: 0,
        });
        self.order.push(id);
    }

    /// `--set-section-flags=NAME=readonly,exclude`.
    fn set_readonly_exclude(&mut self, id: SecId) {
        let mut preserve = (SHF_COMPRESSED
            | SHF_GROUP
            | SHF_LINK_ORDER
            | SHF_MASKOS
            | SHF_MASKPROC
            | SHF_TLS
            | SHF_INFO_LINK)
            & !SHF_EXCLUDE;
        if self.machine == EM_X86_64 {
            preserve &= !SHF_X86_64_LARGE;
        }
        let s = &mut self.secs[id];
        s.flags = (s.flags & preserve) | (SHF_EXCLUDE & !preserve);
        if s.sh_type == SHT_NOBITS && s.flags & SHF_ALLOC == 0 {
            s.sh_type = SHT_PROGBITS;
        }
    }

    /// `ELFWriter::finalize` and the layout; returns the output size.
    fn finalize(&mut self) -> Result<u64, Error> {
        let write_shdrs = self.had_shdrs;
        if self.section_names.is_none() && write_shdrs {
            return Err(ElfError::SectionNamesRemoved.into());
        }
        // Executables and libraries lose an empty symbol table.
        if self.e_type != 1 {
            if let Some(st) = self.symtab {
                if self.sym_order.len() == 1 {
                    let strtab = match self.secs[st].kind {
                        Kind::SymTab { names, .. } if names != self.section_names => names,
                        _ => None,
                    };
                    self.remove_sections(&|_, id| id == st || Some(id) == strtab)?;
                }
            }
        }
        if let Some(st) = self.symtab {
            if !self.indices_changed {
                for id in self.order.clone() {
                    if let Kind::Plain {
                        link, symtab_link, ..
                    } = &mut self.secs[id].kind
                    {
                        if *symtab_link {
                            *link = Some(st);
                        }
                    }
                }
            }
        }
        let mut needs_large = false;
        if self.order.len() >= SHN_LORESERVE as usize {
            needs_large = self.order[SHN_LORESERVE as usize - 1..]
                .iter()
                .any(|&id| self.secs[id].has_symbol);
        }
        if needs_large {
            if let (Some(st), None) = (self.symtab, self.shndx_table) {
                self.push_new_section(
                    b".symtab_shndx",
                    SHT_SYMTAB_SHNDX,
                    0,
                    Kind::Shndx {
                        symtab: Some(st),
                        indexes: Vec::new(),
                    },
                );
                let id = self.secs.len() - 1;
                self.secs[id].align = 4;
                self.secs[id].entsize = 4;
                self.shndx_table = Some(id);
                if let Kind::SymTab { shndx, .. } = &mut self.secs[st].kind {
                    *shndx = Some(id);
                }
            }
        } else if let Some(t) = self.shndx_table {
            self.remove_sections(&|_, id| id == t)?;
            if let Some(st) = self.symtab {
                if let Kind::SymTab { shndx, .. } = &mut self.secs[st].kind {
                    *shndx = None;
                }
            }
        }

        self.sym_index = vec![0; self.symbols.len()];
        for (i, &s) in self.sym_order.iter().enumerate() {
            self.sym_index[s] = i as u32;
        }

        // Section names, then sizes of the rewritten tables.
        if let Some(names) = self.section_names {
            let all: Vec<&'a [u8]> = self.live().map(|id| self.secs[id].name).collect();
            if let Kind::StrTab(b) = &mut self.secs[names].kind {
                for n in all {
                    b.add(n);
                }
            }
        }
        let class = self.class;
        for id in self.order.clone() {
            let nsyms = self.sym_order.len() as u64;
            let s = &mut self.secs[id];
            match &s.kind {
                Kind::SymTab { .. } => {
                    s.entsize = class.sym_size() as u64;
                    s.size = nsyms * s.entsize;
                    s.align = class.addr_size();
                }
                Kind::Reloc { relocs, .. } => {
                    s.entsize = class.rel_size(s.sh_type != SHT_REL) as u64;
                    s.size = relocs.len() as u64 * s.entsize;
                    s.align = class.addr_size();
                }
                Kind::Group { members, .. } => {
                    // The entry size stays the input's (written in 32
                    // bits, as for every section).
                    s.size = 4 + 4 * members.len() as u64;
                }
                _ => {}
            }
        }
        if let Some(st) = self.symtab {
            let (names, shndx) = match self.secs[st].kind {
                Kind::SymTab { names, shndx } => (names, shndx),
                _ => (None, None),
            };
            if let Some(t) = shndx {
                self.secs[t].size = self.sym_order.len() as u64 * 4;
            }
            if let Some(n) = names {
                let list: Vec<&'a [u8]> = self
                    .sym_order
                    .iter()
                    .map(|&s| self.symbols[s].name)
                    .collect();
                if let Kind::StrTab(b) = &mut self.secs[n].kind {
                    for name in list {
                        b.add(name);
                    }
                }
            }
        }
        for id in self.order.clone() {
            if let Kind::StrTab(b) = &mut self.secs[id].kind {
                let size = b.finalize();
                self.secs[id].size = size;
            }
        }

        self.assign_offsets(write_shdrs);

        // Extended section indexes, now that indexes are final.
        if let Some(st) = self.symtab {
            if let Kind::SymTab { shndx: Some(t), .. } = self.secs[st].kind {
                let idx: Vec<u32> = self
                    .sym_order
                    .iter()
                    .map(|&s| match self.symbols[s].defined_in {
                        Some(d) if self.secs[d].index >= SHN_LORESERVE => self.secs[d].index,
                        _ => 0,
                    })
                    .collect();
                if let Kind::Shndx { indexes, .. } = &mut self.secs[t].kind {
                    *indexes = idx;
                }
            }
        }

        // Per-section header fields that depend on final indexes.
        for id in self.order.clone() {
            if write_shdrs {
                let nm = self.secs[id].name;
                let names = self.section_names.expect("checked above");
                if let Kind::StrTab(b) = &self.secs[names].kind {
                    self.secs[id].name_index = b.offset(nm);
                }
            }
            self.finalize_section(id);
        }

        let shdr_total = if write_shdrs {
            (self.order.len() as u64 + 1) * class.shdr_size() as u64
        } else {
            0
        };
        self.shoff
            .checked_add(shdr_total)
            .ok_or(Error::OutputTooLarge { size: u64::MAX })
    }

    fn finalize_section(&mut self, id: SecId) {
        let index_of = |secs: &[Section<'a, 'd>], s: Option<SecId>| s.map_or(0, |s| secs[s].index);
        let (link, info) = {
            let s = &self.secs[id];
            match &s.kind {
                Kind::Plain { link, .. } => (Some(index_of(&self.secs, *link)), None),
                Kind::SymTab { names, .. } => {
                    let mut max_local = 0u32;
                    for (i, &sym) in self.sym_order.iter().enumerate() {
                        if self.symbols[sym].binding == STB_LOCAL {
                            max_local = max_local.max(i as u32);
                        }
                    }
                    (Some(index_of(&self.secs, *names)), Some(max_local + 1))
                }
                Kind::Reloc { symtab, target, .. } => {
                    let l = if *symtab {
                        index_of(&self.secs, self.symtab)
                    } else {
                        0
                    };
                    (Some(l), target.map(|t| self.secs[t].index))
                }
                Kind::DynReloc { dynsym, target, .. } => (
                    Some(index_of(&self.secs, *dynsym)),
                    target.map(|t| self.secs[t].index),
                ),
                Kind::Group {
                    symtab, signature, ..
                } => {
                    let l = if *symtab {
                        index_of(&self.secs, self.symtab)
                    } else {
                        0
                    };
                    let i = signature.map_or(0, |sig| self.sym_index[sig]);
                    (Some(l), Some(i))
                }
                Kind::Shndx { symtab, .. } => (Some(index_of(&self.secs, *symtab)), None),
                Kind::Raw { .. } | Kind::StrTab(_) | Kind::Added { .. } => (None, None),
            }
        };
        let s = &mut self.secs[id];
        if let Some(l) = link {
            s.link = l;
        }
        if let Some(i) = info {
            s.info = i;
        }
    }

    fn assign_offsets(&mut self, write_shdrs: bool) {
        // Segments in file order; a parent always precedes its children.
        let mut ordered: Vec<usize> = (0..self.segs.len()).collect();
        ordered.sort_by(|&a, &b| {
            let (x, y) = (&self.segs[a], &self.segs[b]);
            (x.orig_offset, x.index).cmp(&(y.orig_offset, y.index))
        });
        let mut offset = 0u64;
        for &i in &ordered {
            let new = match self.segs[i].parent {
                Some(p) => {
                    let parent = &self.segs[p];
                    parent
                        .offset
                        .wrapping_add(self.segs[i].orig_offset)
                        .wrapping_sub(parent.orig_offset)
                }
                None => {
                    let s = &self.segs[i];
                    align_to_skew(offset, s.align.max(1), s.vaddr)
                }
            };
            self.segs[i].offset = new;
            offset = offset.max(new.wrapping_add(self.segs[i].filesz));
        }

        let mut outside = Vec::new();
        for (pos, id) in self.order.clone().into_iter().enumerate() {
            self.secs[id].index = pos as u32 + 1;
            match self.secs[id].parent {
                Some(p) => {
                    let seg = &self.segs[p];
                    self.secs[id].offset = seg
                        .offset
                        .wrapping_add(self.secs[id].orig_offset.wrapping_sub(seg.orig_offset));
                }
                None => outside.push(id),
            }
        }
        outside.sort_by_key(|&id| self.secs[id].orig_offset);
        for id in outside {
            let s = &mut self.secs[id];
            offset = align_to(offset, if s.align == 0 { 1 } else { s.align });
            s.offset = offset;
            if s.sh_type != SHT_NOBITS {
                offset = offset.wrapping_add(s.size);
            }
        }
        if write_shdrs {
            offset = align_to(offset, self.class.addr_size());
        }
        self.shoff = offset;
    }

    /// Serialises the laid-out object: `total` bytes, zero where nothing
    /// is written, later writes replacing earlier ones where they overlap
    /// (as llvm-objcopy's writer does in its buffer). Verbatim data is
    /// borrowed, not copied.
    fn write(&self, total: u64, write_shdrs: bool) -> Result<Pieces<'d>, Error> {
        let class = self.class;
        let mut out = Canvas::new(total);
        let too_large = || Error::OutputTooLarge { size: total };

        // Segment images first; headers and section data may overwrite them.
        for seg in &self.segs[..self.real_segs] {
            let len = (seg.filesz as usize).min(seg.contents.len());
            out.borrowed(seg.offset, &seg.contents[..len])
                .ok_or_else(too_large)?;
        }
        for s in self.secs.iter().filter(|s| s.removed) {
            let Some(p) = s.parent else { continue };
            if s.sh_type == SHT_NOBITS || s.size == 0 {
                continue;
            }
            let seg = &self.segs[p];
            let at = s
                .orig_offset
                .wrapping_sub(seg.orig_offset)
                .wrapping_add(seg.offset);
            out.zeros(at, s.size).ok_or_else(too_large)?;
        }

        // ELF header.
        let mut eh = vec![0u8; class.ehdr_size()];
        eh[..4].copy_from_slice(b"\x7fELF");
        eh[4] = if class.is64 { 2 } else { 1 };
        eh[5] = if class.big_endian { 2 } else { 1 };
        eh[6] = 1;
        eh[7] = self.os_abi;
        eh[8] = self.abi_version;
        class.put_u16(&mut eh, 16, self.e_type);
        class.put_u16(&mut eh, 18, self.machine);
        class.put_u32(&mut eh, 20, self.version);
        let phnum = self.real_segs as u16;
        let phdr_seg = &self.segs[self.real_segs + 1];
        let phoff = if phnum != 0 { phdr_seg.offset } else { 0 };
        let live = self.order.len() as u64;
        let (shoff, shentsize, shnum, shstrndx) = if write_shdrs && live != 0 {
            let shnum = live + 1;
            let names_index = self.section_names.map_or(0, |n| self.secs[n].index);
            (
                self.shoff,
                class.shdr_size() as u16,
                if shnum >= u64::from(SHN_LORESERVE) {
                    0
                } else {
                    shnum as u16
                },
                if names_index >= SHN_LORESERVE {
                    SHN_XINDEX as u16
                } else {
                    names_index as u16
                },
            )
        } else {
            (0, 0, 0, 0)
        };
        let rest = if class.is64 {
            class.put_u64(&mut eh, 24, self.entry);
            class.put_u64(&mut eh, 32, phoff);
            class.put_u64(&mut eh, 40, shoff);
            48
        } else {
            class.put_u32(&mut eh, 24, self.entry as u32);
            class.put_u32(&mut eh, 28, phoff as u32);
            class.put_u32(&mut eh, 32, shoff as u32);
            36
        };
        class.put_u32(&mut eh, rest, self.flags);
        class.put_u16(&mut eh, rest + 4, class.ehdr_size() as u16);
        class.put_u16(
            &mut eh,
            rest + 6,
            if phnum != 0 {
                class.phdr_size() as u16
            } else {
                0
            },
        );
        class.put_u16(&mut eh, rest + 8, phnum);
        class.put_u16(&mut eh, rest + 10, shentsize);
        class.put_u16(&mut eh, rest + 12, shnum);
        class.put_u16(&mut eh, rest + 14, shstrndx);
        out.owned(0, &eh).ok_or_else(too_large)?;

        // Program headers.
        for seg in &self.segs[..self.real_segs] {
            let mut ph = vec![0u8; class.phdr_size()];
            if class.is64 {
                class.put_u32(&mut ph, 0, seg.p_type);
                class.put_u32(&mut ph, 4, seg.flags);
                class.put_u64(&mut ph, 8, seg.offset);
                class.put_u64(&mut ph, 16, seg.vaddr);
                class.put_u64(&mut ph, 24, seg.paddr);
                class.put_u64(&mut ph, 32, seg.filesz);
                class.put_u64(&mut ph, 40, seg.memsz);
                class.put_u64(&mut ph, 48, seg.align);
            } else {
                class.put_u32(&mut ph, 0, seg.p_type);
                class.put_u32(&mut ph, 4, seg.offset as u32);
                class.put_u32(&mut ph, 8, seg.vaddr as u32);
                class.put_u32(&mut ph, 12, seg.paddr as u32);
                class.put_u32(&mut ph, 16, seg.filesz as u32);
                class.put_u32(&mut ph, 20, seg.memsz as u32);
                class.put_u32(&mut ph, 24, seg.flags);
                class.put_u32(&mut ph, 28, seg.align as u32);
            }
            let at = phdr_seg
                .offset
                .wrapping_add(u64::from(seg.index) * class.phdr_size() as u64);
            out.owned(at, &ph).ok_or_else(too_large)?;
        }

        // Section contents (sections inside segments came with the segment).
        for id in self.live() {
            let s = &self.secs[id];
            if s.parent.is_some() {
                continue;
            }
            // Verbatim contents are copied straight from the input; the
            // rebuilt tables are serialised first.
            let verbatim: Option<&'d [u8]> = match &s.kind {
                Kind::Plain { contents, .. } if s.sh_type != SHT_NOBITS => Some(*contents),
                Kind::Plain { .. } => Some(&[]),
                Kind::Raw { contents }
                | Kind::DynReloc { contents, .. }
                | Kind::Added { contents } => Some(*contents),
                _ => None,
            };
            match verbatim {
                Some(b) if !b.is_empty() => out.borrowed(s.offset, b).ok_or_else(too_large)?,
                Some(_) => {}
                None => {
                    let built = self.section_image(s);
                    if !built.is_empty() {
                        out.owned(s.offset, &built).ok_or_else(too_large)?;
                    }
                }
            }
        }

        if write_shdrs {
            let sz = class.shdr_size();
            let mut null = vec![0u8; sz];
            let shnum = live + 1;
            let names_index = self.section_names.map_or(0, |n| self.secs[n].index);
            let (size0, link0) = (
                if shnum >= u64::from(SHN_LORESERVE) {
                    shnum
                } else {
                    0
                },
                if names_index >= SHN_LORESERVE {
                    names_index
                } else {
                    0
                },
            );
            self.put_shdr(
                &mut null,
                &SectionHeader {
                    size: size0,
                    link: link0,
                    ..SectionHeader::default()
                },
            );
            out.owned(self.shoff, &null).ok_or_else(too_large)?;
            for (pos, id) in self.live().enumerate() {
                let s = &self.secs[id];
                let mut h = vec![0u8; sz];
                let header = SectionHeader {
                    name: s.name_index,
                    sh_type: s.sh_type,
                    flags: s.flags,
                    addr: s.addr,
                    offset: s.offset,
                    size: s.size,
                    link: s.link,
                    info: s.info,
                    addralign: s.align,
                    entsize: s.entsize,
                };
                self.put_shdr(&mut h, &header);
                let at = self.shoff + (pos as u64 + 1) * sz as u64;
                out.owned(at, &h).ok_or_else(too_large)?;
            }
        }
        Ok(out.finish())
    }

    /// Writes `sh` into `h` in the output's class and byte order (32-bit
    /// fields truncated, as llvm-objcopy writes them).
    fn put_shdr(&self, h: &mut [u8], sh: &SectionHeader) {
        let c = self.class;
        c.put_u32(h, 0, sh.name);
        c.put_u32(h, 4, sh.sh_type);
        if c.is64 {
            c.put_u64(h, 8, sh.flags);
            c.put_u64(h, 16, sh.addr);
            c.put_u64(h, 24, sh.offset);
            c.put_u64(h, 32, sh.size);
            c.put_u32(h, 40, sh.link);
            c.put_u32(h, 44, sh.info);
            c.put_u64(h, 48, sh.addralign);
            // llvm-objcopy keeps a section's entry size in 32 bits.
            c.put_u64(h, 56, u64::from(sh.entsize as u32));
        } else {
            c.put_u32(h, 8, sh.flags as u32);
            c.put_u32(h, 12, sh.addr as u32);
            c.put_u32(h, 16, sh.offset as u32);
            c.put_u32(h, 20, sh.size as u32);
            c.put_u32(h, 24, sh.link);
            c.put_u32(h, 28, sh.info);
            c.put_u32(h, 32, sh.addralign as u32);
            c.put_u32(h, 36, sh.entsize as u32);
        }
    }

    /// The bytes a rewritten table section contributes to the file
    /// (verbatim sections are copied by the caller).
    fn section_image(&self, s: &Section<'a, 'd>) -> Vec<u8> {
        let c = self.class;
        match &s.kind {
            Kind::Plain { .. } | Kind::Raw { .. } | Kind::DynReloc { .. } | Kind::Added { .. } => {
                Vec::new()
            }
            Kind::StrTab(b) => {
                let mut v = vec![0u8; b.size() as usize];
                b.write_into(&mut v);
                v
            }
            Kind::SymTab { .. } => {
                let esz = c.sym_size();
                let mut v = vec![0u8; self.sym_order.len() * esz];
                let names = match s.kind {
                    Kind::SymTab { names, .. } => names,
                    _ => None,
                };
                for (i, &sid) in self.sym_order.iter().enumerate() {
                    let sym = &self.symbols[sid];
                    let name_index = match names.map(|n| &self.secs[n].kind) {
                        Some(Kind::StrTab(b)) => b.offset(sym.name),
                        _ => 0,
                    };
                    let shndx: u16 = match sym.defined_in {
                        Some(d) if self.secs[d].index >= SHN_LORESERVE => SHN_XINDEX as u16,
                        Some(d) => self.secs[d].index as u16,
                        None => sym.shndx_type,
                    };
                    let info = (sym.binding << 4).wrapping_add(sym.sym_type & 0x0f);
                    let o = i * esz;
                    c.put_u32(&mut v, o, name_index);
                    if c.is64 {
                        v[o + 4] = info;
                        v[o + 5] = sym.other;
                        c.put_u16(&mut v, o + 6, shndx);
                        c.put_u64(&mut v, o + 8, sym.value);
                        c.put_u64(&mut v, o + 16, sym.size);
                    } else {
                        c.put_u32(&mut v, o + 4, sym.value as u32);
                        c.put_u32(&mut v, o + 8, sym.size as u32);
                        v[o + 12] = info;
                        v[o + 13] = sym.other;
                        c.put_u16(&mut v, o + 14, shndx);
                    }
                }
                v
            }
            Kind::Reloc { relocs, .. } => {
                let rela = s.sh_type != SHT_REL;
                let esz = c.rel_size(rela);
                let mut v = vec![0u8; relocs.len() * esz];
                for (i, r) in relocs.iter().enumerate() {
                    let sym = r.symbol.map_or(0, |sid| self.sym_index[sid]);
                    let info = encode_r_info(c, self.mips64el, sym, r.r_type);
                    let o = i * esz;
                    c.put_word(&mut v, o, r.offset);
                    c.put_word(&mut v, o + c.addr_size() as usize, info);
                    if rela {
                        c.put_word(&mut v, o + 2 * c.addr_size() as usize, r.addend);
                    }
                }
                v
            }
            Kind::Group {
                signature,
                flag_word,
                members,
                ..
            } => {
                let mut fw = *flag_word;
                if fw & GRP_COMDAT != 0 {
                    if let Some(sig) = signature {
                        if self.symbols[*sig].binding == STB_LOCAL {
                            fw &= !GRP_COMDAT;
                        }
                    }
                }
                let mut v = vec![0u8; 4 + 4 * members.len()];
                c.put_u32(&mut v, 0, fw);
                for (i, &m) in members.iter().enumerate() {
                    c.put_u32(&mut v, 4 + 4 * i, self.secs[m].index);
                }
                v
            }
            Kind::Shndx { indexes, .. } => {
                let mut v = vec![0u8; indexes.len() * 4];
                for (i, &x) in indexes.iter().enumerate() {
                    c.put_u32(&mut v, i * 4, x);
                }
                v
            }
        }
    }
}

/// `compareSegmentsByOffset`.
fn seg_less(a: &Segment<'_>, b: &Segment<'_>) -> bool {
    (a.orig_offset, a.index) < (b.orig_offset, b.index)
}

/// `sectionWithinSegment`, evaluated while reading (offsets still original).
fn section_within_segment(sec: &Section<'_, '_>, seg: &Segment<'_>) -> bool {
    let size = if sec.size == 0 { 1 } else { sec.size };
    if sec.orig_offset == u64::MAX {
        return false;
    }
    if sec.sh_type == SHT_NOBITS {
        if sec.flags & SHF_ALLOC == 0 {
            return false;
        }
        let sec_tls = sec.flags & SHF_TLS != 0;
        let seg_tls = seg.p_type == PT_TLS;
        if sec_tls != seg_tls {
            return false;
        }
        return seg.vaddr <= sec.addr
            && seg.vaddr.wrapping_add(seg.memsz) >= sec.addr.wrapping_add(size);
    }
    seg.offset <= sec.orig_offset
        && seg.offset.wrapping_add(seg.filesz) >= sec.orig_offset.wrapping_add(size)
}

fn decode_r_info(c: Class, mips64el: bool, info: u64) -> (u32, u32) {
    if !c.is64 {
        return ((info >> 8) as u32, (info & 0xff) as u32);
    }
    let t = if mips64el {
        (info << 32)
            | ((info >> 8) & 0xff00_0000)
            | ((info >> 24) & 0x00ff_0000)
            | ((info >> 40) & 0x0000_ff00)
            | ((info >> 56) & 0x0000_00ff)
    } else {
        info
    };
    ((t >> 32) as u32, (t & 0xffff_ffff) as u32)
}

fn encode_r_info(c: Class, mips64el: bool, sym: u32, r_type: u32) -> u64 {
    if !c.is64 {
        return (u64::from(sym) << 8).wrapping_add(u64::from(r_type as u8)) & 0xffff_ffff;
    }
    let r = (u64::from(sym) << 32).wrapping_add(u64::from(r_type));
    if mips64el {
        (r >> 32)
            | ((r & 0xff00_0000) << 8)
            | ((r & 0x00ff_0000) << 24)
            | ((r & 0x0000_ff00) << 40)
            | ((r & 0x0000_00ff) << 56)
    } else {
        r
    }
}

/// Runs the edit on an ELF object and serialises the result.
pub(crate) fn rewrite<'d>(data: &'d [u8], edit: &Edit<'_, 'd>) -> Result<Pieces<'d>, Error> {
    let mut obj = Object::read(data)?;
    // llvm-objcopy always runs its section removal, even with nothing to
    // remove: that pass also drops empty groups.
    match edit.remove {
        Some(pred) => obj.remove_sections(&|s, _| pred(s.name))?,
        None => obj.remove_sections(&|_, _| false)?,
    }
    obj.partition_symbols();
    for (name, contents) in edit.add {
        obj.add_section(name.as_slice(), contents);
    }
    if !edit.add.is_empty() {
        for id in obj.order.clone() {
            let name = obj.secs[id].name;
            if edit.add.iter().any(|(n, _)| n.as_slice() == name) {
                obj.set_readonly_exclude(id);
            }
        }
    }
    let total = obj.finalize()?;
    let added: u64 = edit.add.iter().map(|(_, c)| c.len() as u64).sum();
    let limit = (data.len() as u64)
        .saturating_add(added)
        .saturating_add(MAX_GROWTH);
    if total > limit {
        return Err(Error::OutputTooLarge { size: total });
    }
    obj.write(total, obj.had_shdrs)
}

/// A symbol table that section `user` (a relocation section, or a group
/// when `group`) still needs is being removed.
fn symtab_in_use(symtab: Vec<u8>, user: &[u8], group: bool) -> Error {
    ElfError::SymbolTableInUse {
        symtab,
        user: user.to_vec(),
        group,
    }
    .into()
}
