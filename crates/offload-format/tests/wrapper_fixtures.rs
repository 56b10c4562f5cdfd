//! Checks the wrapper modules against the committed golden files in
//! `tests/fixtures/wrapper/` (made by `cargo xtask fixtures wrapper` from
//! the reference tools), and checks the structure of our bitcode with a
//! test-side bitstream reader. Needs no LLVM.

mod common;

use common::bitreader::{self, Block};
use offload_format::wrapper::{self, Module, OffloadKind};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/wrapper")
}

struct Case {
    name: String,
    fields: BTreeMap<String, Vec<String>>,
    inputs: Vec<Vec<u8>>,
    expected: String,
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(fixtures())
        .expect("fixtures directory")
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    for dir in dirs {
        let mut fields: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let desc = std::fs::read_to_string(dir.join("case.txt")).unwrap();
        for line in desc.lines() {
            let (k, v) = line
                .split_once(": ")
                .unwrap_or((line.trim_end_matches(':'), ""));
            fields.entry(k.to_string()).or_default().push(v.to_string());
        }
        let inputs = fields
            .get("input")
            .map(|v| {
                v.iter()
                    .map(|f| std::fs::read(dir.join(f)).unwrap())
                    .collect()
            })
            .unwrap_or_default();
        out.push(Case {
            name: dir.file_name().unwrap().to_string_lossy().into_owned(),
            fields,
            inputs,
            expected: std::fs::read_to_string(dir.join("expected.ll")).unwrap(),
        });
    }
    assert!(out.len() >= 20, "fixtures present");
    out
}

fn build<'a>(c: &Case, inputs: &[&'a [u8]]) -> Module<'a> {
    let field = |k: &str| c.fields.get(k).and_then(|v| v.first()).cloned();
    let triple = field("triple").unwrap_or_default();
    match field("tool").as_deref() {
        Some("llvm-offload-wrapper") => {
            let kind = match field("kind").as_deref() {
                Some("openmp") => OffloadKind::OpenMp,
                Some("cuda") => OffloadKind::Cuda,
                Some("hip") => OffloadKind::Hip,
                k => panic!("{}: kind {k:?}", c.name),
            };
            wrapper::wrap_llvm22(kind, &triple, inputs).unwrap()
        }
        Some("clang-offload-wrapper") => {
            let archs: Vec<&str> = c
                .fields
                .get("arch")
                .map(|v| v.iter().map(String::as_str).collect())
                .unwrap_or_default();
            wrapper::wrap_clang14(&triple, inputs, &archs).unwrap()
        }
        t => panic!("{}: tool {t:?}", c.name),
    }
}

#[test]
fn printer_matches_reference_disassembly() {
    for c in cases() {
        let inputs: Vec<&[u8]> = c.inputs.iter().map(Vec::as_slice).collect();
        let m = build(&c, &inputs);
        let text = m.to_ll("x");
        let text = text.split_once('\n').unwrap().1;
        assert_eq!(text, c.expected, "{}", c.name);
    }
}

/// Record codes used below.
const MODULE: u64 = 8;
const TYPES: u64 = 17;
const CONSTANTS: u64 = 11;
const FUNCTION: u64 = 12;
const IDENTIFICATION: u64 = 13;
const STRTAB: u64 = 23;

fn strtab_names(top: &[Block]) -> Vec<u8> {
    let st = top.iter().find(|b| b.id == STRTAB).expect("string table");
    st.records[0].blob.clone().expect("blob")
}

#[test]
fn bitcode_structure_matches_the_model() {
    for c in cases() {
        let inputs: Vec<&[u8]> = c.inputs.iter().map(Vec::as_slice).collect();
        let m = build(&c, &inputs);
        let bc = m.to_bitcode().unwrap().to_vec();
        let top = bitreader::parse(&bc);
        let ids: Vec<u64> = top.iter().map(|b| b.id).collect();
        assert_eq!(ids, [IDENTIFICATION, MODULE, STRTAB], "{}", c.name);
        let module = &top[1];
        assert_eq!(module.records(1).next().unwrap().ops, [2], "version 2");
        let types = module.block(TYPES);
        assert_eq!(types.records(1).next().unwrap().ops, [m.types.len() as u64]);
        let names = strtab_names(&top);
        let gvars: Vec<_> = module.records(7).collect();
        assert_eq!(gvars.len(), m.globals.len(), "{}", c.name);
        for (r, g) in gvars.iter().zip(&m.globals) {
            let (off, len) = (r.ops[0] as usize, r.ops[1] as usize);
            assert_eq!(&names[off..off + len], g.name.as_bytes(), "{}", c.name);
            assert_eq!(r.ops[2], g.value_type.0 as u64);
            assert_eq!(r.ops[3] & 1, g.constant as u64);
            assert_eq!(r.ops[4] != 0, g.init.is_some());
        }
        let funcs: Vec<_> = module.records(8).collect();
        assert_eq!(funcs.len(), m.functions.len());
        for (r, f) in funcs.iter().zip(&m.functions) {
            let (off, len) = (r.ops[0] as usize, r.ops[1] as usize);
            assert_eq!(&names[off..off + len], f.name.as_bytes());
            assert_eq!(r.ops[4] == 1, f.is_declaration());
        }
        let bodies = module.blocks(FUNCTION).count();
        let defs = m.functions.iter().filter(|f| !f.is_declaration()).count();
        assert_eq!(bodies, defs, "{}", c.name);
        // Every image that is not all zero is stored verbatim as a string
        // constant, in input order.
        let strings: Vec<Vec<u8>> = module
            .block(CONSTANTS)
            .records(8)
            .map(|r| r.blob.clone().expect("byte arrays are blobs"))
            .collect();
        let mut expected: Vec<Vec<u8>> = c
            .inputs
            .iter()
            .filter(|d| d.iter().any(|&b| b != 0))
            .cloned()
            .collect();
        for a in c.fields.get("arch").into_iter().flatten() {
            if !a.is_empty() {
                let mut v = a.as_bytes().to_vec();
                v.push(0);
                expected.push(v);
            }
        }
        assert_eq!(strings, expected, "{}", c.name);
        // Darwin targets get the wrapper header, as LLVM writes it.
        let darwin = bc.starts_with(&[0xDE, 0xC0, 0x17, 0x0B]);
        assert_eq!(
            darwin,
            c.fields["triple"][0].contains("apple"),
            "{}: Darwin wrapper",
            c.name
        );
        if darwin {
            assert_eq!(bc.len() % 16, 0);
        }
    }
}

#[test]
fn large_images_are_written_without_copies() {
    // 24 MiB of a pattern with no zero bytes, so it is stored as a string.
    let data: Vec<u8> = (0..24u32 << 20).map(|i| (i % 255) as u8 + 1).collect();
    let m = wrapper::wrap_llvm22(OffloadKind::OpenMp, "x86_64-pc-linux-gnu", &[&data]).unwrap();
    let bc = m.to_bitcode().unwrap();
    // The module is the image plus a small, size-independent overhead.
    let overhead = bc.len() - data.len() as u64;
    assert!(overhead < 4096, "overhead {overhead}");
    let mut out = Vec::new();
    bc.write_to(&mut out).unwrap();
    let top = bitreader::parse(&out);
    let blob = top[1]
        .block(CONSTANTS)
        .records(8)
        .next()
        .unwrap()
        .blob
        .clone();
    assert!(blob.unwrap() == data);
}
