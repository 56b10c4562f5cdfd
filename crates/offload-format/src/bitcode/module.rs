//! Symbol listing from the module records themselves, for bitcode that has
//! no usable IR symbol table.
//!
//! Only the module-level records are read: `GLOBALVAR`, `FUNCTION`,
//! `ALIAS`, `IFUNC`, `SECTIONNAME` and `DATALAYOUT`, with names taken from
//! the string table (bitcode version 2, LLVM 5 and later). Symbols defined
//! only by module-level inline assembly cannot be listed this way (that
//! needs an assembler); LLVM always stores an IR symbol table when such
//! assembly exists and the target is known.

use super::bitstream::{Cursor, Entry};
use super::module_code as code;
use super::{block_id, BitcodeError, ModuleRef};

/// Linkage classes that matter for the archive index.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Linkage {
    External,
    Local,
    AvailableExternally,
    Private,
}

fn linkage(raw: u64) -> Linkage {
    match raw {
        3 => Linkage::Local,
        9 | 13 | 14 => Linkage::Private,
        12 => Linkage::AvailableExternally,
        _ => Linkage::External,
    }
}

struct Global {
    name_off: u64,
    name_len: u64,
    linkage: Linkage,
    declaration: bool,
    section: u64,
}

fn malformed(what: &str) -> BitcodeError {
    BitcodeError::Malformed(what.to_string())
}

/// Appends the archive-index names of one module to `out`. The outer
/// `Err` is a fault of the walk itself (LLVM's load fails on it); the inner
/// one a record the names cannot be read from, which counts only where the
/// module records are the source of the names.
pub(super) fn archive_symbols(
    stream: &[u8],
    module: &ModuleRef<'_>,
    out: &mut Vec<Vec<u8>>,
) -> Result<Result<(), BitcodeError>, BitcodeError> {
    let mut version = 0u64;
    let mut mangling = Mangling::default();
    let mut sections: Vec<Vec<u8>> = Vec::new();
    let mut functions = Vec::new();
    let mut variables = Vec::new();
    let mut others = Vec::new();
    // The records of the module LLVM's archive writer loads (lazily,
    // metadata deferred): a module whose block ends early declares only
    // what comes before. A record we cannot take names from is kept
    // aside: the walk goes on, as its faults come first.
    let mut unreadable: Option<BitcodeError> = None;
    super::embedded::load_module_records(
        stream,
        module,
        super::embedded::Metadata::Deferred,
        &mut |code, ops| {
            if unreadable.is_some() {
                return Ok(());
            }
            let at = |i: usize| ops.get(i).copied().unwrap_or(0);
            match code {
                code::VERSION => version = at(0),
                code::DATALAYOUT => mangling = Mangling::from_datalayout(ops),
                code::SECTIONNAME => sections.push(ops.iter().map(|&c| c as u8).collect()),
                code::GLOBALVAR | code::FUNCTION | code::ALIAS | code::IFUNC => {
                    if version < 2 {
                        unreadable =
                            Some(malformed("bitcode without a string table is not supported"));
                        return Ok(());
                    }
                    if ops.len() < 6 {
                        unreadable = Some(malformed("invalid global value record"));
                        return Ok(());
                    }
                    let (linkage_raw, declaration, section) = match code {
                        // [name, type, isconst, initid, linkage, align, section]
                        code::GLOBALVAR => (at(5), at(4) == 0, at(7)),
                        // [name, type, cc, isproto, linkage]
                        code::FUNCTION => (at(5), at(4) != 0, 0),
                        // [name, type, addrspace, value, linkage]
                        _ => (at(5), false, 0),
                    };
                    let global = Global {
                        name_off: at(0),
                        name_len: at(1),
                        linkage: linkage(linkage_raw),
                        declaration,
                        section,
                    };
                    match code {
                        code::FUNCTION => functions.push(global),
                        code::GLOBALVAR => variables.push(global),
                        _ => others.push(global),
                    }
                }
                _ => {}
            }
            Ok(())
        },
    )?;
    if let Some(e) = unreadable {
        return Ok(Err(e));
    }
    for (is_var, global) in functions
        .iter()
        .map(|g| (false, g))
        .chain(variables.iter().map(|g| (true, g)))
        .chain(others.iter().map(|g| (false, g)))
    {
        if matches!(global.linkage, Linkage::Local | Linkage::Private) {
            continue;
        }
        if global.declaration || global.linkage == Linkage::AvailableExternally {
            continue;
        }
        let Some(name) = usize::try_from(global.name_off)
            .ok()
            .zip(usize::try_from(global.name_len).ok())
            .and_then(|(off, len)| module.strtab.get(off..off.checked_add(len)?))
        else {
            return Ok(Err(malformed("global value name outside the string table")));
        };
        if name.starts_with(b"llvm.") {
            continue;
        }
        if is_var && global.section != 0 {
            let index = usize::try_from(global.section - 1).ok();
            if index
                .and_then(|i| sections.get(i))
                .is_some_and(|s| s == b"llvm.metadata")
            {
                continue;
            }
        }
        let mut mangled = Vec::with_capacity(name.len() + 1);
        if let Some(rest) = name.strip_prefix(b"\x01") {
            mangled.extend_from_slice(rest);
        } else {
            // COFF mangling leaves MSVC C++ names (`?...`) alone.
            let skip = mangling.coff && name.first() == Some(&b'?');
            if let (Some(prefix), false) = (mangling.prefix, skip) {
                mangled.push(prefix);
            }
            mangled.extend_from_slice(name);
        }
        out.push(mangled);
    }
    Ok(Ok(()))
}

/// Name mangling facts from the data layout's `m:` entry.
#[derive(Clone, Copy, Default)]
struct Mangling {
    /// `_` for Mach-O (`m:o`) and 32-bit Windows x86 (`m:x`).
    prefix: Option<u8>,
    /// COFF mangling (`m:w`, `m:x`).
    coff: bool,
}

impl Mangling {
    fn from_datalayout(ops: &[u64]) -> Self {
        let text: Vec<u8> = ops.iter().map(|&c| c as u8).collect();
        let mode = text
            .split(|&c| c == b'-')
            .rev()
            .find_map(|spec| spec.strip_prefix(b"m:"))
            .unwrap_or(b"");
        Mangling {
            prefix: matches!(mode, b"o" | b"x").then_some(b'_'),
            coff: matches!(mode, b"w" | b"x"),
        }
    }
}

/// Whether the module has non-empty module-level inline assembly.
pub(super) fn has_module_asm(stream: &[u8], module: &ModuleRef<'_>) -> Result<bool, BitcodeError> {
    let mut cursor = Cursor::new(stream);
    // Only module-level records are read; BLOCKINFO inside the module
    // cannot change how they are encoded.
    cursor.skip_blockinfo(true);
    cursor.seek(module.bit)?;
    match cursor.advance()? {
        Entry::SubBlock(block_id::MODULE) => cursor.enter_block(block_id::MODULE)?,
        _ => return Err(malformed("module block expected")),
    }
    loop {
        match cursor.advance()? {
            Entry::EndBlock => return Ok(false),
            Entry::EndOfStream => return Err(BitcodeError::UnexpectedEnd),
            Entry::SubBlock(_) => cursor.skip_block()?,
            Entry::Record(abbrev) => {
                let (code, any) = cursor.skip_record_any_ops(abbrev)?;
                if code == code::ASM && any {
                    return Ok(true);
                }
            }
        }
    }
}
