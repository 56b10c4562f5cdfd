//! A small in-memory model of the LLVM IR modules the offload wrappers emit.
//!
//! The model covers exactly what the wrapper modules need: integer, pointer,
//! array, struct and function types; global variables with constant
//! initialisers (integers, nulls, byte arrays, aggregates, `getelementptr`
//! expressions); and functions built from a dozen instruction kinds. The same
//! model is serialised as bitcode by [`super::writer`] and printed as `.ll`
//! text by [`super::printer`].
//!
//! Pointers are either opaque (`ptr`, LLVM 15 and later) or typed (`T*`, what
//! LLVM 14 reads); a module uses one flavour throughout, fixed at creation.

use std::borrow::Cow;
use std::collections::HashMap;

/// Index of a type in [`Module::types`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TypeId(pub u32);

/// Index of a constant in [`Module::consts`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConstId(pub u32);

/// Index of a global variable in [`Module::globals`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GlobalId(pub u32);

/// Index of a function in [`Module::functions`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FuncId(pub u32);

/// Index of a basic block within its function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockId(pub u32);

/// A type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    /// `void`
    Void,
    /// `iN`
    Int(u32),
    /// Opaque pointer `ptr` in address space 0.
    OpaquePtr,
    /// Typed pointer `T*` in address space 0.
    Ptr(TypeId),
    /// `[N x T]`
    Array(u64, TypeId),
    /// A literal struct `{ ... }` (no name) or an identified struct `%name`.
    Struct {
        /// The identified struct's name, without the `%`.
        name: Option<String>,
        /// Field types.
        fields: Vec<TypeId>,
    },
    /// A non-variadic function type.
    Function {
        /// Return type.
        ret: TypeId,
        /// Parameter types.
        params: Vec<TypeId>,
    },
}

/// A value an operand can refer to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Value {
    /// A global variable (its address).
    Global(GlobalId),
    /// A function (its address).
    Function(FuncId),
    /// A constant.
    Const(ConstId),
    /// The n-th argument of the current function.
    Arg(u32),
    /// The n-th instruction of the current function, counted across blocks
    /// in layout order.
    Inst(u32),
}

/// A constant.
#[derive(Clone, Debug)]
pub enum Const<'a> {
    /// An integer of type `ty`, stored sign-extended from the type's width.
    Int {
        /// An `iN` type.
        ty: TypeId,
        /// The value, sign-extended to 64 bits.
        value: i64,
    },
    /// The all-zero value of `ty`: `null`, `0` or `zeroinitializer`.
    Null(TypeId),
    /// A byte array (`[N x i8]`) that is not all zero.
    Bytes {
        /// The `[N x i8]` type.
        ty: TypeId,
        /// The bytes; images are borrowed from the input so big ones are
        /// never copied.
        data: Cow<'a, [u8]>,
    },
    /// A struct or array built from other values.
    Aggregate {
        /// The struct or array type.
        ty: TypeId,
        /// One value per element, each a constant, global or function.
        elems: Vec<Value>,
    },
    /// A constant `getelementptr` expression.
    Gep {
        /// The result (pointer) type.
        ty: TypeId,
        /// Whether the expression is `inbounds`.
        inbounds: bool,
        /// The source element type.
        source: TypeId,
        /// The base pointer.
        base: Value,
        /// Integer constant indices.
        indices: Vec<ConstId>,
    },
}

impl Const<'_> {
    /// The constant's type.
    pub(crate) fn ty(&self) -> TypeId {
        match self {
            Const::Int { ty, .. }
            | Const::Null(ty)
            | Const::Bytes { ty, .. }
            | Const::Aggregate { ty, .. }
            | Const::Gep { ty, .. } => *ty,
        }
    }
}

/// Linkage of a global value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Linkage {
    /// `external` (printed as nothing on definitions)
    External,
    /// `internal`
    Internal,
    /// `appending`
    Appending,
    /// `weak_odr`
    WeakOdr,
}

/// Visibility of a global value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Visibility {
    /// `default` (printed as nothing)
    Default,
    /// `hidden`
    Hidden,
}

/// A global variable.
#[derive(Clone, Debug)]
pub struct Global {
    /// Name without the `@`.
    pub name: String,
    /// The type of the variable's contents.
    pub value_type: TypeId,
    /// `constant` rather than `global`.
    pub constant: bool,
    /// Initialiser; `None` for a declaration.
    pub init: Option<ConstId>,
    /// Linkage.
    pub linkage: Linkage,
    /// Visibility.
    pub visibility: Visibility,
    /// `unnamed_addr`.
    pub unnamed_addr: bool,
    /// Explicit section.
    pub section: Option<String>,
    /// Explicit alignment in bytes (a power of two).
    pub align: Option<u32>,
}

/// A function: a declaration, or a definition with a body.
#[derive(Clone, Debug)]
pub struct Function {
    /// Name without the `@`.
    pub name: String,
    /// The function type.
    pub ty: TypeId,
    /// Linkage.
    pub linkage: Linkage,
    /// Explicit section.
    pub section: Option<String>,
    /// Basic blocks of a definition; empty for a declaration.
    pub blocks: Vec<Block>,
}

impl Function {
    /// True when the function has no body.
    pub fn is_declaration(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Instructions in layout order, with the block each belongs to.
    pub(crate) fn instructions(&self) -> impl Iterator<Item = (BlockId, &Inst)> {
        self.blocks
            .iter()
            .enumerate()
            .flat_map(|(b, block)| block.insts.iter().map(move |i| (BlockId(b as u32), i)))
    }
}

/// A basic block.
#[derive(Clone, Debug)]
pub struct Block {
    /// The block's label.
    pub name: String,
    /// Its instructions; the last one is a terminator.
    pub insts: Vec<Inst>,
}

/// An instruction.
#[derive(Clone, Debug)]
pub struct Inst {
    /// Name of the result, if it has one and it is named.
    pub name: Option<String>,
    /// Result type (`void` for instructions without a result).
    pub ty: TypeId,
    /// What the instruction does.
    pub kind: InstKind,
}

/// Integer comparison predicates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntPredicate {
    /// `eq`
    Eq,
    /// `ne`
    Ne,
}

/// Binary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// `and`
    And,
    /// `lshr`
    LShr,
}

/// The operation of an [`Inst`].
#[derive(Clone, Debug)]
pub enum InstKind {
    /// `call fty callee(args)`
    Call {
        /// The callee's function type.
        fty: TypeId,
        /// The callee.
        callee: Value,
        /// Arguments.
        args: Vec<Value>,
    },
    /// `ret void`
    RetVoid,
    /// `br label %dest`
    Br(BlockId),
    /// `br i1 cond, label %t, label %f`
    CondBr {
        /// The `i1` condition.
        cond: Value,
        /// Target when true.
        then: BlockId,
        /// Target when false.
        otherwise: BlockId,
    },
    /// `switch ty cond, label %default [ cases ]`
    Switch {
        /// The integer condition.
        cond: Value,
        /// Default target.
        default: BlockId,
        /// (case value, target) pairs.
        cases: Vec<(ConstId, BlockId)>,
    },
    /// `phi ty [v, %bb], ...`
    Phi {
        /// Incoming (value, predecessor) pairs.
        incoming: Vec<(Value, BlockId)>,
    },
    /// `load ty, ptr p, align a`
    Load {
        /// The address.
        ptr: Value,
        /// Alignment in bytes.
        align: u32,
    },
    /// `store v, ptr p, align a`
    Store {
        /// The value stored.
        value: Value,
        /// The address.
        ptr: Value,
        /// Alignment in bytes.
        align: u32,
    },
    /// `getelementptr [inbounds] source, base, indices`
    Gep {
        /// `inbounds` flag.
        inbounds: bool,
        /// Source element type.
        source: TypeId,
        /// Base pointer.
        base: Value,
        /// Indices.
        indices: Vec<Value>,
    },
    /// `icmp pred a, b`
    ICmp {
        /// The predicate.
        pred: IntPredicate,
        /// Left operand.
        lhs: Value,
        /// Right operand.
        rhs: Value,
    },
    /// `op a, b`
    Binary {
        /// The operator.
        op: BinOp,
        /// Left operand.
        lhs: Value,
        /// Right operand.
        rhs: Value,
    },
    /// `trunc v to ty`
    Trunc(Value),
}

impl InstKind {
    /// The blocks this terminator can transfer control to, in operand order
    /// (the order LLVM records them as users of each block).
    pub fn successors(&self) -> Vec<BlockId> {
        match self {
            InstKind::Br(b) => vec![*b],
            InstKind::CondBr {
                then, otherwise, ..
            } => vec![*otherwise, *then],
            InstKind::Switch { default, cases, .. } => {
                let mut v = vec![*default];
                v.extend(cases.iter().map(|c| c.1));
                v
            }
            _ => Vec::new(),
        }
    }
}

/// Which LLVM generation the module is written for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    /// LLVM 22: opaque pointers.
    Llvm22,
    /// LLVM 14: typed pointers.
    Llvm14,
}

/// A module.
#[derive(Clone, Debug)]
pub struct Module<'a> {
    /// LLVM generation, which fixes the pointer flavour.
    pub flavour: Flavour,
    /// `source_filename`.
    pub source_filename: String,
    /// `target triple`, verbatim (empty: none).
    pub triple: String,
    /// Type table, in creation order (every type after its components).
    pub types: Vec<Type>,
    /// Constants, in creation order (every constant after its operands).
    pub consts: Vec<Const<'a>>,
    /// Global variables in module order.
    pub globals: Vec<Global>,
    /// Functions in module order.
    pub functions: Vec<Function>,
    type_index: HashMap<Type, TypeId>,
    scalar_index: HashMap<(TypeId, Option<i64>), ConstId>,
}

impl<'a> Module<'a> {
    /// An empty module.
    pub fn new(flavour: Flavour, source_filename: &str, triple: &str) -> Module<'a> {
        Module {
            flavour,
            source_filename: source_filename.to_string(),
            triple: triple.to_string(),
            types: Vec::new(),
            consts: Vec::new(),
            globals: Vec::new(),
            functions: Vec::new(),
            type_index: HashMap::new(),
            scalar_index: HashMap::new(),
        }
    }

    /// True for typed-pointer (LLVM 14) modules.
    pub(crate) fn typed_pointers(&self) -> bool {
        self.flavour == Flavour::Llvm14
    }

    /// Interns a type (identified structs are distinct by name).
    pub fn ty(&mut self, t: Type) -> TypeId {
        if let Some(&id) = self.type_index.get(&t) {
            return id;
        }
        let id = TypeId(self.types.len() as u32);
        self.types.push(t.clone());
        self.type_index.insert(t, id);
        id
    }

    /// `void`
    pub fn void(&mut self) -> TypeId {
        self.ty(Type::Void)
    }

    /// `iN`
    pub fn int(&mut self, bits: u32) -> TypeId {
        self.ty(Type::Int(bits))
    }

    /// A pointer to `pointee`: `ptr` in opaque modules, `pointee*` in typed
    /// ones.
    pub(crate) fn ptr_to(&mut self, pointee: TypeId) -> TypeId {
        if self.typed_pointers() {
            self.ty(Type::Ptr(pointee))
        } else {
            self.ty(Type::OpaquePtr)
        }
    }

    /// `i8*` / `ptr`: the generic byte pointer.
    pub(crate) fn byte_ptr(&mut self) -> TypeId {
        let i8t = self.int(8);
        self.ptr_to(i8t)
    }

    /// `[n x elem]`
    pub fn array(&mut self, n: u64, elem: TypeId) -> TypeId {
        self.ty(Type::Array(n, elem))
    }

    /// An identified struct `%name`.
    pub(crate) fn named_struct(&mut self, name: &str, fields: Vec<TypeId>) -> TypeId {
        self.ty(Type::Struct {
            name: Some(name.to_string()),
            fields,
        })
    }

    /// A literal struct `{ ... }`.
    pub(crate) fn literal_struct(&mut self, fields: Vec<TypeId>) -> TypeId {
        self.ty(Type::Struct { name: None, fields })
    }

    /// A function type.
    pub(crate) fn func_type(&mut self, ret: TypeId, params: Vec<TypeId>) -> TypeId {
        self.ty(Type::Function { ret, params })
    }

    fn push_const(&mut self, c: Const<'a>) -> ConstId {
        let id = ConstId(self.consts.len() as u32);
        self.consts.push(c);
        id
    }

    /// An integer constant (interned).
    pub(crate) fn const_int(&mut self, ty: TypeId, value: i64) -> ConstId {
        if let Some(&id) = self.scalar_index.get(&(ty, Some(value))) {
            return id;
        }
        let id = self.push_const(Const::Int { ty, value });
        self.scalar_index.insert((ty, Some(value)), id);
        id
    }

    /// The zero value of `ty` (interned).
    pub(crate) fn const_null(&mut self, ty: TypeId) -> ConstId {
        if let Some(&id) = self.scalar_index.get(&(ty, None)) {
            return id;
        }
        let id = self.push_const(Const::Null(ty));
        self.scalar_index.insert((ty, None), id);
        id
    }

    /// A `[N x i8]` constant holding `data`: `zeroinitializer` when it is
    /// empty or all zero (LLVM represents those as aggregate zeros).
    pub(crate) fn const_bytes(&mut self, data: impl Into<Cow<'a, [u8]>>) -> ConstId {
        let data = data.into();
        let i8t = self.int(8);
        let ty = self.array(data.len() as u64, i8t);
        if data.iter().all(|&b| b == 0) {
            self.const_null(ty)
        } else {
            self.push_const(Const::Bytes { ty, data })
        }
    }

    /// A struct or array constant.
    pub(crate) fn const_aggregate(&mut self, ty: TypeId, elems: Vec<Value>) -> ConstId {
        self.push_const(Const::Aggregate { ty, elems })
    }

    /// A constant `getelementptr`.
    pub(crate) fn const_gep(
        &mut self,
        ty: TypeId,
        inbounds: bool,
        source: TypeId,
        base: Value,
        indices: Vec<ConstId>,
    ) -> ConstId {
        self.push_const(Const::Gep {
            ty,
            inbounds,
            source,
            base,
            indices,
        })
    }

    /// Appends a global variable.
    pub(crate) fn add_global(&mut self, g: Global) -> GlobalId {
        // Operands that take the global's address need its pointer type.
        self.ptr_to(g.value_type);
        self.globals.push(g);
        GlobalId(self.globals.len() as u32 - 1)
    }

    /// Appends a function declaration (a body can be added later with
    /// [`Module::body`]).
    pub(crate) fn add_function(
        &mut self,
        name: &str,
        ty: TypeId,
        linkage: Linkage,
        section: Option<&str>,
    ) -> FuncId {
        self.ptr_to(ty);
        self.functions.push(Function {
            name: name.to_string(),
            ty,
            linkage,
            section: section.map(str::to_string),
            blocks: Vec::new(),
        });
        FuncId(self.functions.len() as u32 - 1)
    }

    /// Starts building the body of `f` with blocks named `blocks`.
    pub fn body(&mut self, f: FuncId, blocks: &[&str]) -> BodyBuilder {
        BodyBuilder {
            func: f,
            blocks: blocks
                .iter()
                .map(|n| Block {
                    name: n.to_string(),
                    insts: Vec::new(),
                })
                .collect(),
            current: BlockId(0),
            count: 0,
        }
    }

    /// The function type of a function type id.
    pub(crate) fn func_sig(&self, fty: TypeId) -> (TypeId, &[TypeId]) {
        match &self.types[fty.0 as usize] {
            Type::Function { ret, params } => (*ret, params),
            other => panic!("not a function type: {other:?}"),
        }
    }

    /// The type of `v` as seen from inside function `f` (for arguments and
    /// instructions).
    pub fn value_type(&self, f: Option<FuncId>, v: Value) -> TypeId {
        match v {
            Value::Global(g) => self.pointer_type_of(self.globals[g.0 as usize].value_type),
            Value::Function(fid) => self.pointer_type_of(self.functions[fid.0 as usize].ty),
            Value::Const(c) => self.consts[c.0 as usize].ty(),
            Value::Arg(n) => {
                let func = &self.functions[f.expect("argument outside a function").0 as usize];
                self.func_sig(func.ty).1[n as usize]
            }
            Value::Inst(n) => {
                let func = &self.functions[f.expect("instruction outside a function").0 as usize];
                func.instructions()
                    .nth(n as usize)
                    .expect("instruction index in range")
                    .1
                    .ty
            }
        }
    }

    /// The pointer type that addresses a value of `pointee` (must already
    /// exist in the type table).
    pub(crate) fn pointer_type_of(&self, pointee: TypeId) -> TypeId {
        let key = if self.typed_pointers() {
            Type::Ptr(pointee)
        } else {
            Type::OpaquePtr
        };
        *self
            .type_index
            .get(&key)
            .expect("pointer type created before use")
    }
}

/// Appends instructions to a function body; finish with
/// [`BodyBuilder::finish`].
pub struct BodyBuilder {
    func: FuncId,
    blocks: Vec<Block>,
    current: BlockId,
    count: u32,
}

impl BodyBuilder {
    /// The block with the given position.
    pub fn block(&self, n: u32) -> BlockId {
        assert!((n as usize) < self.blocks.len());
        BlockId(n)
    }

    /// Continues appending at the end of `b`. Blocks must be filled in
    /// layout order, because instruction numbers follow layout order.
    pub fn at(&mut self, b: BlockId) {
        assert!(b >= self.current, "blocks are filled in layout order");
        self.current = b;
    }

    /// Appends an instruction and returns its value.
    pub fn push(&mut self, ty: TypeId, name: Option<&str>, kind: InstKind) -> Value {
        self.blocks[self.current.0 as usize].insts.push(Inst {
            name: name.map(str::to_string),
            ty,
            kind,
        });
        self.count += 1;
        Value::Inst(self.count - 1)
    }

    /// Sets the incoming values of a phi created earlier (its operands may
    /// be defined after it).
    pub(crate) fn set_phi(&mut self, phi: Value, incoming: Vec<(Value, BlockId)>) {
        let Value::Inst(n) = phi else {
            panic!("not an instruction")
        };
        let inst = self
            .blocks
            .iter_mut()
            .flat_map(|b| b.insts.iter_mut())
            .nth(n as usize)
            .expect("instruction exists");
        match &mut inst.kind {
            InstKind::Phi { incoming: slot } => *slot = incoming,
            other => panic!("not a phi: {other:?}"),
        }
    }

    /// Installs the body into the module.
    pub fn finish(self, m: &mut Module<'_>) {
        m.functions[self.func.0 as usize].blocks = self.blocks;
    }
}
