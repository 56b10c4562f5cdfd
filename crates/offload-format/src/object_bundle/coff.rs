//! COFF host objects: reading bundle sections with the acceptance rules of
//! LLVM's `COFFObjectFile`, and the llvm-objcopy COFF writer's behaviour for
//! the bundler's two commands (add sections with `readonly,exclude`, remove
//! `__CLANG_OFFLOAD_BUNDLE__.*`).
//!
//! Regular and "bigobj" COFF objects are handled. PE images (`MZ` files) are
//! not: see [`super::Error::Unsupported`].
//!
//! How llvm-objcopy lays out a COFF object (observed on LLVM 22 and matched
//! here byte for byte): file header, section table, then for each section in
//! order its raw data (`SizeOfRawData` bytes, zero-filled where the input had
//! none, e.g. `.bss`) immediately followed by its relocations, then the symbol
//! table and the string table. Nothing is padded. The string table is rebuilt
//! with LLVM's tail-merging order, section names first.

use super::error::{CoffError, NotObject};
use super::pieces::Data;
use crate::objfile::Error as ObjError;
// The rewriter's.
#[cfg(feature = "object-edit")]
use super::{
    error::Error,
    pieces::{Pieces, Sequence},
};
#[cfg(feature = "object-edit")]
use crate::string_table::Builder as StrTabBuilder;
#[cfg(feature = "object-edit")]
use crate::{bytes::Bytes, bytes::Endian, objfile::coff::SectionHeader};

#[cfg(feature = "object-edit")]
const HEADER_SIZE: usize = 20;
#[cfg(feature = "object-edit")]
const BIGOBJ_HEADER_SIZE: usize = 56;
#[cfg(feature = "object-edit")]
const SECTION_HEADER_SIZE: usize = 40;
#[cfg(feature = "object-edit")]
const RELOC_SIZE: usize = 10;
#[cfg(feature = "object-edit")]
const NAME_SIZE: usize = 8;
#[cfg(feature = "object-edit")]
const MAX_SECTIONS_16: usize = 65279;
#[cfg(feature = "object-edit")]
pub(crate) use crate::identify::BIGOBJ_CLASS_ID as BIGOBJ_MAGIC;

#[cfg(feature = "object-edit")]
const IMAGE_SCN_CNT_CODE: u32 = 0x20;
#[cfg(feature = "object-edit")]
const IMAGE_SCN_LNK_NRELOC_OVFL: u32 = 0x0100_0000;
#[cfg(feature = "object-edit")]
const IMAGE_SCN_LNK_REMOVE: u32 = 0x800;
#[cfg(feature = "object-edit")]
const IMAGE_SCN_MEM_READ: u32 = 0x4000_0000;
#[cfg(feature = "object-edit")]
const IMAGE_SCN_MEM_WRITE: u32 = 0x8000_0000;
#[cfg(feature = "object-edit")]
const IMAGE_SCN_MEM_EXECUTE: u32 = 0x2000_0000;
#[cfg(feature = "object-edit")]
const IMAGE_SCN_ALIGN_MASK: u32 = 0x00f0_0000;
#[cfg(feature = "object-edit")]
const IMAGE_SYM_CLASS_STATIC: u8 = 3;
#[cfg(feature = "object-edit")]
const IMAGE_SYM_CLASS_FILE: u8 = 103;
#[cfg(feature = "object-edit")]
const IMAGE_SYM_CLASS_WEAK_EXTERNAL: u8 = 105;
#[cfg(feature = "object-edit")]
const IMAGE_COMDAT_SELECT_ASSOCIATIVE: u8 = 5;

#[cfg(feature = "object-edit")]
fn u16_at(d: &[u8], off: usize) -> Option<u16> {
    Bytes::new(d).u16_at(off as u64, Endian::Little)
}
#[cfg(feature = "object-edit")]
fn u32_at(d: &[u8], off: usize) -> Option<u32> {
    Bytes::new(d).u32_at(off as u64, Endian::Little)
}

/// The COFF reader over the bytes an object-bundle reader looks at.
pub(crate) type CoffFile<'a> = crate::objfile::coff::CoffFile<'a, Data<'a>>;

/// Opens a COFF object like LLVM's `COFFObjectFile::initialize`.
pub(crate) fn open(data: Data<'_>) -> Result<CoffFile<'_>, NotObject> {
    CoffFile::parse(data).map_err(|e| NotObject::Coff(e.into()))
}

impl From<ObjError> for CoffError {
    fn from(e: ObjError) -> Self {
        match e {
            ObjError::CoffStringTableEmpty => CoffError::StringTableEmpty,
            ObjError::CoffInvalidSectionName => CoffError::InvalidSectionName,
            ObjError::Malformed { .. } => CoffError::RelocationsPastEnd,
            _ => CoffError::UnexpectedEof,
        }
    }
}

#[cfg(feature = "object-edit")]
fn coff_read(e: ObjError) -> Error {
    Error::Coff(e.into())
}

#[cfg(feature = "object-edit")]
impl SectionHeader {
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.name);
        for v in [
            self.virtual_size,
            self.virtual_address,
            self.size_of_raw_data,
            self.pointer_to_raw_data,
            self.pointer_to_relocations,
            self.pointer_to_linenumbers,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.number_of_relocations.to_le_bytes());
        out.extend_from_slice(&self.number_of_linenumbers.to_le_bytes());
        out.extend_from_slice(&self.characteristics.to_le_bytes());
    }
}

// ----- the objcopy model -----------------------------------------------------

#[cfg(feature = "object-edit")]
#[derive(Debug, Clone)]
struct Reloc<'a> {
    record: [u8; RELOC_SIZE],
    /// Unique id of the target symbol, and its name for diagnostics.
    target: usize,
    target_name: &'a [u8],
}

#[cfg(feature = "object-edit")]
#[derive(Debug, Clone)]
struct Section<'a, 'd> {
    header: SectionHeader,
    name: &'a [u8],
    /// Borrowed from the input or an added entry, never from a name: the
    /// output borrows it for as long as the input lives.
    contents: &'d [u8],
    /// Replacement contents (rewritten symbol-index tables).
    owned: Option<Vec<u8>>,
    relocs: Vec<Reloc<'a>>,
    unique_id: usize,
}

#[cfg(feature = "object-edit")]
#[derive(Debug, Clone)]
struct Symbol<'a> {
    name: &'a [u8],
    value: u32,
    section_number: i32,
    sym_type: u16,
    storage_class: u8,
    number_of_aux: u8,
    /// Aux records (18 payload bytes each), unless a file record.
    aux: Vec<[u8; 18]>,
    /// File-record payload (trailing NULs trimmed).
    aux_file: Option<&'a [u8]>,
    /// Unique id of the defining section (> 0), or the reserved section number.
    target_section: i64,
    /// Unique id of the section a COMDAT-associative definition follows (0: none).
    associative_target: usize,
    /// Weak-external target: raw index while reading, then unique id.
    weak_target: Option<usize>,
    unique_id: usize,
    raw_index: usize,
    /// Raw index in the input symbol table.
    orig_raw_index: usize,
}

#[cfg(feature = "object-edit")]
/// The COFF part of an edit: what llvm-objcopy's COFF backend does with the
/// bundler's options.
pub(crate) struct CoffEdit<'a, 'd> {
    pub(crate) remove: Option<super::objcopy::NamePredicate<'a>>,
    pub(crate) add: &'a [(Vec<u8>, &'d [u8])],
}

#[cfg(feature = "object-edit")]
/// `'a` is the lifetime of names and symbols, `'d` that of section
/// contents (the input and the added entries), which may be longer.
struct Object<'a, 'd> {
    machine: u16,
    timestamp: u32,
    characteristics: u16,
    sections: Vec<Section<'a, 'd>>,
    /// Contents of added sections are owned by the caller; same lifetime.
    symbols: Vec<Symbol<'a>>,
    next_section_id: usize,
}

#[cfg(feature = "object-edit")]
fn coff_err(e: CoffError) -> Error {
    Error::Coff(e)
}

#[cfg(feature = "object-edit")]
impl<'a, 'd: 'a> Object<'a, 'd> {
    fn read(file: &CoffFile<'d>) -> Result<Self, Error> {
        let mut obj = Object {
            machine: file.machine(),
            timestamp: file.timestamp(),
            characteristics: file.characteristics(),
            sections: Vec::with_capacity(file.section_count()),
            symbols: Vec::new(),
            next_section_id: 1,
        };
        let mut raw_relocs: Vec<&'a [u8]> = Vec::with_capacity(file.section_count());
        for i in 0..file.section_count() {
            let mut header = file.section_header(i).map_err(coff_read)?;
            let contents = file.section_contents(i).map_err(coff_read)?;
            raw_relocs.push(file.relocations(&header).map_err(coff_read)?);
            let name = file.section_name(i).map_err(coff_read)?;
            header.characteristics &= !IMAGE_SCN_LNK_NRELOC_OVFL;
            obj.sections.push(Section {
                header,
                name,
                contents,
                owned: None,
                relocs: Vec::new(),
                unique_id: obj.next_section_id,
            });
            obj.next_section_id += 1;
        }
        obj.read_symbols(file)?;
        // Raw symbol-table slots: the symbol's unique id, or None for aux slots.
        let mut raw: Vec<Option<usize>> = Vec::new();
        for s in &obj.symbols {
            raw.push(Some(s.unique_id));
            raw.extend(std::iter::repeat_n(None, usize::from(s.number_of_aux)));
        }
        for s in &mut obj.symbols {
            if let Some(w) = s.weak_target {
                let target = raw
                    .get(w)
                    .ok_or(CoffError::WeakExternalOutOfRange)
                    .map_err(coff_err)?
                    .ok_or(CoffError::InvalidSymbolTableIndex)
                    .map_err(coff_err)?;
                s.weak_target = Some(target);
            }
        }
        for (sec, records) in obj.sections.iter_mut().zip(raw_relocs) {
            for r in records.chunks_exact(RELOC_SIZE) {
                let index = u32_at(r, 4).unwrap_or(0) as usize;
                let target = raw
                    .get(index)
                    .ok_or(CoffError::SymbolTableIndexOutOfRange)
                    .map_err(coff_err)?
                    .ok_or(CoffError::InvalidSymbolTableIndex)
                    .map_err(coff_err)?;
                let mut record = [0u8; RELOC_SIZE];
                record.copy_from_slice(r);
                sec.relocs.push(Reloc {
                    record,
                    target,
                    target_name: obj.symbols[target].name,
                });
            }
        }
        Ok(obj)
    }

    fn read_symbols(&mut self, file: &CoffFile<'d>) -> Result<(), Error> {
        let ss = file.symbol_size() as usize;
        let mut i: u32 = 0;
        while i < file.symbol_count() {
            let base = file
                .symbol_table_offset()
                .map(|b| b as usize)
                .ok_or(CoffError::ParseFailed)
                .map_err(coff_err)?;
            let at = base + i as usize * ss;
            let rec = file
                .data()
                .get(at..at + ss)
                .ok_or(CoffError::UnexpectedEof)
                .map_err(coff_err)?;
            let (value, section_number, sym_type, storage_class, number_of_aux) =
                if file.is_bigobj() {
                    (
                        u32_at(rec, 8).unwrap_or(0),
                        u32_at(rec, 12).unwrap_or(0) as i32,
                        u16_at(rec, 16).unwrap_or(0),
                        rec[18],
                        rec[19],
                    )
                } else {
                    let n16 = u16_at(rec, 12).unwrap_or(0);
                    // Reserved numbers come back negative.
                    let n = if usize::from(n16) <= MAX_SECTIONS_16 {
                        i32::from(n16)
                    } else {
                        i32::from(n16 as i16)
                    };
                    (
                        u32_at(rec, 8).unwrap_or(0),
                        n,
                        u16_at(rec, 14).unwrap_or(0),
                        rec[16],
                        rec[17],
                    )
                };
            let name = if u32_at(rec, 0) == Some(0) {
                file.string(u32_at(rec, 4).unwrap_or(0))
                    .map_err(coff_read)?
            } else if rec[7] == 0 {
                super::elf::cstr(&rec[..8])
            } else {
                &rec[..8]
            };
            let aux_len = usize::from(number_of_aux) * ss;
            // LLVM reads aux records without a bounds check; we insist they
            // are inside the file.
            let aux_bytes = file
                .data()
                .get(at + ss..at + ss + aux_len)
                .ok_or(CoffError::UnexpectedEof)
                .map_err(coff_err)?;
            let mut sym = Symbol {
                name,
                value,
                section_number,
                sym_type,
                storage_class,
                number_of_aux,
                aux: Vec::new(),
                aux_file: None,
                target_section: 0,
                associative_target: 0,
                weak_target: None,
                unique_id: self.symbols.len(),
                raw_index: 0,
                orig_raw_index: i as usize,
            };
            if storage_class == IMAGE_SYM_CLASS_FILE {
                let mut end = aux_bytes.len();
                while end > 0 && aux_bytes[end - 1] == 0 {
                    end -= 1;
                }
                sym.aux_file = Some(&aux_bytes[..end]);
            } else {
                for k in 0..usize::from(number_of_aux) {
                    let mut a = [0u8; 18];
                    a.copy_from_slice(&aux_bytes[k * ss..k * ss + 18]);
                    sym.aux.push(a);
                }
            }
            if section_number <= 0 {
                sym.target_section = i64::from(section_number);
            } else if (section_number as usize) <= self.sections.len() {
                sym.target_section = self.sections[section_number as usize - 1].unique_id as i64;
            } else {
                return Err(coff_err(CoffError::SectionNumberOutOfRange));
            }
            if number_of_aux > 0 && storage_class == IMAGE_SYM_CLASS_STATIC {
                let sd = &aux_bytes[..18];
                if sd[14] == IMAGE_COMDAT_SELECT_ASSOCIATIVE {
                    let low = u32::from(u16_at(sd, 12).unwrap_or(0));
                    let high = if file.is_bigobj() {
                        u32::from(u16_at(sd, 16).unwrap_or(0)) << 16
                    } else {
                        0
                    };
                    let index = (low | high) as i32;
                    if index <= 0 || index as usize > self.sections.len() {
                        return Err(coff_err(CoffError::BadAssociativeIndex));
                    }
                    sym.associative_target = self.sections[index as usize - 1].unique_id;
                }
            } else if number_of_aux > 0 && storage_class == IMAGE_SYM_CLASS_WEAK_EXTERNAL {
                sym.weak_target = Some(u32_at(aux_bytes, 0).unwrap_or(0) as usize);
            }
            self.symbols.push(sym);
            i = i.saturating_add(1 + u32::from(number_of_aux));
        }
        Ok(())
    }

    /// `Object::removeSections`, including sections associative to removed
    /// ones, and the symbols defined in removed sections.
    fn remove_sections(&mut self, pred: &dyn Fn(&Section<'a, 'd>) -> bool) {
        let mut associated: Vec<usize> = Vec::new();
        let mut first = true;
        loop {
            let mut removed: Vec<usize> = Vec::new();
            self.sections.retain(|s| {
                let gone = if first {
                    pred(s)
                } else {
                    associated.contains(&s.unique_id)
                };
                if gone {
                    removed.push(s.unique_id);
                }
                !gone
            });
            first = false;
            associated.clear();
            self.symbols.retain(|s| {
                if s.associative_target != 0 && removed.contains(&s.associative_target) {
                    associated.push(s.target_section as usize);
                }
                !(s.target_section > 0 && removed.contains(&(s.target_section as usize)))
            });
            if associated.is_empty() {
                break;
            }
        }
    }

    /// `--set-section-flags=NAME=readonly,exclude` on an existing section.
    fn readonly_exclude(old: u32) -> u32 {
        (old & IMAGE_SCN_ALIGN_MASK) | IMAGE_SCN_MEM_READ | IMAGE_SCN_LNK_REMOVE
    }

    fn add_section(&mut self, name: &'a [u8], contents: &'d [u8]) -> Result<(), Error> {
        let chars = Self::readonly_exclude(0);
        let need_va =
            chars & (IMAGE_SCN_MEM_EXECUTE | IMAGE_SCN_MEM_READ | IMAGE_SCN_MEM_WRITE) != 0;
        let size = u32::try_from(contents.len()).map_err(|_| Error::OutputTooLarge {
            size: contents.len() as u64,
        })?;
        let next_rva = self.sections.last().map_or(0, |l| {
            l.header.virtual_address.wrapping_add(l.header.virtual_size)
        });
        let header = SectionHeader {
            name: [0; 8],
            virtual_size: if need_va { size } else { 0 },
            virtual_address: if need_va { next_rva } else { 0 },
            size_of_raw_data: size,
            pointer_to_raw_data: 0,
            pointer_to_relocations: 0,
            pointer_to_linenumbers: 0,
            number_of_relocations: 0,
            number_of_linenumbers: 0,
            characteristics: chars,
        };
        self.sections.push(Section {
            header,
            name,
            contents,
            owned: None,
            relocs: Vec::new(),
            unique_id: self.next_section_id,
        });
        self.next_section_id += 1;
        Ok(())
    }

    /// Serialises the object; `limit` caps the output size (a `.bss`-like
    /// section is written out as zeros, so a header word alone could ask for
    /// gigabytes).
    fn write(mut self, limit: u64) -> Result<Pieces<'d>, Error> {
        let bigobj = self.sections.len() > MAX_SECTIONS_16;
        let ss = if bigobj { 20 } else { 18 };
        // Raw symbol indexes; file records take as many slots as their name needs.
        let mut raw = 0usize;
        for s in &mut self.symbols {
            if let Some(f) = s.aux_file {
                if !f.is_empty() {
                    s.number_of_aux = f.len().div_ceil(ss) as u8;
                }
            }
            s.raw_index = raw;
            raw += 1 + usize::from(s.number_of_aux);
        }
        let sym_table_size = raw * ss;
        let sec_index: std::collections::HashMap<usize, usize> = self
            .sections
            .iter()
            .enumerate()
            .map(|(i, s)| (s.unique_id, i + 1))
            .collect();
        let sym_raw: std::collections::HashMap<usize, usize> = self
            .symbols
            .iter()
            .map(|s| (s.unique_id, s.raw_index))
            .collect();

        // Relocation targets.
        for sec in &mut self.sections {
            for r in &mut sec.relocs {
                let raw_index = *sym_raw.get(&r.target).ok_or_else(|| {
                    coff_err(CoffError::RelocationTargetMissing {
                        name: r.target_name.to_vec(),
                        id: r.target,
                    })
                })?;
                r.record[4..8].copy_from_slice(&(raw_index as u32).to_le_bytes());
            }
        }
        // Symbol section numbers and section-definition aux records.
        for s in &mut self.symbols {
            if s.target_section <= 0 {
                s.section_number = s.target_section as i32;
            } else {
                let idx = *sec_index
                    .get(&(s.target_section as usize))
                    .ok_or_else(|| coff_err(CoffError::SymbolInRemovedSection(s.name.to_vec())))?;
                s.section_number = idx as i32;
                if s.number_of_aux == 1 && s.storage_class == IMAGE_SYM_CLASS_STATIC {
                    let number = if s.associative_target == 0 {
                        idx
                    } else {
                        *sec_index.get(&s.associative_target).ok_or_else(|| {
                            coff_err(CoffError::AssociativeToRemoved(s.name.to_vec()))
                        })?
                    };
                    if let Some(a) = s.aux.first_mut() {
                        a[12..14].copy_from_slice(&(number as u16).to_le_bytes());
                        a[16..18].copy_from_slice(&((number >> 16) as u16).to_le_bytes());
                    }
                }
            }
            if let (Some(w), 1) = (s.weak_target, s.number_of_aux) {
                let raw_index = *sym_raw
                    .get(&w)
                    .ok_or_else(|| coff_err(CoffError::WeakTargetMissing(s.name.to_vec())))?;
                if let Some(a) = s.aux.first_mut() {
                    a[0..4].copy_from_slice(&(raw_index as u32).to_le_bytes());
                }
            }
        }

        self.rewrite_symidx_sections()?;

        // Layout: headers, then each section's data and relocations.
        let header_size = if bigobj {
            BIGOBJ_HEADER_SIZE
        } else {
            HEADER_SIZE
        };
        let mut file_size = (header_size + SECTION_HEADER_SIZE * self.sections.len()) as u64;
        for sec in &mut self.sections {
            let h = &mut sec.header;
            h.pointer_to_raw_data = if h.size_of_raw_data > 0 {
                file_size as u32
            } else {
                0
            };
            file_size += u64::from(h.size_of_raw_data);
            let n = sec.relocs.len();
            if n >= 0xffff {
                h.characteristics |= IMAGE_SCN_LNK_NRELOC_OVFL;
                h.number_of_relocations = 0xffff;
                h.pointer_to_relocations = file_size as u32;
                file_size += RELOC_SIZE as u64;
            } else {
                h.number_of_relocations = n as u16;
                h.pointer_to_relocations = if n > 0 { file_size as u32 } else { 0 };
            }
            file_size += (n * RELOC_SIZE) as u64;
        }

        // String table: long section names first, then long symbol names.
        let mut strtab = StrTabBuilder::new_coff();
        for sec in &self.sections {
            if sec.name.len() > NAME_SIZE {
                strtab.add_with_priority(sec.name, u8::MAX);
            }
        }
        for s in &self.symbols {
            if s.name.len() > NAME_SIZE {
                strtab.add(s.name);
            }
        }
        let strtab_size = strtab.finalize();
        for sec in &mut self.sections {
            let mut name = [0u8; 8];
            if sec.name.len() <= NAME_SIZE {
                name[..sec.name.len()].copy_from_slice(sec.name);
            } else {
                let off = strtab.offset(sec.name);
                encode_section_name(&mut name, off)
                    .ok_or(coff_err(CoffError::StringTableTooLarge))?;
            }
            sec.header.name = name;
        }
        let symtab_ptr = file_size;
        file_size += sym_table_size as u64 + strtab_size;
        if file_size > u64::from(u32::MAX) || file_size > limit {
            return Err(Error::OutputTooLarge { size: file_size });
        }

        // Section contents are borrowed; everything else is made here.
        let mut seq = Sequence::new();
        let out = seq.buf();
        let nsections = self.sections.len();
        if bigobj {
            out.extend_from_slice(&0u16.to_le_bytes());
            out.extend_from_slice(&0xffffu16.to_le_bytes());
            out.extend_from_slice(&2u16.to_le_bytes());
            out.extend_from_slice(&self.machine.to_le_bytes());
            out.extend_from_slice(&self.timestamp.to_le_bytes());
            out.extend_from_slice(&BIGOBJ_MAGIC);
            out.extend_from_slice(&[0; 16]);
            out.extend_from_slice(&(nsections as u32).to_le_bytes());
            out.extend_from_slice(&(symtab_ptr as u32).to_le_bytes());
            out.extend_from_slice(&(raw as u32).to_le_bytes());
        } else {
            out.extend_from_slice(&self.machine.to_le_bytes());
            out.extend_from_slice(&(nsections as u16).to_le_bytes());
            out.extend_from_slice(&self.timestamp.to_le_bytes());
            out.extend_from_slice(&(symtab_ptr as u32).to_le_bytes());
            out.extend_from_slice(&(raw as u32).to_le_bytes());
            out.extend_from_slice(&0u16.to_le_bytes());
            out.extend_from_slice(&self.characteristics.to_le_bytes());
        }
        for sec in &self.sections {
            sec.header.write(out);
        }
        for sec in &self.sections {
            let h = &sec.header;
            let raw_len = h.size_of_raw_data as usize;
            let take = match &sec.owned {
                Some(owned) => {
                    let take = owned.len().min(raw_len);
                    seq.buf().extend_from_slice(&owned[..take]);
                    take
                }
                None => {
                    let take = sec.contents.len().min(raw_len);
                    seq.borrowed(&sec.contents[..take]);
                    take
                }
            };
            // Code is padded with int3, everything else with zeros.
            let pad = if h.characteristics & IMAGE_SCN_CNT_CODE != 0 {
                0xcc
            } else {
                0
            };
            seq.fill(pad, (raw_len - take) as u64);
            let out = seq.buf();
            if sec.relocs.len() >= 0xffff {
                out.extend_from_slice(&((sec.relocs.len() + 1) as u32).to_le_bytes());
                out.extend_from_slice(&[0; 6]);
            }
            for r in &sec.relocs {
                out.extend_from_slice(&r.record);
            }
        }
        let out = seq.buf();
        for s in &self.symbols {
            let start = out.len();
            if s.name.len() > NAME_SIZE {
                out.extend_from_slice(&0u32.to_le_bytes());
                out.extend_from_slice(&strtab.offset(s.name).to_le_bytes());
            } else {
                // llvm-objcopy copies a short name with strncpy: a name
                // read as all 8 bytes (its last byte not NUL) ends at its
                // first NUL.
                let name = super::elf::cstr(s.name);
                let mut n = [0u8; 8];
                n[..name.len()].copy_from_slice(name);
                out.extend_from_slice(&n);
            }
            out.extend_from_slice(&s.value.to_le_bytes());
            if bigobj {
                out.extend_from_slice(&s.section_number.to_le_bytes());
            } else {
                out.extend_from_slice(&(s.section_number as u16).to_le_bytes());
            }
            out.extend_from_slice(&s.sym_type.to_le_bytes());
            out.push(s.storage_class);
            out.push(s.number_of_aux);
            debug_assert_eq!(out.len() - start, ss);
            match s.aux_file {
                Some(f) => {
                    // The name spans the slots; an empty one leaves them zero.
                    let slots = usize::from(s.number_of_aux) * ss;
                    let at = out.len();
                    out.resize(at + slots, 0);
                    let n = f.len().min(slots);
                    out[at..at + n].copy_from_slice(&f[..n]);
                }
                None => {
                    for a in &s.aux {
                        out.extend_from_slice(a);
                        out.resize(out.len() + (ss - 18), 0);
                    }
                }
            }
        }
        let at = out.len();
        out.resize(at + strtab_size as usize, 0);
        strtab.write_into(&mut out[at..]);
        out[at..at + 4].copy_from_slice(&(strtab_size as u32).to_le_bytes());
        debug_assert_eq!(seq.len(), file_size);
        let pieces = seq.finish();
        if self.sections.iter().any(|s| relocs_land_on_the_header(s)) {
            let headers = header_size + SECTION_HEADER_SIZE * nsections;
            return Ok(self.as_objcopy_writes_it(&pieces, headers, symtab_ptr));
        }
        Ok(pieces)
    }

    /// llvm-objcopy 22 writes a section's relocations right after its raw
    /// data, counting from the data pointer. A section without raw data has
    /// a data pointer of 0, so its relocations are written at the start of
    /// the file, over the headers, and their place in the layout stays
    /// zero. This redoes that write over `laid_out` (the same layout with
    /// everything in its place); the caller's read-back then refuses the
    /// result when it no longer reads as an object.
    fn as_objcopy_writes_it(
        &self,
        laid_out: &Pieces<'_>,
        headers: usize,
        symtab_ptr: u64,
    ) -> Pieces<'d> {
        let v = laid_out.to_vec();
        let mut seq = Sequence::new();
        let out = seq.buf();
        out.resize(v.len(), 0);
        out[..headers].copy_from_slice(&v[..headers]);
        for sec in &self.sections {
            let h = &sec.header;
            let data = h.pointer_to_raw_data as usize;
            let raw = h.size_of_raw_data as usize;
            out[data..data + raw].copy_from_slice(&v[data..data + raw]);
            let n = sec.relocs.len();
            if n == 0 {
                continue;
            }
            let len = (n + usize::from(n >= 0xffff)) * RELOC_SIZE;
            let from = h.pointer_to_relocations as usize;
            let to = data + raw;
            out[to..to + len].copy_from_slice(&v[from..from + len]);
        }
        let tail = symtab_ptr as usize;
        out[tail..].copy_from_slice(&v[tail..]);
        seq.finish()
    }
}

#[cfg(feature = "object-edit")]
/// Whether llvm-objcopy writes the section's relocations over the file
/// header (see [`Object::as_objcopy_writes_it`]).
fn relocs_land_on_the_header(sec: &Section<'_, '_>) -> bool {
    sec.header.size_of_raw_data == 0 && !sec.relocs.is_empty()
}

#[cfg(feature = "object-edit")]
impl Object<'_, '_> {
    /// Control Flow Guard tables (`.gfids$y` and friends) hold raw symbol
    /// indexes: llvm-objcopy maps them to the new indexes and recomputes the
    /// checksum in the section's definition symbol (objects only).
    fn rewrite_symidx_sections(&mut self) -> Result<(), Error> {
        fn is_symidx(name: &[u8]) -> bool {
            matches!(
                name,
                b".gljmp$y" | b".giats$y" | b".gfids$y" | b".gehcont$y"
            )
        }
        let id_map: std::collections::HashMap<usize, usize> = self
            .symbols
            .iter()
            .map(|s| (s.orig_raw_index, s.raw_index))
            .collect();
        // Section unique id -> position of its definition symbol (last wins).
        let mut def_of: std::collections::HashMap<i64, usize> = std::collections::HashMap::new();
        for (i, s) in self.symbols.iter().enumerate() {
            if s.storage_class == IMAGE_SYM_CLASS_STATIC
                && s.number_of_aux == 1
                && s.value == 0
                && is_symidx(s.name)
            {
                def_of.insert(s.target_section, i);
            }
        }
        for sec in &mut self.sections {
            if !is_symidx(sec.name) || sec.contents.is_empty() {
                continue;
            }
            let def = *def_of
                .get(&(sec.unique_id as i64))
                .ok_or_else(|| coff_err(CoffError::SymIdxWithoutSymbol(sec.name.to_vec())))?;
            if sec.contents.len() % 4 != 0 {
                // LLVM reads past its buffer for a trailing partial entry.
                return Err(coff_err(CoffError::SymIdxPartialEntry(sec.name.to_vec())));
            }
            let mut new = Vec::with_capacity(sec.contents.len());
            for w in sec.contents.chunks_exact(4) {
                let id = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
                let mapped = *id_map.get(&(id as usize)).ok_or_else(|| {
                    coff_err(CoffError::SymIdxStale {
                        section: sec.name.to_vec(),
                        index: id,
                    })
                })?;
                new.extend_from_slice(&(mapped as u32).to_le_bytes());
            }
            let crc = jam_crc(&new);
            if let Some(a) = self.symbols[def].aux.first_mut() {
                a[8..12].copy_from_slice(&crc.to_le_bytes());
            }
            sec.owned = Some(new);
        }
        Ok(())
    }
}

#[cfg(feature = "object-edit")]
/// LLVM's `JamCRC` started from 0: the reflected CRC-32 register without the
/// usual initial and final inversion.
fn jam_crc(data: &[u8]) -> u32 {
    let mut crc: u32 = 0;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    crc
}

#[cfg(feature = "object-edit")]
/// `COFF::encodeSectionName`: `/decimal` up to 9999999, else `//base64`.
fn encode_section_name(out: &mut [u8; 8], offset: u32) -> Option<()> {
    if offset <= 9_999_999 {
        let s = format!("/{offset}");
        out[..s.len()].copy_from_slice(s.as_bytes());
        return Some(());
    }
    if u64::from(offset) > 0xF_FFFF_FFFFu64 {
        return None;
    }
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    out[0] = b'/';
    out[1] = b'/';
    let mut v = u64::from(offset);
    for i in (2..8).rev() {
        out[i] = ALPHABET[(v % 64) as usize];
        v /= 64;
    }
    Some(())
}

#[cfg(feature = "object-edit")]
/// Runs the bundler's llvm-objcopy edit on a COFF object.
pub(crate) fn rewrite<'d>(data: &'d [u8], edit: &CoffEdit<'_, 'd>) -> Result<Pieces<'d>, Error> {
    let file = open(Data::Slice(data))?;
    if !file.is_bigobj() && u16_at(data, 2) == Some(0xffff) {
        return Err(coff_err(CoffError::ImportLibraryHeader));
    }
    let mut obj = Object::read(&file)?;
    if let Some(pred) = edit.remove {
        obj.remove_sections(&|s| pred(s.name));
    }
    for sec in &mut obj.sections {
        if edit.add.iter().any(|(n, _)| n.as_slice() == sec.name) {
            sec.header.characteristics = Object::readonly_exclude(sec.header.characteristics);
        }
    }
    for (name, contents) in edit.add {
        obj.add_section(name.as_slice(), contents)?;
    }
    let added: u64 = edit.add.iter().map(|(_, c)| c.len() as u64).sum();
    let limit = (data.len() as u64)
        .saturating_add(added)
        .saturating_add(super::objcopy::MAX_GROWTH);
    obj.write(limit)
}

#[cfg(all(test, feature = "object-edit"))]
mod tests {
    use super::*;
    use crate::objfile::coff::{decode_base64, decode_decimal};

    #[test]
    fn section_name_offsets_round_trip() {
        for off in [4u32, 9_999_999, 10_000_000, 123_456_789, u32::MAX] {
            let mut name = [0u8; 8];
            encode_section_name(&mut name, off).unwrap();
            let text = crate::object_bundle::elf::cstr(&name);
            let decoded = match text.strip_prefix(b"//") {
                Some(b64) => decode_base64(b64),
                None => decode_decimal(&text[1..]),
            };
            assert_eq!(decoded, Some(off), "{}", String::from_utf8_lossy(text));
        }
        // Seven decimal digits at most, then base 64.
        let mut name = [0u8; 8];
        encode_section_name(&mut name, 10_000_000).unwrap();
        assert_eq!(&name, b"//AAmJaA");
    }

    #[test]
    fn name_decoding_is_strict() {
        assert_eq!(decode_decimal(b""), None);
        assert_eq!(decode_decimal(b"+4"), None);
        assert_eq!(decode_decimal(b"4294967296"), None);
        assert_eq!(decode_base64(b"AAAAAAA"), None);
        assert_eq!(decode_base64(b"*"), None);
        assert_eq!(decode_base64(b""), Some(0));
    }

    #[test]
    fn jam_crc_is_the_uninverted_register() {
        // Started from 0 and never inverted, zero bytes leave it at 0.
        assert_eq!(jam_crc(b""), 0);
        assert_eq!(jam_crc(&[0, 0, 0, 0]), 0);
        // The checksum llvm-objcopy 22 wrote for `.gfids$y` = [8, 9] (the
        // edge-coff/symidx.s fixture after stripping).
        assert_eq!(jam_crc(&[8, 0, 0, 0, 9, 0, 0, 0]), 0xAEED_543F);
    }
}
