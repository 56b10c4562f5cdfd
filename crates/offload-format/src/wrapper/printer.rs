//! Prints an [`ir::Module`](super::ir::Module) as textual LLVM IR, in the
//! layout `llvm-dis` uses: `llvm-dis-22` for opaque-pointer modules and
//! `llvm-dis-14` for typed-pointer ones. Comparing this text with the
//! disassembly of the reference tools' bitcode checks the model without
//! needing LLVM installed.

use super::ir::{
    BinOp, BlockId, Const, FuncId, InstKind, IntPredicate, Linkage, Module, Type, TypeId, Value,
    Visibility,
};
use std::collections::HashSet;
use std::fmt::Write as _;

/// Prints `m`; the first line names `module_id` as llvm-dis names the file.
pub(crate) fn print(m: &Module<'_>, module_id: &str) -> String {
    let mut p = Printer {
        m,
        out: String::new(),
    };
    p.module(module_id);
    p.out
}

struct Printer<'m, 'a> {
    m: &'m Module<'a>,
    out: String,
}

/// Writes `s` with LLVM's string escaping: `\\` for a backslash, printable
/// ASCII other than `"` as is, everything else as `\XX`.
fn escape(out: &mut String, s: &[u8]) {
    for &c in s {
        if c == b'\\' {
            out.push_str("\\\\");
        } else if (0x20..0x7f).contains(&c) && c != b'"' {
            out.push(c as char);
        } else {
            let _ = write!(out, "\\{c:02X}");
        }
    }
}

/// Writes a symbol name with its sigil, quoting it when LLVM would.
fn name(out: &mut String, sigil: char, n: &str) {
    out.push(sigil);
    label(out, n);
}

/// Writes a name without sigil (block labels), quoted when needed.
fn label(out: &mut String, n: &str) {
    let b = n.as_bytes();
    let plain = !b.is_empty()
        && !b[0].is_ascii_digit()
        && b.iter().all(|&c| {
            c.is_ascii_alphanumeric() || c == b'-' || c == b'.' || c == b'_' || c == b'$'
        });
    if plain {
        out.push_str(n);
    } else {
        out.push('"');
        escape(out, b);
        out.push('"');
    }
}

impl Printer<'_, '_> {
    fn module(&mut self, module_id: &str) {
        let m = self.m;
        let _ = writeln!(self.out, "; ModuleID = '{module_id}'");
        if !m.source_filename.is_empty() {
            self.out.push_str("source_filename = \"");
            escape(&mut self.out, m.source_filename.as_bytes());
            self.out.push_str("\"\n");
        }
        if !m.triple.is_empty() {
            let _ = writeln!(self.out, "target triple = \"{}\"", m.triple);
        }
        let named = self.named_types_in_use_order();
        if !named.is_empty() {
            self.out.push('\n');
            for t in named {
                let Type::Struct {
                    name: Some(n),
                    fields,
                } = &m.types[t.0 as usize]
                else {
                    unreachable!()
                };
                name(&mut self.out, '%', n);
                self.out.push_str(" = type ");
                self.struct_body(fields);
                self.out.push('\n');
            }
        }
        if !m.globals.is_empty() {
            self.out.push('\n');
        }
        for g in &m.globals {
            name(&mut self.out, '@', &g.name);
            self.out.push_str(" = ");
            if g.init.is_none() && g.linkage == Linkage::External {
                self.out.push_str("external ");
            }
            self.out.push_str(linkage(g.linkage));
            if g.visibility == Visibility::Hidden {
                self.out.push_str("hidden ");
            }
            if g.unnamed_addr {
                self.out.push_str("unnamed_addr ");
            }
            self.out
                .push_str(if g.constant { "constant " } else { "global " });
            self.ty(g.value_type);
            if let Some(init) = g.init {
                self.out.push(' ');
                self.value(None, Value::Const(init));
            }
            if let Some(s) = &g.section {
                self.out.push_str(", section \"");
                escape(&mut self.out, s.as_bytes());
                self.out.push('"');
            }
            if let Some(a) = g.align {
                let _ = write!(self.out, ", align {a}");
            }
            self.out.push('\n');
        }
        for (i, _) in m.functions.iter().enumerate() {
            self.out.push('\n');
            self.function(FuncId(i as u32));
        }
    }

    /// Identified structs in the order LLVM's type finder meets them.
    fn named_types_in_use_order(&self) -> Vec<TypeId> {
        let m = self.m;
        let mut f = TypeFinder {
            m,
            visited: HashSet::new(),
            visited_consts: HashSet::new(),
            order: Vec::new(),
        };
        for g in &m.globals {
            // LLVM 14 starts from the global's pointer type; its only
            // subtype is the value type, so the order is the same.
            f.ty(g.value_type);
            if let Some(c) = g.init {
                f.value(Value::Const(c));
            }
        }
        for (i, func) in m.functions.iter().enumerate() {
            f.ty(func.ty);
            for (_, inst) in func.instructions() {
                f.ty(inst.ty);
                for v in operands(&inst.kind) {
                    if !matches!(v, Value::Inst(_)) {
                        f.value(v);
                    }
                }
                if let InstKind::Gep { source, .. } = &inst.kind {
                    f.ty(*source);
                }
                if let InstKind::Call { fty, .. } = &inst.kind {
                    f.ty(*fty);
                }
            }
            let _ = i;
        }
        f.order
    }

    fn struct_body(&mut self, fields: &[TypeId]) {
        if fields.is_empty() {
            self.out.push_str("{}");
            return;
        }
        self.out.push_str("{ ");
        self.comma_separated(fields.iter().copied(), Self::ty);
        self.out.push_str(" }");
    }

    /// Writes each of `items` with `write`, separated by `, `.
    fn comma_separated<T>(
        &mut self,
        items: impl IntoIterator<Item = T>,
        mut write: impl FnMut(&mut Self, T),
    ) {
        for (i, item) in items.into_iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            write(self, item);
        }
    }

    /// `getelementptr [inbounds] <source>, <typed operands>` (the base and
    /// the indices); a constant expression (`constant`) has its operands in
    /// parentheses.
    fn gep(
        &mut self,
        f: Option<FuncId>,
        constant: bool,
        inbounds: bool,
        source: TypeId,
        operands: impl IntoIterator<Item = Value>,
    ) {
        self.out.push_str("getelementptr ");
        if inbounds {
            self.out.push_str("inbounds ");
        }
        if constant {
            self.out.push('(');
        }
        self.ty(source);
        for v in operands {
            self.out.push_str(", ");
            self.typed(f, v);
        }
        if constant {
            self.out.push(')');
        }
    }

    fn ty(&mut self, t: TypeId) {
        match &self.m.types[t.0 as usize] {
            Type::Void => self.out.push_str("void"),
            Type::Int(b) => {
                let _ = write!(self.out, "i{b}");
            }
            Type::OpaquePtr => self.out.push_str("ptr"),
            Type::Ptr(p) => {
                self.ty(*p);
                self.out.push('*');
            }
            Type::Array(n, e) => {
                let _ = write!(self.out, "[{n} x ");
                self.ty(*e);
                self.out.push(']');
            }
            Type::Struct { name: Some(n), .. } => name(&mut self.out, '%', n),
            Type::Struct { name: None, fields } => {
                let fields = fields.clone();
                self.struct_body(&fields);
            }
            Type::Function { ret, params } => {
                let (ret, params) = (*ret, params.clone());
                self.ty(ret);
                self.out.push_str(" (");
                self.comma_separated(params, Self::ty);
                self.out.push(')');
            }
        }
    }

    /// `<type> <value>`
    fn typed(&mut self, f: Option<FuncId>, v: Value) {
        self.ty(self.m.value_type(f, v));
        self.out.push(' ');
        self.value(f, v);
    }

    fn value(&mut self, f: Option<FuncId>, v: Value) {
        let m = self.m;
        match v {
            Value::Global(g) => name(&mut self.out, '@', &m.globals[g.0 as usize].name),
            Value::Function(fid) => name(&mut self.out, '@', &m.functions[fid.0 as usize].name),
            Value::Arg(_) | Value::Inst(_) => {
                let func = f.expect("local value inside a function");
                match self.local_name(func, v) {
                    Ok(n) => name(&mut self.out, '%', &n),
                    Err(slot) => {
                        let _ = write!(self.out, "%{slot}");
                    }
                }
            }
            Value::Const(c) => match &m.consts[c.0 as usize] {
                Const::Int { value, .. } => {
                    let _ = write!(self.out, "{value}");
                }
                Const::Null(ty) => self.out.push_str(match m.types[ty.0 as usize] {
                    Type::OpaquePtr | Type::Ptr(_) => "null",
                    Type::Int(_) => "0",
                    _ => "zeroinitializer",
                }),
                Const::Bytes { data, .. } => {
                    self.out.push_str("c\"");
                    escape(&mut self.out, data);
                    self.out.push('"');
                }
                Const::Aggregate { ty, elems } => {
                    let is_struct = matches!(m.types[ty.0 as usize], Type::Struct { .. });
                    let (open, close) = if is_struct { ("{ ", " }") } else { ("[", "]") };
                    self.out.push_str(open);
                    self.comma_separated(elems.iter().copied(), |p, e| p.typed(f, e));
                    self.out.push_str(close);
                }
                Const::Gep {
                    inbounds,
                    source,
                    base,
                    indices,
                    ..
                } => {
                    let indices = indices.iter().map(|&i| Value::Const(i));
                    let operands = std::iter::once(*base).chain(indices);
                    self.gep(f, true, *inbounds, *source, operands);
                }
            },
        }
    }

    /// The name of a local value, or its slot number when unnamed. Slots
    /// count unnamed arguments, then unnamed value-producing instructions.
    fn local_name(&self, f: FuncId, v: Value) -> Result<String, usize> {
        let m = self.m;
        let func = &m.functions[f.0 as usize];
        let nargs = m.func_sig(func.ty).1.len();
        match v {
            Value::Arg(n) => Err(n as usize),
            Value::Inst(n) => {
                let mut slot = nargs;
                for (i, (_, inst)) in func.instructions().enumerate() {
                    let has_value = !matches!(m.types[inst.ty.0 as usize], Type::Void);
                    if i == n as usize {
                        return match &inst.name {
                            Some(name) => Ok(name.clone()),
                            None => Err(slot),
                        };
                    }
                    if has_value && inst.name.is_none() {
                        slot += 1;
                    }
                }
                unreachable!("instruction index in range")
            }
            _ => unreachable!("not a local value"),
        }
    }

    fn block_ref(&mut self, f: FuncId, b: BlockId) {
        let n = self.m.functions[f.0 as usize].blocks[b.0 as usize]
            .name
            .clone();
        self.out.push_str("label ");
        name(&mut self.out, '%', &n);
    }

    fn function(&mut self, fid: FuncId) {
        let m = self.m;
        let func = &m.functions[fid.0 as usize];
        let (ret, params) = m.func_sig(func.ty);
        let params = params.to_vec();
        self.out.push_str(if func.is_declaration() {
            "declare "
        } else {
            "define "
        });
        self.out.push_str(linkage(func.linkage));
        self.ty(ret);
        self.out.push(' ');
        name(&mut self.out, '@', &func.name);
        self.out.push('(');
        self.comma_separated(params.iter().copied().enumerate(), |p, (i, t)| {
            p.ty(t);
            if !func.is_declaration() {
                let _ = write!(p.out, " %{i}");
            }
        });
        self.out.push(')');
        if let Some(s) = &func.section {
            self.out.push_str(" section \"");
            escape(&mut self.out, s.as_bytes());
            self.out.push('"');
        }
        if func.is_declaration() {
            self.out.push('\n');
            return;
        }
        self.out.push_str(" {");

        // Predecessors as llvm-dis lists them: the most recently created use
        // of the block first.
        let mut preds: Vec<Vec<BlockId>> = vec![Vec::new(); func.blocks.len()];
        for (from, inst) in func.instructions() {
            for to in inst.kind.successors() {
                preds[to.0 as usize].push(from);
            }
        }

        let mut n = 0u32;
        for (b, block) in func.blocks.iter().enumerate() {
            self.out.push('\n');
            label(&mut self.out, &block.name);
            self.out.push(':');
            if b > 0 {
                let line_start = self.out.rfind('\n').map_or(0, |i| i + 1);
                let col = self.out.len() - line_start;
                let pad = 50usize.saturating_sub(col).max(1);
                for _ in 0..pad {
                    self.out.push(' ');
                }
                self.out.push(';');
                let p = &preds[b];
                if p.is_empty() {
                    self.out.push_str(" No predecessors!");
                } else {
                    self.out.push_str(" preds = ");
                    self.comma_separated(p.iter().rev(), |pr, from| {
                        name(&mut pr.out, '%', &func.blocks[from.0 as usize].name);
                    });
                }
            }
            self.out.push('\n');
            for _ in &block.insts {
                self.out.push_str("  ");
                self.instruction(fid, n);
                self.out.push('\n');
                n += 1;
            }
        }
        self.out.push_str("}\n");
    }

    fn instruction(&mut self, fid: FuncId, n: u32) {
        let m = self.m;
        let func = &m.functions[fid.0 as usize];
        let inst = func
            .instructions()
            .nth(n as usize)
            .expect("instruction exists")
            .1;
        let f = Some(fid);
        if !matches!(m.types[inst.ty.0 as usize], Type::Void) {
            self.value(f, Value::Inst(n));
            self.out.push_str(" = ");
        }
        match &inst.kind {
            InstKind::Call { fty, callee, args } => {
                let (ret, _) = m.func_sig(*fty);
                self.out.push_str("call ");
                self.ty(ret);
                self.out.push(' ');
                self.value(f, *callee);
                self.out.push('(');
                self.comma_separated(args.iter().copied(), |p, a| p.typed(f, a));
                self.out.push(')');
            }
            InstKind::RetVoid => self.out.push_str("ret void"),
            InstKind::Br(b) => {
                self.out.push_str("br ");
                self.block_ref(fid, *b);
            }
            InstKind::CondBr {
                cond,
                then,
                otherwise,
            } => {
                self.out.push_str("br ");
                self.typed(f, *cond);
                self.out.push_str(", ");
                self.block_ref(fid, *then);
                self.out.push_str(", ");
                self.block_ref(fid, *otherwise);
            }
            InstKind::Switch {
                cond,
                default,
                cases,
            } => {
                self.out.push_str("switch ");
                self.typed(f, *cond);
                self.out.push_str(", ");
                self.block_ref(fid, *default);
                self.out.push_str(" [");
                for (v, b) in cases {
                    self.out.push_str("\n    ");
                    self.typed(f, Value::Const(*v));
                    self.out.push_str(", ");
                    self.block_ref(fid, *b);
                }
                self.out.push_str("\n  ]");
            }
            InstKind::Phi { incoming } => {
                self.out.push_str("phi ");
                self.ty(inst.ty);
                for (i, (v, b)) in incoming.iter().enumerate() {
                    self.out.push_str(if i > 0 { ", [ " } else { " [ " });
                    self.value(f, *v);
                    self.out.push_str(", ");
                    let bn = func.blocks[b.0 as usize].name.clone();
                    name(&mut self.out, '%', &bn);
                    self.out.push_str(" ]");
                }
            }
            InstKind::Load { ptr, align } => {
                self.out.push_str("load ");
                self.ty(inst.ty);
                self.out.push_str(", ");
                self.typed(f, *ptr);
                let _ = write!(self.out, ", align {align}");
            }
            InstKind::Store { value, ptr, align } => {
                self.out.push_str("store ");
                self.typed(f, *value);
                self.out.push_str(", ");
                self.typed(f, *ptr);
                let _ = write!(self.out, ", align {align}");
            }
            InstKind::Gep {
                inbounds,
                source,
                base,
                indices,
            } => {
                let operands = std::iter::once(*base).chain(indices.iter().copied());
                self.gep(f, false, *inbounds, *source, operands);
            }
            InstKind::ICmp { pred, lhs, rhs } => {
                self.out.push_str(match pred {
                    IntPredicate::Eq => "icmp eq ",
                    IntPredicate::Ne => "icmp ne ",
                });
                self.typed(f, *lhs);
                self.out.push_str(", ");
                self.value(f, *rhs);
            }
            InstKind::Binary { op, lhs, rhs } => {
                self.out.push_str(match op {
                    BinOp::And => "and ",
                    BinOp::LShr => "lshr ",
                });
                self.typed(f, *lhs);
                self.out.push_str(", ");
                self.value(f, *rhs);
            }
            InstKind::Trunc(v) => {
                self.out.push_str("trunc ");
                self.typed(f, *v);
                self.out.push_str(" to ");
                self.ty(inst.ty);
            }
        }
    }
}

fn linkage(l: Linkage) -> &'static str {
    match l {
        Linkage::External => "",
        Linkage::Internal => "internal ",
        Linkage::Appending => "appending ",
        Linkage::WeakOdr => "weak_odr ",
    }
}

/// Value operands of an instruction, in LLVM's operand order.
fn operands(k: &InstKind) -> Vec<Value> {
    match k {
        InstKind::Call { callee, args, .. } => {
            let mut v = args.clone();
            v.push(*callee);
            v
        }
        InstKind::RetVoid | InstKind::Br(_) => Vec::new(),
        InstKind::CondBr { cond, .. } => vec![*cond],
        InstKind::Switch { cond, cases, .. } => {
            let mut v = vec![*cond];
            v.extend(cases.iter().map(|c| Value::Const(c.0)));
            v
        }
        InstKind::Phi { incoming } => incoming.iter().map(|i| i.0).collect(),
        InstKind::Load { ptr, .. } => vec![*ptr],
        InstKind::Store { value, ptr, .. } => vec![*value, *ptr],
        InstKind::Gep { base, indices, .. } => {
            let mut v = vec![*base];
            v.extend(indices.iter().copied());
            v
        }
        InstKind::ICmp { lhs, rhs, .. } | InstKind::Binary { lhs, rhs, .. } => vec![*lhs, *rhs],
        InstKind::Trunc(v) => vec![*v],
    }
}

/// Mirrors LLVM's `TypeFinder`: a depth-first walk that records identified
/// structs the first time it reaches them.
struct TypeFinder<'m, 'a> {
    m: &'m Module<'a>,
    visited: HashSet<TypeId>,
    visited_consts: HashSet<u32>,
    order: Vec<TypeId>,
}

impl TypeFinder<'_, '_> {
    fn ty(&mut self, t: TypeId) {
        if !self.visited.insert(t) {
            return;
        }
        let mut work = vec![t];
        while let Some(t) = work.pop() {
            let ty = &self.m.types[t.0 as usize];
            if let Type::Struct { name: Some(_), .. } = ty {
                self.order.push(t);
            }
            let subtypes: Vec<TypeId> = match ty {
                Type::Void | Type::Int(_) | Type::OpaquePtr => Vec::new(),
                Type::Ptr(p) => vec![*p],
                Type::Array(_, e) => vec![*e],
                Type::Struct { fields, .. } => fields.clone(),
                Type::Function { ret, params } => {
                    let mut v = vec![*ret];
                    v.extend(params.iter().copied());
                    v
                }
            };
            for s in subtypes.into_iter().rev() {
                if self.visited.insert(s) {
                    work.push(s);
                }
            }
        }
    }

    fn value(&mut self, v: Value) {
        let Value::Const(c) = v else {
            return;
        };
        if !self.visited_consts.insert(c.0) {
            return;
        }
        let k = &self.m.consts[c.0 as usize];
        self.ty(k.ty());
        match k {
            Const::Aggregate { elems, .. } => {
                for &e in elems {
                    self.value(e);
                }
            }
            Const::Gep {
                source,
                base,
                indices,
                ..
            } => {
                self.ty(*source);
                self.value(*base);
                for &i in indices {
                    self.value(Value::Const(i));
                }
            }
            _ => {}
        }
    }
}
