//! What can be wrong with an object file.
//!
//! Where LLVM's object library reports a condition, the `Display` text is
//! LLVM 22's wording byte for byte (the tools print it after their usual
//! prefix); other conditions are described in plain words with the offset
//! at fault.

use std::fmt;

/// A malformed or unsupported object file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// No object-file magic this reader knows.
    UnknownFormat,
    /// A header or table is cut short: `what` needed bytes at `offset`.
    Truncated {
        /// The structure being read.
        what: &'static str,
        /// Where it starts in the file.
        offset: u64,
    },
    /// A field has a value the reader cannot work with.
    Malformed {
        /// What is wrong.
        what: &'static str,
        /// Where the field (or the structure holding it) is.
        offset: u64,
    },
    /// `EI_CLASS` is neither 32- nor 64-bit.
    ElfInvalidClass,
    /// `EI_DATA` is neither little- nor big-endian.
    ElfInvalidData,
    /// The buffer is shorter than the ELF header of its class.
    ElfTooSmall {
        /// Buffer size.
        size: u64,
        /// Header size for the class.
        header: u64,
    },
    /// `e_shentsize` does not match the class.
    ElfBadShentsize(u16),
    /// The first section header lies past the end of the file.
    ElfSectionTableStartPastEnd {
        /// `e_shoff`.
        shoff: u64,
    },
    /// The section count (from `sh_size` of entry 0) is absurd.
    ElfBadSectionCount(u64),
    /// `e_shoff` plus the table size overflows.
    ElfSectionTableOverflow {
        /// `e_shoff`.
        shoff: u64,
        /// Number of sections.
        count: u64,
    },
    /// The section header table runs past the end of the file.
    ElfSectionTablePastEnd,
    /// `e_shstrndx` is `SHN_XINDEX` but there is no section 0.
    ElfXindexWithoutSections,
    /// `e_shstrndx` names a section that does not exist.
    ElfShstrndxOutOfRange {
        /// The index.
        index: u32,
    },
    /// A string table is not of type `SHT_STRTAB`.
    ElfNotAStringTable {
        /// Section index.
        index: usize,
        /// LLVM's name of the actual type.
        type_name: &'static str,
    },
    /// A string table has no bytes.
    ElfEmptyStringTable {
        /// Section index.
        index: usize,
    },
    /// A symbol table entry cannot be read although its table was checked
    /// (LLVM's `truncated ELF file`).
    ElfSymbolCut {
        /// The symbol's index.
        index: usize,
    },
    /// A string table does not end with NUL.
    ElfUnterminatedStringTable {
        /// Section index.
        index: usize,
    },
    /// A section name offset is past the end of the name table.
    ElfNameOutOfRange {
        /// Section index.
        index: usize,
        /// `sh_name`.
        offset: u32,
    },
    /// A table section has the wrong `sh_entsize`.
    ElfBadEntsize {
        /// Section index.
        index: usize,
        /// Expected entry size.
        expected: u64,
        /// Found entry size.
        got: u64,
    },
    /// A table section's size is not a multiple of its entry size.
    ElfSizeNotMultiple {
        /// Section index.
        index: usize,
        /// `sh_size`.
        size: u64,
        /// `sh_entsize`.
        entsize: u64,
    },
    /// `sh_offset + sh_size` does not fit the address type.
    ElfOffsetPlusSizeOverflows {
        /// Section index.
        index: usize,
        /// `sh_offset`.
        offset: u64,
        /// `sh_size`.
        size: u64,
    },
    /// A section's data runs past the end of the file.
    ElfSectionPastEnd {
        /// Section index.
        index: usize,
        /// `sh_offset`.
        offset: u64,
        /// `sh_size`.
        size: u64,
        /// File size.
        file_size: u64,
    },
    /// Contents run past the end of the file (LLVM's generic text).
    UnexpectedEof,
    /// A section index (argument or link field) does not exist.
    InvalidSectionIndex {
        /// The index.
        index: u64,
    },
    /// `e_phentsize` does not match the class.
    ElfBadPhentsize {
        /// `e_phentsize`.
        phentsize: u16,
    },
    /// The program header table runs past the end of the file.
    ElfProgramHeadersPastEnd {
        /// File size.
        file_size: u64,
        /// `e_phoff`.
        phoff: u64,
        /// `e_phnum`.
        phnum: u16,
        /// `e_phentsize`.
        phentsize: u16,
    },
    /// A segment's file image runs past the end of the file.
    ElfSegmentPastEnd {
        /// `p_offset`.
        offset: u64,
        /// `p_filesz`.
        filesz: u64,
    },
    /// A symbol's `st_name` is past the end of its string table.
    ElfSymbolNameOutOfRange {
        /// `st_name`.
        offset: u32,
        /// String table size.
        size: u64,
    },
    /// A COFF long section name needs a string table that is empty.
    CoffStringTableEmpty,
    /// A COFF `/nnn` or `//xxxxxx` section name does not decode.
    CoffInvalidSectionName,
}

impl Error {
    /// The file offset the error is about, where one is known.
    pub fn offset(&self) -> Option<u64> {
        match self {
            Error::Truncated { offset, .. } | Error::Malformed { offset, .. } => Some(*offset),
            Error::ElfSectionTableStartPastEnd { shoff }
            | Error::ElfSectionTableOverflow { shoff, .. } => Some(*shoff),
            Error::ElfOffsetPlusSizeOverflows { offset, .. }
            | Error::ElfSectionPastEnd { offset, .. }
            | Error::ElfSegmentPastEnd { offset, .. } => Some(*offset),
            Error::ElfProgramHeadersPastEnd { phoff, .. } => Some(*phoff),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Error::*;
        match self {
            UnknownFormat => f.write_str("The file was not recognized as a valid object file"),
            Truncated { what, offset } => {
                write!(f, "truncated {what} at offset 0x{offset:x}")
            }
            Malformed { what, offset } => write!(f, "{what} (at offset 0x{offset:x})"),
            ElfInvalidClass => f.write_str("Invalid ELF class"),
            ElfInvalidData => f.write_str("Invalid ELF data"),
            ElfTooSmall { size, header } => write!(
                f,
                "invalid buffer: the size ({size}) is smaller than an ELF header ({header})"
            ),
            ElfBadShentsize(n) => write!(f, "invalid e_shentsize in ELF header: {n}"),
            ElfSectionTableStartPastEnd { shoff } => write!(
                f,
                "section header table goes past the end of the file: e_shoff = 0x{shoff:x}"
            ),
            ElfBadSectionCount(n) => write!(
                f,
                "invalid number of sections specified in the NULL section's sh_size field ({n})"
            ),
            ElfSectionTableOverflow { shoff, count } => write!(
                f,
                "invalid section header table offset (e_shoff = 0x{shoff:x}) or invalid number \
                 of sections specified in the first section header's sh_size field (0x{count:x})"
            ),
            ElfSectionTablePastEnd => f.write_str("section table goes past the end of file"),
            ElfXindexWithoutSections => {
                f.write_str("e_shstrndx == SHN_XINDEX, but the section header table is empty")
            }
            ElfShstrndxOutOfRange { index } => {
                write!(f, "section header string table index {index} does not exist")
            }
            ElfNotAStringTable { index, type_name } => write!(
                f,
                "invalid sh_type for string table section [index {index}]: expected SHT_STRTAB, but got {type_name}"
            ),
            ElfEmptyStringTable { index } => {
                write!(f, "SHT_STRTAB string table section [index {index}] is empty")
            }
            ElfSymbolCut { .. } => f.write_str("truncated ELF file"),
            ElfUnterminatedStringTable { index } => write!(
                f,
                "SHT_STRTAB string table section [index {index}] is non-null terminated"
            ),
            ElfNameOutOfRange { index, offset } => write!(
                f,
                "a section [index {index}] has an invalid sh_name (0x{offset:x}) offset which goes past the end of the section name string table"
            ),
            ElfBadEntsize {
                index,
                expected,
                got,
            } => write!(
                f,
                "section [index {index}] has invalid sh_entsize: expected {expected}, but got {got}"
            ),
            ElfSizeNotMultiple {
                index,
                size,
                entsize,
            } => write!(
                f,
                "section [index {index}] has an invalid sh_size ({size}) which is not a multiple of its sh_entsize ({entsize})"
            ),
            ElfOffsetPlusSizeOverflows {
                index,
                offset,
                size,
            } => write!(
                f,
                "section [index {index}] has a sh_offset (0x{offset:x}) + sh_size (0x{size:x}) that cannot be represented"
            ),
            ElfSectionPastEnd {
                index,
                offset,
                size,
                file_size,
            } => write!(
                f,
                "section [index {index}] has a sh_offset (0x{offset:x}) + sh_size (0x{size:x}) that is greater than the file size (0x{file_size:x})"
            ),
            UnexpectedEof => f.write_str("The end of the file was unexpectedly encountered"),
            InvalidSectionIndex { index } => write!(f, "invalid section index: {index}"),
            ElfBadPhentsize { phentsize } => write!(f, "invalid e_phentsize: {phentsize}"),
            ElfProgramHeadersPastEnd {
                file_size,
                phoff,
                phnum,
                phentsize,
            } => write!(
                f,
                "program headers are longer than binary of size {file_size}: e_phoff = 0x{phoff:x}, e_phnum = {phnum}, e_phentsize = {phentsize}"
            ),
            ElfSegmentPastEnd { offset, filesz } => write!(
                f,
                "program header with offset 0x{offset:x} and file size 0x{filesz:x} goes past the end of the file"
            ),
            ElfSymbolNameOutOfRange { offset, size } => write!(
                f,
                "st_name (0x{offset:x}) is past the end of the string table of size 0x{size:x}"
            ),
            CoffStringTableEmpty => f.write_str("string table empty"),
            CoffInvalidSectionName => f.write_str("invalid section name"),
        }
    }
}

impl std::error::Error for Error {}
