//! COFF objects (regular and bigobj) and PE images, with the acceptance
//! rules of LLVM's `COFFObjectFile`.
//!
//! [`CoffFile::parse`] applies what LLVM's `COFFObjectFile::initialize`
//! checks for objects: the header, the section table inside the file, and
//! a symbol table pointer when symbols are declared. A broken symbol or
//! string table is recovered from as in LLVM: the file then simply has
//! none, and only a long section name that needs it fails.
//! [`CoffFile::parse_image`] reads a PE image (`MZ` files) the same way
//! from the COFF header its DOS stub points to.

use std::marker::PhantomData;

use super::Error;
use crate::bytes::{until_nul, Bytes, Endian, ReadRef};
use crate::identify::BIGOBJ_CLASS_ID;

const LE: Endian = Endian::Little;
/// Size of a regular COFF file header.
pub const HEADER_SIZE: u64 = 20;
/// Size of a bigobj COFF file header.
pub const BIGOBJ_HEADER_SIZE: u64 = 56;
/// Size of a section header.
pub const SECTION_HEADER_SIZE: u64 = 40;
/// Size of a relocation record.
pub const RELOC_SIZE: u64 = 10;

/// `IMAGE_SCN_CNT_UNINITIALIZED_DATA`.
pub const IMAGE_SCN_CNT_UNINITIALIZED_DATA: u32 = 0x80;
/// `IMAGE_SCN_LNK_NRELOC_OVFL`.
pub const IMAGE_SCN_LNK_NRELOC_OVFL: u32 = 0x0100_0000;

/// One section header.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SectionHeader {
    /// The 8-byte name field.
    pub name: [u8; 8],
    /// `VirtualSize`.
    pub virtual_size: u32,
    /// `VirtualAddress`.
    pub virtual_address: u32,
    /// `SizeOfRawData`.
    pub size_of_raw_data: u32,
    /// `PointerToRawData`.
    pub pointer_to_raw_data: u32,
    /// `PointerToRelocations`.
    pub pointer_to_relocations: u32,
    /// `PointerToLinenumbers`.
    pub pointer_to_linenumbers: u32,
    /// `NumberOfRelocations`.
    pub number_of_relocations: u16,
    /// `NumberOfLinenumbers`.
    pub number_of_linenumbers: u16,
    /// `Characteristics`.
    pub characteristics: u32,
}

impl SectionHeader {
    /// Reads a section header from the start of `d`.
    pub fn parse(d: &[u8]) -> Option<Self> {
        let mut c = Bytes::new(d);
        Some(SectionHeader {
            name: c.read_array()?,
            virtual_size: c.read_u32(LE)?,
            virtual_address: c.read_u32(LE)?,
            size_of_raw_data: c.read_u32(LE)?,
            pointer_to_raw_data: c.read_u32(LE)?,
            pointer_to_relocations: c.read_u32(LE)?,
            pointer_to_linenumbers: c.read_u32(LE)?,
            number_of_relocations: c.read_u16(LE)?,
            number_of_linenumbers: c.read_u16(LE)?,
            characteristics: c.read_u32(LE)?,
        })
    }

    /// True when the relocation count overflowed into the first record.
    pub(crate) fn has_extended_relocations(&self) -> bool {
        self.characteristics & IMAGE_SCN_LNK_NRELOC_OVFL != 0
            && self.number_of_relocations == 0xffff
    }
}

/// One symbol record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Symbol<'a> {
    /// Index in the symbol table (aux records count).
    pub index: u32,
    /// The name (short, or from the string table).
    pub name: &'a [u8],
    /// `Value`.
    pub value: u32,
    /// `SectionNumber` (1-based; 0 undefined, -1 absolute, -2 debug).
    pub section_number: i32,
    /// `Type`.
    pub sym_type: u16,
    /// `StorageClass`.
    pub storage_class: u8,
    /// `NumberOfAuxSymbols`.
    pub number_of_aux: u8,
}

/// A COFF object or PE image as LLVM's `COFFObjectFile` accepts it.
#[derive(Debug, Clone)]
pub struct CoffFile<'a, R: ReadRef<'a> = &'a [u8]> {
    data: R,
    bigobj: bool,
    /// Offset of the COFF header (0, or after the PE signature).
    header_offset: u64,
    machine: u16,
    timestamp: u32,
    characteristics: u16,
    /// Sections LLVM iterates (0 for an import-library-like header).
    nsections: u64,
    section_table: u64,
    nsyms: u32,
    /// Offset of the symbol table when LLVM could set it up.
    symtab: Option<u64>,
    /// The whole string table, size field included, when present.
    strtab: &'a [u8],
    /// `ImageBase` of a PE image.
    image_base: Option<u64>,
    _data: PhantomData<&'a [u8]>,
}

/// How much of the symbol table `CoffFile::parse_with` requires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymbolTableCheck {
    /// The whole table inside the file, and a pointer whenever symbols are
    /// declared (the rules the bundler's object path reproduces).
    Whole,
    /// Only the table's start inside the file, and a count without a
    /// pointer ignored: LLVM 22's `COFFObjectFile` asks for the symbol
    /// count before the table is set up, and gets 0 (the rules
    /// `llvm-offload-binary` and the archive writer reproduce).
    Start,
}

fn eof() -> Error {
    Error::UnexpectedEof
}

impl<'a, R: ReadRef<'a>> CoffFile<'a, R> {
    /// Opens a COFF object (not a PE image) like LLVM's
    /// `COFFObjectFile::initialize`.
    pub fn parse(data: R) -> Result<Self, Error> {
        Self::parse_with(data, SymbolTableCheck::Whole)
    }

    /// [`CoffFile::parse`] with the given symbol table rules.
    pub(crate) fn parse_with(data: R, check: SymbolTableCheck) -> Result<Self, Error> {
        Self::parse_at(data, 0, None, check)
    }

    /// Opens a PE image: `MZ`, the `PE\0\0` signature where offset 0x3c
    /// points, then a COFF header and its optional header.
    pub fn parse_image(data: R) -> Result<Self, Error> {
        let dos = data.head(0x40);
        if !dos.starts_with(b"MZ") {
            return Err(Error::UnknownFormat);
        }
        let pe = Bytes::new(dos).u32_at(0x3c, LE).ok_or(Error::Truncated {
            what: "DOS header",
            offset: 0,
        })?;
        let pe = u64::from(pe);
        if data.read_bytes_at(pe, 4) != Some(b"PE\0\0") {
            return Err(Error::Malformed {
                what: "no PE signature where the DOS header points",
                offset: pe,
            });
        }
        let coff = pe + 4;
        // The optional header: magic 0x10b (PE32) or 0x20b (PE32+).
        let opt = coff + HEADER_SIZE;
        let magic = data
            .read_bytes_at(opt, 2)
            .and_then(|b| Bytes::new(b).u16_at(0, LE))
            .ok_or(Error::Truncated {
                what: "PE optional header",
                offset: opt,
            })?;
        let image_base = match magic {
            0x10b => data
                .read_bytes_at(opt + 28, 4)
                .and_then(|b| Bytes::new(b).u32_at(0, LE))
                .map(u64::from),
            0x20b => data
                .read_bytes_at(opt + 24, 8)
                .and_then(|b| Bytes::new(b).u64_at(0, LE)),
            _ => None,
        }
        .ok_or(Error::Malformed {
            what: "bad PE optional header",
            offset: opt,
        })?;
        Self::parse_at(data, coff, Some(image_base), SymbolTableCheck::Start)
    }

    fn parse_at(
        data: R,
        at: u64,
        image_base: Option<u64>,
        check: SymbolTableCheck,
    ) -> Result<Self, Error> {
        let h = data.read_bytes_at(at, HEADER_SIZE).ok_or_else(eof)?;
        let b = Bytes::new(h);
        let machine = b.u16_at(0, LE).ok_or_else(eof)?;
        let nsect16 = b.u16_at(2, LE).ok_or_else(eof)?;
        let opt_size = b.u16_at(16, LE).ok_or_else(eof)?;
        let mut file = CoffFile {
            data,
            bigobj: false,
            header_offset: at,
            machine,
            timestamp: b.u32_at(4, LE).ok_or_else(eof)?,
            characteristics: b.u16_at(18, LE).ok_or_else(eof)?,
            nsections: u64::from(nsect16),
            section_table: at + HEADER_SIZE + u64::from(opt_size),
            nsyms: b.u32_at(12, LE).ok_or_else(eof)?,
            symtab: None,
            strtab: &[],
            image_base,
            _data: PhantomData,
        };
        let mut symtab_ptr = b.u32_at(8, LE).ok_or_else(eof)?;
        if image_base.is_none() && machine == 0 && nsect16 == 0xffff {
            if let Some(h) = data.read_bytes_at(0, BIGOBJ_HEADER_SIZE) {
                let b = Bytes::new(h);
                let version = b.u16_at(4, LE).ok_or_else(eof)?;
                if version >= 2 && b.slice(12, 16) == Some(&BIGOBJ_CLASS_ID[..]) {
                    file.bigobj = true;
                    file.machine = b.u16_at(6, LE).ok_or_else(eof)?;
                    file.timestamp = b.u32_at(8, LE).ok_or_else(eof)?;
                    file.characteristics = 0;
                    file.nsections = u64::from(b.u32_at(44, LE).ok_or_else(eof)?);
                    symtab_ptr = b.u32_at(48, LE).ok_or_else(eof)?;
                    file.nsyms = b.u32_at(52, LE).ok_or_else(eof)?;
                    file.section_table = BIGOBJ_HEADER_SIZE;
                }
            }
        }
        if !file.bigobj && nsect16 == 0xffff && image_base.is_none() {
            // LLVM stops here and sees an object without sections.
            file.nsections = 0;
            return Ok(file);
        }
        let table_len = file.nsections * SECTION_HEADER_SIZE;
        if file.section_table.saturating_add(table_len) > data.len() {
            return Err(eof());
        }
        // Without a symbol table pointer there is nothing to set up. LLVM
        // 22's check that such a file declares no symbols compares the
        // count it derives from the table (0 when there is none), so it
        // never fires: the file opens, and a long section or symbol name
        // fails later with "string table empty".
        if symtab_ptr != 0 {
            file.init_symbol_table(symtab_ptr, check);
        }
        Ok(file)
    }

    /// Size of a symbol record (18, or 20 in bigobj files).
    pub fn symbol_size(&self) -> u64 {
        if self.bigobj {
            20
        } else {
            18
        }
    }

    fn init_symbol_table(&mut self, ptr: u32, check: SymbolTableCheck) {
        let len = self.data.len();
        let size = match check {
            SymbolTableCheck::Whole => u64::from(self.nsyms) * self.symbol_size(),
            SymbolTableCheck::Start => 0,
        };
        if u64::from(ptr) + size > len {
            return;
        }
        // LLVM computes the string table position in 32 bits.
        let st = u64::from(ptr.wrapping_add(self.nsyms.wrapping_mul(self.symbol_size() as u32)));
        let Some(raw_size) = self
            .data
            .read_bytes_at(st, 4)
            .and_then(|b| Bytes::new(b).u32_at(0, LE))
        else {
            return;
        };
        let Some(table) = self.data.read_bytes_at(st, u64::from(raw_size)) else {
            return;
        };
        if raw_size > 4 && table.last() != Some(&0) {
            return;
        }
        self.symtab = Some(u64::from(ptr));
        // A declared size below 4 counts as an empty table.
        self.strtab = if raw_size < 4 {
            &[0, 0, 0, 0][..]
        } else {
            table
        };
    }

    /// A bigobj file.
    pub fn is_bigobj(&self) -> bool {
        self.bigobj
    }

    /// A PE image (opened with [`CoffFile::parse_image`]).
    pub fn is_image(&self) -> bool {
        self.image_base.is_some()
    }

    /// `ImageBase` of a PE image.
    pub fn image_base(&self) -> Option<u64> {
        self.image_base
    }

    /// The bytes of the file.
    pub fn data(&self) -> R {
        self.data
    }

    /// `Machine`.
    pub fn machine(&self) -> u16 {
        self.machine
    }

    /// `TimeDateStamp`.
    pub fn timestamp(&self) -> u32 {
        self.timestamp
    }

    /// `Characteristics` (0 for bigobj).
    pub fn characteristics(&self) -> u16 {
        self.characteristics
    }

    /// Offset of the COFF file header.
    pub fn header_offset(&self) -> u64 {
        self.header_offset
    }

    /// Declared number of symbol records (aux records included).
    pub fn symbol_count(&self) -> u32 {
        self.nsyms
    }

    /// Offset of the symbol table, when LLVM could set it up.
    pub fn symbol_table_offset(&self) -> Option<u64> {
        self.symtab
    }

    /// The string table, its 4-byte size field included (empty when the
    /// file has none).
    pub fn string_table(&self) -> &'a [u8] {
        self.strtab
    }

    /// Number of sections LLVM iterates.
    pub fn section_count(&self) -> usize {
        self.nsections as usize
    }

    /// Section header `index` (0-based).
    pub fn section_header(&self, index: usize) -> Result<SectionHeader, Error> {
        if index as u64 >= self.nsections {
            return Err(Error::InvalidSectionIndex {
                index: index as u64,
            });
        }
        let at = self.section_table + index as u64 * SECTION_HEADER_SIZE;
        self.data
            .read_bytes_at(at, SECTION_HEADER_SIZE)
            .and_then(SectionHeader::parse)
            .ok_or_else(eof)
    }

    /// LLVM's `COFFObjectFile::getString`.
    pub fn string(&self, offset: u32) -> Result<&'a [u8], Error> {
        if self.strtab.len() <= 4 {
            return Err(Error::CoffStringTableEmpty);
        }
        let rest = Bytes::new(self.strtab)
            .tail(u64::from(offset))
            .filter(|r| !r.is_empty())
            .ok_or_else(eof)?;
        Ok(until_nul(rest))
    }

    /// LLVM's `COFFObjectFile::getSectionName` for section `index`: the
    /// short name, or a `/decimal` or `//base64` string table offset.
    pub fn section_name(&self, index: usize) -> Result<&'a [u8], Error> {
        if index as u64 >= self.nsections {
            return Err(Error::InvalidSectionIndex {
                index: index as u64,
            });
        }
        let at = self.section_table + index as u64 * SECTION_HEADER_SIZE;
        let raw = self.data.read_bytes_at(at, 8).ok_or_else(eof)?;
        let name = until_nul(raw);
        if let Some(rest) = name.strip_prefix(b"/") {
            let offset = match rest.strip_prefix(b"/") {
                Some(b64) => decode_base64(b64),
                None => decode_decimal(rest),
            }
            .ok_or(Error::CoffInvalidSectionName)?;
            return self.string(offset);
        }
        Ok(name)
    }

    /// LLVM's `COFFObjectFile::getSectionContents`: empty when there is no
    /// raw data pointer, otherwise bounds-checked.
    pub fn section_contents(&self, index: usize) -> Result<&'a [u8], Error> {
        let h = self.section_header(index)?;
        if h.pointer_to_raw_data == 0 {
            return Ok(&[]);
        }
        let size = if self.is_image() {
            // In images SizeOfRawData is rounded up to the file alignment.
            h.size_of_raw_data.min(h.virtual_size)
        } else {
            h.size_of_raw_data
        };
        self.data
            .read_bytes_at(u64::from(h.pointer_to_raw_data), u64::from(size))
            .ok_or_else(eof)
    }

    /// The relocation records of a section (10 bytes each), bounds-checked.
    pub fn relocations(&self, h: &SectionHeader) -> Result<&'a [u8], Error> {
        let ptr = u64::from(h.pointer_to_relocations);
        let count = if h.has_extended_relocations() {
            match self
                .data
                .read_bytes_at(ptr, 4)
                .and_then(|b| Bytes::new(b).u32_at(0, LE))
            {
                Some(n) => u64::from(n.wrapping_sub(1)),
                None => 0,
            }
        } else {
            u64::from(h.number_of_relocations)
        };
        if count == 0 {
            return Ok(&[]);
        }
        let start = if h.has_extended_relocations() {
            ptr + RELOC_SIZE
        } else {
            ptr
        };
        self.data
            .read_bytes_at(start, count * RELOC_SIZE)
            .ok_or(Error::Malformed {
                what: "relocations go past the end of the file",
                offset: start,
            })
    }

    /// The symbol records (aux records skipped), with names.
    pub fn symbols(&self) -> Result<Vec<Symbol<'a>>, Error> {
        let Some(base) = self.symtab else {
            return Ok(Vec::new());
        };
        let size = self.symbol_size();
        let mut out = Vec::new();
        let mut i: u32 = 0;
        while i < self.nsyms {
            let at = base + u64::from(i) * size;
            let rec = self.data.read_bytes_at(at, size).ok_or(Error::Truncated {
                what: "COFF symbol",
                offset: at,
            })?;
            let b = Bytes::new(rec);
            let raw_name = b.slice(0, 8).ok_or_else(eof)?;
            let name = match raw_name {
                [0, 0, 0, 0, o @ ..] => {
                    self.string(u32::from_le_bytes([o[0], o[1], o[2], o[3]]))?
                }
                short => until_nul(short),
            };
            let (section_number, rest) = if self.bigobj {
                (b.u32_at(12, LE).map(|n| n as i32), 16)
            } else {
                (
                    // Numbers above the 16-bit section limit are the
                    // reserved negative ones (LLVM's getSectionNumber).
                    b.u16_at(12, LE).map(|n| {
                        if n <= 0xfeff {
                            i32::from(n)
                        } else {
                            i32::from(n as i16)
                        }
                    }),
                    14,
                )
            };
            let sym = Symbol {
                index: i,
                name,
                value: b.u32_at(8, LE).ok_or_else(eof)?,
                section_number: section_number.ok_or_else(eof)?,
                sym_type: b.u16_at(rest, LE).ok_or_else(eof)?,
                storage_class: b.u8_at(rest + 2).ok_or_else(eof)?,
                number_of_aux: b.u8_at(rest + 3).ok_or_else(eof)?,
            };
            i = i.saturating_add(1 + u32::from(sym.number_of_aux));
            out.push(sym);
        }
        Ok(out)
    }

    /// The file offset of relative virtual address `rva` in a PE image.
    pub(crate) fn rva_to_offset(&self, rva: u32) -> Option<u64> {
        (0..self.section_count()).find_map(|i| {
            let h = self.section_header(i).ok()?;
            let delta = rva.checked_sub(h.virtual_address)?;
            (delta < h.size_of_raw_data)
                .then(|| u64::from(h.pointer_to_raw_data) + u64::from(delta))
        })
    }
}

/// Decodes the base-64 offset of a `//XXXXXX` section name.
pub(crate) fn decode_base64(s: &[u8]) -> Option<u32> {
    if s.len() > 6 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in s {
        let d = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        v = v * 64 + u64::from(d);
    }
    u32::try_from(v).ok()
}

/// LLVM's `StringRef::getAsInteger(10, u32)`: digits only, no sign, no
/// overflow.
pub(crate) fn decode_decimal(s: &[u8]) -> Option<u32> {
    crate::llvm::decimal_u32(s)
}
