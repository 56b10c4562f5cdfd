//! Error types of the object-bundle module.
//!
//! Where LLVM 22 reports the same condition, the `Display` text is LLVM's
//! wording, so a front-end can print it after its usual prefix and match the
//! reference tool.

use std::fmt;

use crate::objfile::Error as ObjError;

/// Why a buffer is not an object file in LLVM's eyes.
///
/// The bundler treats such inputs as binary bundles (or plain data), so this
/// is usually not reported to the user: callers fall back instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotObject {
    /// No object-file magic LLVM recognises (or a kind of file LLVM opens
    /// but does not treat as an object, such as bitcode or an archive).
    NotElf,
    /// The shared reader ([`crate::objfile`]) refused the ELF header or the
    /// section header table (LLVM's text).
    Header(ObjError),
    /// A COFF header or section table LLVM would not open.
    Coff(CoffError),
}

impl fmt::Display for NotObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotObject::NotElf => f.write_str("The file was not recognized as a valid object file"),
            NotObject::Header(e) => e.fmt(f),
            NotObject::Coff(e) => e.fmt(f),
        }
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A malformed ELF object, detected while reading bundle sections or while
/// rewriting the object. Messages follow LLVM's (object library and
/// llvm-objcopy) wording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ElfError {
    /// The shared reader ([`crate::objfile`]) refused the section table,
    /// a string table, an extended index table or the program headers
    /// (LLVM's text).
    Read(ObjError),
    /// Section contents run past the end of the file (object-level read).
    UnexpectedEof,
    /// A section index in a link field does not exist.
    InvalidSectionIndex {
        /// The index.
        index: u32,
    },
    /// More than one `SHT_SYMTAB` section.
    MultipleSymbolTables,
    /// `e_shstrndx` is not a valid section index.
    ShstrndxInvalid {
        /// The index.
        index: u32,
    },
    /// `e_shstrndx` does not name a (non-allocated) string table.
    ShstrndxNotStringTable {
        /// The index.
        index: u32,
    },
    /// The symbol table's `sh_link` is not a valid section index.
    SymtabLinkInvalid {
        /// `sh_link`.
        link: u32,
    },
    /// The symbol table's `sh_link` is not a string table.
    SymtabLinkNotStringTable {
        /// `sh_link`.
        link: u32,
    },
    /// An `SHT_SYMTAB_SHNDX` section is not linked to the symbol table.
    ShndxLinkInvalid {
        /// `sh_link`.
        link: u32,
        /// Section name.
        section: Vec<u8>,
        /// Whether the index exists (but is not a symbol table).
        exists: bool,
    },
    /// A section's `sh_link` is not a valid section index.
    LinkInvalid {
        /// `sh_link`.
        link: u32,
        /// Section name.
        section: Vec<u8>,
    },
    /// A relocation section's `sh_link` is not the symbol table.
    LinkNotSymbolTable {
        /// `sh_link`.
        link: u32,
        /// Section name.
        section: Vec<u8>,
    },
    /// A relocation section's `sh_info` is not a valid section index.
    InfoInvalid {
        /// `sh_info`.
        info: u32,
        /// Section name.
        section: Vec<u8>,
    },
    /// A group section's alignment is not a multiple of 4.
    GroupAlignment {
        /// `sh_addralign`.
        align: u64,
        /// Section name.
        section: Vec<u8>,
    },
    /// A group section's `sh_link` is not a valid index or not the symbol table.
    GroupLink {
        /// `sh_link`.
        link: u32,
        /// Section name.
        section: Vec<u8>,
        /// Whether the index exists (but is not a symbol table).
        exists: bool,
    },
    /// A group section's `sh_info` is not a valid symbol index.
    GroupInfo {
        /// `sh_info`.
        info: u32,
        /// Section name.
        section: Vec<u8>,
    },
    /// A group section is empty or not a whole number of words.
    GroupMalformed {
        /// Section name.
        section: Vec<u8>,
    },
    /// A group member index is not a valid section index.
    GroupMember {
        /// The member index.
        index: u32,
        /// Section name.
        section: Vec<u8>,
    },
    /// A symbol's `st_name` is past the end of its string table.
    SymbolNameOutOfRange {
        /// `st_name`.
        offset: u32,
        /// String table size.
        size: u64,
    },
    /// A symbol uses `SHN_XINDEX` without an extended index table.
    SymbolXindexWithoutTable {
        /// Symbol name.
        name: Vec<u8>,
    },
    /// The extended index table and the symbol table have different sizes.
    ShndxTableSizeMismatch,
    /// A symbol's extended section index is invalid.
    SymbolXindexInvalid {
        /// Symbol name.
        name: Vec<u8>,
        /// The index.
        index: u32,
    },
    /// A symbol's `st_shndx` is a reserved value LLVM does not accept.
    SymbolReservedIndex {
        /// Symbol name.
        name: Vec<u8>,
        /// `st_shndx`.
        shndx: u16,
    },
    /// A symbol's `st_shndx` is not a valid section index.
    SymbolSectionInvalid {
        /// Symbol name.
        name: Vec<u8>,
        /// `st_shndx`.
        index: u32,
    },
    /// A relocation names a symbol but the file has no symbol table.
    RelocationWithoutSymbolTable {
        /// Relocation section name.
        section: Vec<u8>,
        /// Symbol index.
        symbol: u32,
    },
    /// A relocation or group names a symbol index past the symbol table.
    InvalidSymbolIndex(u32),
    /// Removing sections would remove the string table of the symbol table.
    StringTableInUse {
        /// String table name.
        strtab: Vec<u8>,
        /// Symbol table name.
        symtab: Vec<u8>,
    },
    /// Removing sections would remove the symbol table used by relocations.
    SymbolTableInUse {
        /// Symbol table name.
        symtab: Vec<u8>,
        /// Relocation or group section name.
        user: Vec<u8>,
        /// Whether the user is a group section.
        group: bool,
    },
    /// A kept relocation refers to a symbol defined in a removed section.
    RelocationAgainstRemoved {
        /// Removed section name.
        removed: Vec<u8>,
        /// Relocation target section name.
        target: Vec<u8>,
        /// `r_offset`.
        offset: u64,
        /// Symbol name.
        symbol: Vec<u8>,
    },
    /// A kept section links to a removed one.
    LinkedSectionRemoved {
        /// Removed section name.
        removed: Vec<u8>,
        /// Referring section name.
        user: Vec<u8>,
    },
    /// A kept group's signature symbol is defined in a removed section.
    GroupSymbolRemoved {
        /// Symbol name.
        symbol: Vec<u8>,
        /// Group section name.
        group: Vec<u8>,
    },
    /// The section name string table would be removed.
    SectionNamesRemoved,
}

impl fmt::Display for ElfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ElfError::*;
        match self {
            Read(e) => e.fmt(f),
            UnexpectedEof => f.write_str("The end of the file was unexpectedly encountered"),
            InvalidSectionIndex { index } => write!(f, "invalid section index: {index}"),
            MultipleSymbolTables => f.write_str("found multiple SHT_SYMTAB sections"),
            ShstrndxInvalid { index } => {
                write!(f, "e_shstrndx field value {index} in elf header  is invalid")
            }
            ShstrndxNotStringTable { index } => write!(
                f,
                "e_shstrndx field value {index} in elf header  does not reference a string table"
            ),
            SymtabLinkInvalid { link } => write!(
                f,
                "Symbol table has link index of {link} which is not a valid index"
            ),
            SymtabLinkNotStringTable { link } => write!(
                f,
                "Symbol table has link index of {link} which is not a string table"
            ),
            ShndxLinkInvalid { link, section, exists } => write!(
                f,
                "Link field value {link} in section {} is {}",
                lossy(section),
                if *exists { "not a symbol table" } else { "invalid" }
            ),
            LinkInvalid { link, section } => write!(
                f,
                "Link field value {link} in section {} is invalid",
                lossy(section)
            ),
            LinkNotSymbolTable { link, section } => write!(
                f,
                "Link field value {link} in section {} is not a symbol table",
                lossy(section)
            ),
            InfoInvalid { info, section } => write!(
                f,
                "Info field value {info} in section {} is invalid",
                lossy(section)
            ),
            GroupAlignment { align, section } => write!(
                f,
                "invalid alignment {align} of group section '{}'",
                lossy(section)
            ),
            GroupLink { link, section, exists } => write!(
                f,
                "link field value '{link}' in section '{}' is {}",
                lossy(section),
                if *exists { "not a symbol table" } else { "invalid" }
            ),
            GroupInfo { info, section } => write!(
                f,
                "info field value '{info}' in section '{}' is not a valid symbol index",
                lossy(section)
            ),
            GroupMalformed { section } => write!(
                f,
                "the content of the section {} is malformed",
                lossy(section)
            ),
            GroupMember { index, section } => write!(
                f,
                "group member index {index} in section '{}' is invalid",
                lossy(section)
            ),
            SymbolNameOutOfRange { offset, size } => write!(
                f,
                "st_name (0x{offset:x}) is past the end of the string table of size 0x{size:x}"
            ),
            SymbolXindexWithoutTable { name } => write!(
                f,
                "symbol '{}' has index SHN_XINDEX but no SHT_SYMTAB_SHNDX section exists",
                lossy(name)
            ),
            ShndxTableSizeMismatch => f.write_str(
                "symbol section index table does not have the same number of entries as the symbol table",
            ),
            SymbolXindexInvalid { name, index } => write!(
                f,
                "symbol '{}' has invalid section index {index}",
                lossy(name)
            ),
            SymbolReservedIndex { name, shndx } => write!(
                f,
                "symbol '{}' has unsupported value greater than or equal to SHN_LORESERVE: {shndx}",
                lossy(name)
            ),
            SymbolSectionInvalid { name, index } => write!(
                f,
                "symbol '{}' is defined has invalid section index {index}",
                lossy(name)
            ),
            RelocationWithoutSymbolTable { section, symbol } => write!(
                f,
                "'{}': relocation references symbol with index {symbol}, but there is no symbol table",
                lossy(section)
            ),
            InvalidSymbolIndex(i) => write!(f, "invalid symbol index: {i}"),
            StringTableInUse { strtab, symtab } => write!(
                f,
                "string table '{}' cannot be removed because it is referenced by the symbol table '{}'",
                lossy(strtab),
                lossy(symtab)
            ),
            SymbolTableInUse { symtab, user, group } => {
                if *group {
                    write!(
                        f,
                        "section '.symtab' cannot be removed because it is referenced by the group section '{}'",
                        lossy(user)
                    )
                } else {
                    write!(
                        f,
                        "symbol table '{}' cannot be removed because it is referenced by the relocation section '{}'",
                        lossy(symtab),
                        lossy(user)
                    )
                }
            }
            RelocationAgainstRemoved { removed, target, offset, symbol } => write!(
                f,
                "section '{}' cannot be removed: ({}+0x{offset:x}) has relocation against symbol '{}'",
                lossy(removed),
                lossy(target),
                lossy(symbol)
            ),
            LinkedSectionRemoved { removed, user } => write!(
                f,
                "section '{}' cannot be removed because it is referenced by the section '{}'",
                lossy(removed),
                lossy(user)
            ),
            GroupSymbolRemoved { symbol, group } => write!(
                f,
                "symbol '{}' cannot be removed because it is referenced by the section '{}'",
                lossy(symbol),
                lossy(group)
            ),
            SectionNamesRemoved => f.write_str(
                "cannot write section header table because section header string table was removed",
            ),
        }
    }
}

/// A malformed COFF object (messages follow LLVM's object library and
/// llvm-objcopy where they report the same condition).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoffError {
    /// Something lies past the end of the file.
    UnexpectedEof,
    /// A name refers to the string table, which is empty or missing.
    StringTableEmpty,
    /// A `/nnn` or `//XXXXXX` section name does not decode.
    InvalidSectionName,
    /// The symbol table could not be read.
    ParseFailed,
    /// A symbol's section number exceeds the section count.
    SectionNumberOutOfRange,
    /// A COMDAT-associative definition names a bad section.
    BadAssociativeIndex,
    /// A weak external's target index is past the symbol table.
    WeakExternalOutOfRange,
    /// A symbol index points at an auxiliary record.
    InvalidSymbolTableIndex,
    /// A relocation's symbol index is past the symbol table.
    SymbolTableIndexOutOfRange,
    /// A relocation's symbol was removed with its section.
    RelocationTargetMissing {
        /// Symbol name.
        name: Vec<u8>,
        /// llvm-objcopy's internal symbol id (its position among symbols).
        id: usize,
    },
    /// A symbol is defined in a removed section.
    SymbolInRemovedSection(Vec<u8>),
    /// A COMDAT-associative definition follows a removed section.
    AssociativeToRemoved(Vec<u8>),
    /// A weak external's target was removed.
    WeakTargetMissing(Vec<u8>),
    /// The string table outgrew the section-name encoding.
    StringTableTooLarge,
    /// A section's relocation records run past the end of the file (LLVM
    /// reads out of bounds here).
    RelocationsPastEnd,
    /// A Control Flow Guard table has no section definition symbol.
    SymIdxWithoutSymbol(Vec<u8>),
    /// A Control Flow Guard table names a symbol that no longer exists.
    SymIdxStale {
        /// Section name.
        section: Vec<u8>,
        /// The stale raw symbol index.
        index: u32,
    },
    /// A Control Flow Guard table's size is not a multiple of 4 (LLVM reads
    /// past its buffer here).
    SymIdxPartialEntry(Vec<u8>),
    /// The header has `NumberOfSections` 0xffff (an import-library-like
    /// header LLVM opens as an object without sections).
    ImportLibraryHeader,
}

impl fmt::Display for CoffError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use CoffError::*;
        match self {
            UnexpectedEof => f.write_str("The end of the file was unexpectedly encountered"),
            StringTableEmpty => f.write_str("string table empty"),
            InvalidSectionName => f.write_str("invalid section name"),
            ParseFailed => f.write_str("Invalid data was encountered while parsing the file"),
            SectionNumberOutOfRange => f.write_str("section number out of range"),
            BadAssociativeIndex => f.write_str("unexpected associative section index"),
            WeakExternalOutOfRange => f.write_str("weak external reference out of range"),
            InvalidSymbolTableIndex => f.write_str("invalid SymbolTableIndex"),
            SymbolTableIndexOutOfRange => f.write_str("SymbolTableIndex out of range"),
            RelocationTargetMissing { name, id } => write!(
                f,
                "relocation target '{}' ({id}) not found",
                lossy(name)
            ),
            SymbolInRemovedSection(n) => {
                write!(f, "symbol '{}' points to a removed section", lossy(n))
            }
            AssociativeToRemoved(n) => {
                write!(f, "symbol '{}' is associative to a removed section", lossy(n))
            }
            WeakTargetMissing(n) => write!(f, "symbol '{}' is missing its weak target", lossy(n)),
            StringTableTooLarge => f.write_str(
                "COFF string table is greater than 64GB, unable to encode section name offset",
            ),
            RelocationsPastEnd => {
                f.write_str("the relocations of a section run past the end of the file")
            }
            SymIdxWithoutSymbol(n) => write!(
                f,
                "section '{}' does not have the corresponding symbol or the symbol has unexpected format",
                lossy(n)
            ),
            SymIdxStale { section, index } => write!(
                f,
                "section '{}' contains a .symidx ({index}) that is incorrect or was stripped",
                lossy(section)
            ),
            SymIdxPartialEntry(n) => write!(
                f,
                "section '{}' holds symbol indexes but its size is not a multiple of 4",
                lossy(n)
            ),
            ImportLibraryHeader => f.write_str(
                "the COFF header claims 65535 sections (an import-library header), which llvm-objcopy cannot rewrite",
            ),
        }
    }
}

impl std::error::Error for CoffError {}

/// Object file formats LLVM recognises, as far as this module cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectFormat {
    /// ELF, any class and byte order.
    Elf,
    /// COFF object or PE image.
    Coff,
    /// Mach-O (thin).
    MachO,
    /// WebAssembly object.
    Wasm,
    /// AIX XCOFF.
    Xcoff,
    /// z/OS GOFF.
    Goff,
    /// DirectX container.
    DxContainer,
}

impl fmt::Display for ObjectFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ObjectFormat::Elf => "ELF",
            ObjectFormat::Coff => "COFF",
            ObjectFormat::MachO => "Mach-O",
            ObjectFormat::Wasm => "WebAssembly",
            ObjectFormat::Xcoff => "XCOFF",
            ObjectFormat::Goff => "GOFF",
            ObjectFormat::DxContainer => "DXContainer",
        })
    }
}

/// Errors of the object-bundle module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The input is not an object file LLVM would open; the bundler uses its
    /// binary format for such inputs.
    NotAnObject(NotObject),
    /// The object is malformed (LLVM's wording).
    Elf(ElfError),
    /// The COFF object is malformed (LLVM's wording where it has one).
    Coff(CoffError),
    /// The object format is recognised but this operation is not supported
    /// for it. `reason` says why, in a full sentence fragment.
    Unsupported {
        /// The host object's format.
        format: ObjectFormat,
        /// What is unsupported.
        reason: &'static str,
    },
    /// The same bundle ID was given twice; llvm-objcopy refuses this
    /// (`--set-section-flags set multiple times`).
    DuplicateEntry(Vec<u8>),
    /// The rewritten object would be implausibly large (an alignment or an
    /// offset in the input is absurd).
    OutputTooLarge {
        /// Size the layout asked for, or `u64::MAX` on overflow.
        size: u64,
    },
    /// Rewriting would give an object that cannot be read back (LLVM 22's
    /// llvm-objcopy writes it anyway): the host has no section table, its
    /// layout wraps around 64 bits, or (COFF) a section without raw data
    /// has relocations, which llvm-objcopy writes over the file header.
    Unreadable,
    /// Two sections' file images overlap, or a section overlaps the ELF
    /// header or a header table (only reported by [`check_layout`](super::check_layout)).
    Overlap {
        /// First region, e.g. `section [index 3]` or `the ELF header`.
        first: String,
        /// Second region.
        second: String,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NotAnObject(e) => e.fmt(f),
            Error::Elf(e) => e.fmt(f),
            Error::Coff(e) => e.fmt(f),
            Error::Unsupported { format, reason } => {
                write!(f, "{format} host objects are not supported: {reason}")
            }
            Error::DuplicateEntry(id) => write!(
                f,
                "--set-section-flags set multiple times for section '__CLANG_OFFLOAD_BUNDLE__{}'",
                lossy(id)
            ),
            Error::OutputTooLarge { size } => {
                if *size == u64::MAX {
                    f.write_str("the rewritten object's layout overflows 64 bits")
                } else {
                    write!(
                        f,
                        "the rewritten object would be {size} bytes: an alignment or offset in the input is implausible"
                    )
                }
            }
            Error::Unreadable => f.write_str(
                "the object cannot be rewritten: the result would not be a readable object \
                 (no usable section table, a layout that wraps around, or relocations \
                 of a section without data, which llvm-objcopy writes over the file header)",
            ),
            Error::Overlap { first, second } => write!(f, "{first} overlaps {second}"),
        }
    }
}

impl std::error::Error for Error {}
impl std::error::Error for ElfError {}
impl std::error::Error for NotObject {}

impl From<ElfError> for Error {
    fn from(e: ElfError) -> Self {
        Error::Elf(e)
    }
}

impl From<NotObject> for Error {
    fn from(e: NotObject) -> Self {
        Error::NotAnObject(e)
    }
}
