//! Where LLVM 22's bundler fails cleanly, we print exactly its text (our
//! own explanation only with `OFFLOAD_TOOLS_EXPLAIN`): cases found by
//! `cargo xtask mutate`, each checked against clang-offload-bundler-22
//! when it is installed, else against the recorded text
//! (`tests/fixtures/drop_in_texts/`).

use std::fs;
use std::path::Path;

use test_support::llvm_text::{check, Case};

/// A HIP `-fgpu-rdc` library of two objects, `k1.o` and
/// `k2_with_a_long_name.o` (clang-22 built it: tests/fixtures/archive/gen.sh).
fn library() -> Vec<u8> {
    fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/archive/hip-input.a"))
        .unwrap()
}

/// A file of `tests/fixtures/object_bundle/`.
fn fixture(name: &str) -> Vec<u8> {
    fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/object_bundle")
            .join(name),
    )
    .unwrap()
}

/// Runs `args` as the recorded case `recorded` and checks that it ends as
/// LLVM 22 does when llvm-objcopy refuses a host: llvm-objcopy's line
/// (`llvm-objcopy: error: <reason>`), then the bundler's. Returns the
/// whole text, temporary names masked.
fn objcopy_refusal(
    recorded: &'static str,
    args: &[&str],
    setup: &dyn Fn(&Path),
    reason: &str,
) -> String {
    let case = Case {
        args,
        ..unbundle_a(recorded, &[])
    };
    let out = check(&case, setup);
    let text = String::from_utf8_lossy(&test_support::llvm_text::mask_temp_names(&out.stderr))
        .into_owned();
    assert!(
        text.starts_with(&format!(
            "llvm-objcopy: error: {reason}\n\
             clang-offload-bundler: error: 'llvm-objcopy' tool failed\n"
        )),
        "{text}"
    );
    text
}

/// Offset of `k1.o`'s member header in [`library`].
fn k1_header(lib: &[u8]) -> usize {
    lib.windows(8).position(|w| w == b"k1.o/   ").unwrap()
}

fn u64_at(b: &[u8], at: usize) -> usize {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap()) as usize
}

fn unbundle_a(recorded: &'static str, args: &'static [&'static str]) -> Case<'static> {
    Case {
        ours: env!("CARGO_BIN_EXE_clang-offload-bundler"),
        llvm: "clang-offload-bundler-22",
        arg0: "clang-offload-bundler",
        args,
        recorded,
    }
}

const UNBUNDLE_A: &[&str] = &[
    "-unbundle",
    "-type=a",
    "-targets=hip-amdgcn-amd-amdhsa--gfx906",
    "-input=in.a",
    "-output=o1",
    "-allow-missing-bundles",
];

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn header_bytes_that_are_not_utf8_are_quoted_as_stored() {
    let lib = library();
    let at = k1_header(&lib);
    // `k\xFF.o` (the byte after `k` made 0xFF), and a second byte of the
    // header made 0xFF: a digit of the size field, or its terminator.
    for (second, recorded, shown) in [
        (50, "bundler-size-field-not-utf8", &b"11\xFF"[..]),
        (58, "bundler-member-name-not-utf8", &b"k\xFF.o)\n"[..]),
    ] {
        let mut bad = lib.clone();
        bad[at + 1] = 0xFF;
        bad[at + second] = 0xFF;
        let setup = |d: &Path| fs::write(d.join("in.a"), &bad).unwrap();
        let out = check(&unbundle_a(recorded, UNBUNDLE_A), &setup);
        assert!(
            out.stderr.windows(shown.len()).any(|w| w == shown),
            "{recorded}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn a_damaged_member_cut_by_the_end_reports_the_member_first() {
    // k1.o's string table section made SHT_NULL, and the archive cut 56
    // bytes before k1.o's end (in its section table, after the damage).
    let mut lib = library();
    let data = k1_header(&lib) + 60;
    let shoff = u64_at(&lib, data + 0x28);
    lib[data + shoff + 64 + 4..data + shoff + 64 + 8].fill(0);
    lib.truncate(12100);
    let setup = |d: &Path| fs::write(d.join("in.a"), &lib).unwrap();
    let out = check(
        &unbundle_a("bundler-cut-damaged-member", UNBUNDLE_A),
        &setup,
    );
    assert!(
        stderr(&out).contains("invalid sh_type for string table section [index 1]"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_host_llvm_objcopy_refuses_prints_both_lines() {
    // k1.o with `.rela.text`'s sh_link out of range: the bundler reads it,
    // llvm-objcopy refuses to rewrite it.
    let lib = library();
    let data = k1_header(&lib) + 60;
    let mut k1 = lib[data..data + 11832].to_vec();
    let shoff = u64_at(&k1, 0x28);
    k1[shoff + 3 * 64 + 40..shoff + 3 * 64 + 44].copy_from_slice(&99u32.to_le_bytes());
    let setup = |d: &Path| fs::write(d.join("in.o"), &k1).unwrap();
    let case = Case {
        args: &[
            "-unbundle",
            "-type=o",
            "-targets=host-x86_64-pc-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906",
            "-input=in.o",
            "-output=o1",
            "-output=o2",
        ],
        ..unbundle_a("bundler-objcopy-refuses-host", &[])
    };
    let out = check(&case, &setup);
    assert!(
        stderr(&out).ends_with(
            "clang-offload-bundler: note: llvm-objcopy cannot rewrite the host object of 'in.o' \
             without its bundle sections: Link field value 99 in section .rela.text is invalid\n"
        ),
        "{}",
        stderr(&out)
    );
}

/// A COFF host llvm-objcopy refuses: its COFF reader names the input as
/// given, then the bundler reports the tool's failure.
#[test]
fn a_coff_host_llvm_objcopy_refuses_prints_both_lines() {
    let fat = fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/object_bundle/fat-x86_64-pc-windows-msvc.o"),
    )
    .unwrap();
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let section = |i: usize| 20 + 40 * i;
    let symbols = u32_at(&fat, 8) as usize;
    // `.text` (section 0): its first relocation's symbol index.
    let mut reloc = fat.clone();
    let first = u32_at(&fat, section(0) + 24) as usize;
    reloc[first + 4..first + 8].copy_from_slice(&999u32.to_le_bytes());
    // The first symbol's section number.
    let mut number = fat.clone();
    number[symbols + 12..symbols + 14].copy_from_slice(&99u16.to_le_bytes());
    // `.debug$S` (section 5): raw data past the end of the file.
    let mut size = fat.clone();
    size[section(5) + 16..section(5) + 20].copy_from_slice(&0x00C8_0000u32.to_le_bytes());
    for (recorded, input, reason) in [
        (
            "bundler-objcopy-refuses-coff-relocation",
            &reloc,
            "SymbolTableIndex out of range",
        ),
        (
            "bundler-objcopy-refuses-coff-section-number",
            &number,
            "section number out of range",
        ),
        (
            "bundler-objcopy-refuses-coff-raw-data",
            &size,
            "The end of the file was unexpectedly encountered",
        ),
    ] {
        let setup = |d: &Path| fs::write(d.join("in.obj"), input).unwrap();
        let case = Case {
            args: &[
                "-unbundle",
                "-type=o",
                "-targets=host-x86_64-pc-windows-msvc,hip-amdgcn-amd-amdhsa--gfx906",
                "-input=in.obj",
                "-output=o1",
                "-output=o2",
            ],
            ..unbundle_a(recorded, &[])
        };
        let out = check(&case, &setup);
        assert!(
            stderr(&out).starts_with(&format!(
                "llvm-objcopy: error: 'in.obj': {reason}\n\
                 clang-offload-bundler: error: 'llvm-objcopy' tool failed\n"
            )),
            "{}",
            stderr(&out)
        );
        assert!(
            stderr(&out).ends_with(&format!(
                "clang-offload-bundler: note: llvm-objcopy cannot rewrite the host object of \
                 'in.obj' without its bundle sections: {reason}\n"
            )),
            "{}",
            stderr(&out)
        );
    }
}

/// Which file llvm-objcopy 22 names when it refuses a host: none for its
/// ELF reader's errors (above), the input as given for errors removing ELF
/// sections, and the output it was writing, the bundler's temporary file,
/// for its COFF writer's errors (the recordings mask the random part of
/// that name).
#[test]
fn llvm_objcopy_names_the_file_its_phase_had() {
    for (recorded, file, targets, named, reason) in [
        (
            "bundler-objcopy-refuses-elf-link-to-bundle",
            "edge/linkorder_to_bundle.o",
            "-targets=host-x86_64-unknown-linux-gnu-",
            "in.o",
            "section '__CLANG_OFFLOAD_BUNDLE__host-x86_64-unknown-linux-gnu-' cannot be removed \
             because it is referenced by the section '.meta'",
        ),
        (
            "bundler-objcopy-refuses-coff-relocation-target",
            "edge-coff/relocto.add.out",
            "-targets=hip-amdgcn-amd-amdhsa--gfx906,host-x86_64-unknown-linux-gnu-",
            "/tmp/clang-offload-bundler-XXXXXX.tmp",
            "relocation target 'inside' (5) not found",
        ),
        (
            "bundler-objcopy-refuses-coff-weak-target",
            "edge-coff/weak.o",
            "-targets=host-x86_64-pc-windows-msvc-",
            "/tmp/clang-offload-bundler-XXXXXX.tmp",
            "symbol 'w2' is missing its weak target",
        ),
        (
            "bundler-objcopy-refuses-coff-stale-symidx",
            "edge-coff/symidx_stale.o",
            "-targets=host-x86_64-pc-windows-msvc-",
            "/tmp/clang-offload-bundler-XXXXXX.tmp",
            "section '.gfids$y' contains a .symidx (10) that is incorrect or was stripped",
        ),
    ] {
        let input = fixture(file);
        let setup = |d: &Path| fs::write(d.join("in.o"), &input).unwrap();
        let outputs = ["-output=o1", "-output=o2"];
        let n = targets.matches(',').count() + 1;
        let args: Vec<&str> = ["-unbundle", "-type=o", targets, "-input=in.o"]
            .into_iter()
            .chain(outputs[..n].iter().copied())
            .collect();
        objcopy_refusal(recorded, &args, &setup, &format!("'{named}': {reason}"));
    }
}

/// `-type=a`: LLVM 22 hands llvm-objcopy a host member as a temporary file
/// and names it (or its output) where -type=o names the input; its ELF
/// reader's errors name nothing, as there.
#[test]
fn a_host_member_llvm_objcopy_refuses_prints_both_lines() {
    let archive = |member: &[u8]| {
        let mut a = b"!<arch>\n".to_vec();
        a.extend_from_slice(&test_support::ar::member_header(
            "m.o/",
            member.len() as u64,
        ));
        a.extend_from_slice(member);
        if member.len() % 2 == 1 {
            a.push(b'\n');
        }
        a
    };
    for (recorded, file, target, reason) in [
        (
            "bundler-objcopy-refuses-archive-elf-link-to-bundle",
            "edge/linkorder_to_bundle.o",
            "-targets=host-x86_64-unknown-linux-gnu-",
            "'/tmp/clang-offload-bundler-XXXXXX.tmp': section \
             '__CLANG_OFFLOAD_BUNDLE__host-x86_64-unknown-linux-gnu-' cannot be removed because \
             it is referenced by the section '.meta'",
        ),
        (
            "bundler-objcopy-refuses-archive-coff-weak-target",
            "edge-coff/weak.o",
            "-targets=host-x86_64-pc-windows-msvc-",
            "'/tmp/clang-offload-bundler-XXXXXX.tmp': symbol 'w2' is missing its weak target",
        ),
    ] {
        let lib = archive(&fixture(file));
        let setup = |d: &Path| fs::write(d.join("in.a"), &lib).unwrap();
        let args = [
            "-unbundle",
            "-type=a",
            target,
            "-input=in.a",
            "-output=o1",
            "-allow-missing-bundles",
        ];
        let text = objcopy_refusal(recorded, &args, &setup, reason);
        assert!(
            text.contains("host object of 'in.a(m.o)' without its bundle sections"),
            "{text}"
        );
    }
}
