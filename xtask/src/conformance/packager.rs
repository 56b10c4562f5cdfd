//! Differential runs of `llvm-offload-binary` / `clang-offload-packager`
//! against LLVM 22: packaging with random image descriptions, option-syntax
//! quirks, extraction from raw binaries, ELF and COFF objects (32/64-bit,
//! both endians), archives and bitcode, `--archive`, and malformed inputs.
//!
//! Inputs that need LLVM to make (objects, archives, bitcode) are built with
//! the installed LLVM 22 tools; raw offload binaries with our writer. Both
//! tools then see byte-identical sandboxes.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use offload_format::offload_binary::read::{parse_binaries, ReadErrorKind};
use offload_format::offload_binary::{ImageEntry, ImageKind, OffloadKind};

use crate::harness::{llvm22, Case, Outcome, Rng, Suite};

/// Names the tool is run under: the deprecation warning depends on the stem
/// of `argv[0]`.
const NAMES: &[&str] = &[
    "llvm-offload-binary",
    "llvm-offload-binary",
    "clang-offload-packager",
    "clang-offload-packager-22",
    "my-clang-offload-packager.exe",
];

const TRIPLES: &[&str] = &[
    "x86_64-pc-linux-gnu",
    "amdgcn-amd-amdhsa",
    "nvptx64-nvidia-cuda",
    "spirv64-unknown-unknown",
    "aarch64-unknown-linux-gnu",
    "",
];
const ARCHS: &[&str] = &["generic", "gfx90a:xnack+", "sm_80", "gfx1030", "znver3", ""];
const KINDS: &[&str] = &[
    "openmp", "cuda", "hip", "sycl", "none", "", "OpenMP", "bogus", "openmp",
];
const KEYS: &[&str] = &[
    "triple",
    "arch",
    "kind",
    "feature",
    "file",
    "",
    "k",
    "a",
    "A",
    "xnack",
    "key with space",
    "ß",
    "producer",
    "triple",
    "arch",
];
const VALUES: &[&str] = &[
    "", "x", "+xnack", "-sramecc", "a=b", "v v", "é", "0", "generic", "openmp",
];
/// File names that probe how the packager takes an image's kind from the
/// file's extension: each kind's extension, its case, names with no
/// extension or with dots in odd places.
pub(crate) const IMAGE_KIND_NAMES: &[&str] = &[
    "a.bc", "k.cubin", "f.fatbin", "p.s", "P.S", "x.ptx", "s.spv", "noext", ".o", "..o", "x.tar.o",
    "trail.", "img.O",
];

/// Image file names: the image-kind probes and a few more.
fn file_names() -> Vec<&'static str> {
    let mut v = vec!["dev.o"];
    v.extend_from_slice(IMAGE_KIND_NAMES);
    v.extend_from_slice(&["sub/in.o", "d.x/noext", "lto.o", "w.txt"]);
    v
}

/// Everything the generators share: LLVM tools, a scratch directory for
/// building inputs, and real clang-made objects.
pub(crate) struct Env {
    dir: tempfile::TempDir,
    mc: PathBuf,
    ar: PathBuf,
    llvm_as: PathBuf,
    /// Real OpenMP host objects (name, bytes), ELF and COFF, several targets.
    pub(crate) real: Vec<(String, Vec<u8>)>,
    /// Real bitcode with embedded offload objects.
    pub(crate) real_bc: Vec<u8>,
    serial: usize,
}

impl Env {
    pub(crate) fn new() -> Result<Env, String> {
        let need = |p: &str| llvm22(p).ok_or_else(|| format!("{p}-22 not found"));
        let clang = need("clang")?;
        let mut env = Env {
            dir: tempfile::tempdir().map_err(|e| e.to_string())?,
            mc: need("llvm-mc")?,
            ar: need("llvm-ar")?,
            llvm_as: need("llvm-as")?,
            real: Vec::new(),
            real_bc: Vec::new(),
            serial: 0,
        };
        let src = env.dir.path().join("omp.c");
        std::fs::write(
            &src,
            "int x = 1;\n#pragma omp declare target\nint dev_value = 0;\n\
             #pragma omp end declare target\nint run(void) {\n\
             #pragma omp target map(tofrom: x)\n  { x = 42; dev_value = 7; }\n  return x;\n}\n",
        )
        .map_err(|e| e.to_string())?;
        let targets: &[(&str, &str)] = &[
            ("x86_64-pc-linux-gnu", "x86_64-pc-linux-gnu"),
            (
                "x86_64-pc-linux-gnu",
                "x86_64-pc-linux-gnu,aarch64-unknown-linux-gnu",
            ),
            ("i686-pc-linux-gnu", "i686-pc-linux-gnu"),
            ("powerpc64-unknown-linux-gnu", "powerpc64-unknown-linux-gnu"),
            ("s390x-ibm-linux", "s390x-ibm-linux"),
            ("x86_64-pc-windows-msvc", "x86_64-pc-windows-msvc"),
        ];
        for (i, (host, devices)) in targets.iter().enumerate() {
            let out = env.dir.path().join(format!("real{i}.o"));
            run(Command::new(&clang)
                .arg(format!("--target={host}"))
                .arg("-fopenmp")
                .arg(format!("-fopenmp-targets={devices}"))
                .arg("-c")
                .arg(&src)
                .arg("-o")
                .arg(&out))?;
            env.real.push((format!("omp{i}-{host}.o"), read(&out)?));
        }
        let bc = env.dir.path().join("real.bc");
        run(Command::new(&clang)
            .args([
                "-fopenmp",
                "-fopenmp-targets=x86_64-pc-linux-gnu",
                "-c",
                "-emit-llvm",
            ])
            .arg(&src)
            .arg("-o")
            .arg(&bc))?;
        env.real_bc = read(&bc)?;
        Ok(env)
    }

    /// Like [`Env::new`], but the real clang objects come from `cache` when
    /// it holds them, and are stored there otherwise. clang names target
    /// regions after the source file's inode, so objects built afresh differ
    /// from run to run; fixtures must not.
    pub(crate) fn with_cache(cache: &Path) -> Result<Env, String> {
        let mut env = Env::new()?;
        let bc = cache.join("real.bc");
        if bc.exists() {
            env.real_bc = read(&bc)?;
            for (name, bytes) in &mut env.real {
                *bytes = read(&cache.join(name.as_str()))?;
            }
        } else {
            std::fs::create_dir_all(cache).map_err(|e| e.to_string())?;
            std::fs::write(&bc, &env.real_bc).map_err(|e| e.to_string())?;
            for (name, bytes) in &env.real {
                std::fs::write(cache.join(name.as_str()), bytes).map_err(|e| e.to_string())?;
            }
        }
        Ok(env)
    }

    fn path(&mut self, ext: &str) -> PathBuf {
        self.serial += 1;
        self.dir.path().join(format!("t{}.{ext}", self.serial))
    }

    /// Assembles `blobs` into sections of an object for `triple` with
    /// llvm-mc: ELF sections of type SHT_LLVM_OFFLOADING (plus decoys), or
    /// COFF sections named `.llvm.offloading*`.
    pub(crate) fn object(
        &mut self,
        rng: &mut Rng,
        triple: &str,
        blobs: &[Vec<u8>],
    ) -> Result<Vec<u8>, String> {
        let coff = triple.contains("windows");
        let mut asm = String::from(".text\nnop\n");
        for (i, blob) in blobs.iter().enumerate() {
            if rng.chance(1, 4) {
                // Shift the next section to an odd file offset.
                asm.push_str(&format!(".section .pad{i},\"a\"\n.byte 1\n"));
            }
            let bin = self.path("bin");
            std::fs::write(&bin, blob).map_err(|e| e.to_string())?;
            if coff {
                let name = if i == 0 {
                    ".llvm.offloading".to_string()
                } else {
                    format!(".llvm.offloading{i}")
                };
                asm.push_str(&format!(".section {name},\"dr\"\n"));
            } else {
                asm.push_str(&format!(
                    ".section .llvm.offloading,\"e\",@llvm_offloading,unique,{i}\n"
                ));
            }
            if rng.chance(3, 4) {
                asm.push_str(".p2align 3\n");
            }
            asm.push_str(&format!(".incbin \"{}\"\n", bin.display()));
        }
        // Decoys: right name, wrong type (ELF) or near-miss name (COFF).
        if rng.chance(1, 2) {
            if coff {
                asm.push_str(".section .llvm.offloadin,\"dr\"\n.byte 1,2,3\n");
            } else {
                asm.push_str(".section .llvm.offloading,\"a\",@progbits,unique,99\n.byte 1,2,3\n");
            }
        }
        let s = self.path("s");
        std::fs::write(&s, asm).map_err(|e| e.to_string())?;
        let o = self.path("o");
        run(Command::new(&self.mc)
            .args(["-filetype=obj", &format!("-triple={triple}")])
            .arg(&s)
            .arg("-o")
            .arg(&o))?;
        read(&o)
    }

    /// An archive of `members` made by llvm-ar (format gnu or bsd, or thin).
    pub(crate) fn archive(
        &mut self,
        members: &[(String, Vec<u8>)],
        format: &str,
        thin: bool,
    ) -> Result<Vec<u8>, String> {
        let d = self.path("d");
        std::fs::create_dir_all(&d).map_err(|e| e.to_string())?;
        let mut names = Vec::new();
        for (n, b) in members {
            std::fs::write(d.join(n), b).map_err(|e| e.to_string())?;
            names.push(n.clone());
        }
        let mut cmd = Command::new(&self.ar);
        cmd.current_dir(&d)
            .arg(if thin { "rcT" } else { "rc" })
            .arg(format!("--format={format}"))
            .arg("out.a")
            .args(&names);
        run(&mut cmd)?;
        read(&d.join("out.a"))
    }

    /// Bitcode with the given blobs as `.llvm.offloading` embedded objects
    /// (and a decoy with another section name).
    pub(crate) fn bitcode(&mut self, rng: &mut Rng, blobs: &[Vec<u8>]) -> Result<Vec<u8>, String> {
        // A fixed source name: llvm-as would record the temporary path.
        let mut ir = String::from(
            "source_filename = \"embedded.ll\"\ntarget triple = \"x86_64-pc-linux-gnu\"\n",
        );
        let mut md = Vec::new();
        let mut used = Vec::new();
        for (i, blob) in blobs.iter().enumerate() {
            let mut c = String::new();
            for b in blob {
                c.push_str(&format!("\\{b:02X}"));
            }
            ir.push_str(&format!(
                "@obj{i} = private constant [{} x i8] c\"{c}\", section \".llvm.offloading\", align 8\n",
                blob.len()
            ));
            used.push(format!("ptr @obj{i}"));
            md.push(format!("!{{ptr @obj{i}, !\".llvm.offloading\"}}"));
        }
        if rng.chance(1, 2) {
            ir.push_str("@other = private constant [4 x i8] c\"abcd\", section \".other\"\n");
            used.push("ptr @other".to_string());
            md.push("!{ptr @other, !\".other\"}".to_string());
        }
        if !used.is_empty() {
            ir.push_str(&format!(
                "@llvm.compiler.used = appending global [{} x ptr] [{}], section \"llvm.metadata\"\n",
                used.len(),
                used.join(", ")
            ));
        }
        let refs: Vec<String> = (0..md.len()).map(|i| format!("!{i}")).collect();
        ir.push_str(&format!(
            "!llvm.embedded.objects = !{{{}}}\n",
            refs.join(", ")
        ));
        for (i, m) in md.iter().enumerate() {
            ir.push_str(&format!("!{i} = {m}\n"));
        }
        let ll = self.path("ll");
        std::fs::write(&ll, ir).map_err(|e| e.to_string())?;
        let bc = self.path("bc");
        run(Command::new(&self.llvm_as).arg(&ll).arg("-o").arg(&bc))?;
        read(&bc)
    }
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

fn read(p: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))
}

/// The one documented difference the suite tolerates: when extraction
/// fails at a later `--image` filter, LLVM 22 has already written the
/// outputs of earlier filters; we write none. Same status and messages.
fn accept(case: &Case, llvm: &Outcome, ours: &Outcome) -> Option<&'static str> {
    let mut initial = case.files.clone();
    initial.sort_by(|a, b| a.0.cmp(&b.0));
    // The listing also names directories (`sub/`); inputs are files only.
    let left: Vec<_> = ours
        .files
        .iter()
        .filter(|(name, _)| !name.ends_with('/'))
        .cloned()
        .collect();
    (llvm.status == 1 && ours.status == 1 && llvm.stderr == ours.stderr && left == initial)
        .then_some("no partial outputs after an error")
}

/// Suite entry point.
pub fn run_suite(s: &mut Suite) {
    let provided = (|| -> Result<bool, String> {
        Ok(s.provide("llvm-offload-binary")?
            && s.provide("clang-offload-packager")?
            && s.provide_as("llvm-offload-binary", "clang-offload-packager-22")?
            && s.provide_as("llvm-offload-binary", "my-clang-offload-packager.exe")?)
    })();
    match provided {
        Ok(true) => {}
        Ok(false) => return,
        Err(e) => {
            eprintln!("conformance packager: {e}");
            s.failed += 1;
            return;
        }
    }
    s.accept = Some(accept);
    let mut env = match Env::new() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("conformance packager: cannot build inputs: {e}");
            s.failed += 1;
            return;
        }
    };
    let n = s.count(600);
    for i in 0..n {
        let mut rng = s.rng.clone();
        let case = generate(i, &mut rng, &mut env);
        s.rng = rng;
        match case {
            Ok(case) => {
                s.check(&case);
            }
            Err(e) => {
                eprintln!("conformance packager: case generation failed: {e}");
                s.failed += 1;
            }
        }
    }
}

/// The `i`-th case of a run: the kinds of case rotate so every run of 20
/// covers all of them.
pub(crate) fn generate(i: usize, rng: &mut Rng, env: &mut Env) -> Result<Case, String> {
    match i % 20 {
        0..=5 => Ok(pack_case(rng)),
        6 | 7 => Ok(syntax_case(rng)),
        8..=10 => extract_raw_case(rng),
        11 | 12 => extract_object_case(rng, env),
        13 => extract_archive_case(rng, env),
        14 => extract_bitcode_case(rng, env),
        15 | 16 => archive_output_case(rng, env),
        17 => bad_raw_case(rng),
        18 => bad_object_case(rng, env),
        _ => bad_misc_case(rng, env),
    }
}

fn tool(rng: &mut Rng) -> Case {
    let name: &&str = rng.pick(NAMES);
    Case::new(name)
}

fn os(bytes: &[u8]) -> OsString {
    OsString::from_vec(bytes.to_vec())
}

/// Random image contents, sometimes bitcode by magic.
fn image_bytes(rng: &mut Rng) -> Vec<u8> {
    let n = match rng.below(10) {
        0 => 0,
        1 => rng.range(4000, 9000),
        _ => rng.range(1, 300),
    };
    let mut v = rng.bytes(n);
    match rng.below(8) {
        0 => {
            v.splice(0..0, *b"BC\xC0\xDE").for_each(drop);
            // Junk after the magic: keep the length off a multiple of 4 so
            // readers stop at the signature check. Deeper in a junk stream
            // our bitcode reader's wording differs from LLVM's (a documented
            // difference of the archive writer's symbol warnings).
            if v.len() % 4 == 0 {
                v.push(0);
            }
        }
        1 => v.splice(0..0, *b"\xDE\xC0\x17\x0B").for_each(drop),
        2 => v = b"BC\xC0".to_vec(),
        _ => {}
    }
    v
}

fn random_token(rng: &mut Rng, pool: &[&str]) -> Vec<u8> {
    match rng.below(10) {
        0 => {
            // Arbitrary bytes, never a comma or NUL (not expressible).
            let n = rng.range(1, 8);
            rng.bytes(n)
                .into_iter()
                .map(|b| if b == b',' || b == 0 { b'_' } else { b })
                .collect()
        }
        1 => format!("k{}", rng.below(1000)).into_bytes(),
        _ => rng.pick(pool).as_bytes().to_vec(),
    }
}

/// A `key=value` piece (or a bare key, or an empty piece).
fn piece(rng: &mut Rng) -> Vec<u8> {
    let key = random_token(rng, KEYS);
    let key = if key == b"file" { b"k".to_vec() } else { key };
    let value = match key.as_slice() {
        b"triple" => rng.pick(TRIPLES).as_bytes().to_vec(),
        b"arch" => rng.pick(ARCHS).as_bytes().to_vec(),
        b"kind" => rng.pick(KINDS).as_bytes().to_vec(),
        _ => random_token(rng, VALUES),
    };
    match rng.below(12) {
        0 => key,
        1 => Vec::new(),
        _ => [key, b"=".to_vec(), value].concat(),
    }
}

/// Adds the option `name` with `value` in one of LLVM's spellings.
fn option(rng: &mut Rng, mut case: Case, name: &str, value: OsString) -> Case {
    let dashes = if rng.chance(1, 2) { "-" } else { "--" };
    if rng.chance(1, 2) {
        let mut a = OsString::from(format!("{dashes}{name}="));
        a.push(value);
        case = case.arg(a);
    } else {
        case = case.arg(format!("{dashes}{name}")).arg(value);
    }
    case
}

/// Moves some arguments into a response file (GNU quoting).
fn maybe_response_file(rng: &mut Rng, mut case: Case) -> Case {
    if case.args.is_empty() || !rng.chance(1, 8) {
        return case;
    }
    let start = rng.below(case.args.len());
    let moved: Vec<OsString> = case.args.drain(start..).collect();
    let mut text = Vec::new();
    for a in &moved {
        text.push(b'\'');
        for &b in a.as_encoded_bytes() {
            if b == b'\'' || b == b'\\' {
                text.push(b'\\');
            }
            text.push(b);
        }
        text.extend_from_slice(b"' ");
    }
    case = case.file("args.rsp", text);
    case.arg("@args.rsp")
}

fn pack_case(rng: &mut Rng) -> Case {
    let mut case = tool(rng);
    case.label = "package".into();
    let mut files: Vec<String> = Vec::new();
    let names = file_names();
    for _ in 0..rng.range(1, 4) {
        let name = rng.pick(&names).to_string();
        if !files.contains(&name) {
            case = case.file(&name, image_bytes(rng));
            files.push(name);
        }
    }
    let many = rng.chance(1, 12);
    let mut images = Vec::new();
    for _ in 0..rng.range(0, 3) {
        let mut pieces: Vec<Vec<u8>> = Vec::new();
        let nkeys = if many {
            rng.range(40, 400)
        } else {
            rng.range(0, 7)
        };
        for _ in 0..nkeys {
            pieces.push(piece(rng));
        }
        // file= pieces: usually one, sometimes several or none.
        let nfiles = match rng.below(12) {
            0 => 0,
            1 => 2,
            _ => 1,
        };
        for _ in 0..nfiles {
            let f = match rng.below(30) {
                0 => "missing.o".to_string(),
                1 => String::new(),
                2 => "sub".to_string(),
                3 => "-".to_string(),
                _ => rng.pick(&files).clone(),
            };
            pieces.push(format!("file={f}").into_bytes());
        }
        rng.shuffle(&mut pieces);
        images.push(pieces.join(&b","[..]));
    }
    if images.iter().any(|i| i.windows(6).any(|w| w == b"file=-")) {
        case.stdin = Some(image_bytes(rng));
    }
    let out = match rng.below(12) {
        0 => "-",
        1 => "nodir/out.bin",
        2 => "dev.o",
        3 => "sub",
        _ => "out.bin",
    };
    if out == "dev.o" && !files.iter().any(|f| f == "dev.o") {
        case = case.file("dev.o", b"old contents".to_vec());
    }
    let mut opts: Vec<(String, OsString)> = images
        .into_iter()
        .map(|i| ("image".to_string(), os(&i)))
        .collect();
    let at = rng.below(opts.len() + 1);
    opts.insert(at, ("o".to_string(), OsString::from(out)));
    if rng.chance(1, 10) {
        opts.push(("o".to_string(), OsString::from("second.bin")));
    }
    for (name, value) in opts {
        case = option(rng, case, &name, value);
    }
    maybe_response_file(rng, case)
}

fn syntax_case(rng: &mut Rng) -> Case {
    let mut case = tool(rng).file("dev.o", b"ABC".to_vec());
    case.label = "option syntax".into();
    let fixed: &[&[&str]] = &[
        &[],
        &["--help"],
        &["-help"],
        &["--help-hidden"],
        &["--help-list"],
        &["--help-list-hidden"],
        &["--version"],
        &["-h"],
        &["-h", "-o", "x", "--image=file=dev.o"],
        &["--help", "--foo"],
        &["--foo", "--help"],
        &["a", "b", "--version"],
        &["a", "b"],
        &["--help=0"],
        &["--version=1"],
        &["--print-options", "-o", "x", "--image=file=dev.o"],
        &["--print-all-options=true"],
        &["-o"],
        &["--image"],
        &["-o="],
        &["-o", ""],
        &[""],
        &["-ofoo"],
        &["--imag=x"],
        &["--arch"],
        &["--archive=maybe"],
        &["--archive=0", "x.bin"],
        &["--archive=TRUE", "x.bin"],
        &["--foo"],
        &["-x"],
        &["--o=out", "-o", "out2", "--image=file=dev.o"],
        &["-o", "out", "in.bin"],
        &["-o", "out", "--image="],
        &["-o", "out", "--image=triple=x"],
        &["-o", "out"],
        &["--", "-o"],
        &["-", "--image=arch=x"],
        &["-o", "out", "--image=file=dev.o", "--", "-o"],
        &["-image=file=dev.o", "-o=out"],
        &["--image", "file=dev.o", "--o", "out"],
        &["@missing.rsp"],
        &["-o", "out", "--image=file=dev.o,file=dev.o"],
        &["-o", "out", "--image=file=-,file=-"],
        &["--help-list=x"],
        &["-V"],
        &["--versio"],
        &["--hel"],
        &["--print-option"],
        &["--imagex=1"],
        &["-ar"],
        &["-ha"],
        &["-h", "--foo"],
        &["-h", "in.bin"],
        &["--version", "--foo"],
        &["-o", "--image=file=dev.o"],
        &["--image", "-o", "-o", "out"],
        &["-o", "out", "--image=file=dev.o", "-h"],
        &["-o", "out", "--", "--image=file=dev.o"],
        &["--archive", "-o", "out", "--image=file=dev.o"],
        &["-", "-"],
        &["-o", "-", "--image=file=dev.o,file=dev.o"],
    ];
    let args = rng.pick(fixed);
    for a in args.iter() {
        case = case.arg(*a);
    }
    if args.contains(&"file=-,file=-") || args.contains(&"-") {
        case.stdin = Some(b"stdin bytes".to_vec());
    }
    if rng.chance(1, 4) {
        // Unknown options before and after.
        let junk = ["--zzz", "-q", "--image-list", "--out"];
        case.args.insert(0, rng.pick(&junk).into());
    }
    maybe_response_file(rng, case)
}

/// An archive member: name and bytes.
type Member = (String, Vec<u8>);

/// The key/value strings of one image.
type Strings = Vec<(Vec<u8>, Vec<u8>)>;

/// A random entry for raw inputs: strings from the pools, any kinds.
fn random_entry(rng: &mut Rng) -> (Strings, ImageKind, OffloadKind, u32, Vec<u8>) {
    let mut strings = Vec::new();
    if rng.chance(5, 6) {
        strings.push((b"triple".to_vec(), rng.pick(TRIPLES).as_bytes().to_vec()));
    }
    if rng.chance(5, 6) {
        strings.push((b"arch".to_vec(), rng.pick(ARCHS).as_bytes().to_vec()));
    }
    for _ in 0..rng.range(0, 3) {
        let k = random_token(rng, KEYS);
        let v = random_token(rng, VALUES);
        let strip = |s: Vec<u8>| s.into_iter().filter(|&b| b != 0).collect::<Vec<u8>>();
        strings.push((strip(k), strip(v)));
    }
    rng.shuffle(&mut strings);
    let ik = match rng.below(10) {
        0 => ImageKind(rng.below(65536) as u16),
        1 => ImageKind(6),
        _ => ImageKind(rng.range(0, 5) as u16),
    };
    let ok = match rng.below(10) {
        0 => OffloadKind(rng.below(65536) as u16),
        _ => OffloadKind(*rng.pick(&[0u16, 1, 2, 4, 8, 1, 1, 4])),
    };
    let flags = if rng.chance(1, 6) {
        rng.next_u64() as u32
    } else {
        0
    };
    (strings, ik, ok, flags, image_bytes(rng))
}

/// The version-1 offload binary of one entry.
fn entry_v1(
    strings: &Strings,
    ik: ImageKind,
    ok: OffloadKind,
    flags: u32,
    image: &[u8],
) -> Vec<u8> {
    ImageEntry {
        image_kind: ik,
        offload_kind: ok,
        flags,
        strings: strings
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_slice()))
            .collect(),
        image,
    }
    .to_v1()
}

fn raw_blob(rng: &mut Rng, count: usize) -> (Vec<u8>, Vec<Strings>) {
    let mut blob = Vec::new();
    let mut all = Vec::new();
    for _ in 0..count {
        let (strings, ik, ok, flags, image) = random_entry(rng);
        blob.extend(entry_v1(&strings, ik, ok, flags, &image));
        all.push(strings);
    }
    (blob, all)
}

/// Filters that select some of the entries (or none, or all).
fn filters(rng: &mut Rng, entries: &[Vec<(Vec<u8>, Vec<u8>)>], archive: bool) -> Vec<OsString> {
    let mut out = Vec::new();
    let n = if archive {
        rng.range(1, 3)
    } else {
        rng.range(0, 3)
    };
    for _ in 0..n {
        let mut pieces: Vec<Vec<u8>> = Vec::new();
        match rng.below(6) {
            0 => {}
            1 => pieces.push(piece(rng)),
            _ => {
                if let Some(e) = entries.get(rng.below(entries.len().max(1))) {
                    for (k, v) in e {
                        if rng.chance(1, 2) && !k.contains(&b',') && !v.contains(&b',') {
                            pieces.push([k.as_slice(), b"=", v.as_slice()].concat());
                        }
                    }
                }
                if rng.chance(1, 3) {
                    let kind = rng.pick(KINDS).as_bytes().to_vec();
                    pieces.push([b"kind=".to_vec(), kind].concat());
                }
            }
        }
        let want_file = if archive {
            rng.chance(9, 10)
        } else {
            rng.chance(1, 2)
        };
        if want_file {
            let f: &str = match rng.below(10) {
                0 if !archive => "-",
                1 => "nodir/x",
                2 => "a,file=b",
                3 => "",
                _ => "out.img",
            };
            pieces.push(format!("file={f}").into_bytes());
        }
        rng.shuffle(&mut pieces);
        let v = pieces.join(&b","[..]);
        out.push(if v.is_empty() && rng.chance(1, 2) {
            OsString::from("")
        } else {
            os(&v)
        });
    }
    out
}

const INPUT_NAMES: &[&str] = &[
    "in.bin",
    ".hidden",
    "my.tar.gz",
    "noext",
    "sub/x.o",
    "-",
    "in.o",
    "trail.",
];

fn extraction(
    rng: &mut Rng,
    input: Vec<u8>,
    entries: &[Vec<(Vec<u8>, Vec<u8>)>],
    label: &str,
) -> Case {
    let mut case = tool(rng);
    case.label = label.into();
    let name = *rng.pick(INPUT_NAMES);
    if name == "-" {
        case.stdin = Some(input);
    } else {
        case = case.file(name, input);
    }
    let archive = rng.chance(1, 8);
    let fs = filters(rng, entries, archive);
    let mut opts: Vec<(&str, OsString)> = fs.into_iter().map(|f| ("image", f)).collect();
    if archive {
        opts.push(("archive", OsString::new()));
    }
    rng.shuffle(&mut opts);
    let mut positional_at = rng.below(opts.len() + 1);
    for (i, (k, v)) in opts.into_iter().enumerate() {
        if i == positional_at {
            case = case.arg(name);
            positional_at = usize::MAX;
        }
        if k == "archive" {
            case = case.arg(if rng.chance(1, 2) {
                "--archive"
            } else {
                "-archive=1"
            });
        } else {
            case = option(rng, case, k, v);
        }
    }
    if positional_at != usize::MAX {
        case = case.arg(name);
    }
    maybe_response_file(rng, case)
}

fn extract_raw_case(rng: &mut Rng) -> Result<Case, String> {
    let n = rng.range(1, 5);
    let (blob, entries) = raw_blob(rng, n);
    Ok(extraction(rng, blob, &entries, "extract raw"))
}

const ELF_TRIPLES: &[&str] = &[
    "x86_64-pc-linux-gnu",
    "i686-pc-linux-gnu",
    "aarch64-unknown-linux-gnu",
    "aarch64_be-unknown-linux-gnu",
    "powerpc64-unknown-linux-gnu",
    "powerpc-unknown-linux-gnu",
    "mips-unknown-linux-gnu",
    "s390x-ibm-linux",
    "x86_64-pc-windows-msvc",
    "i686-pc-windows-msvc",
    "aarch64-pc-windows-msvc",
];

fn extract_object_case(rng: &mut Rng, env: &mut Env) -> Result<Case, String> {
    if rng.chance(1, 3) {
        let (name, bytes) = env.real[rng.below(env.real.len())].clone();
        let entries = parse_binaries_of(&bytes);
        let mut case = extraction(rng, bytes, &entries, "extract real object");
        case.label = format!("extract real object {name}");
        return Ok(case);
    }
    let mut blobs = Vec::new();
    let mut entries = Vec::new();
    for _ in 0..rng.range(1, 3) {
        let n = rng.range(1, 3);
        let (b, e) = raw_blob(rng, n);
        blobs.push(b);
        entries.extend(e);
    }
    let triple = *rng.pick(ELF_TRIPLES);
    let obj = env.object(rng, triple, &blobs)?;
    let mut case = extraction(rng, obj, &entries, "extract object");
    case.label = format!("extract object {triple}");
    Ok(case)
}

/// The strings of every image in an input our reader understands (to build
/// matching filters for real objects).
fn parse_binaries_of(data: &[u8]) -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
    use offload_format::offload_binary::extract::extract;
    extract(data, b"x")
        .map(|found| {
            found
                .into_iter()
                .map(|f| {
                    f.binary
                        .strings
                        .iter()
                        .map(|(k, v)| (k.to_vec(), v.to_vec()))
                        .collect()
                })
                .collect()
        })
        .unwrap_or_default()
}

fn archive_members(rng: &mut Rng, env: &mut Env) -> Result<(Vec<Member>, Vec<Strings>), String> {
    let mut members = Vec::new();
    let mut entries = Vec::new();
    for i in 0..rng.range(1, 4) {
        let long = if rng.chance(1, 3) {
            "_with_a_long_name"
        } else {
            ""
        };
        match rng.below(5) {
            0 => {
                let (name, bytes) = env.real[rng.below(env.real.len())].clone();
                entries.extend(parse_binaries_of(&bytes));
                members.push((format!("m{i}{long}-{name}"), bytes));
            }
            1 => {
                let n = rng.range(1, 2);
                let (b, e) = raw_blob(rng, n);
                let triple = *rng.pick(&ELF_TRIPLES[..8]);
                let obj = env.object(rng, triple, &[b])?;
                entries.extend(e);
                members.push((format!("m{i}{long}.o"), obj));
            }
            2 => {
                members.push((format!("m{i}{long}.txt"), b"just text\n".to_vec()));
            }
            _ => {
                let n = rng.range(1, 3);
                let (b, e) = raw_blob(rng, n);
                entries.extend(e);
                members.push((format!("m{i}{long}.bin"), b));
            }
        }
    }
    Ok((members, entries))
}

fn extract_archive_case(rng: &mut Rng, env: &mut Env) -> Result<Case, String> {
    let (members, entries) = archive_members(rng, env)?;
    let format = if rng.chance(1, 3) { "bsd" } else { "gnu" };
    let thin = format == "gnu" && rng.chance(1, 4);
    let ar = env.archive(&members, format, thin)?;
    let mut case = extraction(rng, ar, &entries, "extract archive");
    case.label = format!(
        "extract archive {format}{}",
        if thin { " thin" } else { "" }
    );
    if thin {
        // Thin members live beside the archive.
        let dir = case
            .files
            .first()
            .map(|(n, _)| {
                Path::new(n)
                    .parent()
                    .map(|p| p.to_path_buf())
                    .unwrap_or_default()
            })
            .unwrap_or_default();
        // Sometimes a member file is missing (an error naming it).
        let missing = if rng.chance(1, 5) {
            Some(rng.below(members.len()))
        } else {
            None
        };
        for (i, (n, b)) in members.iter().enumerate() {
            if Some(i) != missing {
                let p = dir.join(n);
                case = case.file(&p.to_string_lossy(), b.clone());
            }
        }
    }
    Ok(case)
}

fn extract_bitcode_case(rng: &mut Rng, env: &mut Env) -> Result<Case, String> {
    if rng.chance(1, 3) {
        let bytes = env.real_bc.clone();
        let entries = vec![vec![
            (b"triple".to_vec(), b"x86_64-pc-linux-gnu".to_vec()),
            (b"arch".to_vec(), b"generic".to_vec()),
        ]];
        return Ok(extraction(rng, bytes, &entries, "extract real bitcode"));
    }
    let mut blobs = Vec::new();
    let mut entries = Vec::new();
    for _ in 0..rng.range(0, 3) {
        let n = rng.range(1, 2);
        let (b, e) = raw_blob(rng, n);
        blobs.push(b);
        entries.extend(e);
    }
    let bc = env.bitcode(rng, &blobs)?;
    Ok(extraction(rng, bc, &entries, "extract bitcode"))
}

fn archive_output_case(rng: &mut Rng, env: &mut Env) -> Result<Case, String> {
    // Inputs whose images are ELF objects, bitcode or junk, so the symbol
    // table of the written archive varies.
    let mut images: Vec<Vec<u8>> = Vec::new();
    for _ in 0..rng.range(1, 4) {
        images.push(match rng.below(4) {
            0 => env.real[rng.below(env.real.len())].1.clone(),
            1 => env.real_bc.clone(),
            _ => image_bytes(rng),
        });
    }
    let mut blob = Vec::new();
    let mut entries = Vec::new();
    for img in &images {
        let (strings, ik, ok, flags, _) = random_entry(rng);
        blob.extend(entry_v1(&strings, ik, ok, flags, img));
        entries.push(strings);
    }
    let input = if rng.chance(1, 3) {
        let triple = *rng.pick(&ELF_TRIPLES[..8]);
        env.object(rng, triple, &[blob])?
    } else {
        blob
    };
    let mut case = tool(rng);
    case.label = "--archive output".into();
    let name = *rng.pick(&["in.bin", "a_very_long_input_file_name.bin", "-", "sub/in.o"]);
    if name == "-" {
        case.stdin = Some(input);
    } else {
        case = case.file(name, input);
    }
    case = case.arg(name).arg("--archive");
    for f in filters(rng, &entries, true) {
        case = option(rng, case, "image", f);
    }
    Ok(case)
}

fn put(b: &mut [u8], at: usize, v: u64) {
    if at + 8 <= b.len() {
        b[at..at + 8].copy_from_slice(&v.to_le_bytes());
    }
}

fn bad_raw_case(rng: &mut Rng) -> Result<Case, String> {
    // Mutate until the result is something LLVM 22 handles deterministically:
    // valid, or rejected with one of its own errors (not an out-of-bounds read).
    for _ in 0..200 {
        let n = rng.range(1, 3);
        let (mut blob, entries) = raw_blob(rng, n);
        let first_size = u64::from_le_bytes(blob[8..16].try_into().unwrap_or([0; 8])) as usize;
        let base = if rng.chance(1, 2) {
            0
        } else {
            first_size.min(blob.len())
        };
        match rng.below(6) {
            0 => {
                let cut = rng.below(blob.len() + 1);
                blob.truncate(cut);
            }
            1 => {
                let extra = match rng.below(3) {
                    0 => vec![0; rng.range(1, 16)],
                    1 => {
                        let n = rng.range(1, 100);
                        rng.bytes(n)
                    }
                    _ => blob[..rng.below(blob.len())].to_vec(),
                };
                blob.extend(extra);
            }
            2 => {
                if base + 8 <= blob.len() {
                    blob[base + rng.below(8)] ^= 1 << rng.below(8);
                }
            }
            _ => {
                let field = *rng.pick(&[8usize, 16, 24, 40, 48, 56, 64, 72, 80]);
                let size = u64::from_le_bytes(
                    blob.get(base + 8..base + 16)
                        .and_then(|s| s.try_into().ok())
                        .unwrap_or([0; 8]),
                );
                let v = match rng.below(6) {
                    0 => 0,
                    1 => rng.below(200) as u64,
                    2 => size.wrapping_add(rng.range(0, 16) as u64).wrapping_sub(8),
                    3 => u64::MAX - rng.below(100) as u64,
                    4 => 1 << rng.below(64),
                    _ => size,
                };
                put(&mut blob, base + field, v);
            }
        }
        // Versions 2 and 3 are read by us and rejected by 22 (a documented
        // difference), so inputs that reach them are not comparable either.
        let newer = |at: u64| {
            blob.get(at as usize + 4..at as usize + 8)
                .is_some_and(|v| v == [2, 0, 0, 0] || v == [3, 0, 0, 0])
        };
        let deterministic = match parse_binaries(&blob) {
            Ok(bins) => bins.iter().all(|b| b.version == 1),
            Err(e) => {
                !newer(e.offset)
                    && !matches!(
                        e.kind,
                        ReadErrorKind::StringEntriesPastEnd { .. }
                            | ReadErrorKind::StringPastEnd { .. }
                            | ReadErrorKind::ImagePastEnd { .. }
                            | ReadErrorKind::Decompress(_)
                    )
            }
        };
        if deterministic {
            let mut case = extraction(rng, blob, &entries, "malformed raw input");
            if case.args.len() < 2 {
                case = case.arg("--image=");
            }
            return Ok(case);
        }
    }
    Err("no deterministic malformed input found".into())
}

fn bad_object_case(rng: &mut Rng, env: &mut Env) -> Result<Case, String> {
    let n = rng.range(1, 2);
    let (blob, entries) = raw_blob(rng, n);
    let triple = *rng.pick(ELF_TRIPLES);
    let mut obj = env.object(rng, triple, &[blob])?;
    let coff = triple.contains("windows");
    let elf64 = obj.get(4) == Some(&2);
    let be = obj.get(5) == Some(&2);
    let word = |v: u64, size: usize| -> Vec<u8> {
        let b = if be { v.to_be_bytes() } else { v.to_le_bytes() };
        if be {
            b[8 - size..].to_vec()
        } else {
            b[..size].to_vec()
        }
    };
    match rng.below(4) {
        0 => {
            let cut = rng.below(obj.len() + 1);
            obj.truncate(cut);
        }
        _ if coff => {
            // Header fields: section count, symbol table pointer/count,
            // optional header size; or a section's data pointer/size.
            let (at, size) = *rng.pick(&[
                (2usize, 2usize),
                (8, 4),
                (12, 4),
                (16, 2),
                (20 + 16, 4),
                (20 + 20, 4),
                (60 + 16, 4),
                (60 + 20, 4),
            ]);
            let v = match rng.below(4) {
                0 => 0,
                1 => rng.below(0x300) as u64,
                2 => 0xffff,
                _ => rng.next_u64(),
            };
            if at + size <= obj.len() {
                obj[at..at + size].copy_from_slice(&v.to_le_bytes()[..size]);
            }
        }
        _ => {
            // e_shoff, e_shentsize, e_shnum, or the fields of a section header.
            let (shoff_at, shoff_size, ent_at, num_at) = if elf64 {
                (0x28, 8, 0x3a, 0x3c)
            } else {
                (0x20, 4, 0x2e, 0x30)
            };
            let choice = rng.below(4);
            let (at, size) = match choice {
                0 => (shoff_at, shoff_size),
                1 => (ent_at, 2),
                2 => (num_at, 2),
                _ => {
                    // A section header's offset or size field.
                    let shoff = if elf64 {
                        read_word(&obj, shoff_at, 8, be)
                    } else {
                        read_word(&obj, shoff_at, 4, be)
                    } as usize;
                    let shsize = if elf64 { 64 } else { 40 };
                    let idx = rng.range(1, 6);
                    let field = if elf64 {
                        *rng.pick(&[(24usize, 8usize), (32, 8), (4, 4)])
                    } else {
                        *rng.pick(&[(16usize, 4usize), (20, 4), (4, 4)])
                    };
                    (shoff + idx * shsize + field.0, field.1)
                }
            };
            let v = match rng.below(5) {
                0 => 0,
                1 => rng.below(0x400) as u64,
                2 => obj.len() as u64 + rng.below(64) as u64,
                3 => 0x6fff_4c0b,
                _ => rng.next_u64(),
            };
            if at + size <= obj.len() {
                let w = word(v, size);
                obj[at..at + size].copy_from_slice(&w);
            }
        }
    }
    let mut case = extraction(rng, obj, &entries, "malformed object");
    case.label = format!("malformed object {triple}");
    if !case
        .args
        .iter()
        .any(|a| a.as_encoded_bytes().starts_with(b"-"))
    {
        case = case.arg("--image=");
    }
    Ok(case)
}

fn read_word(b: &[u8], at: usize, size: usize, be: bool) -> u64 {
    let Some(s) = b.get(at..at + size) else {
        return 0;
    };
    let mut v = 0u64;
    for i in 0..size {
        let byte = if be { s[i] } else { s[size - 1 - i] };
        v = (v << 8) | u64::from(byte);
    }
    v
}

fn bad_misc_case(rng: &mut Rng, env: &mut Env) -> Result<Case, String> {
    let mut case = tool(rng);
    case.label = "unusual input".into();
    let (name, bytes): (&str, Vec<u8>) = match rng.below(12) {
        0 => ("empty.bin", Vec::new()),
        1 => ("text.txt", b"hello world, not an object\n".to_vec()),
        2 => ("zeros", vec![0; rng.range(4, 100)]),
        3 => ("short", b"\x10\xff\x10".to_vec()),
        4 => ("bc", b"BC\xC0\xDE".to_vec()),
        5 => ("arch.a", b"!<arch>\n".to_vec()),
        6 => ("arch2.a", b"!<arch>\nxx".to_vec()),
        7 => (
            "elf18",
            b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x01\0".to_vec(),
        ),
        8 => ("coff4", b"\x64\x86\0\0".to_vec()),
        9 => (
            "macho",
            b"\xcf\xfa\xed\xfe\x07\0\0\x01\x03\0\0\0\x01\0\0\0".to_vec(),
        ),
        10 => {
            let mut v = env.real_bc.clone();
            let cut = rng.range(4, v.len());
            v.truncate(cut);
            ("trunc.bc", v)
        }
        _ => ("missing.bin", Vec::new()),
    };
    if name != "missing.bin" {
        case = case.file(name, bytes);
    }
    if rng.chance(1, 6) {
        case = case.file("adir/keep", Vec::new());
        return Ok(case.arg("adir").arg("--image="));
    }
    Ok(case.arg(name).arg("--image="))
}
