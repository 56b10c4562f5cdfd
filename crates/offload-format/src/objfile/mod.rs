//! The object-file layer: sections of ELF, COFF/PE and Mach-O files.
//!
//! This is the crate's one reader of those formats. [`Object`] is the
//! format-independent view (sections with names, types, addresses, file
//! ranges and data); [`elf::ElfFile`], [`coff::CoffFile`] and
//! [`macho::MachOFile`] give each format's own structures: ELF headers,
//! program headers, notes, symbols and relocations; COFF symbols and
//! relocation records; Mach-O segments; the slices of a universal file
//! ([`macho::parse_fat`]).
//!
//! The readers are zero-copy (every name and every section's data borrows
//! from the input) and never trust an offset or a size: anything outside
//! the file is an [`Error`], never a panic. Where LLVM's object library
//! checks a condition when it opens a file or reads a section, the same
//! check is applied in the same order and the error's text is LLVM 22's.
//!
//! ```
//! use offload_format::objfile::{Format, Object};
//!
//! # fn main() -> Result<(), offload_format::objfile::Error> {
//! // A minimal ELF64 relocatable object with no sections.
//! let mut elf = vec![0x7f, b'E', b'L', b'F', 2, 1, 1];
//! elf.resize(64, 0);
//! elf[16] = 1; // ET_REL
//! elf[18] = 62; // EM_X86_64
//! let obj = Object::parse(&elf)?;
//! assert_eq!(obj.format(), Format::Elf);
//! assert_eq!(obj.sections().count(), 0);
//! assert!(obj.section_by_name(b".text")?.is_none());
//! # Ok(())
//! # }
//! ```

pub mod coff;
pub mod elf;
mod error;
pub mod macho;

pub use error::Error;

use crate::identify::{identify, FileKind};

/// The container format of an [`Object`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// ELF.
    Elf,
    /// A COFF object (regular or bigobj).
    Coff,
    /// A PE image (executable or DLL).
    Pe,
    /// Mach-O.
    MachO,
}

/// An object file of any supported format.
#[derive(Clone, Debug)]
pub struct Object<'a> {
    inner: Inner<'a>,
}

#[derive(Clone, Debug)]
enum Inner<'a> {
    Elf(elf::ElfFile<'a>),
    Coff(coff::CoffFile<'a>),
    MachO(macho::MachOFile<'a>),
}

/// One section, in a format-independent form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section<'a> {
    /// Position in the file's section list: ELF section header index
    /// (the null section is 0), COFF 0-based table position, Mach-O
    /// 0-based position over all segments (LLVM's numbering minus one).
    pub index: usize,
    /// The section name.
    pub name: &'a [u8],
    /// Mach-O: the segment name of the section header; `None` elsewhere.
    pub segment_name: Option<&'a [u8]>,
    /// The format's section type: ELF `sh_type`, Mach-O `flags & 0xff`,
    /// COFF 0 (COFF has only characteristics).
    pub kind: u32,
    /// ELF `sh_flags`, COFF `Characteristics`, Mach-O `flags`.
    pub flags: u64,
    /// ELF `sh_addr`, COFF `VirtualAddress` (relative to the image base in
    /// PE images), Mach-O `addr`.
    pub address: u64,
    /// Size in memory (ELF `sh_size`, COFF `SizeOfRawData` in objects or
    /// `VirtualSize` in images, Mach-O `size`).
    pub size: u64,
    /// Where the bytes are in the file (offset, size); `None` for sections
    /// with no bytes in the file (ELF `SHT_NOBITS`, Mach-O zero-fill, COFF
    /// without raw data).
    pub file_range: Option<(u64, u64)>,
    data: Result<&'a [u8], Error>,
}

impl<'a> Section<'a> {
    /// The section's bytes as LLVM's object library reads them (empty when
    /// there is no file range); an error when they lie outside the file.
    pub fn data(&self) -> Result<&'a [u8], Error> {
        self.data.clone()
    }
}

impl<'a> Object<'a> {
    /// Opens `data` as an ELF, COFF, PE or Mach-O file (by its magic), with
    /// the open-time checks of LLVM's object library for that format.
    pub fn parse(data: &'a [u8]) -> Result<Self, Error> {
        let inner = match identify(data) {
            FileKind::Elf(_) => Inner::Elf(elf::ElfFile::parse(data)?),
            FileKind::Coff { .. } => Inner::Coff(coff::CoffFile::parse(data)?),
            FileKind::Pe => Inner::Coff(coff::CoffFile::parse_image(data)?),
            FileKind::MachO(_) => Inner::MachO(macho::MachOFile::parse(data)?),
            _ => return Err(Error::UnknownFormat),
        };
        Ok(Object { inner })
    }

    /// The container format.
    pub fn format(&self) -> Format {
        match &self.inner {
            Inner::Elf(_) => Format::Elf,
            Inner::Coff(c) if c.is_image() => Format::Pe,
            Inner::Coff(_) => Format::Coff,
            Inner::MachO(_) => Format::MachO,
        }
    }

    /// Whether the file is an object to be linked (an ELF `ET_REL`, a COFF
    /// object, a Mach-O `MH_OBJECT`), not a linked executable or library,
    /// whose contents are referred to by address.
    pub fn is_relocatable(&self) -> bool {
        match &self.inner {
            Inner::Elf(e) => e.header().e_type == 1,
            Inner::Coff(c) => !c.is_image(),
            Inner::MachO(m) => m.header().filetype == 1,
        }
    }

    /// The ELF view, for an ELF file.
    pub fn as_elf(&self) -> Option<&elf::ElfFile<'a>> {
        match &self.inner {
            Inner::Elf(e) => Some(e),
            _ => None,
        }
    }

    /// The COFF view, for a COFF object or PE image.
    pub fn as_coff(&self) -> Option<&coff::CoffFile<'a>> {
        match &self.inner {
            Inner::Coff(c) => Some(c),
            _ => None,
        }
    }

    /// The Mach-O view, for a Mach-O file.
    pub fn as_macho(&self) -> Option<&macho::MachOFile<'a>> {
        match &self.inner {
            Inner::MachO(m) => Some(m),
            _ => None,
        }
    }

    /// Number of sections (ELF: including the null section).
    pub fn section_count(&self) -> usize {
        match &self.inner {
            Inner::Elf(e) => e.section_headers().len(),
            Inner::Coff(c) => c.section_count(),
            Inner::MachO(m) => m.sections().len(),
        }
    }

    /// Section `index`; an error when its name cannot be read.
    pub fn section(&self, index: usize) -> Result<Section<'a>, Error> {
        match &self.inner {
            Inner::Elf(e) => {
                let table = e.section_name_table()?;
                elf_section(e, index, table)
            }
            Inner::Coff(c) => coff_section(c, index),
            Inner::MachO(m) => {
                let s = m.sections().get(index).ok_or(Error::InvalidSectionIndex {
                    index: index as u64,
                })?;
                Ok(Section {
                    index,
                    name: s.name,
                    segment_name: Some(s.segment_name),
                    kind: s.section_type(),
                    flags: u64::from(s.flags),
                    address: s.addr,
                    size: s.size,
                    file_range: m.section_file_range(s),
                    data: m.section_data(s),
                })
            }
        }
    }

    /// The sections in file order. An item is an error when the section's
    /// name cannot be read (for ELF, a broken section name table fails
    /// every section).
    pub fn sections(&self) -> impl Iterator<Item = Result<Section<'a>, Error>> + '_ {
        let table = match &self.inner {
            Inner::Elf(e) => Some(e.section_name_table()),
            _ => None,
        };
        (0..self.section_count()).map(move |i| match (&self.inner, &table) {
            (Inner::Elf(e), Some(Ok(t))) => elf_section(e, i, *t),
            (Inner::Elf(_), Some(Err(err))) => Err(err.clone()),
            _ => self.section(i),
        })
    }

    /// The first section named `name` (Mach-O: the section name alone).
    /// Sections whose names cannot be read are skipped.
    pub fn section_by_name(&self, name: &[u8]) -> Result<Option<Section<'a>>, Error> {
        for s in self.sections() {
            match s {
                Ok(s) if s.name == name => return Ok(Some(s)),
                Ok(_) => {}
                Err(e) if self.format() == Format::Elf => return Err(e),
                Err(_) => {}
            }
        }
        Ok(None)
    }

    /// The file offset of a virtual address (ELF: through `PT_LOAD`
    /// segments; Mach-O: through segments; PE: an address relative to the
    /// image base, through the sections; COFF objects have none).
    pub fn address_to_offset(&self, address: u64) -> Result<Option<u64>, Error> {
        match &self.inner {
            Inner::Elf(e) => e.vaddr_to_offset(address),
            Inner::Coff(c) if c.is_image() => Ok(u32::try_from(address)
                .ok()
                .and_then(|rva| c.rva_to_offset(rva))),
            Inner::Coff(_) => Ok(None),
            Inner::MachO(m) => Ok(m.vmaddr_to_offset(address)),
        }
    }
}

fn elf_section<'a>(
    e: &elf::ElfFile<'a>,
    index: usize,
    table: Option<&'a [u8]>,
) -> Result<Section<'a>, Error> {
    let h = *e.section_header(index)?;
    let name = e.section_name(index, table)?;
    Ok(Section {
        index,
        name,
        segment_name: None,
        kind: h.sh_type,
        flags: h.flags,
        address: h.addr,
        size: h.size,
        file_range: (h.sh_type != elf::SHT_NOBITS).then_some((h.offset, h.size)),
        data: e.object_section_contents(index),
    })
}

fn coff_section<'a>(c: &coff::CoffFile<'a>, index: usize) -> Result<Section<'a>, Error> {
    let h = c.section_header(index)?;
    let name = c.section_name(index)?;
    let data = c.section_contents(index);
    let size = if c.is_image() {
        h.virtual_size
    } else {
        h.size_of_raw_data
    };
    let file_size = data.as_ref().map_or(h.size_of_raw_data, |d| d.len() as u32);
    Ok(Section {
        index,
        name,
        segment_name: None,
        kind: 0,
        flags: u64::from(h.characteristics),
        address: u64::from(h.virtual_address),
        size: u64::from(size),
        file_range: (h.pointer_to_raw_data != 0)
            .then_some((u64::from(h.pointer_to_raw_data), u64::from(file_size))),
        data,
    })
}
