//! Heterogeneous device archives (`-type=a` unbundling): any bytes as the
//! input archive, unbundled for some targets: a typed error or output
//! archives, never a panic; every output reads back as an archive; and the
//! same result when the walks report the bytes they are done with (as the
//! tool has them do, to drop mapped pages), with every range reported
//! inside the input.
//!
//! Input layout (so real archives can be seeds): one byte of switches
//! (bit 0: allow missing bundles, bit 1: check the input archive, bit 2:
//! HIP and OpenMP compatible, bits 3 to 7: which of five targets), then
//! the archive. Thin archives are skipped: their members are files named
//! by the input, which a fuzzer must not go reading (the hostile corpus
//! covers them).
#![no_main]

use std::cell::RefCell;
use std::ops::Range;
use std::path::Path;
use std::rc::Rc;

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

fn unbundle(
    input: Result<Input<'_>, String>,
    targets: &[Target],
    options: &Options,
) -> Result<Vec<Vec<u8>>, String> {
    let mut input = input?;
    Unbundled::read(&mut input, targets, options, "lib.a", &mut |_| {})
        .and_then(|plan| plan.finish(&mut |_| {}))
        .and_then(|plan| plan.to_vecs(&mut input))
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

    let plain = unbundle(
        Input::from_bytes(archive, Path::new("lib.a")).map_err(|e| e.to_string()),
        &targets,
        &options,
    );
    let released: Rc<RefCell<Vec<Range<usize>>>> = Rc::default();
    let sink = Rc::clone(&released);
    let releasing = unbundle(
        Input::from_bytes(archive, Path::new("lib.a"))
            .map(|input| input.with_release(move |r| sink.borrow_mut().push(r)))
            .map_err(|e| e.to_string()),
        &targets,
        &options,
    );
    assert_eq!(plain, releasing, "releasing pages changed the result");
    for r in released.borrow().iter() {
        assert!(
            r.start <= r.end && r.end <= archive.len(),
            "released {r:?} of {} bytes",
            archive.len()
        );
    }

    if let Ok(outputs) = plain {
        assert_eq!(outputs.len(), targets.len());
        for out in &outputs {
            let read = Archive::parse(out).expect("an output archive parses");
            for m in read.members() {
                if let Err(e) = m {
                    // GNU long names end at a newline: a member name with
                    // one in it is written as LLVM 22 writes it, and
                    // neither tool reads it back.
                    assert!(
                        long_name_with_newline(out),
                        "every output member reads: {e:?}"
                    );
                    break;
                }
            }
        }
    }
});

/// Whether the archive's long-name table (`//`, after an optional symbol
/// table) holds a name with a newline inside it (one not ending an entry).
fn long_name_with_newline(archive: &[u8]) -> bool {
    let mut at = 8;
    while let Some(header) = archive.get(at..at + 60) {
        let size: usize = std::str::from_utf8(&header[48..58])
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        let body = archive.get(at + 60..).unwrap_or_default();
        let body = &body[..size.min(body.len())];
        if header.starts_with(b"// ") {
            return body.windows(2).any(|w| w[1] == b'\n' && w[0] != b'/');
        }
        if !header.starts_with(b"/ ") && !header.starts_with(b"/SYM64/") {
            return false;
        }
        at += 60 + size + size % 2;
    }
    false
}
