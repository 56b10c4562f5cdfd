//! `offload ls` / `offload extract` on real libraries, checked against
//! independent sources. Needs the network (Debian's archive and PyPI,
//! through `apt-get download` and `pip download`), so it runs only when
//! named: `cargo xtask e2e realworld`.
//!
//! Inputs (about 225 MB downloaded, 1.4 GB unpacked), kept in
//! `$OFFLOAD_REALWORLD_DIR` (default `target/realworld`) and reused:
//! - Debian 12's ROCm 5.3 `librocsparse0` (the 1.3 GB `librocsparse.so.0.1`,
//!   111 bundles) and `librocrand1`: three-part host triples;
//! - `jax-rocm7-plugin` (ROCm 7, one CCOB v3 per unit, concatenated);
//! - `gafime-rocm` (ROCm 6 style uncompressed `hipv4` bundles);
//! - `nvidia-curand-cu12` (CUDA 12 `.nv_fatbin`, 11 containers);
//! - `bitsandbytes` (one wheel, one library per toolkit: CUDA 11.8 and 13
//!   fat binaries, NVIDIA- and zstd-compressed entries, `__nv_relfatbin`;
//!   ROCm 6.4 and 7.2 CCOBs v2 and v3; DPC++'s SYCL bundle sections with
//!   zstd-compressed SPIR-V and ahead-of-time images).
//!
//! Checks, per library:
//! - every bundle is cut out at the offset and size `offload ls` gives and
//!   listed by `clang-offload-bundler-22 -list`: the same IDs;
//! - every CCOB is also decompressed by our own decoder (hash checked) and
//!   its header's entries compared (offset, size) with the listing;
//! - where LLVM is right (no CCOB), `--format=llvm` equals
//!   `llvm-readobj-22 --offloading` line for line;
//! - every AMDGPU code object (cut out at its URI, or extracted from a CCOB
//!   by `offload extract`) is read by `llvm-readelf-22 -h`: the processor
//!   and every feature the entry ID sets appear in its flags;
//! - every NVIDIA ELF entry: `llvm-readelf-22 -h` says NVIDIA CUDA with the
//!   entry's `sm_NN`; the containers tile the section (no damage);
//! - the NVIDIA libraries recorded with cuobjdump 13.5 in
//!   `tests/fixtures/nvidia/real/` (cuRAND and cuBLAS of CUDA 13,
//!   bitsandbytes' CUDA 11.8 to 13.2 libraries; about 500 MB more to
//!   download): the listing numbers and names every entry as cuobjdump
//!   did, and every file cuobjdump extracted is among ours, byte for byte.
//!
//! Prints the figures (files, bundles, entries, checks, disagreements).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use offload_format::{bundle, ccob};

use crate::harness::{llvm22, our_bin_dir, run_checked as sh, workspace_root};
use crate::json::{self, V};

/// (package client, package spec, files to inspect relative to the unpack
/// directory).
const DEBS: &[&str] = &["librocsparse0", "librocrand1"];
const WHEELS: &[&str] = &[
    "nvidia-curand-cu12==10.3.10.19",
    "jax-rocm7-plugin==0.10.2",
    "gafime-rocm==0.4.7",
    "bitsandbytes==0.50.2",
];
const LIBRARIES: &[&str] = &[
    "deb/usr/lib/x86_64-linux-gnu/librocsparse.so.0.1",
    "deb/usr/lib/x86_64-linux-gnu/librocrand.so.1.1",
    "whl/jax_rocm7_plugin/_linalg.so",
    "whl/jax_rocm7_plugin/_prng.so",
    "whl/jax_rocm7_plugin/_solver.so",
    "whl/gafime_rocm/libgafime_rocm.so",
    "whl/nvidia/curand/lib/libcurand.so.10",
    "whl/bitsandbytes/libbitsandbytes_cuda118.so",
    "whl/bitsandbytes/libbitsandbytes_cuda130.so",
    "whl/bitsandbytes/libbitsandbytes_rocm64.so",
    "whl/bitsandbytes/libbitsandbytes_rocm72.so",
    "whl/bitsandbytes/libbitsandbytes_xpu2025.so",
];

/// Downloads and unpacks the inputs that are not there yet.
fn fetch(dir: &Path) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    if !dir.join("deb/usr").exists() {
        for p in DEBS {
            sh(Command::new("apt-get")
                .arg("download")
                .arg(p)
                .current_dir(dir))?;
        }
        for e in fs::read_dir(dir).map_err(|e| e.to_string())? {
            let p = e.map_err(|e| e.to_string())?.path();
            if p.extension().is_some_and(|x| x == "deb") {
                sh(Command::new("dpkg-deb")
                    .arg("-x")
                    .arg(&p)
                    .arg(dir.join("deb")))?;
            }
        }
    }
    let have_wheels = LIBRARIES
        .iter()
        .filter(|l| l.starts_with("whl/"))
        .all(|l| dir.join(l).exists());
    if !have_wheels {
        sh(Command::new("pip")
            .args(["download", "--no-deps", "-d"])
            .arg(dir.join("wheels"))
            .args(WHEELS))?;
        for e in fs::read_dir(dir.join("wheels")).map_err(|e| e.to_string())? {
            let p = e.map_err(|e| e.to_string())?.path();
            if p.extension().is_some_and(|x| x == "whl") {
                sh(Command::new("python3")
                    .args(["-m", "zipfile", "-e"])
                    .arg(&p)
                    .arg(dir.join("whl")))?;
            }
        }
    }
    Ok(())
}

/// Figures of the whole run.
#[derive(Default)]
struct Tally {
    files: usize,
    bundles: usize,
    ccobs: usize,
    fatbins: usize,
    entries: usize,
    bundler_lists: usize,
    ccob_decodes: usize,
    readelf: usize,
    readobj_lines: usize,
    zstd_frames: usize,
    cuobjdump_lines: usize,
    cuobjdump_files: usize,
    disagreements: Vec<String>,
}

fn nodes<'a>(n: &'a V, out: &mut Vec<&'a V>) {
    out.push(n);
    for c in n.get("children").arr() {
        nodes(c, out);
    }
}

/// `llvm-readelf-22 -h`'s Flags tokens after the hex value.
fn readelf_flags(path: &Path) -> Result<(String, Vec<String>), String> {
    let readelf = llvm22("llvm-readelf").ok_or("llvm-readelf-22 missing")?;
    let out = sh(Command::new(readelf).arg("-h").arg(path))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let flags = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Flags:"))
        .ok_or("no Flags line")?;
    let tokens: Vec<String> = flags
        .split(',')
        .skip(1)
        .map(|t| t.trim().to_owned())
        .collect();
    Ok((text, tokens))
}

/// Checks one AMDGPU code object against its entry's target ID.
fn check_code_object(path: &Path, target_id: &str, tally: &mut Tally, what: &str) {
    tally.readelf += 1;
    match readelf_flags(path) {
        Ok((_, tokens)) => {
            let mut parts = target_id.split(':');
            let processor = parts.next().unwrap_or("");
            if tokens.first().map(String::as_str) != Some(processor) {
                tally.disagreements.push(format!(
                    "{what}: readelf says {tokens:?}, entry says {target_id}"
                ));
                return;
            }
            for f in parts {
                if !tokens.iter().any(|t| t == f) {
                    tally.disagreements.push(format!(
                        "{what}: readelf says {tokens:?}, entry says {target_id}"
                    ));
                }
            }
        }
        Err(e) => tally.disagreements.push(format!("{what}: {e}")),
    }
}

fn check_library(lib: &Path, offload: &Path, work: &Path, tally: &mut Tally) -> Result<(), String> {
    let data = fs::read(lib).map_err(|e| format!("{}: {e}", lib.display()))?;
    let out = Command::new(offload)
        .args(["ls", "--json"])
        .arg(lib)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        tally.disagreements.push(format!(
            "{}: offload ls failed: {}",
            lib.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
        return Ok(());
    }
    let doc = json::parse(&String::from_utf8_lossy(&out.stdout));
    let root = &doc.get("files").arr()[0];
    let mut all = Vec::new();
    nodes(root, &mut all);
    tally.files += 1;
    let bundler = llvm22("clang-offload-bundler").ok_or("clang-offload-bundler-22 missing")?;
    let mut any_ccob = false;
    let cut = work.join("cut.bin");
    for n in &all {
        let ty = n.get("type").str().unwrap_or("");
        let entries = n.get("entries").arr();
        tally.entries += entries.len();
        let name = format!("{}: {}", lib.display(), n.get("name").str().unwrap_or(""));
        match ty {
            "bundle" | "compressed-bundle" => {
                tally.bundles += 1;
                let off = n.get("offset").num().ok_or("bundle without offset")? as usize;
                let size = n.get("size").num().ok_or("bundle without size")? as usize;
                let bytes = &data[off..off + size];
                fs::write(&cut, bytes).map_err(|e| e.to_string())?;
                let listed = sh(Command::new(&bundler)
                    .args(["-list", "-type=o"])
                    .arg(format!("-input={}", cut.display())))?;
                tally.bundler_lists += 1;
                let mut theirs: Vec<String> = String::from_utf8_lossy(&listed.stdout)
                    .split_whitespace()
                    .map(str::to_owned)
                    .collect();
                let mut ours: Vec<String> = entries
                    .iter()
                    .map(|e| e.get("id").str().unwrap_or("").to_owned())
                    .collect();
                theirs.sort();
                ours.sort();
                if theirs != ours {
                    tally.disagreements.push(format!(
                        "{name}: bundler lists {theirs:?}, we list {ours:?}"
                    ));
                }
                if ty == "compressed-bundle" {
                    any_ccob = true;
                    tally.ccobs += 1;
                    tally.ccob_decodes += 1;
                    match ccob::decompress(bytes) {
                        Ok(d) => {
                            let header =
                                bundle::parse_header(&d.data).map_err(|e| e.to_string())?;
                            for e in entries {
                                let id = e.get("id").str().unwrap_or("");
                                let loc = e.get("location");
                                let found = header.iter().any(|h| {
                                    h.id == id.as_bytes()
                                        && Some(h.offset) == loc.get("offset_in_bundle").num()
                                        && Some(h.size) == e.get("size").num()
                                });
                                if !found {
                                    tally
                                        .disagreements
                                        .push(format!("{name}: {id} not at the listed place"));
                                }
                                // The payload named from the first bytes
                                // decoded (the extracted code objects go
                                // through llvm-readelf below).
                                let payload = e.get("payload");
                                if e.get("kind").str() == Some("hipv4")
                                    && (payload.get("type").str() != Some("amdgpu-code-object")
                                        || payload.get("matches_entry") != &V::Bool(true))
                                {
                                    tally.disagreements.push(format!(
                                        "{name}: {id}: payload {:?} {:?}",
                                        payload.get("type").str(),
                                        payload.get("target").str()
                                    ));
                                }
                            }
                        }
                        Err(e) => tally.disagreements.push(format!("{name}: decompress: {e}")),
                    }
                }
            }
            "fatbin" => tally.fatbins += 1,
            _ => {}
        }
        for n_damage in n.get("damage").arr() {
            tally.disagreements.push(format!(
                "{name}: damage reported: {}",
                n_damage.get("message").str().unwrap_or("")
            ));
        }
        // Code objects and cubins with a file range.
        for e in entries {
            let id = e.get("id").str().unwrap_or("").to_owned();
            let loc = e.get("location");
            if loc.get("type").str() != Some("file") {
                continue;
            }
            let payload = e.get("payload").get("type").str().unwrap_or("");
            let off = loc.get("offset").num().unwrap_or(0) as usize;
            let size = loc.get("size").num().unwrap_or(0) as usize;
            let what = format!("{name}: {id}");
            match payload {
                "amdgpu-code-object" => {
                    fs::write(&cut, &data[off..off + size]).map_err(|e| e.to_string())?;
                    let tid = e.get("target_id").str().unwrap_or("");
                    check_code_object(&cut, tid, tally, &what);
                }
                // A compressed entry's bytes are its stream: the
                // cuobjdump records check those (check_cuobjdump_records).
                "cubin" if e.get("compression").str().is_some() => {}
                "cubin" => {
                    fs::write(&cut, &data[off..off + size]).map_err(|e| e.to_string())?;
                    tally.readelf += 1;
                    // The cubin's flags carry the number, not the variant.
                    let sm = match e.get("cuda").get("number").num() {
                        Some(n) => format!("sm_{n}"),
                        None => e.get("target_id").str().unwrap_or("").to_owned(),
                    };
                    let sm = sm.as_str();
                    match readelf_flags(&cut) {
                        Ok((text, tokens))
                            if text.contains("NVIDIA CUDA architecture")
                                && tokens.first().map(String::as_str) == Some(sm) => {}
                        Ok((_, tokens)) => tally
                            .disagreements
                            .push(format!("{what}: readelf says {tokens:?}")),
                        Err(err) => tally.disagreements.push(format!("{what}: {err}")),
                    }
                }
                "empty" | "unknown" if id.starts_with("host-") => {}
                // DPC++'s SYCL images, compressed whole: zstd's own tool
                // decodes them to SPIR-V (spir64) or an archive of
                // ahead-of-time images (spir64_gen).
                "zstd-frame" if e.get("kind").str() == Some("sycl") => {
                    fs::write(&cut, &data[off..off + size]).map_err(|e| e.to_string())?;
                    let out = Command::new("zstd")
                        .args(["-d", "-c", "-q"])
                        .arg(&cut)
                        .output()
                        .map_err(|e| format!("zstd: {e}"))?;
                    let want: &[u8] = if e.get("triple").str() == Some("spir64") {
                        &[3, 2, 0x23, 7]
                    } else {
                        b"!<arch>\n"
                    };
                    tally.zstd_frames += 1;
                    if !out.stdout.starts_with(want) {
                        tally
                            .disagreements
                            .push(format!("{what}: zstd -d does not give {want:?}"));
                    }
                }
                other if e.get("kind").str() != Some("cuda") => {
                    tally.disagreements.push(format!("{what}: payload {other}"))
                }
                _ => {}
            }
        }
    }
    if any_ccob {
        // Code objects inside CCOBs: extract them all and read them.
        let dir = work.join("extract");
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let out = sh(Command::new(offload)
            .args(["extract", "--kind", "hipv4", "-d"])
            .arg(&dir)
            .arg(lib))?;
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let path = PathBuf::from(line);
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let tid = name.rsplit("--").next().unwrap_or("");
            check_code_object(&path, tid, tally, &format!("{}: {name}", lib.display()));
        }
    } else if !all.iter().any(|n| {
        matches!(
            n.get("type").str(),
            Some("fatbin" | "object-bundle" | "offload-binary")
        )
    }) {
        // Where LLVM is right, its lines are ours (it does not look at
        // fat binaries, offload binaries or `__CLANG_OFFLOAD_BUNDLE__`
        // sections, for which we print lines too).
        let readobj = llvm22("llvm-readobj").ok_or("llvm-readobj-22 missing")?;
        let theirs = sh(Command::new(readobj).arg("--offloading").arg(lib))?;
        let theirs: Vec<String> = String::from_utf8_lossy(&theirs.stdout)
            .lines()
            .filter(|l| l.contains("file://"))
            .map(str::to_owned)
            .collect();
        let ours = sh(Command::new(offload).args(["ls", "--format=llvm"]).arg(lib))?;
        let ours: Vec<String> = String::from_utf8_lossy(&ours.stdout)
            .lines()
            .map(str::to_owned)
            .collect();
        tally.readobj_lines += theirs.len();
        if theirs != ours {
            tally.disagreements.push(format!(
                "{}: --format=llvm differs from llvm-readobj-22 ({} vs {} lines)",
                lib.display(),
                ours.len(),
                theirs.len()
            ));
        }
    }
    Ok(())
}

/// The libraries whose cuobjdump 13.5 listings and extracted files' md5s
/// are recorded in `tests/fixtures/nvidia/real/` (by its `real.sh`): each
/// wheel of `wheels.txt` is fetched at its recorded version and checked
/// against its recorded sha256; then every recorded library must hash as
/// recorded, `offload ls` must list and number its entries as cuobjdump
/// did, and every file cuobjdump extracted must be among `offload
/// extract`'s, byte for byte.
fn check_cuobjdump_records(
    dir: &Path,
    offload: &Path,
    work: &Path,
    tally: &mut Tally,
) -> Result<(), String> {
    let records = workspace_root().join("tests/fixtures/nvidia/real");
    let wheels = fs::read_to_string(records.join("wheels.txt")).map_err(|e| e.to_string())?;
    let nv = dir.join("nvidia-records");
    for line in wheels.lines() {
        let mut cols = line.split_whitespace();
        let (Some(wheel), Some(sha)) = (cols.next(), cols.next()) else {
            continue;
        };
        // `pip download --no-deps [platform options] NAME==VERSION`.
        let pip: Vec<&str> = cols.skip_while(|c| *c != "download").skip(1).collect();
        if pip.is_empty() {
            return Err(format!("wheels.txt: no pip command for {wheel}"));
        }
        let stem = wheel_stem(wheel);
        let libs_dir = records.join(stem);
        if !libs_dir.is_dir() {
            continue; // no library with device code in this wheel
        }
        let path = nv.join(wheel);
        if !path.exists() {
            sh(Command::new("pip")
                .arg("download")
                .args(&pip)
                .arg("-d")
                .arg(&nv))?;
        }
        let got = sh(Command::new("sha256sum").arg(&path))?;
        if !String::from_utf8_lossy(&got.stdout).starts_with(sha) {
            return Err(format!("{wheel}: not the recorded wheel (sha256)"));
        }
        let unpacked = nv.join(stem);
        if !unpacked.exists() {
            sh(Command::new("python3")
                .args(["-m", "zipfile", "-e"])
                .arg(&path)
                .arg(&unpacked))?;
        }
        for rec in fs::read_dir(&libs_dir).map_err(|e| e.to_string())? {
            let rec = rec.map_err(|e| e.to_string())?.path();
            let Some(lib_name) = rec
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".sha256"))
            else {
                continue;
            };
            let lib = find_file(&unpacked, lib_name)
                .ok_or_else(|| format!("{stem}: {lib_name} not in the wheel"))?;
            let what = format!("{stem}/{lib_name}");
            let want_sha = fs::read_to_string(&rec).map_err(|e| e.to_string())?;
            let got = sh(Command::new("sha256sum").arg(&lib))?;
            let got = String::from_utf8_lossy(&got.stdout);
            if want_sha.split_whitespace().next() != got.split_whitespace().next() {
                tally
                    .disagreements
                    .push(format!("{what}: not the recorded file"));
                continue;
            }
            tally.files += 1;
            // The listing.
            let out = sh(Command::new(offload).args(["ls", "--json"]).arg(&lib))?;
            let doc = json::parse(&String::from_utf8_lossy(&out.stdout));
            let entries = crate::cuobjdump::entries(&doc);
            tally.entries += entries.len();
            let list = libs_dir.join(format!("{lib_name}.list"));
            let list = fs::read_to_string(list).map_err(|e| e.to_string())?;
            let want = crate::cuobjdump::recorded_lines(&list);
            let ours = crate::cuobjdump::list_lines(lib_name, &entries);
            tally.cuobjdump_lines += want.len();
            // cuobjdump stops at an ELF it cannot read (recorded in the
            // library's .stderr); what it listed must be ours.
            if ours.len() < want.len() || ours[..want.len()] != want[..] {
                tally.disagreements.push(format!(
                    "{what}: listing differs from cuobjdump's ({} vs {} lines)",
                    ours.len(),
                    want.len()
                ));
            }
            // The extracted files.
            let md5s = libs_dir.join(format!("{lib_name}.md5"));
            let Ok(md5s) = fs::read_to_string(md5s) else {
                continue;
            };
            let out_dir = work.join("cuobjdump-extract");
            let _ = fs::remove_dir_all(&out_dir);
            fs::create_dir_all(&out_dir).map_err(|e| e.to_string())?;
            sh(Command::new(offload)
                .args(["extract", "-d"])
                .arg(&out_dir)
                .arg(&lib))?;
            for line in md5s.lines() {
                let Some((sum, name)) = line.split_once("  ") else {
                    continue;
                };
                tally.cuobjdump_files += 1;
                let ours = out_dir.join(name);
                let same = ours.exists()
                    && sh(Command::new("md5sum").arg(&ours))
                        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).starts_with(sum));
                if !same {
                    tally
                        .disagreements
                        .push(format!("{what}: {name} is not cuobjdump's"));
                }
            }
            let _ = fs::remove_dir_all(&out_dir);
            eprintln!(
                "  {what}: {} entries, checked against cuobjdump",
                entries.len()
            );
        }
    }
    Ok(())
}

/// The recorded wheels read as wheels, without unpacking: `offload
/// extract` of the wheel writes exactly the files cuobjdump wrote from its
/// unpacked libraries (their recorded md5s), and `offload thin --keep
/// sm_90 -o` writes a wheel that Python's zipfile reads (CRCs checked),
/// whose thinned libraries are those `offload thin` makes of the unpacked
/// ones, byte for byte, whose RECORD digests and sizes are right, and
/// that `pip install` accepts.
fn check_wheels(dir: &Path, offload: &Path, work: &Path, tally: &mut Tally) -> Result<(), String> {
    let records = workspace_root().join("tests/fixtures/nvidia/real");
    let wheels = fs::read_to_string(records.join("wheels.txt")).map_err(|e| e.to_string())?;
    let nv = dir.join("nvidia-records");
    for line in wheels.lines() {
        let Some(wheel) = line.split_whitespace().next() else {
            continue;
        };
        let stem = wheel_stem(wheel);
        let libs_dir = records.join(stem);
        let path = nv.join(wheel);
        if !libs_dir.is_dir() || !path.exists() {
            continue;
        }
        // Extraction from the wheel itself.
        let out_dir = work.join("wheel-extract");
        let _ = fs::remove_dir_all(&out_dir);
        fs::create_dir_all(&out_dir).map_err(|e| e.to_string())?;
        sh(Command::new(offload)
            .args(["extract", "-d"])
            .arg(&out_dir)
            .arg(&path))?;
        let mut checked = 0;
        for rec in fs::read_dir(&libs_dir).map_err(|e| e.to_string())? {
            let rec = rec.map_err(|e| e.to_string())?.path();
            if rec.extension().is_none_or(|x| x != "md5") {
                continue;
            }
            let md5s = fs::read_to_string(&rec).map_err(|e| e.to_string())?;
            for line in md5s.lines() {
                let Some((sum, name)) = line.split_once("  ") else {
                    continue;
                };
                checked += 1;
                let ours = out_dir.join(name);
                let same = ours.exists()
                    && sh(Command::new("md5sum").arg(&ours))
                        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).starts_with(sum));
                if !same {
                    tally.disagreements.push(format!(
                        "{wheel}: {name} (from the wheel) is not cuobjdump's"
                    ));
                }
            }
        }
        tally.cuobjdump_files += checked;
        let _ = fs::remove_dir_all(&out_dir);
        // Thinning the wheel.
        let thin_dir = work.join("wheel-thin");
        let _ = fs::remove_dir_all(&thin_dir);
        fs::create_dir_all(&thin_dir).map_err(|e| e.to_string())?;
        let thinned = thin_dir.join(wheel);
        let o = Command::new(offload)
            .args(["thin", "--keep", "sm_90", "-o"])
            .arg(&thinned)
            .arg(&path)
            .output()
            .map_err(|e| e.to_string())?;
        if !o.status.success() {
            tally.disagreements.push(format!(
                "{wheel}: offload thin failed: {}",
                String::from_utf8_lossy(&o.stderr)
            ));
            continue;
        }
        let unpacked = nv.join(stem);
        let single = thin_dir.join("single");
        let script = r#"
import base64, hashlib, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
bad = z.testzip()
assert bad is None, f"bad CRC: {bad}"
record = [n for n in z.namelist() if n.endswith(".dist-info/RECORD")][0]
for line in z.read(record).decode().splitlines():
    name, digest, size = line.rsplit(",", 2)
    if digest:
        data = z.read(name)
        want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        assert digest == want and int(size) == len(data), f"RECORD line of {name} is wrong"
for name in sys.argv[3:]:
    sys.stdout.write(name + "\t" + hashlib.sha256(z.read(name)).hexdigest() + "\n")
"#;
        // The thinned members, each against thinning the unpacked file.
        let mut members = Vec::new();
        for rec in fs::read_dir(&libs_dir).map_err(|e| e.to_string())? {
            let rec = rec.map_err(|e| e.to_string())?.path();
            let Some(lib_name) = rec
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".sha256"))
            else {
                continue;
            };
            let Some(lib) = find_file(&unpacked, lib_name) else {
                continue;
            };
            let member = lib
                .strip_prefix(&unpacked)
                .map_err(|e| e.to_string())?
                .to_string_lossy()
                .into_owned();
            let _ = fs::remove_file(&single);
            let o = Command::new(offload)
                .args(["thin", "--keep", "sm_90", "-o"])
                .arg(&single)
                .arg(&lib)
                .output()
                .map_err(|e| e.to_string())?;
            // A library with nothing for sm_90 (cuFFT's lone sm_75 stub)
            // is refused alone and left unchanged in the wheel.
            let nothing =
                String::from_utf8_lossy(&o.stderr).contains("--keep sm_90 matches no entry");
            if !o.status.success() && !nothing {
                return Err(format!(
                    "offload thin {}: {}",
                    lib.display(),
                    String::from_utf8_lossy(&o.stderr)
                ));
            }
            let sum = sh(Command::new("sha256sum").arg(if nothing { &lib } else { &single }))?;
            let sum = String::from_utf8_lossy(&sum.stdout)
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_owned();
            members.push((member, sum));
        }
        let mut py = Command::new("python3");
        py.args(["-c", script]).arg(&thinned).arg("--");
        py.args(members.iter().map(|(m, _)| m));
        match sh(&mut py) {
            Ok(o) => {
                let got = String::from_utf8_lossy(&o.stdout).into_owned();
                for (m, sum) in &members {
                    if !got.lines().any(|l| l == format!("{m}\t{sum}")) {
                        tally.disagreements.push(format!(
                            "{wheel}: {m} in the thinned wheel is not the thinned file"
                        ));
                    }
                }
            }
            Err(e) => tally
                .disagreements
                .push(format!("{wheel}: thinned wheel: {e}")),
        }
        let target = thin_dir.join("installed");
        if let Err(e) = sh(Command::new("pip")
            .args(["install", "--no-deps", "--no-index", "--quiet", "--target"])
            .arg(&target)
            .arg(&thinned))
        {
            tally
                .disagreements
                .push(format!("{wheel}: pip refuses the thinned wheel: {e}"));
        }
        eprintln!(
            "  {wheel}: read as a wheel, {checked} extracted files checked, {} thinned members checked",
            members.len()
        );
        let _ = fs::remove_dir_all(&thin_dir);
    }
    Ok(())
}

/// The first file named `name` under `dir`.
/// `NAME-VERSION` of a wheel's file name: the directory its records and
/// its unpacked files are in.
fn wheel_stem(wheel: &str) -> &str {
    match wheel.match_indices('-').nth(1) {
        Some((i, _)) => &wheel[..i],
        None => wheel,
    }
}

fn find_file(dir: &Path, name: &str) -> Option<PathBuf> {
    for e in fs::read_dir(dir).ok()? {
        let p = e.ok()?.path();
        if p.is_dir() {
            if let Some(found) = find_file(&p, name) {
                return Some(found);
            }
        } else if p.file_name().is_some_and(|n| n == name) {
            return Some(p);
        }
    }
    None
}

pub fn run() -> Result<(), String> {
    let dir = std::env::var_os("OFFLOAD_REALWORLD_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/realworld"));
    fetch(&dir)?;
    let offload = our_bin_dir()?.join("offload");
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut tally = Tally::default();
    for lib in LIBRARIES {
        let path = dir.join(lib);
        let before = (tally.bundles, tally.entries, tally.disagreements.len());
        check_library(&path, &offload, work.path(), &mut tally)?;
        eprintln!(
            "  {lib}: {} bundles, {} entries, {} disagreements",
            tally.bundles - before.0,
            tally.entries - before.1,
            tally.disagreements.len() - before.2
        );
    }
    check_cuobjdump_records(&dir, &offload, work.path(), &mut tally)?;
    check_wheels(&dir, &offload, work.path(), &mut tally)?;
    eprintln!(
        "realworld: {} files, {} bundles ({} compressed), {} fat binary containers, {} entries; \
         checked: {} bundler -list runs, {} CCOBs decoded, {} llvm-readelf runs, {} llvm-readobj lines, \
         {} zstd frames, {} cuobjdump listing lines, {} cuobjdump-extracted files; {} disagreements",
        tally.files,
        tally.bundles,
        tally.ccobs,
        tally.fatbins,
        tally.entries,
        tally.bundler_lists,
        tally.ccob_decodes,
        tally.readelf,
        tally.readobj_lines,
        tally.zstd_frames,
        tally.cuobjdump_lines,
        tally.cuobjdump_files,
        tally.disagreements.len()
    );
    for d in tally.disagreements.iter().take(50) {
        eprintln!("    {d}");
    }
    if tally.disagreements.is_empty() {
        Ok(())
    } else {
        Err(format!("{} disagreements", tally.disagreements.len()))
    }
}
