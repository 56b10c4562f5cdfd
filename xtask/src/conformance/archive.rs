//! Differential runs of `clang-offload-bundler -unbundle -type=a`
//! (heterogeneous device archives) against LLVM 22's.
//!
//! Inputs are real: the fixture pool (`pool::build_pool`: HIP
//! `-fgpu-rdc` objects from clang-22, bundles and compressed bundles from
//! clang-offload-bundler-22), plus per-case bundles made by
//! clang-offload-bundler-22 (`-type=bc`, `-type=o`, with and without
//! `-compress`) and hand-made bundles with arbitrary IDs, put together by
//! llvm-ar-22 in GNU, BSD and thin archives under varied member names.
//! Targets, flags and output names are random.
//!
//! Deliberate differences (docs/compat.md#heterogeneous-device-archives-clang-offload-bundler--unbundle--typea) are recognised and
//! counted separately: no partial outputs after an error, damaged archives
//! reported instead of half-read, a clean error where 22 crashes.

use std::collections::BTreeMap;
use std::fs;
use std::process::Command;

use crate::harness::{llvm22, reference_tool, Case, Outcome, Rng, Suite};
use crate::pool::build_pool;

const TOOL: &str = "clang-offload-bundler";

/// Pool files that can be archive members as they are.
const POOL_MEMBERS: &[&str] = &[
    "a.o",
    "b.o",
    "c.o",
    "bin.bundle",
    "omp.bundle",
    "fat.hipfb",
    "z3.bundle",
    "z2.bundle",
    "zo.ccob",
    "plain.o",
    "notes.txt",
    "ll.bundle",
    "dev908.bc",
    "conf.o",
    "asm.bundle",
    "badbc.bundle",
];

/// Device payloads for made bundles.
const PAYLOADS: &[&str] = &[
    "dev908.bc",
    "dev90a.bc",
    "omp906.bc",
    "sm70.bc",
    "notes.txt",
];

/// Member names, exercising LLVM's stem/extension rules and the archive
/// name table.
const NAMES: &[&str] = &[
    "k.o",
    "kernel_gfx906.o",
    "a.b.o",
    "noext",
    ".hidden",
    "x:y.o",
    "a_library_member_with_a_long_name.o",
    "dup.o",
    "m-1.o",
    "UPPER.O",
    "sp ace.o",
    "exactly16chars.o",
    "fifteen_chars.o",
];

/// `-targets` values (several spellings of some).
const TARGETS: &[&str] = &[
    "hip-amdgcn-amd-amdhsa--gfx906",
    "hip-amdgcn-amd-amdhsa-unknown-gfx906",
    "hip-amdgcn-amd-amdhsa--gfx906:xnack+",
    "hip-amdgcn-amd-amdhsa--gfx906:xnack-",
    "hip-amdgcn-amd-amdhsa--gfx906:sramecc+:xnack-",
    "hip-amdgcn-amd-amdhsa--gfx906:xnack-:sramecc+",
    "hip-amdgcn-amd-amdhsa--gfx90a",
    "hip-amdgcn-amd-amdhsa-unknown-gfx90a:xnack+",
    "hip-amdgcn-amd-amdhsa--gfx90a:xnack-",
    "hip-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-",
    "hip-amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack+",
    "hip-amdgcn-amd-amdhsa--gfx908",
    "hip-amdgcn-amd-amdhsa--gfx908:sramecc+:xnack-",
    "hip-amdgcn-amd-amdhsa--gfx1030",
    "hip-amdgcn-amd-amdhsa--gfx1100",
    "hip-amdgcn-amd-amdhsa--gfx9-generic",
    "hipv4-amdgcn-amd-amdhsa--gfx906",
    "hipv4-amdgcn-amd-amdhsa--gfx90a",
    "openmp-amdgcn-amd-amdhsa--gfx906",
    "openmp-amdgcn-amd-amdhsa--gfx90a:xnack+",
    "openmp-nvptx64-nvidia-cuda-unknown-sm_70",
    "openmp-nvptx64-nvidia-cuda--sm_80",
    "host-x86_64-pc-linux-gnu",
    "host-x86_64-unknown-linux-gnu",
];

/// Entry IDs for hand-made bundles (as stored in files; some are not
/// standard, some conflict, some are not valid IDs at all).
const FILE_IDS: &[&str] = &[
    "hip-amdgcn-amd-amdhsa--gfx906",
    "hip-amdgcn-amd-amdhsa--gfx906:xnack+",
    "hip-amdgcn-amd-amdhsa--gfx906:xnack-",
    "hip-amdgcn-amd-amdhsa--gfx906:sramecc+:xnack+",
    "hip-amdgcn-amd-amdhsa--gfx906:xnack+:sramecc+",
    "hip-amdgcn-amd-amdhsa--gfx90a",
    "hip-amdgcn-amd-amdhsa--gfx90a:xnack+",
    "hip-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack+",
    "hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack+",
    "hip-amdgcn-amd-amdhsa-unknown-gfx908",
    "hip-amdgcn-amd-amdhsa-gnu-gfx906",
    "hip-amdgcn-amd-amdhsa-gfx906",
    "hip-amdgcn-amd-amdhsa--gfx1030",
    "hip-amdgcn-amd-amdhsa--gfx9-generic:xnack+",
    "hip-amdgcn-amd-amdhsa--fiji",
    "hip-amdgcn-amd-amdhsa--gfx906:foo+",
    "HIP-amdgcn-amd-amdhsa--gfx906",
    "hipfoo-amdgcn-amd-amdhsa--gfx906",
    "openmp-amdgcn-amd-amdhsa--gfx906",
    "openmp-nvptx64-nvidia-cuda--sm_70",
    "openmp-nvptx64-nvidia-cuda-unknown-sm_80",
    "host-x86_64-pc-linux-gnu-",
    "host-x86_64-unknown-linux-gnu-",
    "hip-spirv64-amd-amdhsa--amdgcnspirv",
];

/// Entry ID pairs for `-check-input-archive`: conflicting under LLVM 22's
/// asymmetric rule or not.
const CONFLICTS: &[&[&str]] = &[
    &[
        "hip-amdgcn-amd-amdhsa--gfx906",
        "hip-amdgcn-amd-amdhsa--gfx906:xnack+",
    ],
    &[
        "hip-amdgcn-amd-amdhsa--gfx90a:xnack+",
        "hip-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack+",
    ],
    &[
        "hip-amdgcn-amd-amdhsa--gfx90a:xnack+",
        "hip-amdgcn-amd-amdhsa--gfx90a:xnack+:sramecc+",
    ],
    &[
        "hip-amdgcn-amd-amdhsa--gfx906:xnack-",
        "hip-amdgcn-amd-amdhsa--gfx906:xnack+",
    ],
    &[
        "openmp-amdgcn-amd-amdhsa--gfx906",
        "hip-amdgcn-amd-amdhsa--gfx906:xnack+",
    ],
];

/// Runs the suite.
pub fn run(s: &mut Suite) {
    match s.provide(TOOL) {
        Ok(true) => {}
        Ok(false) => return,
        Err(e) => {
            eprintln!("conformance archive: {e}");
            s.failed += 1;
            return;
        }
    }
    if llvm22("llvm-ar").is_none() || llvm22("clang").is_none() {
        eprintln!("conformance archive: clang-22 or llvm-ar-22 is not installed; skipped");
        return;
    }
    let scratch = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("conformance archive: {e}");
            s.failed += 1;
            return;
        }
    };
    let pool_dir = scratch.path().join("pool");
    eprintln!("conformance archive: building inputs with clang-22 ...");
    if let Err(e) = build_pool(&pool_dir) {
        eprintln!("conformance archive: building the inputs failed: {e}");
        s.failed += 1;
        return;
    }
    let mut pool = BTreeMap::new();
    for name in POOL_MEMBERS.iter().chain(PAYLOADS) {
        match fs::read(pool_dir.join(name)) {
            Ok(b) => {
                pool.insert(*name, b);
            }
            Err(e) => {
                eprintln!("conformance archive: {name}: {e}");
                s.failed += 1;
                return;
            }
        }
    }
    let gen = Gen {
        pool,
        work: scratch.path().join("gen"),
    };
    s.accept = Some(accept);
    s.normalise = Some(normalise);
    let n = s.count(240);
    for i in 0..n {
        let mut rng = s.rng.clone();
        let case = match i % 12 {
            0..=5 => gen.archive_case(&mut rng, false),
            6..=7 => gen.archive_case(&mut rng, true),
            8 => gen.check_case(&mut rng),
            9 => gen.special_case(&mut rng),
            10 => gen.damaged_case(&mut rng),
            _ => {
                let check = rng.chance(1, 2);
                gen.archive_case(&mut rng, check)
            }
        };
        s.rng = rng;
        match case {
            Ok(c) => {
                s.check(&c);
            }
            Err(e) => {
                eprintln!("conformance archive: making case {i} failed: {e}");
                s.failed += 1;
            }
        }
    }
}

/// Masks what is random or machine-specific by design in both tools'
/// output: the decompression speed and the `-###` objcopy command (its
/// program path and temporary file names).
fn normalise(text: &[u8]) -> Vec<u8> {
    test_support::mask_bundler_noise(text).into_bytes()
}

/// Our tool and LLVM's may differ only in the documented ways.
fn accept(case: &Case, llvm: &Outcome, ours: &Outcome) -> Option<&'static str> {
    let initial = case.sorted_files();
    let error = String::from_utf8_lossy(&ours.stderr);
    let ours_clean = ours.status == 1
        && ours.stdout.is_empty()
        && ours.files == initial
        && error.contains(&format!("{TOOL}: error: "));
    if llvm.status >= 128 && ours_clean && error.contains("module-level inline assembly") {
        return Some("clean error where LLVM 22 crashes (module asm)");
    }
    // 22 stops reading silently at a damaged member header, and reads
    // past its buffer for a member cut short (then fails on the garbage, or
    // not): we report the damage.
    if ours_clean
        && error.contains("truncated or malformed archive")
        && !String::from_utf8_lossy(&llvm.stderr).contains("truncated or malformed archive")
    {
        return Some("damaged archive reported where LLVM 22 reads on");
    }
    // The bundler refuses two targets that are stored alike; 22 then drops
    // one output and doubles the other's members (docs/compat.md#clang-offload-bundler).
    if ours_clean
        && (error.contains("would both be stored as")
            || error.contains("both select the bundle entry"))
    {
        return Some("targets that standardise alike refused");
    }
    if ours.same_error_without_outputs(llvm, &initial) {
        return Some("no partial outputs after an error");
    }
    None
}

struct Gen {
    pool: BTreeMap<&'static str, Vec<u8>>,
    work: std::path::PathBuf,
}

/// Archive layouts llvm-ar-22 can make.
#[derive(Clone, Copy, PartialEq)]
enum Format {
    Gnu,
    GnuNoSymtab,
    Bsd,
    Thin,
}

impl Gen {
    fn fresh_dir(&self) -> Result<std::path::PathBuf, String> {
        let _ = fs::remove_dir_all(&self.work);
        fs::create_dir_all(&self.work).map_err(|e| e.to_string())?;
        Ok(self.work.clone())
    }

    /// Runs LLVM's bundler in the scratch directory; `None` when it
    /// refuses (e.g. conflicting targets).
    fn llvm_bundle(
        &self,
        args: &[String],
        files: &[(String, Vec<u8>)],
        out: &str,
    ) -> Option<Vec<u8>> {
        let dir = self.fresh_dir().ok()?;
        for (n, b) in files {
            fs::write(dir.join(n), b).ok()?;
        }
        let st = Command::new(reference_tool(TOOL)?)
            .args(args)
            .current_dir(&dir)
            .output()
            .ok()?;
        if !st.status.success() {
            return None;
        }
        fs::read(dir.join(out)).ok()
    }

    /// A member made by clang-offload-bundler-22: a binary bundle (maybe
    /// compressed) or an ELF object bundle on a plain host object.
    fn made_member(&self, rng: &mut Rng) -> Option<Vec<u8>> {
        let object = rng.chance(1, 3);
        let n = rng.range(1, 4);
        let mut targets: Vec<String> = Vec::new();
        let mut files = Vec::new();
        let mut args = vec![format!("-type={}", if object { "o" } else { "bc" })];
        if object {
            targets.push("host-x86_64-pc-linux-gnu".to_string());
            files.push(("plain.o".to_string(), self.pool["plain.o"].clone()));
        }
        for _ in 0..n {
            let t = rng.pick(FILE_IDS).to_string();
            if !targets.contains(&t) && !t.starts_with("host") {
                targets.push(t);
            }
        }
        for (i, t) in targets.iter().enumerate() {
            if t.starts_with("host") {
                continue;
            }
            let payload = rng.pick(PAYLOADS);
            files.push((format!("in{i}"), self.pool[payload].clone()));
        }
        args.push(format!("-targets={}", targets.join(",")));
        for (i, t) in targets.iter().enumerate() {
            if t.starts_with("host") {
                args.push("-input=plain.o".to_string());
            } else {
                args.push(format!("-input=in{i}"));
            }
        }
        args.push("-output=made".to_string());
        if !object && rng.chance(1, 3) {
            args.push("-compress".to_string());
        }
        self.llvm_bundle(&args, &files, "made")
    }

    /// A binary bundle with arbitrary stored IDs (conflicts, odd kinds,
    /// invalid IDs), written directly.
    fn raw_member(&self, rng: &mut Rng) -> Vec<u8> {
        let n = rng.range(1, 4);
        let mut ids: Vec<String> = Vec::new();
        for _ in 0..n {
            let id = if rng.chance(1, 25) {
                "hip-amdgcn-amd".to_string()
            } else {
                rng.pick(FILE_IDS).to_string()
            };
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        let payloads: Vec<Vec<u8>> = ids
            .iter()
            .map(|_| {
                if rng.chance(1, 4) {
                    let n = rng.range(0, 40);
                    rng.bytes(n)
                } else {
                    self.pool[rng.pick(PAYLOADS)].clone()
                }
            })
            .collect();
        let entries: Vec<(&[u8], &[u8])> = ids
            .iter()
            .zip(&payloads)
            .map(|(i, p)| (i.as_bytes(), p.as_slice()))
            .collect();
        let mut out = Vec::new();
        let _ = offload_format::bundle::write(&mut out, &entries, 1 << rng.below(4));
        out
    }

    fn members(&self, rng: &mut Rng, check: bool) -> Vec<(String, Vec<u8>)> {
        let n = rng.range(0, 6);
        let mut out = Vec::new();
        for _ in 0..n {
            let data = match rng.below(10) {
                0..=4 => {
                    let mut name = *rng.pick(POOL_MEMBERS);
                    // conf.o only matters with -check-input-archive, and
                    // asm.bundle crashes 22: keep both rare.
                    if (name == "conf.o" && !check) || (name == "asm.bundle" && rng.chance(3, 4)) {
                        name = "a.o";
                    }
                    self.pool[name].clone()
                }
                5..=7 => match self.made_member(rng) {
                    Some(m) => m,
                    None => self.pool["b.o"].clone(),
                },
                _ => self.raw_member(rng),
            };
            out.push((rng.pick(NAMES).to_string(), data));
        }
        out
    }

    /// Writes `members` to a fresh directory and runs llvm-ar-22.
    fn llvm_ar(&self, format: Format, members: &[(String, Vec<u8>)]) -> Result<Vec<u8>, String> {
        let dir = self.fresh_dir()?;
        let mut names = Vec::new();
        // A name used twice gets a subdirectory so both files exist; the
        // archive then holds the same member name twice.
        for (i, (n, b)) in members.iter().enumerate() {
            let path = if names.iter().any(|(m, _): &(String, String)| m == n) {
                format!("d{i}/{n}")
            } else {
                n.clone()
            };
            let p = dir.join(&path);
            fs::create_dir_all(p.parent().unwrap()).map_err(|e| e.to_string())?;
            fs::write(&p, b).map_err(|e| e.to_string())?;
            names.push((n.clone(), path));
        }
        let mut args: Vec<String> = Vec::new();
        match format {
            Format::Gnu => args.push("qc".into()),
            Format::GnuNoSymtab => args.push("qcS".into()),
            Format::Bsd => {
                args.push("--format=bsd".into());
                args.push("qc".into());
            }
            Format::Thin => args.push("qcT".into()),
        }
        args.push("lib.a".into());
        args.extend(names.iter().map(|(_, p)| p.clone()));
        if members.is_empty() {
            fs::write(dir.join("lib.a"), b"!<arch>\n").map_err(|e| e.to_string())?;
        } else {
            let out = Command::new(llvm22("llvm-ar").ok_or("no llvm-ar-22")?)
                .args(&args)
                .current_dir(&dir)
                .output()
                .map_err(|e| e.to_string())?;
            if !out.status.success() {
                return Err(format!(
                    "llvm-ar {args:?}: {}",
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
        fs::read(dir.join("lib.a")).map_err(|e| e.to_string())
    }

    fn targets(&self, rng: &mut Rng) -> Vec<String> {
        let n = rng.range(1, 5);
        let mut v: Vec<String> = Vec::new();
        for _ in 0..n {
            let t = rng.pick(TARGETS).to_string();
            if !v.contains(&t) {
                v.push(t);
            }
        }
        v
    }

    fn base_case(
        &self,
        rng: &mut Rng,
        label: String,
        archive: Vec<u8>,
        targets: &[String],
        flags: &[&str],
    ) -> Case {
        let mut c = Case::new(TOOL);
        c.label = label;
        c = c.arg("-unbundle").arg("-type=a").arg("-input=lib.a");
        c = c.arg(format!("-targets={}", targets.join(",")));
        for i in 0..targets.len() {
            c = c.arg(format!("-output=out{i}.a"));
        }
        let mut flags: Vec<&str> = flags.to_vec();
        rng.shuffle(&mut flags);
        for f in flags {
            c = c.arg(f);
        }
        c.file("lib.a", archive)
    }

    fn flags(&self, rng: &mut Rng, check: bool) -> Vec<&'static str> {
        let mut f = Vec::new();
        if rng.chance(3, 4) {
            f.push("-allow-missing-bundles");
        }
        if rng.chance(1, 2) {
            f.push("-hip-openmp-compatible");
        }
        if check {
            f.push("-check-input-archive");
        }
        if rng.chance(1, 10) {
            f.push("-verbose");
        }
        f
    }

    fn archive_case(&self, rng: &mut Rng, check: bool) -> Result<Case, String> {
        let members = self.members(rng, check);
        let format = match rng.below(8) {
            0 => Format::Bsd,
            1 => Format::GnuNoSymtab,
            _ => Format::Gnu,
        };
        let archive = self.llvm_ar(format, &members)?;
        let targets = self.targets(rng);
        let flags = self.flags(rng, check);
        let label = format!(
            "{} members, {} targets, {:?}",
            members.len(),
            targets.len(),
            flags
        );
        Ok(self.base_case(rng, label, archive, &targets, &flags))
    }

    /// `-check-input-archive` over members that hold conflicting IDs.
    fn check_case(&self, rng: &mut Rng) -> Result<Case, String> {
        let mut members = self.members(rng, true);
        let conflict = rng.pick(CONFLICTS);
        let payload = self.pool["dev908.bc"].clone();
        let entries: Vec<(&[u8], &[u8])> = conflict
            .iter()
            .map(|i| (i.as_bytes(), payload.as_slice()))
            .collect();
        let mut bundle = Vec::new();
        offload_format::bundle::write(&mut bundle, &entries, 1).map_err(|e| e.to_string())?;
        let at = rng.range(0, members.len());
        members.insert(at, (rng.pick(NAMES).to_string(), bundle));
        let archive = self.llvm_ar(Format::Gnu, &members)?;
        let targets = self.targets(rng);
        let flags = self.flags(rng, true);
        Ok(self.base_case(rng, "check-input-archive".into(), archive, &targets, &flags))
    }

    /// Thin archives, stdin input, `-` and repeated outputs, `-###`.
    fn special_case(&self, rng: &mut Rng) -> Result<Case, String> {
        let members = self.members(rng, false);
        let targets = self.targets(rng);
        let flags = self.flags(rng, false);
        match rng.below(5) {
            0 | 1 => {
                // Thin: the members must exist beside the archive (under
                // distinct names; a missing one is an error).
                let mut named: Vec<(String, Vec<u8>)> = Vec::new();
                for (i, (n, b)) in members.iter().enumerate() {
                    let name = if named.iter().any(|(m, _)| m == n) {
                        format!("{i}{n}")
                    } else {
                        n.clone()
                    };
                    named.push((name, b.clone()));
                }
                let archive = self.llvm_ar(Format::Thin, &named)?;
                let mut c = self.base_case(rng, "thin".into(), archive, &targets, &flags);
                let drop = rng.chance(1, 6) && !named.is_empty();
                for (i, (n, b)) in named.iter().enumerate() {
                    if !(drop && i == 0) {
                        c = c.file(n, b.clone());
                    }
                }
                Ok(c)
            }
            2 => {
                let archive = self.llvm_ar(Format::Gnu, &members)?;
                let mut c = self.base_case(rng, "stdin".into(), archive.clone(), &targets, &flags);
                for a in c.args.iter_mut() {
                    if a == "-input=lib.a" {
                        *a = "-input=-".into();
                    }
                }
                c.stdin = Some(archive);
                Ok(c)
            }
            3 => {
                let archive = self.llvm_ar(Format::Gnu, &members)?;
                let mut c = self.base_case(rng, "odd outputs".into(), archive, &targets, &flags);
                let last = c
                    .args
                    .iter()
                    .rposition(|a| a.to_string_lossy().starts_with("-output="))
                    .unwrap();
                let odd = [
                    "-output=-",
                    "-output=out0.a",
                    "-output=no/such/dir.a",
                    "-output=.",
                ];
                c.args[last] = (*rng.pick(&odd)).into();
                Ok(c)
            }
            _ => {
                let mut members = members;
                members.push(("fat.o".into(), self.pool["a.o"].clone()));
                let archive = self.llvm_ar(Format::Gnu, &members)?;
                let mut targets = targets;
                if !targets.iter().any(|t| t.starts_with("host")) {
                    targets.push("host-x86_64-pc-linux-gnu".into());
                }
                let mut c = self.base_case(rng, "-###".into(), archive, &targets, &flags);
                c = c.arg("-###");
                Ok(c)
            }
        }
    }

    /// A GNU archive with damage after its first member, or a cut.
    fn damaged_case(&self, rng: &mut Rng) -> Result<Case, String> {
        let mut members = self.members(rng, false);
        while members.len() < 2 {
            members.push((rng.pick(NAMES).to_string(), self.pool["a.o"].clone()));
        }
        let mut archive = self.llvm_ar(Format::Gnu, &members)?;
        // Member headers: walk the archive to find them.
        let mut headers = Vec::new();
        let mut pos = 8usize;
        while pos + 60 <= archive.len() {
            headers.push(pos);
            let size: usize = String::from_utf8_lossy(&archive[pos + 48..pos + 58])
                .trim()
                .parse()
                .unwrap_or(0);
            pos += 60 + size + (size & 1);
        }
        let at = *rng.pick(&headers);
        match rng.below(3) {
            0 => archive[at + 58] = b'!',
            1 => archive[at + 48] = b'x',
            _ => {
                let cut = rng.range(at, archive.len() - 1);
                archive.truncate(cut);
            }
        }
        let targets = self.targets(rng);
        let check = rng.chance(1, 3);
        let flags = self.flags(rng, check);
        Ok(self.base_case(rng, "damaged archive".into(), archive, &targets, &flags))
    }
}
