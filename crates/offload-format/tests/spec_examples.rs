//! The worked examples of the specifications (bundler.md §2, and part B of
//! compression-targetid-archive.md), all observed on clang-offload-bundler
//! 22, as readable tables. The exhaustive checks live in `llvm22_tables.rs`.

use offload_format::entry_id::{
    kinds_compatible, validate_targets, EntryId, TargetMode, TargetsError,
};
use offload_format::target_id::{find_conflict, TargetId, TargetIdError};
use offload_format::triple::{normalize, CanonicalForm, Environment, Os, Triple, Vendor};

fn standardise(target: &str) -> String {
    EntryId::parse(target).unwrap().standardised().unwrap()
}

#[test]
fn standardised_ids_written_by_the_bundler() {
    // bundler.md §2.2 and part B2/B3.
    let table = [
        (
            "host-x86_64-unknown-linux-gnu",
            "host-x86_64-unknown-linux-gnu-",
        ),
        ("host-x86_64-pc-linux-gnu", "host-x86_64-pc-linux-gnu-"),
        ("host-x86_64--linux-gnu", "host-x86_64-unknown-linux-gnu-"),
        (
            "host-x86_64-unknown-linux-",
            "host-x86_64-unknown-linux-unknown-",
        ),
        (
            "host-x86_64-linux-gnu-unknown",
            "host-x86_64-unknown-linux-gnu-",
        ),
        ("host-x86_64-linux-gnu-", "host-x86_64-unknown-linux-gnu-"),
        ("host-x86_64----", "host-x86_64-unknown-unknown-unknown-"),
        ("host-x86_64-w64-mingw32-", "host-x86_64-w64-windows-gnu-"),
        ("host-x86_64-pc-win32-", "host-x86_64-pc-windows-msvc-"),
        (
            "host-x86_64-apple-macosx10.15-",
            "host-x86_64-apple-macosx10.15-unknown-",
        ),
        (
            "host-x86_64-apple-darwin-",
            "host-x86_64-apple-darwin-unknown-",
        ),
        (
            "host-x86_64-unknown-linux-gnu-gfx906",
            "host-x86_64-unknown-linux-gnu-gfx906",
        ),
        (
            "host-x86_64-unknown-linux-gnu-foo",
            "host-x86_64-unknown-linux-gnu-",
        ),
        (
            "host-x86_64-pc-linux-gnu-gfx906:xnack+",
            "host-x86_64-pc-linux-gnu-gfx906:xnack+",
        ),
        (
            "hip-amdgcn-amd-amdhsa-unknown-gfx906",
            "hip-amdgcn-amd-amdhsa--gfx906",
        ),
        (
            "hip-amdgcn-amd-amdhsa-gnu-gfx906",
            "hip-amdgcn-amd-amdhsa--gfx906",
        ),
        (
            "hip-amdgcn-amd-amdhsa-elf-gfx906",
            "hip-amdgcn-amd-amdhsa--gfx906",
        ),
        (
            "hip-amdgcn--amdhsa--gfx906",
            "hip-amdgcn-unknown-amdhsa--gfx906",
        ),
        (
            "hip-amdgcn-amdhsa-amd--gfx906",
            "hip-amdgcn-amd-amdhsa-unknown-gfx906",
        ),
        (
            "hip-amdgcn---amdhsa-gfx906",
            "hip-amdgcn-unknown-amdhsa-unknown-gfx906",
        ),
        (
            "hip-amdgcn-amd-amdpal--gfx906",
            "hip-amdgcn-amd-amdpal-unknown-gfx906",
        ),
        (
            "hip-amdgcn-AMD-AMDHSA--gfx906",
            "hip-amdgcn-AMD-AMDHSA-unknown-gfx906",
        ),
        (
            "hip-spirv64-amd-amdhsa--amdgcnspirv",
            "hip-spirv64-amd-amdhsa--amdgcnspirv",
        ),
        (
            "openmp-spirv64-amd-amdhsa-unknown-amdgcnspirv",
            "openmp-spirv64-amd-amdhsa--amdgcnspirv",
        ),
        (
            "openmp-nvptx64-nvidia-cuda--sm_70",
            "openmp-nvptx64-nvidia-cuda-unknown-sm_70",
        ),
        (
            "openmp-nvptx64---sm_70",
            "openmp-nvptx64-unknown-unknown-sm_70-",
        ),
        (
            "openmp-nvptx64-nvidia-cuda-sm_70",
            "openmp-nvptx64-nvidia-cuda-sm_70-",
        ),
        (
            "openmp-nvptx64--cuda--",
            "openmp-nvptx64-unknown-cuda-unknown-",
        ),
        (
            "openmp-x86_64-pc-linux-gnu-elf",
            "openmp-x86_64-pc-linux-gnu-",
        ),
        (
            "openmp-spirv64-unknown-unknown--generic",
            "openmp-spirv64-unknown-unknown-unknown-generic",
        ),
        // Five pieces: the processor is the environment, the target ID is empty.
        ("hip-amdgcn-amd-amdhsa-gfx906", "hip-amdgcn-amd-amdhsa--"),
        (
            "hip-amdgcn-amd-amdhsa-gfx906:xnack+",
            "hip-amdgcn-amd-amdhsa--",
        ),
        (
            "hip-amdgcn-amd-amdhsa-gfx9-generic",
            "hip-amdgcn-amd-amdhsa--generic",
        ),
        // Not offload architectures: dropped with their features.
        ("hip-amdgcn-amd-amdhsa--fiji", "hip-amdgcn-amd-amdhsa--"),
        ("hip-amdgcn-amd-amdhsa--gfx940", "hip-amdgcn-amd-amdhsa--"),
        ("hip-amdgcn-amd-amdhsa--GFX906", "hip-amdgcn-amd-amdhsa--"),
        (
            "hip-amdgcn-amd-amdhsa--gfx906-extra",
            "hip-amdgcn-amd-amdhsa--",
        ),
        // No canonicalisation or syntax check of the features.
        (
            "hip-amdgcn-amd-amdhsa--gfx90a:xnack+:sramecc-",
            "hip-amdgcn-amd-amdhsa--gfx90a:xnack+:sramecc-",
        ),
        (
            "hip-amdgcn-amd-amdhsa--gfx90a:foo+",
            "hip-amdgcn-amd-amdhsa--gfx90a:foo+",
        ),
        (
            "hip-amdgcn-amd-amdhsa--gfx90a:xnack",
            "hip-amdgcn-amd-amdhsa--gfx90a:xnack",
        ),
        (
            "hip-amdgcn-amd-amdhsa--gfx90a:",
            "hip-amdgcn-amd-amdhsa--gfx90a:",
        ),
        // The processor check ignores the triple.
        (
            "openmp-amdgcn-amd-amdhsa--sm_70",
            "openmp-amdgcn-amd-amdhsa--sm_70",
        ),
    ];
    for (input, expected) in table {
        assert_eq!(standardise(input), expected, "{input}");
    }
}

#[test]
fn target_validation_messages() {
    let err = |list: &[&str], mode| validate_targets(list, mode).unwrap_err().to_string();
    assert_eq!(
        err(&["cuda-nvptx64-nvidia-cuda-unknown"], TargetMode::Bundle),
        "invalid target 'cuda-nvptx64-nvidia-cuda-unknown', unknown offloading kind 'cuda'"
    );
    assert_eq!(
        err(&["host-foo-unknown-linux-gnu"], TargetMode::Bundle),
        "invalid target 'host-foo-unknown-linux-gnu', unknown target triple 'foo-unknown-linux-gnu'"
    );
    assert_eq!(
        err(&["cuda-foo-unknown-linux-gnu"], TargetMode::Bundle),
        "invalid target 'cuda-foo-unknown-linux-gnu', unknown offloading kind 'cuda', unknown target triple 'foo-unknown-linux-gnu'"
    );
    assert_eq!(
        err(&["hip-unknown-amd-amdhsa-"], TargetMode::Bundle),
        "invalid target 'hip-unknown-amd-amdhsa-', unknown target triple 'unknown-amd-amdhsa-'"
    );
    for kind in ["sycl", "cuda", "HOST", "Hip"] {
        let target = format!("{kind}-x86_64-pc-linux-gnu");
        assert!(err(&[&target], TargetMode::Bundle).contains("unknown offloading kind"));
    }
    assert_eq!(
        err(&["openmp-nvptx64-nvidia-cuda"], TargetMode::Bundle),
        "Targets need to follow the format '<offload kind>-<target triple>', where '<target triple>' follows the format '<kind>-<arch>-<vendor>-<os>-<env>[-<target id>[:target features]]'."
    );
    assert_eq!(
        err(
            &[
                "hip-amdgcn-amd-amdhsa--gfx906",
                "hip-amdgcn-amd-amdhsa--gfx906"
            ],
            TargetMode::Bundle
        ),
        "Duplicate targets are not allowed"
    );
    // Raw duplicates only: these two are different texts.
    assert_eq!(
        err(
            &[
                "host-x86_64-unknown-linux-gnu",
                "host-x86_64-unknown-linux-gnu-"
            ],
            TargetMode::Bundle
        ),
        "expecting exactly one host target but got 2"
    );
    assert_eq!(
        err(&["openmp-nvptx64-nvidia-cuda--sm_70"], TargetMode::Bundle),
        "expecting exactly one host target but got 0"
    );
    // Unbundling needs no host, but at most one.
    assert!(validate_targets(&["openmp-nvptx64-nvidia-cuda--sm_70"], TargetMode::Unbundle).is_ok());
    // HIP-only bundles need no host.
    let t = validate_targets(
        &[
            "hip-amdgcn-amd-amdhsa--gfx906",
            "hipv4-amdgcn-amd-amdhsa--gfx908",
        ],
        TargetMode::Bundle,
    )
    .unwrap();
    assert!(t.hip_only);
    assert_eq!(t.host_index, None);
}

#[test]
fn conflicting_target_ids_when_bundling() {
    // Part B4: asymmetric, grouped by kind and raw triple.
    let h = "hip-amdgcn-amd-amdhsa-";
    let check = |ids: &[&str]| {
        let list: Vec<String> = ids.iter().map(|id| format!("{h}-{id}")).collect();
        validate_targets(&list, TargetMode::Bundle).err()
    };
    assert_eq!(
        check(&["gfx906", "gfx906:xnack+"]),
        Some(TargetsError::Conflict {
            first: format!("{h}-gfx906"),
            second: format!("{h}-gfx906:xnack+"),
        })
    );
    assert_eq!(check(&["gfx906:xnack+", "gfx906:xnack-"]), None);
    assert_eq!(check(&["gfx90a:xnack+", "gfx90a:sramecc+:xnack+"]), None);
    assert!(check(&["gfx90a:xnack+:sramecc+", "gfx90a:xnack+"]).is_some());
    // Different kinds, or raw triples, are different groups.
    assert!(validate_targets(
        &[
            "hip-amdgcn-amd-amdhsa--gfx906",
            "hipv4-amdgcn-amd-amdhsa--gfx906:xnack+"
        ],
        TargetMode::Bundle
    )
    .is_ok());
    assert!(validate_targets(
        &[
            "hip-amdgcn-amd-amdhsa--gfx906",
            "hip-amdgcn-amd-amdhsa-unknown-gfx906:xnack+"
        ],
        TargetMode::Bundle
    )
    .is_ok());

    // The same rule on whole entry IDs (archive checking).
    assert_eq!(
        find_conflict([
            "hip-amdgcn-amd-amdhsa--gfx906:xnack+",
            "hip-amdgcn-amd-amdhsa--gfx906"
        ]),
        Some((
            "hip-amdgcn-amd-amdhsa--gfx906",
            "hip-amdgcn-amd-amdhsa--gfx906:xnack+"
        ))
    );
    assert_eq!(
        find_conflict([
            "hip-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack+",
            "hip-amdgcn-amd-amdhsa--gfx90a:xnack+"
        ]),
        None
    );
    assert!(find_conflict([
        "hip-amdgcn-amd-amdhsa--gfx90a:xnack+:sramecc+",
        "hip-amdgcn-amd-amdhsa--gfx90a:xnack+"
    ])
    .is_some());
}

#[test]
fn malformed_target_ids_in_the_conflict_check() {
    // What 22 does when a target ID fails the format check (it dereferences
    // an empty optional); observed, and reproduced.
    assert_eq!(
        find_conflict(["gfx906", "gfx906:xnack+:foo"]),
        Some(("gfx906", "gfx906:xnack+:foo"))
    );
    // The bad ID takes the processor of the last good one...
    assert_eq!(
        find_conflict(["gfx906:sramecc+", "gfx908:xnack+:foo"]),
        Some(("gfx906:sramecc+", "gfx908:xnack+:foo"))
    );
    // ...and of nothing when it comes first.
    assert_eq!(
        find_conflict(["gfx906:xnack+:foo", "gfx906:xnack+:sramecc+"]),
        None
    );
    assert_eq!(
        find_conflict(["gfx906:a", "gfx908:b+:c"]),
        Some(("gfx906:a", "gfx908:b+:c"))
    );
    assert_eq!(find_conflict(["gfx906::", "gfx906:xnack+"]), None);
}

#[test]
fn same_standardised_id_is_detectable() {
    let t = validate_targets(
        &[
            "hip-amdgcn-amd-amdhsa--gfx906",
            "hip-amdgcn-amd-amdhsa-unknown-gfx906",
        ],
        TargetMode::Bundle,
    )
    .expect("22 accepts this list");
    assert_eq!(t.standardised_duplicate(), Some((0, 1)));
    assert_eq!(
        t.check_standardised_unique().unwrap_err().to_string(),
        "targets 'hip-amdgcn-amd-amdhsa--gfx906' and 'hip-amdgcn-amd-amdhsa-unknown-gfx906' would both be stored as 'hip-amdgcn-amd-amdhsa--gfx906'"
    );
    let t = validate_targets(
        &[
            "hip-amdgcn-amd-amdhsa--gfx906",
            "hip-amdgcn-amd-amdhsa--gfx908",
        ],
        TargetMode::Bundle,
    )
    .unwrap();
    assert_eq!(t.standardised_duplicate(), None);
    assert!(t.check_standardised_unique().is_ok());
}

/// Part B8 and more: code object entry C (as stored) against requested
/// target T (as given on the command line, standardised before matching);
/// the table is shared with the device-archive unit tests.
#[test]
fn code_object_compatibility_examples() {
    for row in test_support::compatibility::compatibility() {
        let code_object = EntryId::parse(row.code_object).unwrap();
        for target in [row.target, row.other_spelling] {
            let requested = EntryId::parse(&standardise(target)).unwrap();
            assert_eq!(
                code_object.is_compatible_code_object(&requested, row.hip_openmp),
                row.compatible,
                "{row:?} (as {target})"
            );
        }
    }
}

#[test]
fn offload_kind_compatibility() {
    assert!(kinds_compatible("hip", "hipv4", false));
    assert!(kinds_compatible("hipv4", "hip", false));
    assert!(!kinds_compatible("hip", "openmp", false));
    assert!(kinds_compatible("hip", "openmp", true));
    assert!(kinds_compatible("HIPV4", "openmp", true));
    assert!(kinds_compatible("hipfoo", "openmp", true));
    assert!(kinds_compatible("openmp", "hipv4", true));
    assert!(!kinds_compatible("HIP", "hip", true));
    assert!(!kinds_compatible("openmp", "host", true));
    assert!(!kinds_compatible("hi", "openmp", true));
}

#[test]
fn entry_id_pieces() {
    for (text, pieces) in [
        ("", 1),
        ("hip", 1),
        ("hip-amdgcn-amd-amdhsa", 4),
        ("openmp-nvptx64-nvidia-cuda", 4),
    ] {
        assert_eq!(EntryId::parse(text).unwrap_err().pieces, pieces, "{text}");
    }
    let id = EntryId::parse("hip-amdgcn-amd-amdhsa--gfx9-4-generic:xnack+").unwrap();
    assert_eq!(id.target_id(), "gfx9-4-generic:xnack+");
    assert_eq!(id.triple().as_str(), "amdgcn-amd-amdhsa-");
    let id = EntryId::parse("hip-amdgcn-amd-amdhsa--fiji:xnack+").unwrap();
    assert_eq!(id.target_id(), "");
    assert_eq!(id.raw_target_id(), Some("fiji:xnack+"));
    let id = EntryId::parse("hip-amdgcn-amd-amdhsa-gfx906").unwrap();
    assert_eq!(id.triple().environment_name(), "gfx906");
    assert_eq!(id.raw_target_id(), None);
}

#[test]
fn target_id_parsing_and_canonical_form() {
    let amdgcn = Triple::from_parts("amdgcn", "amd", "amdhsa", "");
    let nvptx = Triple::from_parts("nvptx64", "nvidia", "cuda", "");
    let spirv = Triple::from_parts("spirv64", "amd", "amdhsa", "");

    let id = TargetId::parse("gfx908:xnack-:sramecc+", &amdgcn).unwrap();
    assert_eq!(id.canonical(), "gfx908:sramecc+:xnack-");
    assert_eq!(id.to_string(), "gfx908:xnack-:sramecc+");
    assert_eq!(id.feature("xnack"), Some(false));
    assert_eq!(id.feature("sramecc"), Some(true));

    // Alternative names resolve to the canonical processor.
    assert_eq!(
        TargetId::parse("carrizo:xnack+", &amdgcn)
            .unwrap()
            .canonical(),
        "gfx801:xnack+"
    );
    assert_eq!(
        TargetId::parse("fiji", &amdgcn).unwrap().canonical(),
        "gfx803"
    );
    assert_eq!(
        TargetId::parse("gfx906:", &amdgcn).unwrap().canonical(),
        "gfx906"
    );

    let e = |text: &str, t: &Triple| TargetId::parse(text, t).unwrap_err();
    assert_eq!(e("", &amdgcn), TargetIdError::Empty);
    assert_eq!(e(":xnack+", &amdgcn), TargetIdError::EmptyProcessor);
    assert_eq!(
        e("gfx906:xnack", &amdgcn),
        TargetIdError::MissingSign {
            field: "xnack".into()
        }
    );
    assert_eq!(
        e("gfx906::xnack+", &amdgcn),
        TargetIdError::MissingSign { field: "".into() }
    );
    assert_eq!(
        e("gfx906:xnack+:xnack-", &amdgcn),
        TargetIdError::RepeatedFeature {
            feature: "xnack".into()
        }
    );
    assert_eq!(
        e("gfx940", &amdgcn),
        TargetIdError::UnknownProcessor {
            processor: "gfx940".into()
        }
    );
    assert_eq!(
        e("GFX906", &amdgcn),
        TargetIdError::UnknownProcessor {
            processor: "GFX906".into()
        }
    );
    assert_eq!(
        e("gfx1030:xnack+", &amdgcn),
        TargetIdError::UnsupportedFeature {
            processor: "gfx1030".into(),
            feature: "xnack".into()
        }
    );
    assert_eq!(
        e("gfx1250:xnack+", &amdgcn),
        TargetIdError::UnsupportedFeature {
            processor: "gfx1250".into(),
            feature: "xnack".into()
        }
    );
    assert!(matches!(
        e("gfx906:wavefrontsize64+", &amdgcn),
        TargetIdError::UnsupportedFeature { .. }
    ));
    // generic / amdgcnspirv are not amdgcn processors, but parse for SPIR-V.
    assert!(TargetId::parse("generic", &amdgcn).is_err());
    assert_eq!(
        TargetId::parse("amdgcnspirv", &spirv).unwrap().processor(),
        "amdgcnspirv"
    );
    // Non-AMDGPU triples: any processor, no features.
    assert_eq!(
        TargetId::parse("sm_70", &nvptx).unwrap().processor(),
        "sm_70"
    );
    assert!(TargetId::parse("sm_70:xnack+", &nvptx).is_err());

    // Shape-only parsing accepts anything well formed.
    assert_eq!(
        TargetId::parse_syntax("gfx906:+").unwrap().features(),
        &[(String::new(), true)]
    );
    assert!(TargetId::parse_syntax("whatever:foo-:bar+").is_ok());
}

#[test]
fn triple_facts() {
    let cases = [
        ("x86_64-pc-linux-gnu", "x86_64-pc-linux-gnu"),
        ("x86_64-linux-gnu", "x86_64-unknown-linux-gnu"),
        ("x86_64-linux", "x86_64-unknown-linux"),
        ("amdgcn-amd-amdhsa", "amdgcn-amd-amdhsa"),
        ("nvptx64-nvidia-cuda", "nvptx64-nvidia-cuda"),
        ("spirv64-unknown-unknown", "spirv64-unknown-unknown"),
        ("aarch64-linux-gnu", "aarch64-unknown-linux-gnu"),
        ("ppc64le-linux-gnu", "ppc64le-unknown-linux-gnu"),
        ("i386-pc-linux-gnu", "i386-pc-linux-gnu"),
        ("linux-x86_64-gnu", "x86_64-unknown-linux-gnu"),
        ("i686-w64-mingw32", "i686-w64-windows-gnu"),
        ("x86_64-pc-cygwin", "x86_64-pc-windows-cygnus"),
        ("x86_64-pc-win32-elf", "x86_64-pc-windows-elf"),
        ("x86_64-pc-windows-msvc-elf", "x86_64-pc-windows-msvc-elf"),
        ("arm-linux-androideabi", "arm-unknown-linux-android"),
        ("armv7-linux-androideabi21", "armv7-unknown-linux-android21"),
        ("armv7-suse-linux-gnueabi", "armv7-suse-linux-gnueabihf"),
        ("thumbv7em-none-eabi", "thumbv7em-unknown-none-eabi"),
        (
            "dxil-pc-shadermodel6.3-library",
            "dxilv1.3-pc-shadermodel6.3-library",
        ),
        ("dxil-shadermodel6.x", "dxilv1.9-unknown-shadermodel6.x"),
        ("", "unknown"),
        ("---", "unknown-unknown-unknown-unknown"),
    ];
    for (input, expected) in cases {
        assert_eq!(
            normalize(input, CanonicalForm::Any).unwrap(),
            expected,
            "{input}"
        );
    }
    assert_eq!(
        normalize("dxil-unknown-shadermodel6.10-library", CanonicalForm::Any)
            .unwrap_err()
            .to_string(),
        "Unsupported Shader Model version"
    );

    // Parsing is positional and never fails.
    let t = Triple::new("x86_64-pc-windows-msvc-coff");
    assert_eq!(t.environment_name(), "msvc-coff");
    assert_eq!(t.os(), Os::Win32);
    assert_eq!(t.environment(), Environment::Msvc);
    let t = Triple::from_parts("amdgcn", "AMD", "AMDHSA", "");
    assert_eq!((t.vendor(), t.os()), (Vendor::Unknown, Os::Unknown));

    // Compatibility compares parsed values, with LLVM's exceptions.
    let p = |s: &str| {
        let v: Vec<&str> = s.split('-').collect();
        Triple::from_parts(v[0], v[1], v[2], v[3])
    };
    assert!(p("x86_64-unknown-linux-").is_compatible_with(&p("x86_64-unknown-linux-foo")));
    assert!(!p("x86_64-unknown-linux-gnu").is_compatible_with(&p("x86_64-pc-linux-gnu")));
    assert!(!p("x86_64-unknown-linux-gnu").is_compatible_with(&p("x86_64-unknown-linux-musl")));
    assert!(p("x86_64-apple-macosx10.15-").is_compatible_with(&p("x86_64-apple-macosx11-elf")));
    assert!(p("x86_64-w64-windows-gnu").is_compatible_with(&p("x86_64-pc-windows-gnu")));
    assert!(p("thumbv7-unknown-linux-gnueabihf")
        .is_compatible_with(&p("armv7-unknown-linux-gnueabihf")));
    assert!(!p("nvptx64-nvidia-cuda-").is_compatible_with(&p("nvptx-nvidia-cuda-")));
}
