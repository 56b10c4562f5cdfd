//! Serialises an [`ir::Module`](super::ir::Module) as LLVM bitcode.
//!
//! The output is what LLVM's reader needs and no more: an identification
//! block, the module block (type table, globals, function records, one
//! module-level constant pool, function bodies) and a string table. LLVM's own
//! writer adds metadata-kind, operand-bundle and sync-scope tables, a module
//! symbol table and many abbreviations; readers do not require any of them,
//! so the bytes differ from LLVM's while `llvm-dis` prints the same module.
//!
//! Both pointer flavours use the same record layouts (module format version 2
//! with a string table); they differ in pointer type records and in how
//! constant `getelementptr` expressions are encoded.

use super::bitstream::{AbbrevOp, BitWriter, Stream, StreamError};
use super::ir::{
    BinOp, Const, Flavour, Function, InstKind, IntPredicate, Linkage, Module, Type, Value,
    Visibility,
};
use std::borrow::Cow;
use std::io::{self, Write};

// Block ids.
const MODULE_BLOCK: u64 = 8;
const CONSTANTS_BLOCK: u64 = 11;
const FUNCTION_BLOCK: u64 = 12;
const IDENTIFICATION_BLOCK: u64 = 13;
const VALUE_SYMTAB_BLOCK: u64 = 14;
const TYPE_BLOCK: u64 = 17;
const STRTAB_BLOCK: u64 = 23;

// Identification records.
const IDENT_STRING: u64 = 1;
const IDENT_EPOCH: u64 = 2;

// Module records.
const MODULE_VERSION: u64 = 1;
const MODULE_TRIPLE: u64 = 2;
const MODULE_SECTIONNAME: u64 = 5;
const MODULE_GLOBALVAR: u64 = 7;
const MODULE_FUNCTION: u64 = 8;
const MODULE_SOURCE_FILENAME: u64 = 16;

// Type records.
const TYPE_NUMENTRY: u64 = 1;
const TYPE_VOID: u64 = 2;
const TYPE_INTEGER: u64 = 7;
const TYPE_POINTER: u64 = 8;
const TYPE_ARRAY: u64 = 11;
const TYPE_STRUCT_ANON: u64 = 18;
const TYPE_STRUCT_NAME: u64 = 19;
const TYPE_STRUCT_NAMED: u64 = 20;
const TYPE_FUNCTION: u64 = 21;
const TYPE_OPAQUE_POINTER: u64 = 25;

// Constant records.
const CST_SETTYPE: u64 = 1;
const CST_NULL: u64 = 2;
const CST_INTEGER: u64 = 4;
const CST_AGGREGATE: u64 = 7;
const CST_STRING: u64 = 8;
const CST_CE_GEP_OLD: u64 = 12;
const CST_CE_INBOUNDS_GEP: u64 = 20;
const CST_CE_GEP: u64 = 32;

// Function records.
const FUNC_DECLAREBLOCKS: u64 = 1;
const FUNC_BINOP: u64 = 2;
const FUNC_CAST: u64 = 3;
const FUNC_RET: u64 = 10;
const FUNC_BR: u64 = 11;
const FUNC_SWITCH: u64 = 12;
const FUNC_PHI: u64 = 16;
const FUNC_LOAD: u64 = 20;
const FUNC_CMP2: u64 = 28;
const FUNC_CALL: u64 = 34;
const FUNC_GEP: u64 = 43;
const FUNC_STORE: u64 = 44;

// Value symbol table records.
const VST_ENTRY: u64 = 1;
const VST_BBENTRY: u64 = 2;

// STRTAB record.
const STRTAB_BLOB: u64 = 1;

/// Bit 15 of a call's calling-convention field: the record carries the
/// callee's function type explicitly.
const CALL_EXPLICIT_TYPE: u64 = 1 << 15;

/// Errors from serialising a module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteError {
    /// A block would exceed the 2^32-word length limit of the format.
    TooLarge,
    /// The Mach-O bitcode wrapper header stores the size in 32 bits.
    TooLargeForDarwinWrapper,
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteError::TooLarge => f.write_str("the module is too large for LLVM bitcode"),
            WriteError::TooLargeForDarwinWrapper => {
                f.write_str("the module is too large for the Darwin bitcode wrapper header")
            }
        }
    }
}

impl std::error::Error for WriteError {}

impl From<StreamError> for WriteError {
    fn from(_: StreamError) -> Self {
        WriteError::TooLarge
    }
}

/// Serialised bitcode, possibly inside the Darwin wrapper header.
pub struct Bitcode<'a> {
    prefix: Vec<u8>,
    stream: Stream<'a>,
    suffix: Vec<u8>,
}

impl Bitcode<'_> {
    /// Total size in bytes.
    pub fn len(&self) -> u64 {
        self.prefix.len() as u64 + self.stream.len() + self.suffix.len() as u64
    }

    /// Never true: bitcode always has a header.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes the bitcode.
    pub fn write_to(&self, w: &mut dyn Write) -> io::Result<()> {
        w.write_all(&self.prefix)?;
        self.stream.write_to(w)?;
        w.write_all(&self.suffix)
    }

    /// The bitcode as one vector (copies the images; for tests and small
    /// modules).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.len() as usize);
        self.write_to(&mut v).expect("writing to a Vec cannot fail");
        v
    }
}

/// CPU type stored in the Darwin wrapper header, or `None` for "no wrapper".
pub(crate) type DarwinCpu = Option<u32>;

/// Serialises `m`. With `darwin_cpu` set, the bitcode is preceded by the
/// 20-byte wrapper header LLVM writes for Darwin targets and padded to a
/// multiple of 16 bytes.
pub(crate) fn write<'a>(m: &Module<'a>, darwin_cpu: DarwinCpu) -> Result<Bitcode<'a>, WriteError> {
    let mut w = BitWriter::new();
    w.raw_bytes(b"BC\xC0\xDE");
    write_identification(&mut w, m.flavour);
    let strtab = write_module(&mut w, m);
    write_strtab(&mut w, strtab);
    let stream = w.finish()?;
    let (prefix, suffix) = match darwin_cpu {
        None => (Vec::new(), Vec::new()),
        Some(cpu) => {
            let size =
                u32::try_from(stream.len()).map_err(|_| WriteError::TooLargeForDarwinWrapper)?;
            let mut h = Vec::with_capacity(20);
            for word in [0x0B17_C0DEu32, 0, 20, size, cpu] {
                h.extend_from_slice(&word.to_le_bytes());
            }
            let total = 20 + stream.len();
            let pad = ((16 - total % 16) % 16) as usize;
            (h, vec![0u8; pad])
        }
    };
    Ok(Bitcode {
        prefix,
        stream,
        suffix,
    })
}

fn write_identification(w: &mut BitWriter<'_>, flavour: Flavour) {
    // Readers only check the epoch; the producer string appears in their
    // error messages, so name the LLVM release whose reader we target.
    let producer: &[u8] = match flavour {
        Flavour::Llvm22 => b"LLVM22.1.8",
        Flavour::Llvm14 => b"LLVM14.0.6",
    };
    w.enter_block(IDENTIFICATION_BLOCK, 5);
    w.record_str(IDENT_STRING, &[], producer);
    w.record(IDENT_EPOCH, &[0]);
    w.exit_block();
}

fn write_strtab(w: &mut BitWriter<'_>, strtab: Vec<u8>) {
    w.enter_block(STRTAB_BLOCK, 3);
    let abbrev = w.define_abbrev(&[AbbrevOp::Literal(STRTAB_BLOB), AbbrevOp::Blob]);
    w.blob_record(abbrev, &strtab);
    w.exit_block();
}

fn linkage_code(l: Linkage) -> u64 {
    match l {
        Linkage::External => 0,
        Linkage::Appending => 2,
        Linkage::Internal => 3,
        Linkage::WeakOdr => 17,
    }
}

fn visibility_code(v: Visibility) -> u64 {
    match v {
        Visibility::Default => 0,
        Visibility::Hidden => 1,
    }
}

fn align_code(align: Option<u32>) -> u64 {
    match align {
        None => 0,
        Some(a) => a.trailing_zeros() as u64 + 1,
    }
}

/// Sign-rotated encoding used for signed operands.
fn signed(v: i64) -> u64 {
    if v >= 0 {
        (v as u64) << 1
    } else {
        (v.unsigned_abs() << 1) | 1
    }
}

/// Writes the module block and returns the string table contents.
fn write_module<'a>(w: &mut BitWriter<'a>, m: &Module<'a>) -> Vec<u8> {
    w.enter_block(MODULE_BLOCK, 3);
    w.record(MODULE_VERSION, &[2]);
    write_types(w, m);
    if !m.triple.is_empty() {
        w.record_str(MODULE_TRIPLE, &[], m.triple.as_bytes());
    }

    // Section names are listed once each and referenced 1-based.
    let mut sections: Vec<&str> = Vec::new();
    for s in m
        .globals
        .iter()
        .map(|g| &g.section)
        .chain(m.functions.iter().map(|f| &f.section))
        .flatten()
    {
        if !sections.contains(&s.as_str()) {
            sections.push(s);
        }
    }
    for s in &sections {
        w.record_str(MODULE_SECTIONNAME, &[], s.as_bytes());
    }
    let section_of = |s: &Option<String>| -> u64 {
        s.as_ref().map_or(0, |s| {
            sections.iter().position(|x| x == s).expect("listed") as u64 + 1
        })
    };
    w.record_str(MODULE_SOURCE_FILENAME, &[], m.source_filename.as_bytes());

    let mut strtab = Vec::new();
    let mut name = |n: &str| -> [u64; 2] {
        let off = strtab.len() as u64;
        strtab.extend_from_slice(n.as_bytes());
        [off, n.len() as u64]
    };

    let nglobals = m.globals.len() as u64;
    let nfuncs = m.functions.len() as u64;
    let const_base = nglobals + nfuncs;
    for g in &m.globals {
        let [off, len] = name(&g.name);
        let local = g.linkage == Linkage::Internal || g.visibility == Visibility::Hidden;
        w.record(
            MODULE_GLOBALVAR,
            &[
                off,
                len,
                g.value_type.0 as u64,
                g.constant as u64 | 2, // bit 1: explicit value type
                g.init.map_or(0, |c| const_base + c.0 as u64 + 1),
                linkage_code(g.linkage),
                align_code(g.align),
                section_of(&g.section),
                visibility_code(g.visibility),
                0, // thread_local
                g.unnamed_addr as u64,
                0, // externally_initialized
                0, // dll storage class
                0, // comdat
                0, // attributes
                local as u64,
            ],
        );
    }
    for f in &m.functions {
        let [off, len] = name(&f.name);
        let local = f.linkage == Linkage::Internal;
        w.record(
            MODULE_FUNCTION,
            &[
                off,
                len,
                f.ty.0 as u64,
                0, // calling convention
                f.is_declaration() as u64,
                linkage_code(f.linkage),
                0, // parameter attributes
                0, // alignment
                section_of(&f.section),
                0, // visibility
                0, // gc
                0, // unnamed_addr
                0, // prologue data
                0, // dll storage class
                0, // comdat
                0, // prefix data
                0, // personality
                local as u64,
            ],
        );
    }

    write_constants(w, m, const_base);

    let first_local = const_base + m.consts.len() as u64;
    for (i, f) in m.functions.iter().enumerate() {
        if !f.is_declaration() {
            write_function(w, m, i as u32, f, first_local, const_base);
        }
    }
    w.exit_block();
    strtab
}

fn write_types(w: &mut BitWriter<'_>, m: &Module<'_>) {
    w.enter_block(TYPE_BLOCK, 4);
    w.record(TYPE_NUMENTRY, &[m.types.len() as u64]);
    for t in &m.types {
        match t {
            Type::Void => w.record(TYPE_VOID, &[]),
            Type::Int(bits) => w.record(TYPE_INTEGER, &[*bits as u64]),
            Type::OpaquePtr => w.record(TYPE_OPAQUE_POINTER, &[0]),
            Type::Ptr(p) => w.record(TYPE_POINTER, &[p.0 as u64, 0]),
            Type::Array(n, e) => w.record(TYPE_ARRAY, &[*n, e.0 as u64]),
            Type::Struct { name, fields } => {
                let mut ops = vec![0u64]; // not packed
                ops.extend(fields.iter().map(|f| f.0 as u64));
                match name {
                    Some(n) => {
                        w.record_str(TYPE_STRUCT_NAME, &[], n.as_bytes());
                        w.record(TYPE_STRUCT_NAMED, &ops);
                    }
                    None => w.record(TYPE_STRUCT_ANON, &ops),
                }
            }
            Type::Function { ret, params } => {
                let mut ops = vec![0u64, ret.0 as u64]; // not variadic
                ops.extend(params.iter().map(|p| p.0 as u64));
                w.record(TYPE_FUNCTION, &ops);
            }
        }
    }
    w.exit_block();
}

/// Absolute value id of a module-level value.
fn module_value_id(m: &Module<'_>, v: Value, const_base: u64) -> u64 {
    match v {
        Value::Global(g) => g.0 as u64,
        Value::Function(f) => m.globals.len() as u64 + f.0 as u64,
        Value::Const(c) => const_base + c.0 as u64,
        Value::Arg(_) | Value::Inst(_) => unreachable!("not a module-level value"),
    }
}

fn write_constants<'a>(w: &mut BitWriter<'a>, m: &Module<'a>, const_base: u64) {
    if m.consts.is_empty() {
        return;
    }
    w.enter_block(CONSTANTS_BLOCK, 4);
    let string_abbrev = m
        .consts
        .iter()
        .any(|c| matches!(c, Const::Bytes { .. }))
        .then(|| w.define_abbrev(&[AbbrevOp::Literal(CST_STRING), AbbrevOp::Blob]));
    let mut current = None;
    for c in &m.consts {
        let ty = c.ty();
        if current != Some(ty) {
            w.record(CST_SETTYPE, &[ty.0 as u64]);
            current = Some(ty);
        }
        match c {
            Const::Int { value, .. } => w.record(CST_INTEGER, &[signed(*value)]),
            Const::Null(_) => w.record(CST_NULL, &[]),
            Const::Bytes { data, .. } => {
                let abbrev = string_abbrev.expect("defined above");
                match data {
                    Cow::Borrowed(d) => w.blob_record_borrowed(abbrev, d),
                    Cow::Owned(d) => w.blob_record(abbrev, d),
                }
            }
            Const::Aggregate { elems, .. } => {
                let ops: Vec<u64> = elems
                    .iter()
                    .map(|&v| module_value_id(m, v, const_base))
                    .collect();
                w.record(CST_AGGREGATE, &ops);
            }
            Const::Gep {
                inbounds,
                source,
                base,
                indices,
                ..
            } => {
                let mut ops = vec![source.0 as u64];
                let code = match m.flavour {
                    Flavour::Llvm22 => {
                        // no-wrap flags: inbounds implies nusw (bits 0 and 1)
                        ops.push(if *inbounds { 3 } else { 0 });
                        CST_CE_GEP
                    }
                    Flavour::Llvm14 if *inbounds => CST_CE_INBOUNDS_GEP,
                    Flavour::Llvm14 => CST_CE_GEP_OLD,
                };
                ops.push(m.value_type(None, *base).0 as u64);
                ops.push(module_value_id(m, *base, const_base));
                for &i in indices {
                    ops.push(m.consts[i.0 as usize].ty().0 as u64);
                    ops.push(const_base + i.0 as u64);
                }
                w.record(code, &ops);
            }
        }
    }
    w.exit_block();
}

fn write_function(
    w: &mut BitWriter<'_>,
    m: &Module<'_>,
    index: u32,
    f: &Function,
    first_local: u64,
    const_base: u64,
) {
    let fid = Some(super::ir::FuncId(index));
    let nargs = m.func_sig(f.ty).1.len() as u64;
    let void = m.types.iter().position(|t| *t == Type::Void);

    // Value ids of instructions that produce a value.
    let mut inst_ids: Vec<Option<u64>> = Vec::new();
    let mut next = first_local + nargs;
    for (_, inst) in f.instructions() {
        if Some(inst.ty.0 as usize) == void {
            inst_ids.push(None);
        } else {
            inst_ids.push(Some(next));
            next += 1;
        }
    }
    let id_of = |v: Value| -> u64 {
        match v {
            Value::Arg(n) => first_local + n as u64,
            Value::Inst(n) => inst_ids[n as usize].expect("instruction has a value"),
            other => module_value_id(m, other, const_base),
        }
    };

    w.enter_block(FUNCTION_BLOCK, 4);
    w.record(FUNC_DECLAREBLOCKS, &[f.blocks.len() as u64]);
    let mut inst_no = first_local + nargs;
    for (i, (_, inst)) in f.instructions().enumerate() {
        // Operands are encoded relative to the number the instruction itself
        // gets (or would get); a forward reference also needs its type.
        let rel = |v: Value| inst_no.wrapping_sub(id_of(v));
        let value_and_type = |v: Value, ops: &mut Vec<u64>| {
            let id = id_of(v);
            ops.push(inst_no.wrapping_sub(id));
            if id >= inst_no {
                ops.push(m.value_type(fid, v).0 as u64);
            }
        };
        let mut ops = Vec::new();
        let code = match &inst.kind {
            InstKind::Call { fty, callee, args } => {
                ops.extend([0, CALL_EXPLICIT_TYPE, fty.0 as u64]);
                value_and_type(*callee, &mut ops);
                ops.extend(args.iter().map(|&a| rel(a)));
                FUNC_CALL
            }
            InstKind::RetVoid => FUNC_RET,
            InstKind::Br(b) => {
                ops.push(b.0 as u64);
                FUNC_BR
            }
            InstKind::CondBr {
                cond,
                then,
                otherwise,
            } => {
                ops.extend([then.0 as u64, otherwise.0 as u64, rel(*cond)]);
                FUNC_BR
            }
            InstKind::Switch {
                cond,
                default,
                cases,
            } => {
                ops.extend([
                    m.value_type(fid, *cond).0 as u64,
                    rel(*cond),
                    default.0 as u64,
                ]);
                for (v, b) in cases {
                    ops.push(const_base + v.0 as u64);
                    ops.push(b.0 as u64);
                }
                FUNC_SWITCH
            }
            InstKind::Phi { incoming } => {
                ops.push(inst.ty.0 as u64);
                for (v, b) in incoming {
                    ops.push(signed(inst_no as i64 - id_of(*v) as i64));
                    ops.push(b.0 as u64);
                }
                FUNC_PHI
            }
            InstKind::Load { ptr, align } => {
                value_and_type(*ptr, &mut ops);
                ops.extend([inst.ty.0 as u64, align_code(Some(*align)), 0]);
                FUNC_LOAD
            }
            InstKind::Store { value, ptr, align } => {
                value_and_type(*ptr, &mut ops);
                value_and_type(*value, &mut ops);
                ops.extend([align_code(Some(*align)), 0]);
                FUNC_STORE
            }
            InstKind::Gep {
                inbounds,
                source,
                base,
                indices,
            } => {
                let flags = match (m.flavour, inbounds) {
                    (_, false) => 0,
                    (Flavour::Llvm22, true) => 3,
                    (Flavour::Llvm14, true) => 1,
                };
                ops.extend([flags, source.0 as u64]);
                value_and_type(*base, &mut ops);
                for &i in indices {
                    value_and_type(i, &mut ops);
                }
                FUNC_GEP
            }
            InstKind::ICmp { pred, lhs, rhs } => {
                value_and_type(*lhs, &mut ops);
                ops.push(rel(*rhs));
                ops.push(match pred {
                    IntPredicate::Eq => 32,
                    IntPredicate::Ne => 33,
                });
                FUNC_CMP2
            }
            InstKind::Binary { op, lhs, rhs } => {
                value_and_type(*lhs, &mut ops);
                ops.push(rel(*rhs));
                ops.push(match op {
                    BinOp::LShr => 8,
                    BinOp::And => 10,
                });
                FUNC_BINOP
            }
            InstKind::Trunc(v) => {
                value_and_type(*v, &mut ops);
                ops.extend([inst.ty.0 as u64, 0]);
                FUNC_CAST
            }
        };
        w.record(code, &ops);
        if inst_ids[i].is_some() {
            inst_no += 1;
        }
    }

    // Local names: instructions and blocks (arguments are unnamed).
    let mut names: Vec<(u64, u64, &str)> = Vec::new();
    for (i, (_, inst)) in f.instructions().enumerate() {
        if let (Some(n), Some(id)) = (&inst.name, inst_ids[i]) {
            names.push((VST_ENTRY, id, n));
        }
    }
    for (b, block) in f.blocks.iter().enumerate() {
        names.push((VST_BBENTRY, b as u64, &block.name));
    }
    if !names.is_empty() {
        w.enter_block(VALUE_SYMTAB_BLOCK, 4);
        for (code, id, n) in names {
            w.record_str(code, &[id], n.as_bytes());
        }
        w.exit_block();
    }
    w.exit_block();
}
