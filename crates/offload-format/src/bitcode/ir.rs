//! The module-level checks of LLVM 22's IR reader, as far as a lazy module
//! load makes them: the identification block (whose producer string LLVM
//! appends to its reader's messages), the type table, the records that
//! declare global values, comdats, sections and GC names, the small
//! blocks read record by record (attribute lists, operand bundle tags,
//! synchronisation scope names), and the clean-up at the end of the
//! module-level records (every global initialiser must name a value).
//!
//! Not covered: attribute group contents, data layout strings, constant
//! expressions, metadata; a module damaged there is read where LLVM
//! refuses it (docs/compat.md, "module-level IR not validated").
//!
//! Messages are LLVM's: a check LLVM's `BitcodeReader` makes gives its
//! text followed by ` (Producer: '...' Reader: 'LLVM 22.1.8')` when the
//! module has a producer string, as LLVM formats them.

use std::collections::HashMap;

use super::bitstream::{Cursor, Entry};
use super::{module_code, BitcodeError};

/// The LLVM release whose reader is emulated (its `LLVM_VERSION_STRING`).
pub(crate) const LLVM_VERSION: &str = "22.1.8";

mod type_code {
    pub(super) const NUMENTRY: u32 = 1;
    pub(super) const VOID: u32 = 2;
    pub(super) const FLOAT: u32 = 3;
    pub(super) const DOUBLE: u32 = 4;
    pub(super) const LABEL: u32 = 5;
    pub(super) const OPAQUE: u32 = 6;
    pub(super) const INTEGER: u32 = 7;
    pub(super) const POINTER: u32 = 8;
    pub(super) const FUNCTION_OLD: u32 = 9;
    pub(super) const HALF: u32 = 10;
    pub(super) const ARRAY: u32 = 11;
    pub(super) const VECTOR: u32 = 12;
    pub(super) const X86_FP80: u32 = 13;
    pub(super) const FP128: u32 = 14;
    pub(super) const PPC_FP128: u32 = 15;
    pub(super) const METADATA: u32 = 16;
    pub(super) const X86_MMX: u32 = 17;
    pub(super) const STRUCT_ANON: u32 = 18;
    pub(super) const STRUCT_NAME: u32 = 19;
    pub(super) const STRUCT_NAMED: u32 = 20;
    pub(super) const FUNCTION: u32 = 21;
    pub(super) const TOKEN: u32 = 22;
    pub(super) const BFLOAT: u32 = 23;
    pub(super) const X86_AMX: u32 = 24;
    pub(super) const OPAQUE_POINTER: u32 = 25;
    pub(super) const TARGET_TYPE: u32 = 26;
}

/// What the reader needs to know about a type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Type {
    Void,
    Label,
    Metadata,
    Token,
    X86Amx,
    /// `half`, `bfloat`, `float`, `double`, ...: its size in bytes (0 for
    /// the ones no data array holds).
    Float(u32),
    Integer(u64),
    /// A pointer; typed pointers (old bitcode) remember their pointee.
    Pointer(Option<u32>),
    Function,
    /// A struct; `opaque` for one without a body (an `OPAQUE` record, or
    /// the placeholder a forward reference creates).
    Struct {
        opaque: bool,
    },
    Array(u32),
    Vector {
        element: u32,
        scalable: bool,
    },
    /// `x86_mmx`, which LLVM 22 reads as `<1 x i64>`.
    Mmx,
    TargetExt,
}

impl Type {
    fn valid_pointee(self) -> bool {
        !matches!(
            self,
            Type::Void | Type::Label | Type::Metadata | Type::Token | Type::X86Amx
        )
    }

    fn first_class(self) -> bool {
        !matches!(self, Type::Function | Type::Void)
    }

    /// LLVM 22 takes neither labels nor opaque structs as arguments.
    fn valid_argument(self) -> bool {
        self.first_class() && !matches!(self, Type::Label | Type::Struct { opaque: true })
    }

    /// Scalable vectors are array elements in LLVM 22.
    fn valid_array_element(self) -> bool {
        !matches!(
            self,
            Type::Void | Type::Label | Type::Metadata | Type::Function | Type::Token | Type::X86Amx
        )
    }

    fn valid_vector_element(self) -> bool {
        matches!(self, Type::Integer(_) | Type::Float(_) | Type::Pointer(_))
    }
}

/// LLVM's type list: its size is what `NUMENTRY` says, its entries are
/// filled in record order, and a reference to an entry not yet filled
/// makes a placeholder struct there (LLVM's forward references). Kept
/// sparse: the declared size is not trusted for an allocation.
#[derive(Default)]
pub(super) struct TypeTable {
    size: u64,
    entries: HashMap<u32, Type>,
    /// Entries holding a placeholder from a forward reference.
    placeholders: std::collections::HashSet<u32>,
}

impl TypeTable {
    /// LLVM's `getTypeByID` (the ID cut to 32 bits, as LLVM takes it).
    fn get(&mut self, id: u64) -> Option<Type> {
        let id = id as u32;
        if u64::from(id) >= self.size {
            return None;
        }
        if let Some(&ty) = self.entries.get(&id) {
            return Some(ty);
        }
        let placeholder = Type::Struct { opaque: true };
        self.entries.insert(id, placeholder);
        self.placeholders.insert(id);
        Some(placeholder)
    }

    /// The type at `id` without LLVM's side effects (for decoding data).
    pub(super) fn peek(&self, id: u64) -> Option<Type> {
        u32::try_from(id)
            .ok()
            .and_then(|id| self.entries.get(&id))
            .copied()
    }

    fn resize(&mut self, size: u64) {
        self.size = size;
        self.entries.retain(|&id, _| u64::from(id) < size);
        self.placeholders.retain(|&id| u64::from(id) < size);
    }
}

/// The state of one module's load, as far as the checks need it.
#[derive(Default)]
pub(super) struct ModuleReader {
    /// The identification block's producer string.
    producer: String,
    pub(super) types: TypeTable,
    use_strtab: bool,
    strtab_len: u64,
    sections: u64,
    gc_names: u64,
    comdats: u64,
    /// Values so far: global values, then module-level constants.
    values: u64,
    /// Initialiser value IDs (0-based) of globals and aliasees waiting to
    /// be resolved.
    pending_inits: Vec<u64>,
    functions_with_bodies: u64,
    attribute_lists: bool,
    attribute_groups: bool,
    bundle_tags: bool,
    sync_scopes: bool,
    layout_resolved: bool,
}

impl ModuleReader {
    pub(super) fn new(producer: String, strtab_len: usize) -> Self {
        ModuleReader {
            producer,
            strtab_len: strtab_len as u64,
            ..ModuleReader::default()
        }
    }

    /// An error of LLVM's IR reader, with its producer suffix.
    pub(super) fn error(&self, message: &str) -> BitcodeError {
        BitcodeError::Reader {
            message: message.to_string(),
            producer: self.producer.clone(),
        }
    }

    /// A result of the bitstream layer inside one of the IR reader's
    /// loops: its "Malformed block" (the end of the stream met where an
    /// entry was expected) is the IR reader's, with the producer suffix.
    pub(super) fn ir<T>(&self, r: Result<T, BitcodeError>) -> Result<T, BitcodeError> {
        r.map_err(|e| match e {
            BitcodeError::UnexpectedEnd => self.error("Malformed block"),
            other => other,
        })
    }

    /// One more value (a global value or a module-level constant).
    pub(super) fn add_value(&mut self) {
        self.values += 1;
    }

    /// How many values there are so far: the ID of the next one.
    pub(super) fn values(&self) -> u64 {
        self.values
    }

    /// The module-level record `code` with operands `ops` (the first ones
    /// only: `count` is how many the record has), checked as LLVM's
    /// `parseModule` checks it.
    pub(super) fn module_record(
        &mut self,
        code: u64,
        ops: &[u64],
        count: usize,
    ) -> Result<(), BitcodeError> {
        let invalid = |s: &Self| Err(s.error("Invalid record"));
        // LLVM takes a record's code in 32 bits.
        let code = u64::from(code as u32);
        match code {
            module_code::VERSION => {
                let Some(&version) = ops.first() else {
                    return Err(self.error("Invalid version record"));
                };
                let version = version as u32;
                if version > 2 {
                    return Err(self.error("Invalid value"));
                }
                self.use_strtab = version >= 2;
            }
            module_code::TRIPLE if self.layout_resolved => {
                return Err(self.error("target triple too late in module"));
            }
            module_code::DATALAYOUT if self.layout_resolved => {
                return Err(self.error("datalayout too late in module"));
            }
            module_code::SECTIONNAME => self.sections += 1,
            module_code::GCNAME => self.gc_names += 1,
            module_code::VSTOFFSET if count == 0 => return invalid(self),
            module_code::COMDAT => {
                let (rec, n) = self.strip_name(ops, count);
                if n == 0 {
                    return invalid(self);
                }
                if !self.use_strtab {
                    if n < 2 {
                        return invalid(self);
                    }
                    if u64::from(rec[1] as u32) > (n - 2) as u64 {
                        return Err(self.error("Comdat name size too large"));
                    }
                }
                self.comdats += 1;
            }
            module_code::GLOBALVAR => self.global_var(ops, count)?,
            module_code::FUNCTION => {
                self.layout_resolved = true;
                self.function(ops, count)?;
            }
            module_code::ALIAS | module_code::ALIAS_OLD | module_code::IFUNC => {
                self.indirect_symbol(code, ops, count)?;
            }
            _ => {}
        }
        Ok(())
    }

    /// LLVM's `readNameFromStrtab`: the operands after the name, and how
    /// many there are (none when the name is outside the string table).
    fn strip_name<'o>(&self, ops: &'o [u64], count: usize) -> (&'o [u64], usize) {
        if !self.use_strtab {
            return (ops, count);
        }
        let (Some(&offset), Some(&size)) = (ops.first(), ops.get(1)) else {
            return (&[], 0);
        };
        if offset.wrapping_add(size) > self.strtab_len {
            return (&[], 0);
        }
        (&ops[2..], count - 2)
    }

    fn alignment(&self, exponent: u64) -> Result<(), BitcodeError> {
        if exponent > 33 {
            return Err(self.error("Invalid alignment value"));
        }
        Ok(())
    }

    /// A typed pointer's pointee (LLVM's `getContainedTypeID`), for old
    /// records whose type is a pointer to the value's type.
    fn pointee(&mut self, ty: Type) -> Option<Type> {
        match ty {
            Type::Pointer(Some(id)) => self.types.get(u64::from(id)),
            _ => None,
        }
    }

    fn global_var(&mut self, ops: &[u64], count: usize) -> Result<(), BitcodeError> {
        let (rec, n) = self.strip_name(ops, count);
        if n < 6 {
            return Err(self.error("Invalid record"));
        }
        let at = |i: usize| rec.get(i).copied().unwrap_or(0);
        let Some(ty) = self.types.get(at(0)) else {
            return Err(self.error("Invalid record"));
        };
        if at(1) & 2 == 0 {
            if !matches!(ty, Type::Pointer(_)) {
                return Err(self.error("Invalid type for value"));
            }
            if self.pointee(ty).is_none() {
                return Err(self.error("Missing element type for old-style global"));
            }
        }
        self.alignment(at(4))?;
        if at(5) > self.sections {
            return Err(self.error("Invalid ID"));
        }
        self.values += 1;
        if at(2) as u32 != 0 {
            self.pending_inits.push(u64::from(at(2) as u32) - 1);
        }
        if n > 11 && at(11) as u32 != 0 && u64::from(at(11) as u32) > self.comdats {
            return Err(self.error("Invalid global variable comdat ID"));
        }
        if n > 17 && at(17) != 0 && !(1..=5).contains(&at(17)) {
            return Err(self.error("Invalid global variable code model"));
        }
        Ok(())
    }

    fn function(&mut self, ops: &[u64], count: usize) -> Result<(), BitcodeError> {
        let (rec, n) = self.strip_name(ops, count);
        if n < 8 {
            return Err(self.error("Invalid record"));
        }
        let at = |i: usize| rec.get(i).copied().unwrap_or(0);
        let Some(mut ty) = self.types.get(at(0)) else {
            return Err(self.error("Invalid record"));
        };
        if matches!(ty, Type::Pointer(_)) {
            match self.pointee(ty) {
                Some(pointee) => ty = pointee,
                None => return Err(self.error("Missing element type for old-style function")),
            }
        }
        if ty != Type::Function {
            return Err(self.error("Invalid type for value"));
        }
        if at(1) as u32 & !1023 != 0 {
            return Err(self.error("Invalid calling convention ID"));
        }
        self.alignment(at(5))?;
        if at(6) > self.sections {
            return Err(self.error("Invalid ID"));
        }
        if n > 8 && at(8) > self.gc_names {
            return Err(self.error("Invalid ID"));
        }
        if n > 12 && at(12) as u32 != 0 && u64::from(at(12) as u32) > self.comdats {
            return Err(self.error("Invalid function comdat ID"));
        }
        self.values += 1;
        if at(2) == 0 {
            self.functions_with_bodies += 1;
        }
        Ok(())
    }

    fn indirect_symbol(
        &mut self,
        code: u64,
        ops: &[u64],
        count: usize,
    ) -> Result<(), BitcodeError> {
        let (rec, n) = self.strip_name(ops, count);
        let new_record = code != module_code::ALIAS_OLD;
        if n < 3 + usize::from(new_record) {
            return Err(self.error("Invalid record"));
        }
        let at = |i: usize| rec.get(i).copied().unwrap_or(0);
        let Some(ty) = self.types.get(at(0)) else {
            return Err(self.error("Invalid record"));
        };
        let mut op = 1;
        if new_record {
            op += 1;
        } else {
            if !matches!(ty, Type::Pointer(_)) {
                return Err(self.error("Invalid type for value"));
            }
            if self.pointee(ty).is_none() {
                return Err(self.error("Missing element type for old-style indirect symbol"));
            }
        }
        let aliasee = at(op) as u32;
        op += 2;
        // Visibility; then, for aliases, DLL storage class, thread-local
        // mode and unnamed_addr; then the preemption specifier.
        let optional = if code == module_code::IFUNC { 2 } else { 5 };
        for _ in 0..optional {
            if op != n {
                op += 1;
            }
        }
        if op + 1 < n && at(op).wrapping_add(at(op + 1)) > self.strtab_len {
            return Err(self.error("Malformed partition, too large."));
        }
        self.values += 1;
        self.pending_inits.push(u64::from(aliasee));
        Ok(())
    }

    /// LLVM's `globalCleanup` at the end of the module-level records (the
    /// module's end, or its first function body): every initialiser and
    /// aliasee must name a value read by then.
    pub(super) fn cleanup(&mut self) -> Result<(), BitcodeError> {
        self.layout_resolved = true;
        let values = self.values;
        self.pending_inits.retain(|&id| id >= values);
        if !self.pending_inits.is_empty() {
            return Err(self.error("Malformed global initializer set"));
        }
        Ok(())
    }

    /// A function body met by the lazy load, which pairs it with a
    /// function record that has one.
    pub(super) fn function_body(&mut self) -> Result<(), BitcodeError> {
        self.layout_resolved = true;
        if self.functions_with_bodies == 0 {
            return Err(self.error("Insufficient function protos"));
        }
        self.functions_with_bodies -= 1;
        Ok(())
    }

    /// A block LLVM's module load reads record by record, other than the
    /// type table, constants and metadata: its own checks, in LLVM's
    /// order (the block has been entered).
    pub(super) fn small_block(
        &mut self,
        cursor: &mut Cursor<'_>,
        id: u64,
    ) -> Result<(), BitcodeError> {
        use super::block_id;
        let seen = match id {
            block_id::PARAMATTR => self.attribute_lists,
            block_id::PARAMATTR_GROUP => self.attribute_groups,
            block_id::OPERAND_BUNDLE_TAGS => self.bundle_tags,
            _ => self.sync_scopes,
        };
        if seen {
            return Err(self.error(if id == block_id::SYNC_SCOPE_NAMES {
                "Invalid multiple synchronization scope names blocks"
            } else {
                "Invalid multiple blocks"
            }));
        }
        let mut any = false;
        loop {
            match self.ir(cursor.advance_skipping_subblocks())? {
                Entry::EndBlock => break,
                Entry::SubBlock(_) => cursor.skip_block()?,
                Entry::EndOfStream => return Err(self.error("Malformed block")),
                Entry::Record(abbrev) => {
                    // Attribute group entries are read whole (bounded by
                    // the stream, as every record); the other records
                    // only counted.
                    let keep = id == block_id::PARAMATTR_GROUP;
                    let mut ops: Vec<u64> = Vec::new();
                    let mut count = 0usize;
                    let (code, _) = cursor.read_record_with(abbrev, &mut |v| {
                        if keep {
                            ops.push(v);
                        }
                        count += 1;
                        Ok(())
                    })?;
                    let code = code as u32;
                    match id {
                        block_id::PARAMATTR => match code {
                            1 if count % 2 == 1 => {
                                return Err(self.error("Invalid parameter attribute record"));
                            }
                            1 | 2 => any = true,
                            _ => {}
                        },
                        block_id::PARAMATTR_GROUP => {
                            if code == 3 {
                                if count < 3 {
                                    return Err(self.error("Invalid grp record"));
                                }
                                self.attribute_group_entry(&ops)?;
                                any = true;
                            }
                        }
                        block_id::OPERAND_BUNDLE_TAGS => {
                            if code != 1 {
                                return Err(self.error("Invalid operand bundle record"));
                            }
                            any = true;
                        }
                        _ => {
                            if code != 1 {
                                return Err(self.error("Invalid sync scope record"));
                            }
                            any = true;
                        }
                    }
                }
            }
        }
        match id {
            block_id::PARAMATTR => self.attribute_lists |= any,
            block_id::PARAMATTR_GROUP => self.attribute_groups |= any,
            block_id::OPERAND_BUNDLE_TAGS => self.bundle_tags |= any,
            _ => {
                if !any {
                    return Err(self.error("Invalid empty synchronization scope names block"));
                }
                self.sync_scopes = true;
            }
        }
        Ok(())
    }

    /// The attributes of one attribute group entry (`[group id, index,
    /// attributes...]`), decoded as LLVM 22 decodes them: each attribute
    /// is a selector (0 enum, 1 integer, 3 and 4 strings, 5 and 6 types,
    /// 7 constant range, 8 constant range list) and its operands. Where
    /// LLVM would read past the record's end (it reads whatever its buffer
    /// holds there), the rest is not checked.
    fn attribute_group_entry(&mut self, ops: &[u64]) -> Result<(), BitcodeError> {
        let function_index = ops.get(1) == Some(&u64::from(u32::MAX));
        let e = ops.len();
        let mut i = 2;
        while i < e {
            let selector = ops[i];
            match selector {
                0 => {
                    let Some(&kind) = ops.get(i + 1) else {
                        return Ok(());
                    };
                    i += 1;
                    match attributes::enum_use(kind, function_index) {
                        attributes::Use::Fits => {}
                        attributes::Use::Unknown => return Err(self.unknown_attribute(kind)),
                        attributes::Use::Other => {
                            return Err(self.error("Not an enum attribute"));
                        }
                    }
                }
                1 | 5 | 6 => {
                    let Some(&kind) = ops.get(i + 1) else {
                        return Ok(());
                    };
                    i += 1;
                    let class = if selector == 1 {
                        attributes::Class::Int
                    } else {
                        attributes::Class::Type
                    };
                    self.attribute_class(kind, class)?;
                    if selector != 5 {
                        // The integer, or the type ID.
                        let Some(&value) = ops.get(i + 1) else {
                            return Ok(());
                        };
                        i += 1;
                        if selector == 6 {
                            self.types.get(value);
                        }
                    }
                }
                3 | 4 => {
                    // The kind string, then (4) the value string, each
                    // ending in a 0.
                    i += 1;
                    for part in 0..if selector == 4 { 2 } else { 1 } {
                        if part == 1 {
                            i += 1;
                        }
                        while i < e && ops[i] != 0 {
                            i += 1;
                        }
                        if i >= e {
                            return Ok(());
                        }
                    }
                }
                7 | 8 => {
                    let Some(&kind) = ops.get(i + 1) else {
                        return Ok(());
                    };
                    i += 2;
                    let class = if selector == 7 {
                        attributes::Class::Range
                    } else {
                        attributes::Class::RangeList
                    };
                    self.attribute_class(kind, class)?;
                    let done = if selector == 7 {
                        if e - i < 1 {
                            return Err(self.error("Too few records for range"));
                        }
                        let width = ops[i] as u32;
                        i += 1;
                        self.constant_range(ops, &mut i, width)?
                    } else {
                        if i + 2 > e {
                            return Err(self.error("Too few records for constant range list"));
                        }
                        let (count, width) = (ops[i] as u32, ops[i + 1] as u32);
                        i += 2;
                        let mut ranges = Vec::new();
                        let mut done = Some(());
                        for _ in 0..count {
                            match self.constant_range(ops, &mut i, width)? {
                                Some(range) => ranges.push(range),
                                None => {
                                    done = None;
                                    break;
                                }
                            }
                        }
                        let ordered = ranges.first().is_none_or(|&(lo, hi)| lo < hi)
                            && ranges
                                .windows(2)
                                .all(|w| w[1].0 < w[1].1 && w[1].0 > w[0].1);
                        if done.is_some() && width <= 64 && !ordered {
                            return Err(self.error("Invalid (unordered or overlapping) range list"));
                        }
                        done.map(|()| (0, 0))
                    };
                    if done.is_none() {
                        return Ok(());
                    }
                    // LLVM's loop steps back one operand after a range.
                    i -= 1;
                }
                _ => return Err(self.error("Invalid attribute group entry")),
            }
            i += 1;
        }
        Ok(())
    }

    fn unknown_attribute(&self, kind: u64) -> BitcodeError {
        self.error(&format!("Unknown attribute kind ({kind})"))
    }

    /// LLVM's kind check for an attribute read with a selector that
    /// names its class.
    fn attribute_class(&self, kind: u64, class: attributes::Class) -> Result<(), BitcodeError> {
        match attributes::class_of(kind) {
            None => Err(self.unknown_attribute(kind)),
            Some(c) if c == class => Ok(()),
            Some(_) => Err(self.error(match class {
                attributes::Class::Int => "Not an int attribute",
                attributes::Class::Type => "Not a type attribute",
                attributes::Class::Range => "Not a ConstantRange attribute",
                _ => "Not a constant range list attribute",
            })),
        }
    }

    /// LLVM's `readConstantRange` at operand `i` for a `width`-bit range:
    /// its bounds, sign-extended from `width` bits when `width` is 64 or
    /// less; `None` where LLVM would read past the record (not checked).
    fn constant_range(
        &self,
        ops: &[u64],
        i: &mut usize,
        width: u32,
    ) -> Result<Option<(i128, i128)>, BitcodeError> {
        let e = ops.len();
        if width > 64 {
            let Some(&words) = ops.get(*i) else {
                return Ok(None);
            };
            let (lower, upper) = (words as u32, (words >> 32) as u32);
            *i += 1;
            let needed = lower.wrapping_add(upper) as usize;
            if e - *i < needed {
                return Err(self.error("Too few records for range"));
            }
            *i += needed;
            return Ok(Some((0, 1)));
        }
        if e - *i < 2 {
            return Err(self.error("Too few records for range"));
        }
        let value = |raw: u64| -> i128 {
            let v: i64 = if raw & 1 == 0 {
                (raw >> 1) as i64
            } else if raw != 1 {
                ((raw >> 1) as i64).wrapping_neg()
            } else {
                i64::MIN
            };
            if width == 0 {
                return 0;
            }
            // The low `width` bits, read as a signed number.
            let shift = 128 - width;
            (i128::from(v) << shift) >> shift
        };
        let range = (value(ops[*i]), value(ops[*i + 1]));
        *i += 2;
        Ok(Some(range))
    }

    /// LLVM's type table (`parseTypeTableBody`; the block has been
    /// entered).
    pub(super) fn type_table(&mut self, cursor: &mut Cursor<'_>) -> Result<(), BitcodeError> {
        if self.types.size > 0 {
            return Err(self.error("Invalid multiple blocks"));
        }
        let mut filled = 0u64;
        loop {
            let abbrev = match self.ir(cursor.advance_skipping_subblocks())? {
                Entry::EndBlock => {
                    if filled != self.types.size {
                        return Err(self.error("Malformed block"));
                    }
                    return Ok(());
                }
                Entry::SubBlock(_) => {
                    cursor.skip_block()?;
                    continue;
                }
                Entry::EndOfStream => return Err(self.error("Malformed block")),
                Entry::Record(abbrev) => abbrev,
            };
            let mut ops: Vec<u64> = Vec::new();
            let mut count = 0usize;
            let (code, _) = cursor.read_record_with(abbrev, &mut |v| {
                // Type records list type IDs: keep a bounded prefix, the
                // count says how many there were.
                if ops.len() < 4096 {
                    ops.push(v);
                }
                count += 1;
                Ok(())
            })?;
            let at = |i: usize| ops.get(i).copied().unwrap_or(0);
            let code = code as u32;
            let ty = match code {
                type_code::NUMENTRY => {
                    if count == 0 {
                        return Err(self.error("Invalid numentry record"));
                    }
                    self.types.resize(at(0));
                    continue;
                }
                type_code::STRUCT_NAME => continue,
                type_code::VOID => Type::Void,
                type_code::HALF | type_code::BFLOAT => Type::Float(2),
                type_code::FLOAT => Type::Float(4),
                type_code::DOUBLE => Type::Float(8),
                type_code::X86_FP80 | type_code::FP128 | type_code::PPC_FP128 => Type::Float(0),
                type_code::LABEL => Type::Label,
                type_code::METADATA => Type::Metadata,
                type_code::X86_MMX => Type::Mmx,
                type_code::X86_AMX => Type::X86Amx,
                type_code::TOKEN => Type::Token,
                type_code::INTEGER => {
                    if count == 0 {
                        return Err(self.error("Invalid integer record"));
                    }
                    if !(1..=(1 << 23)).contains(&at(0)) {
                        return Err(self.error("Bitwidth for integer type out of range"));
                    }
                    Type::Integer(at(0))
                }
                type_code::POINTER => {
                    if count == 0 {
                        return Err(self.error("Invalid pointer record"));
                    }
                    match self.types.get(at(0)) {
                        Some(t) if t.valid_pointee() => Type::Pointer(Some(at(0) as u32)),
                        _ => return Err(self.error("Invalid type")),
                    }
                }
                type_code::OPAQUE_POINTER => {
                    if count != 1 {
                        return Err(self.error("Invalid opaque pointer record"));
                    }
                    Type::Pointer(None)
                }
                type_code::FUNCTION_OLD | type_code::FUNCTION => {
                    let old = code == type_code::FUNCTION_OLD;
                    let (min, params) = if old { (3, 3) } else { (2, 2) };
                    if count < min {
                        return Err(self.error("Invalid function record"));
                    }
                    let mut found = 0usize;
                    for i in params..count {
                        match self.types.get(at(i)) {
                            Some(t) => {
                                if !old && !t.valid_argument() {
                                    return Err(self.error("Invalid function argument type"));
                                }
                                found += 1;
                            }
                            None => break,
                        }
                    }
                    let ret = self.types.get(at(params - 1));
                    if ret.is_none() || found < count - params {
                        return Err(self.error("Invalid type"));
                    }
                    Type::Function
                }
                type_code::STRUCT_ANON => {
                    if count == 0 {
                        return Err(self.error("Invalid anon struct record"));
                    }
                    if !self.all_types(&ops, 1, count) {
                        return Err(self.error("Invalid type"));
                    }
                    Type::Struct { opaque: false }
                }
                type_code::STRUCT_NAMED | type_code::OPAQUE => {
                    let named = code == type_code::STRUCT_NAMED;
                    if named && count == 0 {
                        return Err(self.error("Invalid named struct record"));
                    }
                    if !named && count != 1 {
                        return Err(self.error("Invalid opaque type record"));
                    }
                    if filled >= self.types.size {
                        return Err(self.error("Invalid TYPE table"));
                    }
                    // A placeholder here is this struct: it is filled in.
                    let slot = filled as u32;
                    if self.types.placeholders.remove(&slot) {
                        self.types.entries.remove(&slot);
                    }
                    if named && !self.all_types(&ops, 1, count) {
                        return Err(self.error("Invalid named struct record"));
                    }
                    Type::Struct { opaque: !named }
                }
                type_code::TARGET_TYPE => {
                    if count == 0 {
                        return Err(self.error("Invalid target extension type record"));
                    }
                    if filled >= self.types.size {
                        return Err(self.error("Invalid TYPE table"));
                    }
                    if at(0) >= count as u64 {
                        return Err(self.error("Too many type parameters"));
                    }
                    let types = at(0) as u32 as usize;
                    for i in 0..types {
                        if self.types.get(at(i + 1)).is_none() {
                            return Err(self.error("Invalid type"));
                        }
                    }
                    if (types + 1..count).any(|i| at(i) > u64::from(u32::MAX)) {
                        return Err(self.error("Integer parameter too large"));
                    }
                    Type::TargetExt
                }
                type_code::ARRAY => {
                    if count < 2 {
                        return Err(self.error("Invalid array type record"));
                    }
                    match self.types.get(at(1)) {
                        Some(t) if t.valid_array_element() => Type::Array(at(1) as u32),
                        _ => return Err(self.error("Invalid type")),
                    }
                }
                type_code::VECTOR => {
                    if count < 2 {
                        return Err(self.error("Invalid vector type record"));
                    }
                    if at(0) == 0 {
                        return Err(self.error("Invalid vector length"));
                    }
                    match self.types.get(at(1)) {
                        Some(t) if t.valid_vector_element() => Type::Vector {
                            element: at(1) as u32,
                            scalable: count > 2 && at(2) != 0,
                        },
                        _ => return Err(self.error("Invalid type")),
                    }
                }
                _ => return Err(self.error("Invalid value")),
            };
            if filled >= self.types.size {
                return Err(self.error("Invalid TYPE table"));
            }
            let slot = filled as u32;
            if self.types.entries.contains_key(&slot) {
                return Err(
                    self.error("Invalid TYPE table: Only named structs can be forward referenced")
                );
            }
            self.types.entries.insert(slot, ty);
            filled += 1;
        }
    }

    /// Whether the operands `from..count` all name types (LLVM stops at
    /// the first that does not).
    fn all_types(&mut self, ops: &[u64], from: usize, count: usize) -> bool {
        (from..count).all(|i| self.types.get(ops.get(i).copied().unwrap_or(0)).is_some())
    }
}

/// LLVM 22's attribute kinds, as its bitcode reader classifies their
/// codes (found by loading an attribute group entry of each code and
/// selector with LLVM 22 itself).
mod attributes {
    /// What an attribute code is.
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub(super) enum Class {
        Enum,
        Int,
        Type,
        Range,
        RangeList,
    }

    /// Integer attributes (alignment, stack alignment, dereferenceable,
    /// ..., `uwtable`, memory, `nofpclass`, `captures`): each takes one
    /// value.
    const INT: [u64; 11] = [1, 25, 33, 41, 42, 51, 74, 82, 86, 87, 102];
    /// Type attributes (`byval`, `sret`, `inalloca`, `preallocated`,
    /// `byref`, `elementtype`).
    const TYPE: [u64; 6] = [3, 29, 38, 65, 69, 77];
    const RANGE: u64 = 92;
    const RANGE_LIST: u64 = 94;
    /// Codes LLVM 22 no longer knows as attributes (`nocapture`, the old
    /// memory attributes, a retired code).
    const RETIRED: [u64; 5] = [11, 45, 49, 50, 95];

    /// The class of an attribute code; `None` for "Unknown attribute
    /// kind".
    pub(super) fn class_of(kind: u64) -> Option<Class> {
        if kind == 0 || kind > 105 || RETIRED.contains(&kind) {
            return None;
        }
        Some(if INT.contains(&kind) {
            Class::Int
        } else if TYPE.contains(&kind) {
            Class::Type
        } else if kind == RANGE {
            Class::Range
        } else if kind == RANGE_LIST {
            Class::RangeList
        } else {
            Class::Enum
        })
    }

    pub(super) enum Use {
        Fits,
        Unknown,
        Other,
    }

    /// Whether `kind` can be an enum attribute (selector 0). Some codes
    /// are upgraded there: `nocapture` (to `captures(none)`), `byval`,
    /// `sret` and `inalloca` without a type, `uwtable` without a value;
    /// on a function, the old memory attributes (to `memory(...)`).
    pub(super) fn enum_use(kind: u64, function: bool) -> Use {
        match kind {
            11 | 3 | 29 | 38 | 33 => Use::Fits,
            45 | 49 | 50 if function => Use::Fits,
            _ => match class_of(kind) {
                None => Use::Unknown,
                Some(Class::Enum) => Use::Fits,
                Some(_) => Use::Other,
            },
        }
    }
}

/// Reads the identification block at the start of `cursor` (LLVM's
/// `readIdentificationBlock`) and returns its producer string. Its errors
/// carry no producer suffix.
pub(super) fn read_identification(cursor: &mut Cursor<'_>) -> Result<String, BitcodeError> {
    let plain = |message: String| BitcodeError::Reader {
        message,
        producer: String::new(),
    };
    match cursor.advance()? {
        Entry::SubBlock(super::block_id::IDENTIFICATION) => {
            cursor.enter_block(super::block_id::IDENTIFICATION)?;
        }
        _ => return Err(plain("Malformed block".to_string())),
    }
    let mut producer = String::new();
    // LLVM reads an empty EPOCH record's operand from the record buffer,
    // which still holds the previous record's first operand.
    let mut stale = 0u64;
    loop {
        match cursor.advance()? {
            Entry::EndBlock => return Ok(producer),
            Entry::Record(abbrev) => {
                let mut first = None;
                let mut chars = Vec::new();
                let (code, _) = cursor.read_record_with(abbrev, &mut |v| {
                    first.get_or_insert(v);
                    chars.push(v as u8);
                    Ok(())
                })?;
                if let Some(v) = first {
                    stale = v;
                }
                match code as u32 {
                    1 => producer.extend(chars.iter().map(|&c| char::from(c))),
                    2 => {
                        let epoch = stale as u32;
                        if epoch != 0 {
                            return Err(plain(format!(
                                "Incompatible epoch: Bitcode '{epoch}' vs current: '0'"
                            )));
                        }
                    }
                    _ => return Err(plain("Invalid value".to_string())),
                }
            }
            _ => return Err(plain("Malformed block".to_string())),
        }
    }
}
