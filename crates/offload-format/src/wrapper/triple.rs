//! The few facts about a target triple the wrappers depend on.
//!
//! The wrappers store the triple verbatim; what they derive from it is the
//! object file format (which shapes the offload-entry symbols), whether the
//! target is Darwin-like (which wraps the bitcode in a header, and moves the
//! CUDA sections), and — for the LLVM 14 tool — whether the architecture is
//! known at all. These follow LLVM's triple parser: the string is split at
//! the first three `-` into architecture, vendor, OS and environment, each
//! component is recognised by name or prefix, and an object format named at
//! the end of the environment overrides the default for the architecture and
//! OS.

use super::ir::Flavour;

/// Object file formats, as far as the wrappers distinguish them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectFormat {
    /// ELF
    Elf,
    /// COFF (Windows)
    Coff,
    /// Mach-O (Darwin)
    MachO,
    /// Anything else (XCOFF, GOFF, WebAssembly, SPIR-V, DXContainer).
    Other,
}

/// Architecture classes that decide the default object format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ArchClass {
    /// Unknown architecture or one of aarch64/aarch64_32/arm/thumb/x86/
    /// x86_64: the format follows the OS (COFF on Windows/UEFI, Mach-O on
    /// Darwin, ELF otherwise).
    OsDependent,
    /// Always ELF.
    Elf,
    /// mipsel: COFF on Windows, else ELF.
    MipsEl,
    /// powerpc / powerpc64: XCOFF on AIX, Mach-O on Darwin, else ELF.
    Ppc,
    /// s390x: GOFF on z/OS, else ELF.
    SystemZ,
    /// wasm32 / wasm64, spirv*, dxil: never ELF/COFF/Mach-O.
    Other,
}

/// The parts of a triple string, split as LLVM's `Triple` constructor does
/// (at most four components; the last keeps any further dashes).
struct Parts<'a> {
    arch: &'a str,
    os: Option<&'a str>,
    env: Option<&'a str>,
}

fn split(triple: &str) -> Parts<'_> {
    let mut it = triple.splitn(4, '-');
    let arch = it.next().unwrap_or("");
    let _vendor = it.next();
    let os = it.next();
    let env = it.next();
    Parts { arch, os, env }
}

/// LLVM 22's architecture classification (`parseArch` followed by the
/// default-object-format switch).
fn arch_class_22(arch: &str) -> ArchClass {
    use ArchClass::*;
    match arch {
        "i386" | "i486" | "i586" | "i686" | "i786" | "i886" | "i986" | "amd64" | "x86_64"
        | "x86_64h" | "aarch64" | "aarch64_32" | "arm64" | "arm64_32" | "arm64e" | "arm64ec"
        | "arm" | "thumb" => OsDependent,
        "powerpc" | "powerpcspe" | "ppc" | "ppc32" | "powerpc64" | "ppu" | "ppc64" => Ppc,
        "powerpcle" | "ppcle" | "ppc32le" | "powerpc64le" | "ppc64le" => Elf,
        "xscale" => OsDependent,
        "xscaleeb" | "aarch64_be" | "armeb" | "thumbeb" => Elf,
        "arc" | "avr" | "m68k" | "msp430" => Elf,
        "mips" | "mipseb" | "mipsallegrex" | "mipsisa32r6" | "mipsr6" => Elf,
        "mipsel" | "mipsallegrexel" | "mipsisa32r6el" | "mipsr6el" => MipsEl,
        "mips64" | "mips64eb" | "mipsn32" | "mipsisa64r6" | "mips64r6" | "mipsn32r6"
        | "mips64el" | "mipsn32el" | "mipsisa64r6el" | "mips64r6el" | "mipsn32r6el" => Elf,
        "r600" | "amdgcn" | "riscv32" | "riscv64" | "hexagon" => Elf,
        "s390x" | "systemz" => SystemZ,
        "sparc" | "sparcel" | "sparcv9" | "sparc64" | "tce" | "tcele" | "xcore" | "nvptx"
        | "nvptx64" | "amdil" | "amdil64" | "hsail" | "hsail64" | "spir" | "spir64" | "lanai"
        | "renderscript32" | "renderscript64" | "shave" | "ve" | "csky" | "loongarch32"
        | "loongarch64" | "xtensa" => Elf,
        "wasm32" | "wasm64" => Other,
        "spirv" | "spirv1.5" | "spirv1.6" => Other,
        "dxil" | "dxilv1.0" | "dxilv1.1" | "dxilv1.2" | "dxilv1.3" | "dxilv1.4" | "dxilv1.5"
        | "dxilv1.6" | "dxilv1.7" | "dxilv1.8" => Other,
        a if spirv_versioned(a, "spirv32", 6) || spirv_versioned(a, "spirv64", 6) => Other,
        a if a.starts_with("kalimba") => Elf,
        a if a.starts_with("arm") || a.starts_with("thumb") || a.starts_with("aarch64") => {
            match parse_arm(a) {
                // Big-endian ARM always defaults to ELF.
                Some(true) => Elf,
                _ => OsDependent,
            }
        }
        a if a.starts_with("bpf") => {
            if matches!(a, "bpf" | "bpf_be" | "bpfeb" | "bpf_le" | "bpfel") {
                Elf
            } else {
                OsDependent
            }
        }
        "pe" => Elf,
        _ => OsDependent,
    }
}

/// `spirv32`/`spirv64` with an optional `v1.0` … `v1.<max>` suffix.
fn spirv_versioned(a: &str, base: &str, max_minor: u32) -> bool {
    match a.strip_prefix(base) {
        Some("") => true,
        Some(rest) => (0..=max_minor).any(|m| rest == format!("v1.{m}")),
        None => false,
    }
}

/// LLVM's ARM-family architecture parsing for names not in the fixed table:
/// `None` when the name is not a valid ARM architecture, otherwise whether
/// it is big-endian.
fn parse_arm(arch: &str) -> Option<bool> {
    let big = arch.starts_with("armeb")
        || arch.starts_with("thumbeb")
        || arch.starts_with("aarch64_be")
        || ((arch.starts_with("arm") || arch.starts_with("thumb")) && arch.ends_with("eb"));
    let isa_thumb = arch.starts_with("thumb");
    let canonical = canonical_arm_arch(arch)?;
    // Thumb exists from v4 on.
    if isa_thumb && (canonical.starts_with("v2") || canonical.starts_with("v3")) {
        return None;
    }
    Some(big)
}

/// The part of an ARM architecture name after the ISA prefix and endianness
/// marker (`armebv7a` → `v7a`); `None` for names LLVM rejects.
fn canonical_arm_arch(arch: &str) -> Option<&str> {
    let mut a = arch;
    let mut offset = if a.starts_with("arm64_32") {
        Some(8)
    } else if a.starts_with("arm64e") {
        Some(6)
    } else if a.starts_with("arm64") {
        Some(5)
    } else if a.starts_with("aarch64_32") {
        Some(10)
    } else if a.starts_with("arm") {
        Some(3)
    } else if a.starts_with("thumb") {
        Some(5)
    } else if a.starts_with("aarch64") {
        // AArch64 spells big-endian "_be", never "eb".
        if a.contains("eb") {
            return None;
        }
        if a.get(7..10) == Some("_be") {
            Some(10)
        } else {
            Some(7)
        }
    } else {
        None
    };
    if let Some(off) = offset {
        if a.get(off..off + 2) == Some("eb") {
            offset = Some(off + 2);
        } else if a.ends_with("eb") {
            a = &a[..a.len() - 2];
        }
    } else if a.ends_with("eb") {
        a = &a[..a.len() - 2];
    }
    if let Some(off) = offset {
        a = a.get(off..).unwrap_or("");
    }
    if a.is_empty() {
        return Some(arch);
    }
    if offset.is_some() {
        let b = a.as_bytes();
        if b.len() >= 2 && (b[0] != b'v' || !b[1].is_ascii_digit()) {
            return None;
        }
        if a.contains("eb") {
            return None;
        }
    }
    Some(a)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Os {
    Windows,
    Uefi,
    Darwin,
    Aix,
    Zos,
    Other,
}

fn parse_os(os: &str, flavour: Flavour) -> Os {
    const DARWIN_22: &[&str] = &[
        "darwin",
        "ios",
        "macos",
        "tvos",
        "watchos",
        "bridgeos",
        "driverkit",
        "xros",
        "visionos",
    ];
    const DARWIN_14: &[&str] = &["darwin", "ios", "macos", "tvos", "watchos", "driverkit"];
    let darwin = match flavour {
        Flavour::Llvm22 => DARWIN_22,
        Flavour::Llvm14 => DARWIN_14,
    };
    // Order matters only where prefixes overlap; none of these do with the
    // OS names LLVM checks before them.
    if os.starts_with("win32") || os.starts_with("windows") {
        Os::Windows
    } else if os.starts_with("uefi") && flavour == Flavour::Llvm22 {
        Os::Uefi
    } else if darwin.iter().any(|p| os.starts_with(p)) {
        Os::Darwin
    } else if os.starts_with("aix") {
        Os::Aix
    } else if os.starts_with("zos") {
        Os::Zos
    } else {
        Os::Other
    }
}

/// An object format named by the environment component's suffix.
fn format_from_env(env: &str) -> Option<ObjectFormat> {
    if env.ends_with("xcoff") {
        Some(ObjectFormat::Other)
    } else if env.ends_with("coff") {
        Some(ObjectFormat::Coff)
    } else if env.ends_with("elf") {
        Some(ObjectFormat::Elf)
    } else if env.ends_with("goff") {
        Some(ObjectFormat::Other)
    } else if env.ends_with("macho") {
        Some(ObjectFormat::MachO)
    } else if env.ends_with("wasm") || env.ends_with("spirv") {
        Some(ObjectFormat::Other)
    } else {
        None
    }
}

/// The object format LLVM 22 derives from `triple`.
pub fn object_format(triple: &str) -> ObjectFormat {
    object_format_for(triple, Flavour::Llvm22)
}

fn arch_class(arch: &str, flavour: Flavour) -> ArchClass {
    match flavour {
        Flavour::Llvm22 => arch_class_22(arch),
        // LLVM 14 knows fewer architectures (the rest count as unknown) and
        // did not yet give mipsel COFF on Windows.
        Flavour::Llvm14 if !llvm14_knows_arch(arch) => ArchClass::OsDependent,
        Flavour::Llvm14 => match arch_class_22(arch) {
            ArchClass::MipsEl => ArchClass::Elf,
            c => c,
        },
    }
}

fn object_format_for(triple: &str, flavour: Flavour) -> ObjectFormat {
    let p = split(triple);
    if let Some(f) = p.env.and_then(format_from_env) {
        return f;
    }
    let os = p.os.map_or(Os::Other, |o| parse_os(o, flavour));
    match arch_class(p.arch, flavour) {
        ArchClass::OsDependent => match os {
            Os::Windows | Os::Uefi => ObjectFormat::Coff,
            Os::Darwin => ObjectFormat::MachO,
            _ => ObjectFormat::Elf,
        },
        ArchClass::Elf => ObjectFormat::Elf,
        ArchClass::MipsEl => {
            if os == Os::Windows {
                ObjectFormat::Coff
            } else {
                ObjectFormat::Elf
            }
        }
        ArchClass::Ppc => match os {
            Os::Aix => ObjectFormat::Other,
            Os::Darwin => ObjectFormat::MachO,
            _ => ObjectFormat::Elf,
        },
        ArchClass::SystemZ => {
            if os == Os::Zos {
                ObjectFormat::Other
            } else {
                ObjectFormat::Elf
            }
        }
        ArchClass::Other => ObjectFormat::Other,
    }
}

/// True for the NVPTX architectures (`nvptx`, `nvptx64`).
pub fn is_nvptx(triple: &str) -> bool {
    matches!(split(triple).arch, "nvptx" | "nvptx64")
}

/// True when the OS component names a Darwin system.
pub fn is_darwin(triple: &str, flavour: Flavour) -> bool {
    split(triple).os.map(|o| parse_os(o, flavour)) == Some(Os::Darwin)
}

/// True for macOS proper (`darwin*` or `macos*`), where CUDA uses Mach-O
/// section names.
pub fn is_macos(triple: &str) -> bool {
    split(triple)
        .os
        .is_some_and(|os| os.starts_with("darwin") || os.starts_with("macos"))
}

/// The CPU type LLVM stores in the Darwin bitcode wrapper header for this
/// triple's architecture, when LLVM wraps the bitcode at all (Darwin OS or a
/// Mach-O object format).
pub fn darwin_wrapper_cpu(triple: &str, flavour: Flavour) -> Option<u32> {
    if !(is_darwin(triple, flavour) || object_format_for(triple, flavour) == ObjectFormat::MachO) {
        return None;
    }
    const ABI64: u32 = 0x0100_0000;
    const X86: u32 = 7;
    const ARM: u32 = 12;
    const POWERPC: u32 = 18;
    let arch = split(triple).arch;
    let cpu = match arch {
        "amd64" | "x86_64" | "x86_64h" => X86 | ABI64,
        "i386" | "i486" | "i586" | "i686" | "i786" | "i886" | "i986" => X86,
        "powerpc" | "powerpcspe" | "ppc" | "ppc32" => POWERPC,
        "powerpc64" | "ppu" | "ppc64" => POWERPC | ABI64,
        "arm" | "thumb" | "xscale" => ARM,
        a if (a.starts_with("arm") || a.starts_with("thumb"))
            && !a.starts_with("arm64")
            && parse_arm(a) == Some(false) =>
        {
            ARM
        }
        _ => !0,
    };
    Some(cpu)
}

/// True when LLVM 14's triple parser recognises the architecture
/// (`clang-offload-wrapper` rejects the rest).
pub fn llvm14_knows_arch_of(triple: &str) -> bool {
    llvm14_knows_arch(split(triple).arch)
}

fn llvm14_knows_arch(arch: &str) -> bool {
    let known = matches!(
        arch,
        "i386"
            | "i486"
            | "i586"
            | "i686"
            | "i786"
            | "i886"
            | "i986"
            | "amd64"
            | "x86_64"
            | "x86_64h"
            | "powerpc"
            | "powerpcspe"
            | "ppc"
            | "ppc32"
            | "powerpcle"
            | "ppcle"
            | "ppc32le"
            | "powerpc64"
            | "ppu"
            | "ppc64"
            | "powerpc64le"
            | "ppc64le"
            | "xscale"
            | "xscaleeb"
            | "aarch64"
            | "aarch64_be"
            | "aarch64_32"
            | "arc"
            | "arm64"
            | "arm64_32"
            | "arm64e"
            | "arm64ec"
            | "arm"
            | "armeb"
            | "thumb"
            | "thumbeb"
            | "avr"
            | "m68k"
            | "msp430"
            | "mips"
            | "mipseb"
            | "mipsallegrex"
            | "mipsisa32r6"
            | "mipsr6"
            | "mipsel"
            | "mipsallegrexel"
            | "mipsisa32r6el"
            | "mipsr6el"
            | "mips64"
            | "mips64eb"
            | "mipsn32"
            | "mipsisa64r6"
            | "mips64r6"
            | "mipsn32r6"
            | "mips64el"
            | "mipsn32el"
            | "mipsisa64r6el"
            | "mips64r6el"
            | "mipsn32r6el"
            | "r600"
            | "amdgcn"
            | "riscv32"
            | "riscv64"
            | "hexagon"
            | "s390x"
            | "systemz"
            | "sparc"
            | "sparcel"
            | "sparcv9"
            | "sparc64"
            | "tce"
            | "tcele"
            | "xcore"
            | "nvptx"
            | "nvptx64"
            | "le32"
            | "le64"
            | "amdil"
            | "amdil64"
            | "hsail"
            | "hsail64"
            | "spir"
            | "spir64"
            | "spirv32"
            | "spirv64"
            | "lanai"
            | "renderscript32"
            | "renderscript64"
            | "shave"
            | "ve"
            | "wasm32"
            | "wasm64"
            | "csky"
    );
    if known || arch.starts_with("kalimba") {
        return true;
    }
    if arch.starts_with("arm") || arch.starts_with("thumb") || arch.starts_with("aarch64") {
        return parse_arm(arch).is_some();
    }
    matches!(arch, "bpf" | "bpf_be" | "bpfeb" | "bpf_le" | "bpfel")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_of_common_triples() {
        for (t, f) in [
            ("x86_64-pc-linux-gnu", ObjectFormat::Elf),
            ("", ObjectFormat::Elf),
            ("x86_64", ObjectFormat::Elf),
            ("aarch64-none-elf", ObjectFormat::Elf),
            ("x86_64-pc-cygwin", ObjectFormat::Elf),
            ("x86_64-pc-windows-msvc", ObjectFormat::Coff),
            ("x86_64-w64-windows-gnu", ObjectFormat::Coff),
            ("x86_64-pc-windows-elf", ObjectFormat::Elf),
            ("x86_64-apple-darwin", ObjectFormat::MachO),
            ("arm64-apple-ios", ObjectFormat::MachO),
            ("x86_64-unknown-linux-macho", ObjectFormat::MachO),
            ("wasm32-unknown-unknown", ObjectFormat::Other),
            ("powerpc64-ibm-aix", ObjectFormat::Other),
            ("s390x-ibm-zos", ObjectFormat::Other),
            ("mips-pc-windows", ObjectFormat::Elf),
            ("armv7-pc-windows", ObjectFormat::Coff),
            ("armebv7-pc-windows", ObjectFormat::Elf),
            ("foo-bar-baz", ObjectFormat::Elf),
            ("foo-pc-windows", ObjectFormat::Coff),
        ] {
            assert_eq!(object_format(t), f, "{t}");
        }
    }

    #[test]
    fn darwin_header_cpu_types() {
        let cpu = |t| darwin_wrapper_cpu(t, Flavour::Llvm22);
        assert_eq!(cpu("x86_64-apple-darwin"), Some(0x0100_0007));
        assert_eq!(cpu("arm64-apple-ios"), Some(!0));
        assert_eq!(cpu("i686-apple-macosx"), Some(7));
        assert_eq!(cpu("armv7-apple-ios"), Some(12));
        assert_eq!(cpu("x86_64-pc-linux-gnu"), None);
        assert_eq!(cpu("arm64-apple-xros"), Some(!0));
        assert_eq!(
            darwin_wrapper_cpu("arm64-apple-xros", Flavour::Llvm14),
            None
        );
    }

    #[test]
    fn llvm14_architectures() {
        for a in [
            "x86_64", "armv7", "armv7eb", "armebv7", "armv", "thumbv4", "bpf", "csky",
        ] {
            assert!(llvm14_knows_arch_of(&format!("{a}-unknown-linux")), "{a}");
        }
        for a in [
            "loongarch64",
            "dxil",
            "spirv",
            "xtensa",
            "x86",
            "thumbv3",
            "armxscale",
            "aarch64eb",
            "bpfx",
            "foo",
        ] {
            assert!(!llvm14_knows_arch_of(&format!("{a}-unknown-linux")), "{a}");
        }
    }
}
