//! LLVM bitcode reading: just enough to find what the offload tools need.
//!
//! * [`embedded_objects`]: the byte arrays clang embeds with
//!   `-fembed-offload-object` (globals listed in the `!llvm.embedded.objects`
//!   named metadata with section `.llvm.offloading`), which is how
//!   `llvm-offload-binary` extracts offload images from bitcode.
//! * [`archive_symbols`]: the names LLVM's archive writer puts in an
//!   archive symbol table for a bitcode member, read from the IR symbol
//!   table (`SYMTAB_BLOCK` + `STRTAB_BLOCK`) that LLVM writes into every
//!   bitcode file, or from the module itself when that table is absent.
//! * [`is_bitcode`] and [`BitcodeFile`]: magic detection, the wrapper header,
//!   and the top-level block layout.
//!
//! The underlying bitstream reader ([`bitstream`]) is bounded and treats its
//! input as hostile.

pub mod bitstream;
mod embedded;
mod ir;
mod irsymtab;
mod module;

use std::fmt;

pub use embedded::embedded_objects;
pub use irsymtab::IrSymbol;

use bitstream::{Cursor, Entry};

/// Block IDs used at the top level of a bitcode file.
pub(crate) mod block_id {
    /// `MODULE_BLOCK`.
    pub(crate) const MODULE: u64 = 8;
    /// `PARAMATTR_BLOCK`.
    pub(crate) const PARAMATTR: u64 = 9;
    /// `PARAMATTR_GROUP_BLOCK`.
    pub(crate) const PARAMATTR_GROUP: u64 = 10;
    /// `CONSTANTS_BLOCK`.
    pub(crate) const CONSTANTS: u64 = 11;
    /// `FUNCTION_BLOCK`.
    pub(crate) const FUNCTION: u64 = 12;
    /// `VALUE_SYMTAB_BLOCK`.
    pub(crate) const VALUE_SYMTAB: u64 = 14;
    /// `METADATA_BLOCK`.
    pub(crate) const METADATA: u64 = 15;
    /// `TYPE_BLOCK_NEW`.
    pub(crate) const TYPE: u64 = 17;
    /// `OPERAND_BUNDLE_TAGS_BLOCK`.
    pub(crate) const OPERAND_BUNDLE_TAGS: u64 = 21;
    /// `METADATA_KIND_BLOCK`.
    pub(crate) const METADATA_KIND: u64 = 22;
    /// `SYNC_SCOPE_NAMES_BLOCK`.
    pub(crate) const SYNC_SCOPE_NAMES: u64 = 26;
    /// `IDENTIFICATION_BLOCK`.
    pub(crate) const IDENTIFICATION: u64 = 13;
    /// `STRTAB_BLOCK`.
    pub(crate) const STRTAB: u64 = 23;
    /// `SYMTAB_BLOCK`.
    pub(crate) const SYMTAB: u64 = 25;
}

/// Record codes of the module block (`MODULE_CODE_*`).
pub(crate) mod module_code {
    pub(crate) const VERSION: u64 = 1;
    pub(crate) const TRIPLE: u64 = 2;
    pub(crate) const DATALAYOUT: u64 = 3;
    pub(crate) const ASM: u64 = 4;
    pub(crate) const SECTIONNAME: u64 = 5;
    pub(crate) const GLOBALVAR: u64 = 7;
    pub(crate) const FUNCTION: u64 = 8;
    pub(crate) const ALIAS_OLD: u64 = 9;
    pub(crate) const GCNAME: u64 = 11;
    pub(crate) const COMDAT: u64 = 12;
    pub(crate) const VSTOFFSET: u64 = 13;
    pub(crate) const ALIAS: u64 = 14;
    pub(crate) const IFUNC: u64 = 18;
}

/// Errors from reading bitcode.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BitcodeError {
    /// The length is not a multiple of four, or the magic is wrong (LLVM:
    /// "Invalid bitcode signature").
    InvalidSignature,
    /// The wrapper header is truncated or points outside the file.
    InvalidWrapper,
    /// Fewer than four bytes of bitcode.
    TooSmall,
    /// The wrapper points at bytes that are not bitcode.
    NotBitcodeHeader,
    /// The stream ended in the middle of something.
    UnexpectedEnd,
    /// The stream is structurally invalid.
    Malformed(String),
    /// A block's length word reaches past the end of the stream.
    SkipPastEnd {
        /// The bit the block would end at.
        to: u64,
        /// The bit after the length word.
        from: u64,
    },
    /// A block's length word is the last thing in the stream.
    SkipAtEnd,
    /// A fault of the bitstream's structure that LLVM's bitstream reader
    /// reports with this text (an abbreviation ID with no abbreviation, an
    /// operand wider than 64 bits, an invalid operand encoding, ...).
    Bitstream(&'static str),
    /// A sub-block whose abbreviation ID width is above 32 bits.
    CodeWidthTooLarge(u64),
    /// A field runs past the end of the stream. LLVM's reader loads the
    /// stream in 64-bit words: `Some((next, size))` when the field needed
    /// another word and none was left (its text names the byte it would
    /// have loaded next and the stream's size, both as 32-bit numbers),
    /// `None` when the last, partial word was too short.
    EndOfFile(Option<(u64, u64)>),
    /// A fault LLVM's IR reader finds while loading a module (a type
    /// table, a global value record, ...), with its text; LLVM follows it
    /// with the module's producer string, when it has one.
    Reader {
        /// LLVM's text.
        message: String,
        /// The identification block's producer string (empty: none).
        producer: String,
    },
}

impl fmt::Display for BitcodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BitcodeError::InvalidSignature => f.write_str("Invalid bitcode signature"),
            BitcodeError::InvalidWrapper => f.write_str("Invalid bitcode wrapper header"),
            BitcodeError::TooSmall => f.write_str("file too small to contain bitcode header"),
            BitcodeError::NotBitcodeHeader => f.write_str("file doesn't start with bitcode header"),
            BitcodeError::UnexpectedEnd => f.write_str("Malformed block"),
            BitcodeError::Malformed(what) => write!(f, "Malformed bitcode: {what}"),
            BitcodeError::SkipPastEnd { to, from } => {
                write!(f, "can't skip to bit {to} from {from}")
            }
            BitcodeError::SkipAtEnd => f.write_str("can't skip block: already at end of stream"),
            BitcodeError::Bitstream(text) => f.write_str(text),
            BitcodeError::EndOfFile(Some((next, size))) => write!(
                f,
                "Unexpected end of file reading {} of {} bytes",
                *next as u32, *size as u32
            ),
            BitcodeError::EndOfFile(None) => f.write_str("Unexpected end of file"),
            BitcodeError::Reader { message, producer } => {
                f.write_str(message)?;
                if !producer.is_empty() {
                    write!(
                        f,
                        " (Producer: '{producer}' Reader: 'LLVM {}')",
                        ir::LLVM_VERSION
                    )?;
                }
                Ok(())
            }
            BitcodeError::CodeWidthTooLarge(width) => {
                write!(
                    f,
                    "can't read more than 32 at a time, trying to read {width}"
                )
            }
        }
    }
}

impl std::error::Error for BitcodeError {}

/// The raw bitcode magic `BC C0 DE`.
pub(crate) const RAW_MAGIC: [u8; 4] = *b"BC\xC0\xDE";
/// The bitcode wrapper magic (0x0B17C0DE little-endian).
pub(crate) const WRAPPER_MAGIC: [u8; 4] = [0xDE, 0xC0, 0x17, 0x0B];

/// Whether `data` starts like LLVM bitcode (raw or wrapped), the same test
/// LLVM's file-type sniffing applies.
pub fn is_bitcode(data: &[u8]) -> bool {
    data.starts_with(&RAW_MAGIC) || data.starts_with(&WRAPPER_MAGIC)
}

/// Returns the bitstream inside `data` (the wrapper header removed) after
/// the same checks LLVM makes before reading, signature included.
pub fn bitstream_bytes(data: &[u8]) -> Result<&[u8], BitcodeError> {
    if data.len() % 4 != 0 {
        return Err(BitcodeError::InvalidSignature);
    }
    let mut body = data;
    if data.starts_with(&WRAPPER_MAGIC) {
        // magic, version, offset, size, cputype: offset and size are needed.
        let word = |at: usize| -> Option<u32> {
            let b = data.get(at..at + 4)?;
            Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        };
        let (Some(offset), Some(size)) = (word(8), word(12)) else {
            return Err(BitcodeError::InvalidWrapper);
        };
        let end = u64::from(offset) + u64::from(size);
        if end > data.len() as u64 {
            return Err(BitcodeError::InvalidWrapper);
        }
        body = &data[offset as usize..end as usize];
    }
    if body.len() < 4 {
        return Err(BitcodeError::TooSmall);
    }
    if body[..4] != RAW_MAGIC {
        return Err(BitcodeError::NotBitcodeHeader);
    }
    Ok(body)
}

/// The top-level layout of a bitcode file.
#[derive(Clone, Debug, Default)]
pub struct BitcodeFile<'a> {
    /// The bitstream (wrapper removed, magic included).
    pub stream: &'a [u8],
    /// Bit positions of each `MODULE_BLOCK` (pointing at the block's
    /// abbreviation ID), in file order.
    pub modules: Vec<ModuleRef<'a>>,
    /// The last `SYMTAB_BLOCK` blob (the IR symbol table), if any.
    pub symtab: Option<&'a [u8]>,
}

/// One module of a bitcode file.
#[derive(Clone, Copy, Debug, Default)]
pub struct ModuleRef<'a> {
    /// Bit position of the `ENTER_SUBBLOCK` of the module block.
    pub bit: u64,
    /// The bytes LLVM reads the module from, `(start, end)`: from its
    /// identification block (or the module block when there is none) to
    /// the end the module block's length word gives.
    pub bytes: (u64, u64),
    /// The string table that applies to this module (the first
    /// `STRTAB_BLOCK` after it), empty if none.
    pub strtab: &'a [u8],
}

impl<'a> BitcodeFile<'a> {
    /// Splits a bitcode file into its top-level blocks, as LLVM does before
    /// reading any module.
    pub fn parse(data: &'a [u8]) -> Result<Self, BitcodeError> {
        let stream = bitstream_bytes(data)?;
        let mut cursor = Cursor::new(stream);
        cursor.read(32)?; // the magic, checked above
        let mut file = BitcodeFile {
            stream,
            modules: Vec::new(),
            symtab: None,
        };
        let mut with_strtab = 0usize;
        loop {
            // Trailing bytes too short to hold another module are ignored,
            // as some archivers pad bitcode members.
            let byte_pos = cursor.bit_pos() / 8;
            if byte_pos + 8 >= stream.len() as u64 {
                return Ok(file);
            }
            let entry_bit = cursor.bit_pos();
            match cursor.advance()? {
                Entry::EndOfStream => return Ok(file),
                Entry::EndBlock => return Err(BitcodeError::UnexpectedEnd),
                Entry::Record(id) => cursor.skip_record_unread(id)?,
                Entry::SubBlock(id) => match id {
                    block_id::MODULE => {
                        cursor.skip_block()?;
                        file.modules.push(ModuleRef {
                            bit: entry_bit,
                            bytes: (byte_pos, cursor.bit_pos() / 8),
                            strtab: &[],
                        });
                    }
                    block_id::IDENTIFICATION => {
                        cursor.skip_block()?;
                        // LLVM takes the next entry as the module the
                        // identification block belongs to: anything else
                        // is "Malformed block".
                        let module_bit = cursor.bit_pos();
                        match cursor.advance()? {
                            Entry::SubBlock(block_id::MODULE) => {}
                            _ => return Err(BitcodeError::UnexpectedEnd),
                        }
                        cursor.skip_block()?;
                        file.modules.push(ModuleRef {
                            bit: module_bit,
                            bytes: (byte_pos, cursor.bit_pos() / 8),
                            strtab: &[],
                        });
                    }
                    block_id::STRTAB | block_id::SYMTAB => {
                        let blob = read_single_blob(&mut cursor, id)?;
                        if id == block_id::STRTAB {
                            if let Some(blob) = blob {
                                for module in file.modules.iter_mut().skip(with_strtab) {
                                    module.strtab = blob;
                                }
                                with_strtab = file.modules.len();
                            }
                        } else if blob.is_some() {
                            file.symtab = blob;
                        }
                    }
                    _ => cursor.skip_block()?,
                },
            }
        }
    }

    /// The string table of the last module (the IR symbol table's strings
    /// live there too).
    pub fn last_strtab(&self) -> Option<&'a [u8]> {
        self.modules
            .last()
            .map(|m| m.strtab)
            .filter(|s| !s.is_empty())
    }
}

/// Reads a block holding one blob record (STRTAB or SYMTAB) and returns the
/// blob.
fn read_single_blob<'a>(
    cursor: &mut Cursor<'a>,
    id: u64,
) -> Result<Option<&'a [u8]>, BitcodeError> {
    cursor.enter_block(id)?;
    let mut found = None;
    loop {
        match cursor.advance()? {
            Entry::EndBlock => return Ok(found),
            Entry::EndOfStream => return Err(BitcodeError::UnexpectedEnd),
            Entry::SubBlock(_) => cursor.skip_block()?,
            Entry::Record(abbrev) => {
                let (code, blob) = cursor.read_record_with(abbrev, &mut |_| Ok(()))?;
                // Code 1 is STRTAB_BLOB / SYMTAB_BLOB.
                if code == 1 {
                    if let Some(blob) = blob {
                        found = Some(blob);
                    }
                }
            }
        }
    }
}

/// The symbol names LLVM's archive writer lists for a bitcode member, in
/// its order: for each module, functions, then global variables, then
/// aliases and ifuncs, then symbols defined by module-level inline
/// assembly; keeping only defined, non-local symbols that are not
/// format-specific (`llvm.*` names, the `llvm.metadata` section, private
/// linkage).
///
/// The symbols come from the module records, as LLVM's archive writer
/// takes them from the module it loads (so a module whose block ends
/// early lists only what comes before). A module with module-level inline
/// assembly uses the IR symbol table LLVM stored, when there is one: only
/// it knows the symbols the assembly defines.
pub fn archive_symbols(data: &[u8]) -> Result<Vec<Vec<u8>>, BitcodeError> {
    archive_symbols_of(&BitcodeFile::parse(data)?)
}

fn archive_symbols_of(file: &BitcodeFile<'_>) -> Result<Vec<Vec<u8>>, BitcodeError> {
    symbols_and_module_asm(file).map(|(symbols, _)| symbols)
}

/// The archive symbols and whether a module has module-level assembly,
/// each module's records walked once for each.
fn symbols_and_module_asm(file: &BitcodeFile<'_>) -> Result<(Vec<Vec<u8>>, bool), BitcodeError> {
    // LLVM's archive writer loads each module (lazily, metadata deferred)
    // to list its symbols: a bitstream fault met there is its warning
    // text, whatever the source of the names.
    let from_records = walk_module_symbols(file)?;
    let module_asm = file_has_module_asm(file).unwrap_or(false);
    let symbols = match stored_archive_symbols(file) {
        Some(stored) if module_asm => stored,
        _ => from_records?,
    };
    Ok((symbols, module_asm))
}

/// What an archive writer needs from a bitcode member, from one read of
/// it: see [`archive_symbols_and_module_asm`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArchiveFacts {
    /// The archive-index names, as [`archive_symbols`] lists them.
    pub symbols: Vec<Vec<u8>>,
    /// Whether a module has module-level inline assembly, as
    /// [`has_module_asm`] says (`false` where it fails).
    pub module_asm: bool,
}

/// [`archive_symbols`] and [`has_module_asm`] together, with their results
/// (`Err` exactly when [`archive_symbols`] fails, with its error; a failure
/// of the assembly check alone counts as "no assembly"), reading the file
/// once: its layout is parsed once, each module's records are walked once
/// for the symbols (as LLVM's load walks them) and once for the assembly
/// (the two walks treat a damaged `BLOCKINFO` differently, and each must
/// keep its own answer).
pub fn archive_symbols_and_module_asm(data: &[u8]) -> Result<ArchiveFacts, BitcodeError> {
    let (symbols, module_asm) = symbols_and_module_asm(&BitcodeFile::parse(data)?)?;
    Ok(ArchiveFacts {
        symbols,
        module_asm,
    })
}

/// The archive-index names from the stored IR symbol table, if the file
/// has a usable one.
fn stored_archive_symbols(file: &BitcodeFile<'_>) -> Option<Vec<Vec<u8>>> {
    let (symtab, strtab) = (file.symtab?, file.last_strtab()?);
    let symbols = irsymtab::read(symtab, strtab, file.modules.len()).ok()?;
    Some(
        symbols
            .into_iter()
            .filter(IrSymbol::is_archive_symbol)
            .map(|s| s.name.to_vec())
            .collect(),
    )
}

/// Like [`archive_symbols`], but always reads the module records and never
/// the stored IR symbol table. Symbols defined only by module-level inline
/// assembly are not found this way.
pub fn module_archive_symbols(data: &[u8]) -> Result<Vec<Vec<u8>>, BitcodeError> {
    module_archive_symbols_of(&BitcodeFile::parse(data)?)
}

/// Whether any module of the file has module-level inline assembly
/// (`module asm "..."`). Writing an archive with such a member makes
/// LLVM 22's `llvm-offload-binary` and `clang-offload-bundler` crash (they
/// do not initialise the assemblers the symbol reader then uses).
pub fn has_module_asm(data: &[u8]) -> Result<bool, BitcodeError> {
    file_has_module_asm(&BitcodeFile::parse(data)?)
}

fn file_has_module_asm(file: &BitcodeFile<'_>) -> Result<bool, BitcodeError> {
    for module in &file.modules {
        if module::has_module_asm(file.stream, module)? {
            return Ok(true);
        }
    }
    Ok(false)
}

fn module_archive_symbols_of(file: &BitcodeFile<'_>) -> Result<Vec<Vec<u8>>, BitcodeError> {
    walk_module_symbols(file)?
}

/// Every module's names from its records. The outer `Err` is the first
/// fault of a walk (every module is walked before a record the names
/// cannot be read from, the inner `Err`, is reported).
fn walk_module_symbols(
    file: &BitcodeFile<'_>,
) -> Result<Result<Vec<Vec<u8>>, BitcodeError>, BitcodeError> {
    let mut names = Vec::new();
    let mut unreadable = None;
    for module in &file.modules {
        if let Err(e) = module::archive_symbols(file.stream, module, &mut names)? {
            unreadable.get_or_insert(e);
        }
    }
    Ok(match unreadable {
        Some(e) => Err(e),
        None => Ok(names),
    })
}
