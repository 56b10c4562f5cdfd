//! Builders for the fixed module shapes the two wrapper tools emit.
//!
//! Global and function order, names, linkage, sections and alignment all
//! follow the reference tools, because `llvm-dis` prints modules in creation
//! order and that text is what the tools are compared on.

use super::ir::{
    BinOp, BlockId, ConstId, FuncId, Global, GlobalId, InstKind, IntPredicate, Linkage, Module,
    TypeId, Value, Visibility,
};
use super::triple::{self, ObjectFormat};
use super::{Flavour, OffloadKind};

/// One device image to embed in an OpenMP descriptor.
#[derive(Clone, Copy, Debug)]
pub struct Image<'a> {
    /// The bytes embedded in the module.
    pub data: &'a [u8],
    /// Offset of the device code within `data` (non-zero for packaged
    /// inputs, whose descriptor points inside the offload binary).
    pub begin: u64,
    /// End offset of the device code within `data`.
    pub end: u64,
}

impl<'a> Image<'a> {
    /// An image whose device code is all of `data`.
    pub fn raw(data: &'a [u8]) -> Image<'a> {
        Image {
            data,
            begin: 0,
            end: data.len() as u64,
        }
    }
}

fn global(name: &str, value_type: TypeId) -> Global {
    Global {
        name: name.to_string(),
        value_type,
        constant: true,
        init: None,
        linkage: Linkage::Internal,
        visibility: Visibility::Default,
        unnamed_addr: false,
        section: None,
        align: None,
    }
}

/// LLVM gives the n-th duplicate of a global's name the suffix `.n` (just
/// `n` for NVPTX, whose symbols cannot contain dots).
fn numbered(triple: &str, base: &str, n: usize) -> String {
    if n == 0 {
        base.to_string()
    } else if triple::is_nvptx(triple) {
        format!("{base}{n}")
    } else {
        format!("{base}.{n}")
    }
}

/// Appends `f` to `llvm.global_ctors` or `llvm.global_dtors` (which must not
/// exist yet) with the given priority.
fn add_structor_list(m: &mut Module<'_>, name: &str, f: FuncId, priority: i64) {
    let i32t = m.int(32);
    let fty = m.functions[f.0 as usize].ty;
    let fn_ptr = m.ptr_to(fty);
    let data_ptr = m.byte_ptr();
    let entry_ty = m.literal_struct(vec![i32t, fn_ptr, data_ptr]);
    let list_ty = m.array(1, entry_ty);
    let prio = m.const_int(i32t, priority);
    let null = m.const_null(data_ptr);
    let entry = m.const_aggregate(
        entry_ty,
        vec![Value::Const(prio), Value::Function(f), Value::Const(null)],
    );
    let list = m.const_aggregate(list_ty, vec![Value::Const(entry)]);
    m.add_global(Global {
        constant: false,
        init: Some(list),
        linkage: Linkage::Appending,
        ..global(name, list_ty)
    });
}

/// The LLVM 22 offload entry type `%struct.__tgt_offload_entry`.
fn entry_type_22(m: &mut Module<'_>) -> TypeId {
    let (i64t, i16t, i32t, ptr) = (m.int(64), m.int(16), m.int(32), m.byte_ptr());
    m.named_struct(
        "struct.__tgt_offload_entry",
        vec![i64t, i16t, i16t, i32t, ptr, ptr, i64t, i64t, ptr],
    )
}

/// Declares `__start_<section>` / `__stop_<section>` for the entry table as
/// LLVM 22 does for the triple's object format.
fn entry_array_22(m: &mut Module<'_>, section: &str) -> (GlobalId, GlobalId) {
    let entry = entry_type_22(m);
    let table = m.array(0, entry);
    let format = triple::object_format(&m.triple);
    let zero = m.const_null(table);
    let bound = |m: &mut Module<'_>, which: &str, suffix: &str| {
        let mut g = Global {
            linkage: Linkage::External,
            visibility: Visibility::Hidden,
            ..global(&format!("__{which}_{section}"), table)
        };
        match format {
            ObjectFormat::Elf => {}
            ObjectFormat::Coff => {
                g.linkage = Linkage::WeakOdr;
                g.init = Some(zero);
                g.section = Some(format!("{section}{suffix}"));
            }
            _ => {
                g.section = Some(format!("{section}{suffix}"));
            }
        }
        m.add_global(g)
    };
    let begin = bound(m, "start", "$OA");
    let end = bound(m, "stop", "$OZ");
    if format == ObjectFormat::Elf {
        // An empty object in the section makes the linker define the
        // start/stop symbols even when no entries exist.
        let dummy = m.add_global(Global {
            init: Some(zero),
            section: Some(section.to_string()),
            align: Some(8),
            ..global(&format!("__dummy.{section}"), table)
        });
        let ptr = m.byte_ptr();
        let used_ty = m.array(1, ptr);
        let used = m.const_aggregate(used_ty, vec![Value::Global(dummy)]);
        m.add_global(Global {
            constant: false,
            init: Some(used),
            linkage: Linkage::Appending,
            section: Some("llvm.metadata".to_string()),
            ..global("llvm.compiler.used", used_ty)
        });
    }
    (begin, end)
}

/// Builds the module `llvm-offload-wrapper` (LLVM 22) emits.
///
/// For OpenMP every image becomes one device image of the descriptor; CUDA
/// and HIP embed exactly one fat binary (the caller checks the count).
pub(crate) fn llvm22_module<'a>(
    kind: OffloadKind,
    triple: &str,
    images: &[Image<'a>],
) -> Module<'a> {
    let mut m = Module::new(Flavour::Llvm22, "offload.wrapper.module", triple);
    match kind {
        OffloadKind::OpenMp => openmp_22(&mut m, images),
        OffloadKind::Cuda | OffloadKind::Hip => {
            let data = images.first().map_or(&[][..], |i| i.data);
            fatbin_22(&mut m, kind == OffloadKind::Hip, data)
        }
    }
    m
}

fn openmp_22<'a>(m: &mut Module<'a>, images: &[Image<'a>]) {
    let (begin, end) = entry_array_22(m, "llvm_offload_entries");
    let (i32t, i64t, ptr) = (m.int(32), m.int(64), m.byte_ptr());
    let image_ty = m.named_struct("__tgt_device_image", vec![ptr, ptr, ptr, ptr]);
    let desc_ty = m.named_struct("__tgt_bin_desc", vec![i32t, ptr, ptr, ptr]);

    let zero = m.const_int(i64t, 0);
    let mut inits = Vec::new();
    for (n, img) in images.iter().enumerate() {
        let data = m.const_bytes(img.data);
        let data_ty = m.consts[data.0 as usize].ty();
        let g = m.add_global(Global {
            init: Some(data),
            unnamed_addr: true,
            section: Some(".llvm.offloading".to_string()),
            align: Some(8),
            ..global(
                &numbered(&m.triple, ".omp_offloading.device_image", n),
                data_ty,
            )
        });
        // A getelementptr whose indices are all zero folds to its base.
        let at = |m: &mut Module<'a>, off: u64| -> Value {
            if off == 0 {
                Value::Global(g)
            } else {
                let idx = m.const_int(i64t, off as i64);
                Value::Const(m.const_gep(ptr, false, data_ty, Value::Global(g), vec![zero, idx]))
            }
        };
        let b = at(m, img.begin);
        let e = at(m, img.end);
        inits.push(Value::Const(m.const_aggregate(
            image_ty,
            vec![b, e, Value::Global(begin), Value::Global(end)],
        )));
    }
    let images_g = device_images(m, image_ty, inits);
    let desc = descriptor(
        m,
        desc_ty,
        images.len(),
        Value::Global(images_g),
        (begin, end),
    );

    let void = m.void();
    let ctor_ty = m.func_type(void, vec![]);
    let lib_ty = m.func_type(void, vec![ptr]);
    let atexit_ty = m.func_type(i32t, vec![ptr]);
    let reg = startup_function(m, ".omp_offloading.descriptor_reg", ctor_ty);
    let register_lib = m.add_function("__tgt_register_lib", lib_ty, Linkage::External, None);
    let atexit = m.add_function("atexit", atexit_ty, Linkage::External, None);
    let unreg = startup_function(m, ".omp_offloading.descriptor_unreg", ctor_ty);
    let unregister_lib = m.add_function("__tgt_unregister_lib", lib_ty, Linkage::External, None);

    let desc_arg = || vec![Value::Global(desc)];
    calls_then_return(m, unreg, vec![call(lib_ty, unregister_lib, desc_arg())]);
    calls_then_return(
        m,
        reg,
        vec![
            call(lib_ty, register_lib, desc_arg()),
            call(atexit_ty, atexit, vec![Value::Function(unreg)]),
        ],
    );
    add_structor_list(m, "llvm.global_ctors", reg, 101);
}

/// The `.omp_offloading.device_images` array of the image records `inits`
/// (zero-initialized when there are none).
fn device_images(m: &mut Module<'_>, image_ty: TypeId, inits: Vec<Value>) -> GlobalId {
    let images_ty = m.array(inits.len() as u64, image_ty);
    let init = aggregate_or_zero(m, images_ty, inits);
    m.add_global(Global {
        init: Some(init),
        unnamed_addr: true,
        ..global(".omp_offloading.device_images", images_ty)
    })
}

/// The `.omp_offloading.descriptor` the runtime registers: the number of
/// images, a pointer to the first one and the bounds of the entry table.
fn descriptor(
    m: &mut Module<'_>,
    desc_ty: TypeId,
    count: usize,
    first_image: Value,
    (begin, end): (GlobalId, GlobalId),
) -> GlobalId {
    let i32t = m.int(32);
    let count = m.const_int(i32t, count as i64);
    let init = m.const_aggregate(
        desc_ty,
        vec![
            Value::Const(count),
            first_image,
            Value::Global(begin),
            Value::Global(end),
        ],
    );
    m.add_global(Global {
        init: Some(init),
        ..global(".omp_offloading.descriptor", desc_ty)
    })
}

/// Declares an internal function placed in `.text.startup`, as every
/// registration constructor and destructor is.
fn startup_function(m: &mut Module<'_>, name: &str, ty: TypeId) -> FuncId {
    m.add_function(name, ty, Linkage::Internal, Some(".text.startup"))
}

/// Gives `f` one `entry` block that makes `calls` in order and returns.
fn calls_then_return(m: &mut Module<'_>, f: FuncId, calls: Vec<InstKind>) {
    let void = m.void();
    let mut b = m.body(f, &["entry"]);
    for c in calls {
        let ty = match &c {
            InstKind::Call { fty, .. } => m.func_sig(*fty).0,
            other => panic!("not a call: {other:?}"),
        };
        b.push(ty, None, c);
    }
    b.push(void, None, InstKind::RetVoid);
    b.finish(m);
}

fn aggregate_or_zero(m: &mut Module<'_>, ty: TypeId, elems: Vec<Value>) -> ConstId {
    if elems.is_empty() {
        m.const_null(ty)
    } else {
        m.const_aggregate(ty, elems)
    }
}

fn call(fty: TypeId, f: FuncId, args: Vec<Value>) -> InstKind {
    InstKind::Call {
        fty,
        callee: Value::Function(f),
        args,
    }
}

fn fatbin_22<'a>(m: &mut Module<'a>, hip: bool, image: &'a [u8]) {
    let (begin, end) = entry_array_22(m, "llvm_offload_entries");
    let (i1t, i16t, i32t, i64t, ptr) = (m.int(1), m.int(16), m.int(32), m.int(64), m.byte_ptr());
    let entry_ty = entry_type_22(m);
    let macos = !hip && triple::is_macos(&m.triple);
    let (data_section, wrapper_section) = if hip {
        (".hip_fatbin", ".hipFatBinSegment")
    } else if macos {
        ("__NV_CUDA,__nv_fatbin", "__NV_CUDA,__fatbin")
    } else {
        (".nv_fatbin", ".nvFatBinSegment")
    };
    let p = if hip { "hip" } else { "cuda" };
    let rt = |name: &str| format!("__{p}{name}");

    let data = m.const_bytes(image);
    let data_ty = m.consts[data.0 as usize].ty();
    let fatbin = m.add_global(Global {
        init: Some(data),
        section: Some(data_section.to_string()),
        ..global(".fatbin_image", data_ty)
    });
    let wrapper_ty = m.named_struct("fatbin_wrapper", vec![i32t, i32t, ptr, ptr]);
    let magic = m.const_int(i32t, if hip { 0x4849_5046 } else { 0x4662_43b1 });
    let one = m.const_int(i32t, 1);
    let null = m.const_null(ptr);
    let wrapper_init = m.const_aggregate(
        wrapper_ty,
        vec![
            Value::Const(magic),
            Value::Const(one),
            Value::Global(fatbin),
            Value::Const(null),
        ],
    );
    let wrapper = m.add_global(Global {
        init: Some(wrapper_init),
        section: Some(wrapper_section.to_string()),
        align: Some(8),
        ..global(".fatbin_wrapper", wrapper_ty)
    });
    let handle = m.add_global(Global {
        constant: false,
        init: Some(null),
        ..global(&format!(".{p}.binary_handle"), ptr)
    });

    let void = m.void();
    let ctor_ty = m.func_type(void, vec![]);
    let reg_fat_ty = m.func_type(ptr, vec![ptr]);
    let void_ptr_ty = m.func_type(void, vec![ptr]);
    let atexit_ty = m.func_type(i32t, vec![ptr]);
    let reg_fn_ty = m.func_type(
        i32t,
        vec![ptr, ptr, ptr, ptr, i32t, ptr, ptr, ptr, ptr, ptr],
    );
    let reg_var_ty = m.func_type(void, vec![ptr, ptr, ptr, ptr, i32t, i64t, i32t, i32t]);
    let reg_managed_ty = m.func_type(void, vec![ptr, ptr, ptr, ptr, i64t, i32t]);
    let reg_surface_ty = m.func_type(void, vec![ptr, ptr, ptr, ptr, i32t, i32t]);
    let reg_texture_ty = m.func_type(void, vec![ptr, ptr, ptr, ptr, i32t, i32t, i32t]);

    let ext = Linkage::External;
    let reg = startup_function(m, &format!(".{p}.fatbin_reg"), ctor_ty);
    let unreg = startup_function(m, &format!(".{p}.fatbin_unreg"), ctor_ty);
    let reg_fat = m.add_function(&rt("RegisterFatBinary"), reg_fat_ty, ext, None);
    // Declared for HIP too, although only CUDA calls it.
    let reg_fat_end = m.add_function("__cudaRegisterFatBinaryEnd", void_ptr_ty, ext, None);
    let unreg_fat = m.add_function(&rt("UnregisterFatBinary"), void_ptr_ty, ext, None);
    let atexit = m.add_function("atexit", atexit_ty, ext, None);
    let reg_fn = m.add_function(&rt("RegisterFunction"), reg_fn_ty, ext, None);
    let reg_var = m.add_function(&rt("RegisterVar"), reg_var_ty, ext, None);
    let reg_managed = m.add_function(&rt("RegisterManagedVar"), reg_managed_ty, ext, None);
    let reg_surface = m.add_function(&rt("RegisterSurface"), reg_surface_ty, ext, None);
    let reg_texture = m.add_function(&rt("RegisterTexture"), reg_texture_ty, ext, None);
    let globals_reg_ty = void_ptr_ty;
    let globals_reg = startup_function(m, &format!(".{p}.globals_reg"), globals_reg_ty);

    // Constructor: register the fat binary and its globals, then arrange
    // for unregistration at exit.
    let mut b = m.body(reg, &["entry"]);
    let h = b.push(
        ptr,
        None,
        call(reg_fat_ty, reg_fat, vec![Value::Global(wrapper)]),
    );
    b.push(
        void,
        None,
        InstKind::Store {
            value: h,
            ptr: Value::Global(handle),
            align: 8,
        },
    );
    b.push(void, None, call(globals_reg_ty, globals_reg, vec![h]));
    if !hip {
        b.push(void, None, call(void_ptr_ty, reg_fat_end, vec![h]));
    }
    b.push(
        i32t,
        None,
        call(atexit_ty, atexit, vec![Value::Function(unreg)]),
    );
    b.push(void, None, InstKind::RetVoid);
    b.finish(m);

    let mut b = m.body(unreg, &["entry"]);
    let h = b.push(
        ptr,
        None,
        InstKind::Load {
            ptr: Value::Global(handle),
            align: 8,
        },
    );
    b.push(void, None, call(void_ptr_ty, unreg_fat, vec![h]));
    b.push(void, None, InstKind::RetVoid);
    b.finish(m);

    // Walk the entry table and register every entry of this offload kind.
    let c32 = |m: &mut Module<'_>, v: i64| Value::Const(m.const_int(i32t, v));
    let (k0, k2, k3, k4, k5, k6, k7, k8) = (
        c32(m, 0),
        c32(m, 2),
        c32(m, 3),
        c32(m, 4),
        c32(m, 5),
        c32(m, 6),
        c32(m, 7),
        c32(m, 8),
    );
    let (k16, k32, km1) = (c32(m, 16), c32(m, 32), c32(m, -1));
    let kind_value = Value::Const(m.const_int(i16t, if hip { 4 } else { 2 }));
    let size_zero = Value::Const(m.const_int(i64t, 0));
    let step = Value::Const(m.const_int(i64t, 1));
    let nullv = Value::Const(null);
    let (start, stop) = (Value::Global(begin), Value::Global(end));

    let mut b = m.body(
        globals_reg,
        &[
            "entry",
            "while.entry",
            "if.kind",
            "if.then",
            "if.else",
            "sw.global",
            "sw.managed",
            "sw.surface",
            "sw.texture",
            "if.end",
            "while.end",
        ],
    );
    let bb = |b: &super::ir::BodyBuilder, n: u32| -> BlockId { b.block(n) };
    let (while_entry, if_kind, if_then, if_else) = (bb(&b, 1), bb(&b, 2), bb(&b, 3), bb(&b, 4));
    let (sw_global, sw_managed, sw_surface, sw_texture) =
        (bb(&b, 5), bb(&b, 6), bb(&b, 7), bb(&b, 8));
    let (if_end, while_end) = (bb(&b, 9), bb(&b, 10));
    let handle_arg = Value::Arg(0);

    let nonempty = b.push(
        i1t,
        None,
        InstKind::ICmp {
            pred: IntPredicate::Ne,
            lhs: start,
            rhs: stop,
        },
    );
    b.push(
        void,
        None,
        InstKind::CondBr {
            cond: nonempty,
            then: while_entry,
            otherwise: while_end,
        },
    );

    b.at(while_entry);
    // The loop variable is named "entry" in LLVM, which clashes with the
    // entry block and so becomes "entry1".
    let cursor = b.push(ptr, Some("entry1"), InstKind::Phi { incoming: vec![] });
    // An address in the entry table, from the current entry.
    let at_cursor = |b: &mut super::ir::BodyBuilder, indices| {
        let gep = InstKind::Gep {
            inbounds: true,
            source: entry_ty,
            base: cursor,
            indices,
        };
        b.push(ptr, None, gep)
    };
    let field = |b: &mut super::ir::BodyBuilder, idx: Value, ty: TypeId, align, name| {
        let addr = at_cursor(b, vec![k0, idx]);
        b.push(ty, Some(name), InstKind::Load { ptr: addr, align })
    };
    let addr = field(&mut b, k4, ptr, 8, "addr");
    let aux_addr = field(&mut b, k8, ptr, 8, "aux_addr");
    let kind = field(&mut b, k2, i16t, 2, "kind");
    let name = field(&mut b, k5, ptr, 8, "name");
    // i64 loads get the default layout's 4-byte alignment: the module has
    // no data layout.
    let size = field(&mut b, k6, i64t, 4, "size");
    let flags = field(&mut b, k3, i32t, 4, "flags");
    let data64 = field(&mut b, k7, i64t, 4, "data");
    let data = b.push(i32t, None, InstKind::Trunc(data64));
    let binary = |b: &mut super::ir::BodyBuilder, op, lhs, rhs, name: Option<&str>| {
        b.push(i32t, name, InstKind::Binary { op, lhs, rhs })
    };
    let ty = binary(&mut b, BinOp::And, flags, k7, Some("type"));
    let t = binary(&mut b, BinOp::And, flags, k8, None);
    let extern_ = binary(&mut b, BinOp::LShr, t, k3, Some("extern"));
    let t = binary(&mut b, BinOp::And, flags, k16, None);
    let constant = binary(&mut b, BinOp::LShr, t, k4, Some("constant"));
    let t = binary(&mut b, BinOp::And, flags, k32, None);
    let normalized = binary(&mut b, BinOp::LShr, t, k5, Some("normalized"));
    let is_kind = b.push(
        i1t,
        None,
        InstKind::ICmp {
            pred: IntPredicate::Eq,
            lhs: kind,
            rhs: kind_value,
        },
    );
    b.push(
        void,
        None,
        InstKind::CondBr {
            cond: is_kind,
            then: if_kind,
            otherwise: if_end,
        },
    );

    b.at(if_kind);
    let is_fn = b.push(
        i1t,
        None,
        InstKind::ICmp {
            pred: IntPredicate::Eq,
            lhs: size,
            rhs: size_zero,
        },
    );
    b.push(
        void,
        None,
        InstKind::CondBr {
            cond: is_fn,
            then: if_then,
            otherwise: if_else,
        },
    );

    b.at(if_then);
    b.push(
        i32t,
        None,
        call(
            reg_fn_ty,
            reg_fn,
            vec![
                handle_arg, addr, name, name, km1, nullv, nullv, nullv, nullv, nullv,
            ],
        ),
    );
    b.push(void, None, InstKind::Br(if_end));

    b.at(if_else);
    let case = |m: &mut Module<'_>, v| m.const_int(i32t, v);
    let cases = vec![
        (case(m, 0), sw_global),
        (case(m, 1), sw_managed),
        (case(m, 2), sw_surface),
        (case(m, 3), sw_texture),
    ];
    b.push(
        void,
        None,
        InstKind::Switch {
            cond: ty,
            default: if_end,
            cases,
        },
    );

    // Every case registers the entry with its runtime function (surfaces
    // and textures only for HIP) and goes on to the next entry.
    let cases = [
        (
            sw_global,
            Some(call(
                reg_var_ty,
                reg_var,
                vec![handle_arg, addr, name, name, extern_, size, constant, k0],
            )),
        ),
        (
            sw_managed,
            Some(call(
                reg_managed_ty,
                reg_managed,
                vec![handle_arg, aux_addr, addr, name, size, data],
            )),
        ),
        (
            sw_surface,
            hip.then(|| {
                call(
                    reg_surface_ty,
                    reg_surface,
                    vec![handle_arg, addr, name, name, data, extern_],
                )
            }),
        ),
        (
            sw_texture,
            hip.then(|| {
                call(
                    reg_texture_ty,
                    reg_texture,
                    vec![handle_arg, addr, name, name, data, normalized, extern_],
                )
            }),
        ),
    ];
    for (block, registration) in cases {
        b.at(block);
        if let Some(c) = registration {
            b.push(void, None, c);
        }
        b.push(void, None, InstKind::Br(if_end));
    }

    b.at(if_end);
    let next = at_cursor(&mut b, vec![step]);
    let done = b.push(
        i1t,
        None,
        InstKind::ICmp {
            pred: IntPredicate::Eq,
            lhs: next,
            rhs: stop,
        },
    );
    b.push(
        void,
        None,
        InstKind::CondBr {
            cond: done,
            then: while_end,
            otherwise: while_entry,
        },
    );

    b.at(while_end);
    b.push(void, None, InstKind::RetVoid);
    b.set_phi(cursor, vec![(start, BlockId(0)), (next, if_end)]);
    b.finish(m);

    add_structor_list(m, "llvm.global_ctors", reg, 101);
}

/// Builds the module `clang-offload-wrapper` (LLVM 14) emits, with typed
/// pointers. With `archs` non-empty it adds the AMD extension: one
/// `__tgt_image_info` record per architecture string, registered through
/// `__tgt_register_image_info` before the descriptor.
pub(crate) fn clang14_module<'a>(triple: &str, images: &[&'a [u8]], archs: &[&str]) -> Module<'a> {
    let mut m = Module::new(Flavour::Llvm14, "offload.wrapper.object", triple);
    let (i8t, i32t, i64t) = (m.int(8), m.int(32), m.int(64));
    let i8p = m.ptr_to(i8t);
    let entry_ty = m.named_struct("__tgt_offload_entry", vec![i8p, i8p, i64t, i32t, i32t]);
    let entry_p = m.ptr_to(entry_ty);
    let image_ty = m.named_struct("__tgt_device_image", vec![i8p, i8p, entry_p, entry_p]);
    let image_p = m.ptr_to(image_ty);
    let desc_ty = m.named_struct("__tgt_bin_desc", vec![i32t, image_p, entry_p, entry_p]);
    let desc_p = m.ptr_to(desc_ty);

    let bound = |m: &mut Module<'_>, name: &str| {
        m.add_global(Global {
            linkage: Linkage::External,
            visibility: Visibility::Hidden,
            ..global(name, entry_ty)
        })
    };
    let begin = bound(&mut m, "__start_omp_offloading_entries");
    let end = bound(&mut m, "__stop_omp_offloading_entries");
    let dummy_ty = m.array(0, entry_ty);
    let dummy_init = m.const_null(dummy_ty);
    m.add_global(Global {
        init: Some(dummy_init),
        linkage: Linkage::External,
        visibility: Visibility::Hidden,
        section: Some("omp_offloading_entries".to_string()),
        ..global("__dummy.omp_offloading.entry", dummy_ty)
    });

    let zero = m.const_int(i64t, 0);
    let one = m.const_int(i64t, 1);
    let mut inits = Vec::new();
    for (n, data) in images.iter().enumerate() {
        let init = m.const_bytes(*data);
        let data_ty = m.consts[init.0 as usize].ty();
        let g = m.add_global(Global {
            init: Some(init),
            unnamed_addr: true,
            ..global(
                &numbered(&m.triple, ".omp_offloading.device_image", n),
                data_ty,
            )
        });
        let start = m.const_gep(i8p, true, data_ty, Value::Global(g), vec![zero, zero]);
        // LLVM 14 folds the one-past-the-end index (0, N) into (1, 0).
        let stop = if data.is_empty() {
            start
        } else {
            m.const_gep(i8p, true, data_ty, Value::Global(g), vec![one, zero])
        };
        inits.push(Value::Const(m.const_aggregate(
            image_ty,
            vec![
                Value::Const(start),
                Value::Const(stop),
                Value::Global(begin),
                Value::Global(end),
            ],
        )));
    }
    let images_g = device_images(&mut m, image_ty, inits);
    let images_ty = m.globals[images_g.0 as usize].value_type;
    let first = m.const_gep(
        image_p,
        true,
        images_ty,
        Value::Global(images_g),
        vec![zero, zero],
    );
    let first = Value::Const(first);
    let desc = descriptor(&mut m, desc_ty, images.len(), first, (begin, end));

    let void = m.void();
    let ctor_ty = m.func_type(void, vec![]);
    let lib_ty = m.func_type(void, vec![desc_p]);
    let reg = startup_function(&mut m, ".omp_offloading.descriptor_reg", ctor_ty);
    let register_lib = m.add_function("__tgt_register_lib", lib_ty, Linkage::External, None);

    let mut info_calls = Vec::new();
    if !archs.is_empty() {
        let info_ty = m.named_struct("__tgt_image_info", vec![i32t, i32t, i32t, i8p, i8p]);
        let info_p = m.ptr_to(info_ty);
        let info_fn_ty = m.func_type(void, vec![info_p]);
        let register_info = m.add_function(
            "__tgt_register_image_info",
            info_fn_ty,
            Linkage::External,
            None,
        );
        let i32_zero = m.const_int(i32t, 0);
        let version = m.const_int(i32t, 1);
        let total = m.const_int(i32t, archs.len() as i64);
        let null = m.const_null(i8p);
        for (n, arch) in archs.iter().enumerate() {
            // The string is stored with its terminating NUL.
            let mut bytes = arch.as_bytes().to_vec();
            bytes.push(0);
            let text = m.const_bytes(bytes);
            let text_ty = m.consts[text.0 as usize].ty();
            let s = m.add_global(Global {
                init: Some(text),
                unnamed_addr: true,
                section: Some(".offload_arch_list".to_string()),
                ..global(&format!("__offload_arch_{n}"), text_ty)
            });
            let s_ptr = m.const_gep(
                i8p,
                true,
                text_ty,
                Value::Global(s),
                vec![i32_zero, i32_zero],
            );
            let number = m.const_int(i32t, n as i64);
            let info_init = m.const_aggregate(
                info_ty,
                vec![
                    Value::Const(version),
                    Value::Const(number),
                    Value::Const(total),
                    Value::Const(s_ptr),
                    Value::Const(null),
                ],
            );
            let info = m.add_global(Global {
                init: Some(info_init),
                unnamed_addr: true,
                ..global(&format!(".offload_image_info_{n}"), info_ty)
            });
            info_calls.push(call(info_fn_ty, register_info, vec![Value::Global(info)]));
        }
    }

    let mut calls = info_calls;
    calls.push(call(lib_ty, register_lib, vec![Value::Global(desc)]));
    calls_then_return(&mut m, reg, calls);
    add_structor_list(&mut m, "llvm.global_ctors", reg, 1);

    let unreg = startup_function(&mut m, ".omp_offloading.descriptor_unreg", ctor_ty);
    let unregister_lib = m.add_function("__tgt_unregister_lib", lib_ty, Linkage::External, None);
    let desc_arg = vec![Value::Global(desc)];
    calls_then_return(&mut m, unreg, vec![call(lib_ty, unregister_lib, desc_arg)]);
    add_structor_list(&mut m, "llvm.global_dtors", unreg, 1);
    m
}
