//! The ELF side of the object-bundle module: the rewriter's write helpers
//! and constants. Reading goes through [`crate::objfile::elf`], the
//! crate's one ELF reader; [`open`] adds the checks LLVM's
//! `createObjectFile` makes on top of it and words failures as the bundler
//! reports them.

use super::error::{ElfError, NotObject};
use super::pieces::Data;
#[cfg(feature = "object-edit")]
use crate::bytes::Bytes;
use crate::bytes::ReadRef;
use crate::objfile::Error as ObjError;

pub(crate) use crate::objfile::elf::{SHT_NOBITS, SHT_NULL};
// The rewriter's.
#[cfg(feature = "object-edit")]
pub(crate) use crate::bytes::until_nul as cstr;
#[cfg(feature = "object-edit")]
pub(crate) use crate::objfile::elf::{
    Class, EM_AMDGPU, EM_HEXAGON, EM_MIPS, EM_X86_64, PT_PHDR, PT_TLS, SHN_ABS, SHN_COMMON,
    SHN_LORESERVE, SHN_UNDEF, SHN_XINDEX, SHT_DYNAMIC, SHT_DYNSYM, SHT_GNU_HASH, SHT_GROUP,
    SHT_HASH, SHT_NOTE, SHT_PROGBITS, SHT_REL, SHT_RELA, SHT_STRTAB, SHT_SYMTAB, SHT_SYMTAB_SHNDX,
};

#[cfg(feature = "object-edit")]
pub(crate) const SHF_ALLOC: u64 = 0x2;
#[cfg(feature = "object-edit")]
pub(crate) const SHF_INFO_LINK: u64 = 0x40;
#[cfg(feature = "object-edit")]
pub(crate) const SHF_LINK_ORDER: u64 = 0x80;
#[cfg(feature = "object-edit")]
pub(crate) const SHF_GROUP: u64 = 0x200;
#[cfg(feature = "object-edit")]
pub(crate) const SHF_TLS: u64 = 0x400;
#[cfg(feature = "object-edit")]
pub(crate) const SHF_COMPRESSED: u64 = 0x800;
#[cfg(feature = "object-edit")]
pub(crate) const SHF_MASKOS: u64 = 0x0ff0_0000;
#[cfg(feature = "object-edit")]
pub(crate) const SHF_MASKPROC: u64 = 0xf000_0000;
#[cfg(feature = "object-edit")]
pub(crate) const SHF_EXCLUDE: u64 = 0x8000_0000;
#[cfg(feature = "object-edit")]
pub(crate) const SHF_X86_64_LARGE: u64 = 0x1000_0000;
#[cfg(feature = "object-edit")]
pub(crate) const STB_LOCAL: u8 = 0;
#[cfg(feature = "object-edit")]
pub(crate) const GRP_COMDAT: u32 = 1;

/// The ELF reader over the bytes an object-bundle reader looks at.
pub(crate) type ElfFile<'a> = crate::objfile::elf::ElfFile<'a, Data<'a>>;

impl<'a> ReadRef<'a> for Data<'a> {
    fn len(self) -> u64 {
        Data::len(self) as u64
    }

    fn read_bytes_at(self, offset: u64, size: u64) -> Option<&'a [u8]> {
        let start = usize::try_from(offset).ok()?;
        let end = start.checked_add(usize::try_from(size).ok()?)?;
        self.get(start..end)
    }
}

/// Opens `data` the way LLVM's `createObjectFile` does for ELF: the
/// header and section table checks. LLVM 22 opens an object without
/// reading its extended section index tables (`SHT_SYMTAB_SHNDX`): it
/// reads them only when a symbol's section is asked for, which the
/// bundler never does.
pub(crate) fn open(data: Data<'_>) -> Result<ElfFile<'_>, NotObject> {
    ElfFile::parse(data).map_err(NotObject::from)
}

/// The rewriter's view of an opened file.
pub(crate) trait ElfExt {
    /// Number of entries in the section header table (including index 0).
    fn section_count(&self) -> usize;
    /// A MIPS64 little-endian file (its `r_info` layout differs).
    #[cfg(feature = "object-edit")]
    fn is_mips64el(&self) -> bool;
}

impl ElfExt for ElfFile<'_> {
    fn section_count(&self) -> usize {
        self.section_headers().len()
    }
    #[cfg(feature = "object-edit")]
    fn is_mips64el(&self) -> bool {
        let c = self.class();
        self.header().machine == EM_MIPS && c.is64 && !c.big_endian
    }
}

impl From<ObjError> for NotObject {
    fn from(e: ObjError) -> Self {
        match e {
            ObjError::ElfInvalidClass
            | ObjError::ElfInvalidData
            | ObjError::ElfTooSmall { .. }
            | ObjError::ElfBadShentsize(_)
            | ObjError::ElfSectionTableStartPastEnd { .. }
            | ObjError::ElfBadSectionCount(_)
            | ObjError::ElfSectionTableOverflow { .. }
            | ObjError::ElfSectionTablePastEnd => NotObject::Header(e),
            _ => NotObject::NotElf,
        }
    }
}

impl From<ObjError> for ElfError {
    fn from(e: ObjError) -> Self {
        match e {
            ObjError::InvalidSectionIndex { index } => ElfError::InvalidSectionIndex {
                index: index as u32,
            },
            ObjError::ElfXindexWithoutSections
            | ObjError::ElfShstrndxOutOfRange { .. }
            | ObjError::ElfNotAStringTable { .. }
            | ObjError::ElfEmptyStringTable { .. }
            | ObjError::ElfUnterminatedStringTable { .. }
            | ObjError::ElfNameOutOfRange { .. }
            | ObjError::ElfBadEntsize { .. }
            | ObjError::ElfSizeNotMultiple { .. }
            | ObjError::ElfOffsetPlusSizeOverflows { .. }
            | ObjError::ElfSectionPastEnd { .. }
            | ObjError::ElfBadPhentsize { .. }
            | ObjError::ElfProgramHeadersPastEnd { .. }
            | ObjError::ElfSegmentPastEnd { .. } => ElfError::Read(e),
            _ => ElfError::UnexpectedEof,
        }
    }
}

impl From<ObjError> for super::Error {
    fn from(e: ObjError) -> Self {
        super::Error::Elf(e.into())
    }
}

#[cfg(feature = "object-edit")]
/// Reads and writes of the rewriter's fixed-size fields.
pub(crate) trait ClassIo {
    fn u16_at(self, d: &[u8], off: usize) -> Option<u16>;
    fn u32_at(self, d: &[u8], off: usize) -> Option<u32>;
    fn u64_at(self, d: &[u8], off: usize) -> Option<u64>;
    fn word_at(self, d: &[u8], off: usize) -> Option<u64>;
    fn put_u16(self, out: &mut [u8], off: usize, v: u16);
    fn put_u32(self, out: &mut [u8], off: usize, v: u32);
    fn put_u64(self, out: &mut [u8], off: usize, v: u64);
    fn put_word(self, out: &mut [u8], off: usize, v: u64);
}

#[cfg(feature = "object-edit")]
impl ClassIo for Class {
    fn u16_at(self, d: &[u8], off: usize) -> Option<u16> {
        Bytes::new(d).u16_at(off as u64, self.endian())
    }
    fn u32_at(self, d: &[u8], off: usize) -> Option<u32> {
        Bytes::new(d).u32_at(off as u64, self.endian())
    }
    fn u64_at(self, d: &[u8], off: usize) -> Option<u64> {
        Bytes::new(d).u64_at(off as u64, self.endian())
    }
    /// An address-sized word (32 or 64 bits) widened to u64.
    fn word_at(self, d: &[u8], off: usize) -> Option<u64> {
        Bytes::new(d).word_at(off as u64, self.is64, self.endian())
    }

    fn put_u16(self, out: &mut [u8], off: usize, v: u16) {
        let b = if self.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        out[off..off + 2].copy_from_slice(&b);
    }
    fn put_u32(self, out: &mut [u8], off: usize, v: u32) {
        let b = if self.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        out[off..off + 4].copy_from_slice(&b);
    }
    fn put_u64(self, out: &mut [u8], off: usize, v: u64) {
        let b = if self.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        out[off..off + 8].copy_from_slice(&b);
    }
    /// Writes an address-sized word; 32-bit files keep the low half, as a
    /// C++ assignment to a 32-bit field would.
    fn put_word(self, out: &mut [u8], off: usize, v: u64) {
        if self.is64 {
            self.put_u64(out, off, v)
        } else {
            self.put_u32(out, off, v as u32)
        }
    }
}
