//! Where we deliberately differ from LLVM 22 (see
//! `docs/compat.md#llvm-offload-binary--clang-offload-packager`): inputs 22 rejects but we read (offload
//! binary versions 2 and 3), and inputs that make 22 read out of bounds,
//! which we reject with a clear error, exit 1, and no output.

use std::fs;
use std::path::Path;
use std::process::Output;

use offload_format::offload_binary::write::{write_multi, Compression};
use offload_format::offload_binary::{ImageEntry, ImageKind, OffloadKind};
use test_support::file_names as names;

fn run(dir: &Path, args: &[&str]) -> Output {
    let exe = env!("CARGO_BIN_EXE_llvm-offload-binary");
    test_support::run_as(exe, "llvm-offload-binary", dir, args)
}

fn entry<'a>(triple: &'a str, arch: &'a str, image: &'a [u8]) -> ImageEntry<'a> {
    ImageEntry {
        image_kind: ImageKind::OBJECT,
        offload_kind: OffloadKind::OPENMP,
        flags: 0,
        strings: vec![(b"triple", triple.as_bytes()), (b"arch", arch.as_bytes())],
        image,
    }
}

#[test]
fn versions_2_and_3_are_read() {
    let a = entry("x86_64-pc-linux-gnu", "generic", b"first");
    let b = entry("amdgcn-amd-amdhsa", "gfx90a", b"second");
    for (version, compression, tag) in [
        (2, None, "v2"),
        (3, None, "v3"),
        (3, Some(Compression::Zlib(9)), "v3-zlib"),
        (3, Some(Compression::Zstd(3)), "v3-zstd"),
    ] {
        let d = tempfile::tempdir().unwrap();
        let mut blob = write_multi(&[a.clone(), b.clone()], version, compression);
        // Followed by an ordinary version 1 binary.
        blob.extend(entry("t", "", b"third").to_v1());
        fs::write(d.path().join("in.bin"), blob).unwrap();
        let out = run(d.path(), &["in.bin", "--image="]);
        assert_eq!(out.status.code(), Some(0), "{tag}: {:?}", out);
        assert!(out.stderr.is_empty(), "{tag}");
        let p = d.path();
        assert_eq!(
            fs::read(p.join("in-x86_64-pc-linux-gnu-generic.0.o")).unwrap(),
            b"first"
        );
        assert_eq!(
            fs::read(p.join("in-amdgcn-amd-amdhsa-gfx90a.1.o")).unwrap(),
            b"second"
        );
        assert_eq!(fs::read(p.join("in-t-.2.o")).unwrap(), b"third");
    }
}

/// A good version 1 binary with one 8-byte field replaced.
fn patched(at: usize, value: u64) -> Vec<u8> {
    let mut b = entry("t", "a", b"image").to_v1();
    b[at..at + 8].copy_from_slice(&value.to_le_bytes());
    b
}

#[test]
fn out_of_bounds_fields_are_errors() {
    // 22 reads out of bounds on each of these (segfault or garbage output).
    let cases: &[(&str, usize, u64, &str)] = &[
        (
            "image size",
            64,
            1 << 40,
            "'in.bin': offload binary at offset 0: image at offset 128 of size 1099511627776 \
             extends past the end of the offload binary (size 136)",
        ),
        (
            "string count",
            48,
            u64::MAX / 4,
            "'in.bin': offload binary at offset 0: 4611686018427387903 string entries at offset 72 \
             extend past the end of the offload binary (size 136)",
        ),
        (
            "key offset",
            72,
            137,
            "'in.bin': offload binary at offset 0: string at offset 137 lies past the end of the \
             offload binary (size 136)",
        ),
    ];
    for (what, at, value, message) in cases {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("in.bin"), patched(*at, *value)).unwrap();
        fs::write(d.path().join("keep.o"), b"untouched").unwrap();
        let out = run(d.path(), &["in.bin", "--image=", "--image=file=keep.o"]);
        assert_eq!(out.status.code(), Some(1), "{what}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!("llvm-offload-binary: error: {message}\n"),
            "{what}"
        );
        assert!(out.stdout.is_empty());
        assert_eq!(names(d.path()), ["in.bin", "keep.o"], "{what}: no output");
        assert_eq!(fs::read(d.path().join("keep.o")).unwrap(), b"untouched");
    }
}

/// An image claiming 1 TiB past the end of its binary, written to a file
/// under a file-size limit (`ulimit -f`): LLVM 22 sizes its output from the
/// image first and dies by `SIGXFSZ`. The range is known bad before any
/// output exists, so we never size one: exit 1 with the range error, and
/// no file made, whatever the limit.
#[test]
fn an_image_past_the_end_under_a_file_size_limit_is_an_error_not_sigxfsz() {
    let d = tempfile::tempdir().unwrap();
    fs::write(d.path().join("in.bin"), patched(64, 1 << 40)).unwrap();
    let exe = env!("CARGO_BIN_EXE_llvm-offload-binary");
    for filter in ["--image=file=o1", "--image="] {
        // 1000 blocks of 512 bytes: far below the image's recorded size.
        let out = std::process::Command::new("bash")
            .current_dir(d.path())
            .args([
                "-c",
                "ulimit -f 1000 && exec -a llvm-offload-binary \"$0\" \"$@\"",
            ])
            .args([exe, "in.bin", filter])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{filter}: {out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "llvm-offload-binary: error: 'in.bin': offload binary at offset 0: image at offset \
             128 of size 1099511627776 extends past the end of the offload binary (size 136)\n",
            "{filter}"
        );
        assert!(out.stdout.is_empty());
        assert_eq!(names(d.path()), ["in.bin"], "{filter}: no output");
    }
}

/// An archive of one member `m.bin` holding `member`, whose header says
/// `size` bytes.
fn archive_of(member: &[u8], size: usize) -> Vec<u8> {
    let mut ar = b"!<arch>\n".to_vec();
    ar.extend(test_support::ar::member_header("m.bin/", size as u64));
    ar.extend_from_slice(member);
    ar
}

#[test]
fn errors_inside_archive_members_name_the_member() {
    let d = tempfile::tempdir().unwrap();
    let bad = patched(64, 1 << 40);
    fs::write(d.path().join("lib.a"), archive_of(&bad, bad.len())).unwrap();
    let out = run(d.path(), &["lib.a", "--image="]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "llvm-offload-binary: error: 'lib.a': member 'm.bin': offload binary at offset 0: image at \
         offset 128 of size 1099511627776 extends past the end of the offload binary (size 136)\n"
    );
}

#[test]
fn archive_member_past_the_end_is_reported_before_use() {
    // 22 hands out the member with bytes beyond the input, then complains.
    // Here the member's last 8 bytes, its image, are missing: what 22
    // extracts depends on what lies beyond its buffer. (Where the bytes
    // present decide the member's own error, 22 gives that error first,
    // and so do we: drop_in_texts.rs.)
    let d = tempfile::tempdir().unwrap();
    let good = entry("t", "a", b"image").to_v1();
    fs::write(
        d.path().join("lib.a"),
        archive_of(&good[..good.len() - 8], good.len()),
    )
    .unwrap();
    let out = run(d.path(), &["lib.a", "--image="]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("llvm-offload-binary: error: truncated or malformed archive ("),
        "{err}"
    );
    assert_eq!(names(d.path()), ["lib.a"]);
}

#[test]
fn module_asm_bitcode_cannot_be_archived() {
    // 22 segfaults computing the symbol table of such a member.
    let asm = fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/bitcode/asm.bc"
    ))
    .unwrap();
    let d = tempfile::tempdir().unwrap();
    let e = ImageEntry {
        image_kind: ImageKind::BITCODE,
        ..entry("t", "a", &asm)
    };
    fs::write(d.path().join("in.bin"), e.to_v1()).unwrap();
    let out = run(d.path(), &["in.bin", "--archive", "--image=file=lib.a"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "llvm-offload-binary: error: 'in.bin': bitcode with module-level inline assembly cannot \
         be archived (LLVM 22 crashes here)\n"
    );
    assert_eq!(names(d.path()), ["in.bin"]);
}

#[test]
fn failed_extraction_leaves_no_earlier_outputs() {
    // LLVM 22 writes ok.o for the first filter, then fails on the second;
    // we fail with the same message and leave the directory as it was,
    // including a pre-existing file the first filter would have replaced.
    let d = tempfile::tempdir().unwrap();
    fs::write(d.path().join("in.bin"), entry("t", "a", b"image").to_v1()).unwrap();
    fs::write(d.path().join("ok.o"), b"old").unwrap();
    let out = run(
        d.path(),
        &[
            "in.bin",
            "--image=file=ok.o",
            "--image=file=no/such/dir/x.o",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "llvm-offload-binary: error: No such file or directory\n"
    );
    assert_eq!(fs::read(d.path().join("ok.o")).unwrap(), b"old");
    assert_eq!(names(d.path()), ["in.bin", "ok.o"]);
}
