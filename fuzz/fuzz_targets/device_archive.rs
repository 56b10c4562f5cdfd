//! Heterogeneous device archives (`-type=a` unbundling): any bytes as the
//! input archive, read from memory and from a file (where members are
//! indexed by a header walk of their own, which must agree with the
//! in-memory reader), unbundled for some targets: the same typed error or
//! the same output archives both ways, never a panic, and every output
//! reads back as an archive.
//!
//! Input layout (so real archives can be seeds): one byte of switches
//! (bit 0: allow missing bundles, bit 1: check the input archive, bit 2:
//! HIP and OpenMP compatible, bits 3 to 7: which of five targets), then
//! the archive. Thin archives are skipped: their members are files named
//! by the input, which a fuzzer must not go reading (the hostile corpus
//! covers them).
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use offload_format::archive::Archive;
use offload_format::device_archive::{Input, Options, Target, Unbundled};

const TARGETS: [&str; 5] = [
    "hip-amdgcn-amd-amdhsa--gfx906",
    "hip-amdgcn-amd-amdhsa--gfx90a:xnack+",
    "hipv4-amdgcn-amd-amdhsa--gfx908",
    "openmp-amdgcn-amd-amdhsa--gfx906",
    "host-x86_64-unknown-linux-gnu-",
];

/// A scratch file of this process for the streamed reading: in memory
/// (`/dev/shm`) where there is one, as rewriting a file on ext4 waits for
/// the disk and would cut the executions per second by ten.
fn scratch() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let shm = Path::new("/dev/shm");
        let dir = if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        dir.join(format!("device-archive-fuzz-{}.a", std::process::id()))
    })
}

fn unbundle(
    input: Result<Input<'_>, String>,
    targets: &[Target],
    options: &Options,
) -> Result<Vec<Vec<u8>>, String> {
    let mut input = input?;
    Unbundled::to_vecs(&mut input, targets, options, "lib.a", &mut |_| {})
        .map_err(|e| e.to_string())
}

fuzz_target!(|data: &[u8]| {
    let Some((&switches, archive)) = data.split_first() else {
        return;
    };
    if archive.starts_with(b"!<thin>\n") {
        return;
    }
    let options = Options {
        allow_missing_bundles: switches & 1 != 0,
        check_input_archive: switches & 2 != 0,
        hip_openmp_compatible: switches & 4 != 0,
        ..Options::default()
    };
    let mut targets: Vec<Target> = TARGETS
        .iter()
        .enumerate()
        .filter(|(i, _)| switches >> 3 & (1 << i) != 0)
        .map(|(_, t)| Target::new(t).expect("a valid target"))
        .collect();
    if targets.is_empty() {
        targets.push(Target::new(TARGETS[0]).expect("a valid target"));
    }

    let in_memory = unbundle(
        Input::from_bytes(archive, Path::new("lib.a")).map_err(|e| e.to_string()),
        &targets,
        &options,
    );
    std::fs::write(scratch(), archive).expect("scratch file");
    let from_file = unbundle(
        Input::open(scratch()).map_err(|e| e.to_string()),
        &targets,
        &options,
    );
    // Removed each time, so that no run leaves one behind.
    let _ = std::fs::remove_file(scratch());
    assert_eq!(in_memory, from_file, "memory and file readings differ");

    if let Ok(outputs) = in_memory {
        assert_eq!(outputs.len(), targets.len());
        for out in &outputs {
            let read = Archive::parse(out).expect("an output archive parses");
            for m in read.members() {
                m.expect("every output member reads");
            }
        }
    }
});
