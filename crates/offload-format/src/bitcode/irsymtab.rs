//! The IR symbol table LLVM stores in bitcode files (`SYMTAB_BLOCK` blob).
//!
//! Layout (all little-endian u32 words; a "string" is an offset and size
//! into the file's `STRTAB_BLOCK` blob; a "range" is a byte offset into the
//! symbol-table blob and an element count):
//!
//! ```text
//! header:  version, producer(str), modules(range), comdats(range),
//!          symbols(range), uncommons(range), triple(str), source(str),
//!          [linker opts(str), dependent libraries(range)]
//! module:  first symbol, end symbol, first uncommon      (12 bytes)
//! symbol:  name(str), ir name(str), comdat index, flags  (24 bytes)
//! ```

use super::BitcodeError;

/// Flag bits of a stored symbol.
mod flag {
    pub(super) const UNDEFINED: u32 = 1 << 3;
    pub(super) const GLOBAL: u32 = 1 << 10;
    pub(super) const FORMAT_SPECIFIC: u32 = 1 << 11;
}

/// Oldest and newest table versions whose symbol entries we understand
/// (the symbol entry layout has been the same in all of them).
const MIN_VERSION: u32 = 1;
const MAX_VERSION: u32 = 4;

/// One symbol of an IR symbol table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IrSymbol<'a> {
    /// The mangled name (what object files and archive indexes use).
    pub name: &'a [u8],
    /// The raw flag word.
    pub flags: u32,
}

impl IrSymbol<'_> {
    /// LLVM's archive-index rule: global, defined and not format-specific.
    pub(crate) fn is_archive_symbol(&self) -> bool {
        self.flags & flag::FORMAT_SPECIFIC == 0
            && self.flags & flag::GLOBAL != 0
            && self.flags & flag::UNDEFINED == 0
    }
}

fn malformed(what: &str) -> BitcodeError {
    BitcodeError::Malformed(format!("IR symbol table: {what}"))
}

fn word(data: &[u8], at: usize) -> Result<u32, BitcodeError> {
    let b = at
        .checked_add(4)
        .and_then(|end| data.get(at..end))
        .ok_or_else(|| malformed("truncated"))?;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Reads every symbol of the table, in stored order. `module_count` is the
/// number of modules in the file; a table describing another number of
/// modules is stale and rejected, like LLVM does.
pub(super) fn read<'a>(
    symtab: &'a [u8],
    strtab: &'a [u8],
    module_count: usize,
) -> Result<Vec<IrSymbol<'a>>, BitcodeError> {
    let version = word(symtab, 0)?;
    if !(MIN_VERSION..=MAX_VERSION).contains(&version) {
        return Err(malformed("unsupported version"));
    }
    let modules = word(symtab, 16)? as usize;
    if modules != module_count {
        return Err(malformed("module count does not match the file"));
    }
    let sym_offset = word(symtab, 28)? as usize;
    let sym_count = word(symtab, 32)? as usize;
    let table_len = sym_count
        .checked_mul(24)
        .ok_or_else(|| malformed("symbol range overflows"))?;
    let end = sym_offset
        .checked_add(table_len)
        .filter(|&e| e <= symtab.len())
        .ok_or_else(|| malformed("symbol range outside the table"))?;
    let table = &symtab[sym_offset..end];
    let mut out = Vec::new();
    for entry in table.chunks_exact(24) {
        let name_off = word(entry, 0)? as usize;
        let name_len = word(entry, 4)? as usize;
        let flags = word(entry, 20)?;
        let name = name_off
            .checked_add(name_len)
            .and_then(|e| strtab.get(name_off..e))
            .ok_or_else(|| malformed("symbol name outside the string table"))?;
        out.push(IrSymbol { name, flags });
    }
    Ok(out)
}
