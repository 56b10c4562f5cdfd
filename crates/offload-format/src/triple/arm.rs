//! The ARM/AArch64 architecture-name rules LLVM applies when a triple's
//! architecture starts with `arm`, `thumb` or `aarch64` (`armv7a`,
//! `thumbv6m`, `armebv7`, …), and the ARM sub-architecture lookup.

use super::{Arch, SubArch};

/// ARM architecture kinds, in the order of LLVM 22's ARM architecture table
/// (the order matters: lookups take the first name ending with the query).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ArmArchKind {
    Invalid,
    V4,
    V4t,
    V5t,
    V5te,
    V5tej,
    V6,
    V6k,
    V6t2,
    V6kz,
    V6m,
    V7a,
    V7ve,
    V7r,
    V7m,
    V7em,
    V8a,
    V8_1a,
    V8_2a,
    V8_3a,
    V8_4a,
    V8_5a,
    V8_6a,
    V8_7a,
    V8_8a,
    V8_9a,
    V9a,
    V9_1a,
    V9_2a,
    V9_3a,
    V9_4a,
    V9_5a,
    V9_6a,
    V9_7a,
    V8r,
    V8mBaseline,
    V8mMainline,
    V8_1mMainline,
    Iwmmxt,
    Iwmmxt2,
    Xscale,
    V7s,
    V7k,
}

const ARM_ARCH_NAMES: &[(&str, ArmArchKind)] = &[
    ("invalid", ArmArchKind::Invalid),
    ("armv4", ArmArchKind::V4),
    ("armv4t", ArmArchKind::V4t),
    ("armv5t", ArmArchKind::V5t),
    ("armv5te", ArmArchKind::V5te),
    ("armv5tej", ArmArchKind::V5tej),
    ("armv6", ArmArchKind::V6),
    ("armv6k", ArmArchKind::V6k),
    ("armv6t2", ArmArchKind::V6t2),
    ("armv6kz", ArmArchKind::V6kz),
    ("armv6-m", ArmArchKind::V6m),
    ("armv7-a", ArmArchKind::V7a),
    ("armv7ve", ArmArchKind::V7ve),
    ("armv7-r", ArmArchKind::V7r),
    ("armv7-m", ArmArchKind::V7m),
    ("armv7e-m", ArmArchKind::V7em),
    ("armv8-a", ArmArchKind::V8a),
    ("armv8.1-a", ArmArchKind::V8_1a),
    ("armv8.2-a", ArmArchKind::V8_2a),
    ("armv8.3-a", ArmArchKind::V8_3a),
    ("armv8.4-a", ArmArchKind::V8_4a),
    ("armv8.5-a", ArmArchKind::V8_5a),
    ("armv8.6-a", ArmArchKind::V8_6a),
    ("armv8.7-a", ArmArchKind::V8_7a),
    ("armv8.8-a", ArmArchKind::V8_8a),
    ("armv8.9-a", ArmArchKind::V8_9a),
    ("armv9-a", ArmArchKind::V9a),
    ("armv9.1-a", ArmArchKind::V9_1a),
    ("armv9.2-a", ArmArchKind::V9_2a),
    ("armv9.3-a", ArmArchKind::V9_3a),
    ("armv9.4-a", ArmArchKind::V9_4a),
    ("armv9.5-a", ArmArchKind::V9_5a),
    ("armv9.6-a", ArmArchKind::V9_6a),
    ("armv9.7-a", ArmArchKind::V9_7a),
    ("armv8-r", ArmArchKind::V8r),
    ("armv8-m.base", ArmArchKind::V8mBaseline),
    ("armv8-m.main", ArmArchKind::V8mMainline),
    ("armv8.1-m.main", ArmArchKind::V8_1mMainline),
    ("iwmmxt", ArmArchKind::Iwmmxt),
    ("iwmmxt2", ArmArchKind::Iwmmxt2),
    ("xscale", ArmArchKind::Xscale),
    ("armv7s", ArmArchKind::V7s),
    ("armv7k", ArmArchKind::V7k),
];

/// Short spellings that stand for a table name.
fn arch_synonym(arch: &str) -> &str {
    match arch {
        "v5" => "v5t",
        "v5e" => "v5te",
        "v6j" => "v6",
        "v6hl" => "v6k",
        "v6m" | "v6sm" | "v6s-m" => "v6-m",
        "v6z" | "v6zk" => "v6kz",
        "v7" | "v7a" | "v7hl" | "v7l" => "v7-a",
        "v7r" => "v7-r",
        "v7m" => "v7-m",
        "v7em" => "v7e-m",
        "v8" | "v8a" | "v8l" | "aarch64" | "arm64" => "v8-a",
        "v8.1a" => "v8.1-a",
        "v8.2a" => "v8.2-a",
        "v8.3a" => "v8.3-a",
        "v8.4a" => "v8.4-a",
        "v8.5a" => "v8.5-a",
        "v8.6a" => "v8.6-a",
        "v8.7a" => "v8.7-a",
        "v8.8a" => "v8.8-a",
        "v8.9a" => "v8.9-a",
        "v8r" => "v8-r",
        "v9" | "v9a" => "v9-a",
        "v9.1a" => "v9.1-a",
        "v9.2a" => "v9.2-a",
        "v9.3a" => "v9.3-a",
        "v9.4a" => "v9.4-a",
        "v9.5a" => "v9.5-a",
        "v9.6a" => "v9.6-a",
        "v9.7a" => "v9.7-a",
        "v8m.base" => "v8-m.base",
        "v8m.main" => "v8-m.main",
        "v8.1m.main" => "v8.1-m.main",
        other => other,
    }
}

/// Strips the `arm`/`thumb`/`aarch64` family prefix and any `eb` marker,
/// leaving the version part (`armebv7a` → `v7a`). Returns the input itself
/// when nothing is left after the prefix, and `""` for a malformed name.
pub(crate) fn canonical_arch_name(arch: &str) -> &str {
    const PREFIXES: &[(&str, usize)] = &[
        ("arm64_32", 8),
        ("arm64e", 6),
        ("arm64", 5),
        ("aarch64_32", 10),
        ("arm", 3),
        ("thumb", 5),
    ];
    let bytes = arch.as_bytes();
    let mut offset = PREFIXES
        .iter()
        .find(|(prefix, _)| arch.starts_with(prefix))
        .map(|&(_, len)| len);
    if offset.is_none() && arch.starts_with("aarch64") {
        // AArch64 spells big endian `_be`, never `eb`.
        if arch.contains("eb") {
            return "";
        }
        offset = Some(if bytes.get(7..10) == Some(b"_be") {
            10
        } else {
            7
        });
    }

    let mut rest = arch;
    match offset {
        // "armebv7": the byte-order marker sits right after the prefix.
        Some(off) if bytes.get(off..off + 2) == Some(b"eb") => offset = Some(off + 2),
        // "armv7eb": it sits at the end.
        _ => rest = rest.strip_suffix("eb").unwrap_or(rest),
    }
    if let Some(off) = offset {
        rest = rest.get(off..).unwrap_or("");
    }

    if rest.is_empty() {
        return arch;
    }
    if offset.is_some() {
        let r = rest.as_bytes();
        // Only "vN…" spellings are accepted after a family prefix.
        if r.len() >= 2 && (r[0] != b'v' || !r[1].is_ascii_digit()) {
            return "";
        }
        if rest.contains("eb") {
            return "";
        }
    }
    rest
}

/// Looks an ARM architecture name up in the table (LLVM's `ARM::parseArch`):
/// the first table name that ends with the canonical, de-synonymed query.
pub(crate) fn parse_arch_kind(arch: &str) -> ArmArchKind {
    let synonym = arch_synonym(canonical_arch_name(arch));
    ARM_ARCH_NAMES
        .iter()
        .find(|(name, _)| name.ends_with(synonym))
        .map_or(ArmArchKind::Invalid, |&(_, kind)| kind)
}

/// The triple sub-architecture an ARM architecture kind maps to.
pub(crate) fn sub_arch_of(kind: ArmArchKind) -> SubArch {
    use ArmArchKind as K;
    match kind {
        K::V4t => SubArch::ArmV4t,
        K::V5t => SubArch::ArmV5,
        K::V5te | K::Iwmmxt | K::Iwmmxt2 | K::Xscale | K::V5tej => SubArch::ArmV5te,
        K::V6 => SubArch::ArmV6,
        K::V6k | K::V6kz => SubArch::ArmV6k,
        K::V6t2 => SubArch::ArmV6t2,
        K::V6m => SubArch::ArmV6m,
        K::V7a | K::V7r => SubArch::ArmV7,
        K::V7ve => SubArch::ArmV7ve,
        K::V7k => SubArch::ArmV7k,
        K::V7m => SubArch::ArmV7m,
        K::V7s => SubArch::ArmV7s,
        K::V7em => SubArch::ArmV7em,
        K::V8a => SubArch::ArmV8,
        K::V8_1a => SubArch::ArmV8_1a,
        K::V8_2a => SubArch::ArmV8_2a,
        K::V8_3a => SubArch::ArmV8_3a,
        K::V8_4a => SubArch::ArmV8_4a,
        K::V8_5a => SubArch::ArmV8_5a,
        K::V8_6a => SubArch::ArmV8_6a,
        K::V8_7a => SubArch::ArmV8_7a,
        K::V8_8a => SubArch::ArmV8_8a,
        K::V8_9a => SubArch::ArmV8_9a,
        K::V9a => SubArch::ArmV9,
        K::V9_1a => SubArch::ArmV9_1a,
        K::V9_2a => SubArch::ArmV9_2a,
        K::V9_3a => SubArch::ArmV9_3a,
        K::V9_4a => SubArch::ArmV9_4a,
        K::V9_5a => SubArch::ArmV9_5a,
        K::V9_6a => SubArch::ArmV9_6a,
        K::V9_7a => SubArch::ArmV9_7a,
        K::V8r => SubArch::ArmV8r,
        K::V8mBaseline => SubArch::ArmV8mBaseline,
        K::V8mMainline => SubArch::ArmV8mMainline,
        K::V8_1mMainline => SubArch::ArmV8_1mMainline,
        K::Invalid | K::V4 => SubArch::None,
    }
}

/// The architecture of an `arm…`/`thumb…`/`aarch64…` spelling that is not an
/// exact alias (LLVM's `parseARMArch`).
pub(crate) fn parse_arm_arch(name: &str) -> Arch {
    #[derive(PartialEq)]
    enum Isa {
        Arm,
        Thumb,
        Aarch64,
        Invalid,
    }
    let isa = if name.starts_with("aarch64") || name.starts_with("arm64") {
        Isa::Aarch64
    } else if name.starts_with("thumb") {
        Isa::Thumb
    } else if name.starts_with("arm") {
        Isa::Arm
    } else {
        Isa::Invalid
    };
    // None = byte order not recognisable.
    let big_endian = if name.starts_with("armeb")
        || name.starts_with("thumbeb")
        || name.starts_with("aarch64_be")
    {
        Some(true)
    } else if name.starts_with("arm") || name.starts_with("thumb") {
        Some(name.ends_with("eb"))
    } else if name.starts_with("aarch64") {
        Some(false)
    } else {
        None
    };

    let arch = match (big_endian, &isa) {
        (Some(false), Isa::Arm) => Arch::Arm,
        (Some(false), Isa::Thumb) => Arch::Thumb,
        (Some(false), Isa::Aarch64) => Arch::Aarch64,
        (Some(true), Isa::Arm) => Arch::Armeb,
        (Some(true), Isa::Thumb) => Arch::Thumbeb,
        (Some(true), Isa::Aarch64) => Arch::Aarch64Be,
        _ => Arch::Unknown,
    };

    let canonical = canonical_arch_name(name);
    if canonical.is_empty() {
        return Arch::Unknown;
    }
    // Thumb first appeared in ARMv4.
    if isa == Isa::Thumb && (canonical.starts_with("v2") || canonical.starts_with("v3")) {
        return Arch::Unknown;
    }
    // ARMv6-M exists only as Thumb.
    if parse_arch_kind(canonical) == ArmArchKind::V6m {
        return if big_endian == Some(true) {
            Arch::Thumbeb
        } else {
            Arch::Thumb
        };
    }
    arch
}
