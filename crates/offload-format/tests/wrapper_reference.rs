//! Compares our wrapper modules with the reference tools' when LLVM is
//! installed: `llvm-dis` of our bitcode must equal `llvm-dis` of theirs (the
//! `; ModuleID` line aside), our `.ll` printer must print the same text, and
//! `opt -passes=verify` must accept our bitcode. Skips, saying why, when the
//! tools are missing.

use offload_format::wrapper::{self, OffloadKind};
use std::path::{Path, PathBuf};
use std::process::Command;

fn llvm(version: u32, tool: &str) -> Option<PathBuf> {
    let p = PathBuf::from(format!("/usr/lib/llvm-{version}/bin/{tool}"));
    p.exists().then_some(p)
}

fn run(cmd: &mut Command) -> (i32, Vec<u8>, Vec<u8>) {
    let out = cmd.output().expect("spawn");
    (out.status.code().unwrap_or(-1), out.stdout, out.stderr)
}

/// llvm-dis text without its first (`; ModuleID`) line.
fn dis(version: u32, bc: &Path) -> String {
    let (rc, out, err) = run(Command::new(llvm(version, "llvm-dis").unwrap())
        .arg(bc)
        .arg("-o")
        .arg("-"));
    assert_eq!(
        rc,
        0,
        "llvm-dis-{version} {}: {}",
        bc.display(),
        String::from_utf8_lossy(&err)
    );
    let text = String::from_utf8(out).unwrap();
    text.split_once('\n').unwrap().1.to_string()
}

fn strip_first_line(s: &str) -> &str {
    s.split_once('\n').unwrap().1
}

struct Tmp(tempfile::TempDir);

impl Tmp {
    fn new() -> Tmp {
        Tmp(tempfile::tempdir().unwrap())
    }
    fn write(&self, name: &str, data: &[u8]) -> PathBuf {
        let p = self.0.path().join(name);
        std::fs::write(&p, data).unwrap();
        p
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }
}

fn inputs_set() -> Vec<Vec<Vec<u8>>> {
    let elf_like: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
    vec![
        vec![b"HELLODEVICEIMAGE".to_vec()],
        vec![Vec::new()],
        vec![vec![0u8; 5]],
        vec![b"abc\0".to_vec()],
        vec![b"quote\"back\\slash\x01\xff".to_vec()],
        vec![elf_like.clone(), b"second".to_vec(), Vec::new()],
        vec![(0..5000u32).map(|i| (i % 253) as u8).collect()],
    ]
}

fn packaged(image: &[u8]) -> Vec<u8> {
    // A minimal offload binary: header, one entry, no strings, the image.
    let image_at = 72u64;
    let total = image_at + image.len() as u64;
    let mut v = Vec::new();
    v.extend_from_slice(&[0x10, 0xFF, 0x10, 0xAD]);
    v.extend_from_slice(&1u32.to_le_bytes());
    v.extend_from_slice(&total.to_le_bytes());
    v.extend_from_slice(&32u64.to_le_bytes());
    v.extend_from_slice(&40u64.to_le_bytes());
    v.extend_from_slice(&1u16.to_le_bytes());
    v.extend_from_slice(&1u16.to_le_bytes());
    v.extend_from_slice(&0u32.to_le_bytes());
    v.extend_from_slice(&72u64.to_le_bytes());
    v.extend_from_slice(&0u64.to_le_bytes());
    v.extend_from_slice(&image_at.to_le_bytes());
    v.extend_from_slice(&(image.len() as u64).to_le_bytes());
    v.extend_from_slice(image);
    v
}

fn check_22(tmp: &Tmp, label: &str, kind: OffloadKind, triple: &str, inputs: &[Vec<u8>]) {
    let tool = llvm(22, "llvm-offload-wrapper").unwrap();
    let mut cmd = Command::new(tool);
    let kind_name = match kind {
        OffloadKind::OpenMp => "openmp",
        OffloadKind::Cuda => "cuda",
        OffloadKind::Hip => "hip",
    };
    cmd.arg(format!("--kind={kind_name}"))
        .arg(format!("--triple={triple}"))
        .arg("-o")
        .arg(tmp.path("ref.bc"));
    let (m, ours, ours_path) = reference_and_ours(tmp, label, &mut cmd, inputs, |refs| {
        wrapper::wrap_llvm22(kind, triple, refs).unwrap()
    });
    let want = dis(22, &tmp.path("ref.bc"));
    assert_eq!(dis(22, &ours_path), want, "{label}: llvm-dis differs");
    if !triple.starts_with("amdgcn") {
        assert_eq!(
            strip_first_line(&m.to_ll("x")),
            want,
            "{label}: printer differs"
        );
    }
    let (rc, _, err) = run(Command::new(llvm(22, "opt").unwrap())
        .args(["-passes=verify", "-disable-output"])
        .arg(&ours_path));
    assert_eq!(rc, 0, "{label}: verify: {}", String::from_utf8_lossy(&err));
    // Same header bytes as LLVM (Darwin wrapper or plain magic).
    let reference = std::fs::read(tmp.path("ref.bc")).unwrap();
    assert_eq!(&ours[..4], &reference[..4], "{label}: magic");
    if reference[..4] == [0xDE, 0xC0, 0x17, 0x0B] {
        assert_eq!(&ours[16..20], &reference[16..20], "{label}: cpu type");
        assert_eq!(ours.len() % 16, 0);
    }
}

#[test]
fn llvm_offload_wrapper_22_equivalence() {
    if llvm(22, "llvm-offload-wrapper").is_none() || llvm(22, "llvm-dis").is_none() {
        eprintln!("skipped: llvm-offload-wrapper-22 / llvm-dis-22 not installed");
        return;
    }
    let tmp = Tmp::new();
    let triples = [
        "x86_64-pc-linux-gnu",
        "x86_64-pc-windows-msvc",
        "x86_64-apple-darwin",
        "aarch64-unknown-linux-gnu",
        "i386-pc-linux-gnu",
        "",
    ];
    // Every kind with every triple, rotating through the image sets (the
    // differential suite in xtask covers the full cross product).
    let sets = inputs_set();
    let mut n = 0;
    for kind in [OffloadKind::OpenMp, OffloadKind::Cuda, OffloadKind::Hip] {
        for triple in triples {
            let mut inputs = sets[n % sets.len()].clone();
            n += 1;
            if kind != OffloadKind::OpenMp {
                inputs.truncate(1);
            }
            let label = format!("{kind:?} {triple:?} {} inputs", inputs.len());
            check_22(&tmp, &label, kind, triple, &inputs);
        }
    }
    // Packaged inputs.
    for img in [&b"DEVICECODE"[..], b"", &[0u8; 9][..]] {
        let p = packaged(img);
        check_22(
            &tmp,
            "packaged",
            OffloadKind::OpenMp,
            "x86_64-pc-linux-gnu",
            &[p.clone(), b"raw".to_vec(), p],
        );
    }
}

/// Runs the reference wrapper `cmd` (which writes `ref.bc`) on `inputs`,
/// and builds our module of the same inputs with `wrap`: the module, its
/// bitcode, and where that bitcode was written.
fn reference_and_ours<'a>(
    tmp: &Tmp,
    label: &str,
    cmd: &mut Command,
    inputs: &'a [Vec<u8>],
    wrap: impl FnOnce(&[&'a [u8]]) -> wrapper::Module<'a>,
) -> (wrapper::Module<'a>, Vec<u8>, PathBuf) {
    for (i, d) in inputs.iter().enumerate() {
        cmd.arg(tmp.write(&format!("in{i}"), d));
    }
    let (rc, _, err) = run(cmd);
    assert_eq!(rc, 0, "{label}: {}", String::from_utf8_lossy(&err));
    let refs: Vec<&[u8]> = inputs.iter().map(|v| v.as_slice()).collect();
    let m = wrap(&refs);
    let ours = m.to_bitcode().unwrap().to_vec();
    let ours_path = tmp.write("ours.bc", &ours);
    (m, ours, ours_path)
}

fn check_14(tmp: &Tmp, label: &str, triple: &str, inputs: &[Vec<u8>]) {
    let tool = llvm(14, "clang-offload-wrapper").unwrap();
    let mut cmd = Command::new(tool);
    cmd.arg(format!("--target={triple}"))
        .arg("-o")
        .arg(tmp.path("ref.bc"));
    let (m, _, ours_path) = reference_and_ours(tmp, label, &mut cmd, inputs, |refs| {
        wrapper::wrap_clang14(triple, refs, &[]).unwrap()
    });
    let want = dis(14, &tmp.path("ref.bc"));
    assert_eq!(dis(14, &ours_path), want, "{label}: llvm-dis-14 differs");
    assert_eq!(
        strip_first_line(&m.to_ll("x")),
        want,
        "{label}: printer differs"
    );
    assert_eq!(
        dis(22, &ours_path),
        dis(22, &tmp.path("ref.bc")),
        "{label}: llvm-dis-22 differs"
    );
    let (rc, _, err) = run(Command::new(llvm(14, "opt").unwrap())
        .args(["-verify", "-disable-output"])
        .arg(&ours_path));
    assert_eq!(rc, 0, "{label}: verify: {}", String::from_utf8_lossy(&err));
}

#[test]
fn clang_offload_wrapper_14_equivalence() {
    if llvm(14, "clang-offload-wrapper").is_none()
        || llvm(14, "llvm-dis").is_none()
        || llvm(22, "llvm-dis").is_none()
    {
        eprintln!("skipped: clang-offload-wrapper-14 / llvm-dis-14 / llvm-dis-22 not installed");
        return;
    }
    let tmp = Tmp::new();
    let triples = [
        "x86_64-pc-linux-gnu",
        "x86_64-apple-macosx",
        "nvptx64-nvidia-cuda",
    ];
    for (n, inputs) in inputs_set().into_iter().enumerate() {
        let triple = triples[n % triples.len()];
        let label = format!("{triple:?} {} inputs", inputs.len());
        check_14(&tmp, &label, triple, &inputs);
    }
}
