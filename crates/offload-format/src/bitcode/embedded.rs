//! Offload objects embedded in bitcode by `clang -fembed-offload-object`.
//!
//! clang stores each embedded file as the initializer of a private global
//! byte array and lists `!{ptr @global, !".llvm.offloading"}` in the named
//! metadata `!llvm.embedded.objects`. Extraction walks that list in order;
//! an entry is used when its second operand is the string
//! `.llvm.offloading`, its first operand is a global variable, and that
//! variable's initializer is a constant data array or vector (bitcode
//! records `CST_CODE_STRING`, `CST_CODE_CSTRING` or `CST_CODE_DATA`). Other
//! entries are skipped silently, as LLVM does.
//!
//! The module is read in one pass over the module block; the (possibly
//! large) initializer records are only remembered by position and decoded
//! at the end for the globals that are actually referenced.

use std::collections::HashMap;
use std::rc::Rc;

use super::bitstream::{Abbrev, Cursor, Entry};
use super::ir::{self, ModuleReader, Type};
use super::{block_id, module_code, BitcodeError, BitcodeFile};

const NAMED_METADATA: &[u8] = b"llvm.embedded.objects";
const SECTION: &[u8] = b".llvm.offloading";

mod cst_code {
    pub(super) const SETTYPE: u64 = 1;
    pub(super) const STRING: u64 = 8;
    pub(super) const CSTRING: u64 = 9;
    pub(super) const DATA: u64 = 22;
}

mod md_code {
    pub(super) const STRING_OLD: u64 = 1;
    pub(super) const VALUE: u64 = 2;
    pub(super) const NODE: u64 = 3;
    pub(super) const NAME: u64 = 4;
    pub(super) const DISTINCT_NODE: u64 = 5;
    pub(super) const KIND: u64 = 6;
    pub(super) const NAMED_NODE: u64 = 10;
    pub(super) const ATTACHMENT: u64 = 11;
    pub(super) const STRINGS: u64 = 35;
    pub(super) const GLOBAL_DECL_ATTACHMENT: u64 = 36;
    pub(super) const INDEX_OFFSET: u64 = 38;
    pub(super) const INDEX: u64 = 39;
}

/// A constant record worth decoding later.
#[derive(Clone, Copy)]
struct DataConstant {
    code: u64,
    type_id: u64,
    body_bit: u64,
    abbrev_id: u64,
    /// Index into the saved abbreviation states of constants blocks.
    block: usize,
}

/// Metadata kinds we need to tell apart.
#[derive(Clone, Debug)]
enum Md {
    Other,
    String(Vec<u8>),
    Value(u64),
    Node { len: u64, op0: u64, op1: u64 },
}

#[derive(Default)]
struct ModuleScan {
    version: u64,
    /// By value ID: `Some(initid)` for global variables (0 = none), `None`
    /// for other global values.
    globals: HashMap<u64, Option<u64>>,
    /// Module-level constants by value ID (IDs after the global values).
    constants: HashMap<u64, DataConstant>,
    constant_blocks: Vec<(u32, Vec<Rc<Abbrev>>)>,
    metadata: Vec<Md>,
    /// Metadata IDs listed by `!llvm.embedded.objects`, in order.
    embedded: Vec<u64>,
}

/// Whether a module load reads the module-level metadata or defers it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Metadata {
    /// Read with the module (`llvm-offload-binary`'s load).
    Read,
    /// Skipped by its length word (the archive writer's load).
    Deferred,
}

/// A module-level record as [`load_module_records`] hands it over: its
/// code and operands.
pub(super) type RecordSink<'s> = dyn FnMut(u64, &[u64]) -> Result<(), BitcodeError> + 's;

/// Walks one module as LLVM 22's lazy module load does (the blocks it
/// enters are read without trusting their length words, the walk ends
/// where the load ends) and hands every module-level record it reads to
/// `records`: what the module LLVM loads declares.
pub(super) fn load_module_records(
    stream: &[u8],
    module: &super::ModuleRef<'_>,
    metadata: Metadata,
    records: &mut RecordSink<'_>,
) -> Result<(), BitcodeError> {
    let (mut cursor, mut reader) = module_cursor(stream, module)?;
    scan_module(&mut cursor, &mut reader, None, metadata, Some(records))
}

/// A cursor inside `module`'s block, over the bytes LLVM reads the module
/// from (see [`super::ModuleRef::bytes`]): the bit positions its messages
/// give ("can't skip to bit N from M") count from their start, and the
/// stream ends where the module block's length word says.
///
/// LLVM reads the identification block before the module, when one comes
/// first: its producer string goes into the reader's messages.
fn module_cursor<'a>(
    stream: &'a [u8],
    module: &super::ModuleRef<'_>,
) -> Result<(Cursor<'a>, ModuleReader), BitcodeError> {
    let (start, end) = module.bytes;
    let body = usize::try_from(start)
        .ok()
        .zip(usize::try_from(end).ok())
        .and_then(|(s, e)| stream.get(s..e))
        .ok_or(BitcodeError::UnexpectedEnd)?;
    let mut cursor = Cursor::new(body);
    let module_bit = module
        .bit
        .checked_sub(start * 8)
        .ok_or(BitcodeError::UnexpectedEnd)?;
    // The module's bytes start at its identification block, if it has one.
    let producer = if module_bit > 0 {
        ir::read_identification(&mut cursor)?
    } else {
        String::new()
    };
    cursor.seek(module_bit)?;
    match cursor.advance()? {
        Entry::SubBlock(block_id::MODULE) => cursor.enter_block(block_id::MODULE)?,
        _ => return Err(malformed("module block expected")),
    }
    Ok((cursor, ModuleReader::new(producer, module.strtab.len())))
}

fn malformed(what: &str) -> BitcodeError {
    BitcodeError::Malformed(what.to_string())
}

/// Returns the bytes of every object embedded in a bitcode module, in the
/// order of `!llvm.embedded.objects`. A module without that metadata gives
/// an empty list.
///
/// Errors mean LLVM could not load the module; `llvm-offload-binary` then
/// reports "Failed to create module". A file with more than one module is
/// such an error too (LLVM loads exactly one).
pub fn embedded_objects(data: &[u8]) -> Result<Vec<Vec<u8>>, BitcodeError> {
    let file = BitcodeFile::parse(data)?;
    let [module] = file.modules.as_slice() else {
        return Err(malformed("expected exactly one module"));
    };
    // Abbreviations from BLOCKINFO blocks are in the module's own stream
    // order, so walk from the start of the module block.
    let (mut cursor, mut reader) = module_cursor(file.stream, module)?;
    let mut scan = ModuleScan::default();
    scan_module(
        &mut cursor,
        &mut reader,
        Some(&mut scan),
        Metadata::Read,
        None,
    )?;
    if scan.version > 2 {
        return Err(malformed("unsupported bitcode version"));
    }

    let mut out = Vec::new();
    for &md in &scan.embedded {
        let Some(Md::Node { len, op0, op1 }) = scan.metadata.get(md as usize) else {
            continue;
        };
        if *len < 2 {
            continue;
        }
        let section_ok = op1
            .checked_sub(1)
            .and_then(|i| scan.metadata.get(i as usize))
            .is_some_and(|m| matches!(m, Md::String(s) if s == SECTION));
        if !section_ok {
            continue;
        }
        let Some(Md::Value(value)) = op0
            .checked_sub(1)
            .and_then(|i| scan.metadata.get(i as usize))
        else {
            continue;
        };
        let Some(Some(init)) = scan.globals.get(value) else {
            continue;
        };
        let Some(init_value) = init.checked_sub(1) else {
            continue;
        };
        let Some(constant) = scan.constants.get(&init_value).copied() else {
            continue;
        };
        out.push(decode_data(&mut cursor, &scan, &reader, &constant)?);
    }
    Ok(out)
}

/// Walks the module block as LLVM 22's lazy module load does (what
/// `llvm-offload-binary` runs), so that a bitstream fault fails here
/// exactly when it fails there: the blocks LLVM reads record by record
/// are entered (their length words unchecked), the others skipped by their
/// length words; and, in a module with a value symbol table offset, the
/// walk ends after the first function block, where LLVM suspends reading.
///
/// Without `scan`, the blocks are only walked (what a load that fails
/// nowhere else would meet); `metadata` says whether the load being
/// mirrored reads the module's metadata or defers it (skipping the block
/// by its length word, as the archive writer's lazy load does).
fn scan_module(
    cursor: &mut Cursor<'_>,
    reader: &mut ModuleReader,
    mut scan: Option<&mut ModuleScan>,
    metadata: Metadata,
    mut records: Option<&mut RecordSink<'_>>,
) -> Result<(), BitcodeError> {
    // The module's value symbol table, in 32-bit words from the start of
    // the module's bytes (LLVM's VSTOffset; 0 when there is none).
    let mut vst_offset = 0u64;
    let mut seen_body = false;
    loop {
        match reader.ir(cursor.advance())? {
            Entry::EndBlock => return reader.cleanup(),
            Entry::EndOfStream => return Err(reader.error("Malformed block")),
            Entry::SubBlock(id) => match id {
                block_id::PARAMATTR
                | block_id::PARAMATTR_GROUP
                | block_id::OPERAND_BUNDLE_TAGS
                | block_id::SYNC_SCOPE_NAMES => {
                    cursor.enter_block(id)?;
                    reader.small_block(cursor, id)?;
                }
                // LLVM's metadata loader: its texts carry no producer.
                block_id::METADATA_KIND => {
                    cursor.enter_block(id)?;
                    walk_records(cursor)?;
                }
                block_id::FUNCTION => {
                    if !seen_body {
                        seen_body = true;
                        reader.cleanup()?;
                    }
                    if vst_offset > 0 {
                        // LLVM reads the value symbol table the offset
                        // points at before it skips the first body.
                        read_value_symbol_table(cursor, reader, vst_offset)?;
                        reader.function_body()?;
                        cursor.skip_block()?;
                        return Ok(());
                    }
                    reader.function_body()?;
                    cursor.skip_block()?;
                }
                block_id::METADATA if metadata == Metadata::Deferred => cursor.skip_block()?,
                block_id::TYPE => {
                    cursor.enter_block(id)?;
                    reader.type_table(cursor)?;
                }
                block_id::CONSTANTS => {
                    cursor.enter_block(id)?;
                    let result = scan_constants(cursor, reader, scan.as_deref_mut());
                    reader.ir(result)?;
                }
                block_id::METADATA => {
                    cursor.enter_block(id)?;
                    match scan.as_deref_mut() {
                        Some(scan) => scan_metadata(cursor, scan)?,
                        None => walk_records(cursor)?,
                    }
                }
                _ => cursor.skip_block()?,
            },
            Entry::Record(abbrev) => {
                // The first operands (all a module-level check looks at)
                // and how many there are.
                let mut first = [0u64; 24];
                let mut n = 0usize;
                let code = match records.as_deref_mut() {
                    Some(sink) => {
                        // Module-level records are short; anything huge is
                        // hostile.
                        let record = cursor.read_record_limited(abbrev, 1 << 20)?;
                        for (slot, &v) in first.iter_mut().zip(&record.ops) {
                            *slot = v;
                        }
                        n = record.ops.len();
                        sink(record.code, &record.ops)?;
                        record.code
                    }
                    None => {
                        cursor
                            .read_record_with(abbrev, &mut |v| {
                                if let Some(slot) = first.get_mut(n) {
                                    *slot = v;
                                }
                                n += 1;
                                Ok(())
                            })?
                            .0
                    }
                };
                let value = reader.values();
                reader.module_record(code, &first[..n.min(first.len())], n)?;
                if code == module_code::VSTOFFSET {
                    // Stored one more than the offset (it counts from one
                    // word before the block, the old bitcode header).
                    vst_offset = first[0].wrapping_sub(1);
                }
                let Some(scan) = scan.as_deref_mut() else {
                    continue;
                };
                match code {
                    module_code::VERSION => scan.version = first[0],
                    module_code::GLOBALVAR => {
                        // v2: [strtab offset, size, type, isconst, initid, ...]
                        let base = if scan.version >= 2 { 2 } else { 0 };
                        scan.globals.insert(value, Some(first[base + 2]));
                    }
                    module_code::FUNCTION
                    | module_code::ALIAS
                    | module_code::ALIAS_OLD
                    | module_code::IFUNC => {
                        scan.globals.insert(value, None);
                    }
                    _ => {}
                }
            }
        }
    }
}

/// LLVM's jump to the module-level value symbol table at `offset` words:
/// the block found there is read (its sub-blocks skipped) and the reader
/// comes back to where it was.
fn read_value_symbol_table(
    cursor: &mut Cursor<'_>,
    reader: &ModuleReader,
    offset: u64,
) -> Result<(), BitcodeError> {
    const NOT_A_TABLE: BitcodeError =
        BitcodeError::Bitstream("Expected value symbol table subblock");
    let back = cursor.bit_pos();
    // In 64 bits, wrapping, as LLVM computes it.
    cursor.jump(offset.wrapping_mul(32))?;
    if cursor.at_end() {
        return Err(NOT_A_TABLE);
    }
    match cursor.advance()? {
        Entry::SubBlock(block_id::VALUE_SYMTAB) => {
            cursor.enter_block(block_id::VALUE_SYMTAB)?;
            reader.ir(walk_records(cursor))?;
        }
        _ => return Err(NOT_A_TABLE),
    }
    cursor.seek(back)
}

/// Reads every record of the current block up to its end, skipping
/// sub-blocks, as LLVM does for blocks whose records it reads.
fn walk_records(cursor: &mut Cursor<'_>) -> Result<(), BitcodeError> {
    loop {
        match cursor.advance_skipping_subblocks()? {
            Entry::EndBlock => return Ok(()),
            Entry::EndOfStream => return Err(BitcodeError::UnexpectedEnd),
            Entry::SubBlock(_) => cursor.skip_block()?,
            Entry::Record(id) => {
                cursor.skip_record(id)?;
            }
        }
    }
}

/// A module-level constants block: every record but `SETTYPE` is one
/// more value; with `scan`, the data arrays are remembered.
fn scan_constants(
    cursor: &mut Cursor<'_>,
    reader: &mut ModuleReader,
    mut scan: Option<&mut ModuleScan>,
) -> Result<(), BitcodeError> {
    let block = scan.as_deref().map_or(0, |s| s.constant_blocks.len());
    let mut current_type = None;
    loop {
        match cursor.advance_skipping_subblocks()? {
            Entry::EndBlock => {
                let state = cursor.take_last_left().unwrap_or_default();
                if let Some(scan) = scan {
                    scan.constant_blocks.push(state);
                }
                return Ok(());
            }
            Entry::EndOfStream => return Err(BitcodeError::UnexpectedEnd),
            Entry::SubBlock(_) => cursor.skip_block()?,
            Entry::Record(abbrev) => {
                let body_bit = cursor.bit_pos();
                let mut first = 0u64;
                let mut n = 0usize;
                let (code, _) = cursor.read_record_with(abbrev, &mut |v| {
                    if n == 0 {
                        first = v;
                    }
                    n += 1;
                    Ok(())
                })?;
                if code == cst_code::SETTYPE {
                    if n == 0 {
                        return Err(malformed("invalid SETTYPE record"));
                    }
                    current_type = Some(first);
                    continue;
                }
                let value = reader.values();
                reader.add_value();
                let Some(scan) = scan.as_deref_mut() else {
                    continue;
                };
                if matches!(code, cst_code::STRING | cst_code::CSTRING | cst_code::DATA) {
                    let type_id =
                        current_type.ok_or_else(|| malformed("constant before SETTYPE"))?;
                    scan.constants.insert(
                        value,
                        DataConstant {
                            code,
                            type_id,
                            body_bit,
                            abbrev_id: abbrev,
                            block,
                        },
                    );
                }
            }
        }
    }
}

fn scan_metadata(cursor: &mut Cursor<'_>, scan: &mut ModuleScan) -> Result<(), BitcodeError> {
    let mut pending_name: Option<Vec<u8>> = None;
    loop {
        match cursor.advance_skipping_subblocks()? {
            Entry::EndBlock => return Ok(()),
            Entry::EndOfStream => return Err(BitcodeError::UnexpectedEnd),
            Entry::SubBlock(_) => cursor.skip_block()?,
            Entry::Record(abbrev) => {
                let body_bit = cursor.bit_pos();
                // Peek at the code first without keeping operands; most
                // metadata records (debug info) are not needed.
                let code = cursor.skip_record(abbrev)?;
                let name = pending_name.take();
                match code {
                    md_code::NAME
                    | md_code::STRING_OLD
                    | md_code::VALUE
                    | md_code::NODE
                    | md_code::DISTINCT_NODE
                    | md_code::NAMED_NODE
                    | md_code::STRINGS => {
                        cursor.seek(body_bit)?;
                        let record = cursor.read_record(abbrev)?;
                        match code {
                            md_code::NAME => {
                                pending_name = Some(record.ops.iter().map(|&c| c as u8).collect());
                            }
                            md_code::STRING_OLD => {
                                scan.metadata.push(Md::String(
                                    record.ops.iter().map(|&c| c as u8).collect(),
                                ));
                            }
                            md_code::VALUE => {
                                if record.ops.len() != 2 {
                                    return Err(malformed("invalid metadata value record"));
                                }
                                scan.metadata.push(Md::Value(record.ops[1]));
                            }
                            md_code::NODE | md_code::DISTINCT_NODE => {
                                let ops = &record.ops;
                                scan.metadata.push(Md::Node {
                                    len: ops.len() as u64,
                                    op0: ops.first().copied().unwrap_or(0),
                                    op1: ops.get(1).copied().unwrap_or(0),
                                });
                            }
                            md_code::NAMED_NODE => {
                                let Some(name) = name else {
                                    return Err(malformed("named node without a name"));
                                };
                                if name == NAMED_METADATA {
                                    scan.embedded.extend_from_slice(&record.ops);
                                }
                            }
                            _ => read_strings(&record.ops, record.blob, &mut scan.metadata)?,
                        }
                    }
                    md_code::KIND
                    | md_code::ATTACHMENT
                    | md_code::GLOBAL_DECL_ATTACHMENT
                    | md_code::INDEX_OFFSET
                    | md_code::INDEX => {}
                    // Every other record defines one metadata ID.
                    _ => scan.metadata.push(Md::Other),
                }
            }
        }
    }
}

/// Decodes a `METADATA_STRINGS` record: `[count, offset]` and a blob whose
/// first `offset` bytes hold `count` VBR6 lengths, followed by the
/// characters.
fn read_strings(ops: &[u64], blob: Option<&[u8]>, out: &mut Vec<Md>) -> Result<(), BitcodeError> {
    let (Some(&count), Some(&offset), Some(blob)) = (ops.first(), ops.get(1), blob) else {
        return Err(malformed("invalid metadata strings record"));
    };
    let offset =
        usize::try_from(offset).map_err(|_| malformed("invalid metadata strings offset"))?;
    let (lengths, mut chars) = (
        blob.get(..offset)
            .ok_or_else(|| malformed("invalid metadata strings offset"))?,
        blob.get(offset..)
            .ok_or_else(|| malformed("invalid metadata strings offset"))?,
    );
    let mut lens = Cursor::new(lengths);
    for _ in 0..count {
        let len = lens.read_vbr32(6)?;
        let len = usize::try_from(len).map_err(|_| malformed("metadata string too long"))?;
        let s = chars
            .get(..len)
            .ok_or_else(|| malformed("metadata string past the end"))?;
        // Only the section name is ever compared; keep others cheap.
        out.push(if s == SECTION {
            Md::String(s.to_vec())
        } else {
            Md::Other
        });
        chars = &chars[len..];
    }
    Ok(())
}

fn decode_data(
    cursor: &mut Cursor<'_>,
    scan: &ModuleScan,
    reader: &ModuleReader,
    c: &DataConstant,
) -> Result<Vec<u8>, BitcodeError> {
    let block = scan
        .constant_blocks
        .get(c.block)
        .ok_or_else(|| malformed("constant outside a constants block"))?;
    let elt_size = match c.code {
        cst_code::DATA => {
            let types = &reader.types;
            let element = match types.peek(c.type_id) {
                Some(Type::Array(element) | Type::Vector { element, .. }) => element,
                _ => return Err(malformed("data constant of a non-sequence type")),
            };
            match types.peek(u64::from(element)) {
                Some(Type::Integer(bits)) if matches!(bits.div_ceil(8), 1 | 2 | 4 | 8) => {
                    bits.div_ceil(8) as usize
                }
                Some(Type::Float(size @ (2 | 4 | 8))) => size as usize,
                _ => return Err(malformed("data constant of an unsupported element type")),
            }
        }
        _ => 1,
    };
    let mut bytes = Vec::new();
    cursor.reread_record(c.body_bit, c.abbrev_id, block, &mut |v| {
        bytes.extend_from_slice(&v.to_le_bytes()[..elt_size]);
        Ok(())
    })?;
    if c.code == cst_code::CSTRING {
        bytes.push(0);
    }
    Ok(bytes)
}
