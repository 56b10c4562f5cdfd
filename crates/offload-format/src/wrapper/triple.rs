//! The few facts about a target triple the wrappers depend on.
//!
//! The wrappers store the triple verbatim; what they derive from it is the
//! object file format (which shapes the offload-entry symbols), whether the
//! target is Darwin-like (which wraps the bitcode in a header and moves the
//! CUDA sections), NVPTX (duplicate global names lose their dot), and — for
//! the LLVM 14 tool — whether the architecture is known at all.
//!
//! LLVM 22's view comes from the crate's triple parser ([`crate::triple`]).
//! LLVM 14 knew fewer architectures and operating systems; its view is the
//! same parse with the newer names treated as unknown.

use super::ir::Flavour;
use crate::triple::{default_object_format, is_darwin, parse_object_format, Arch, Os, Triple};

pub use crate::triple::ObjectFormat;

/// Architecture, OS and object format as the given LLVM generation sees them.
fn view(triple: &str, flavour: Flavour) -> (Arch, Os, ObjectFormat) {
    let t = Triple::new(triple);
    if flavour == Flavour::Llvm22 {
        return (t.arch(), t.os(), t.object_format());
    }
    let arch = if llvm14_knows_arch(t.arch_name()) {
        t.arch()
    } else {
        Arch::Unknown
    };
    // Operating systems LLVM 14 did not know yet parse as unknown there.
    let os = match t.os() {
        Os::Uefi | Os::XrOs | Os::BridgeOs => Os::Unknown,
        os => os,
    };
    let format = match parse_object_format(t.environment_name()) {
        ObjectFormat::Unknown if arch == Arch::Mipsel => ObjectFormat::Elf,
        ObjectFormat::Unknown => default_object_format(arch, os),
        f => f,
    };
    (arch, os, format)
}

/// The object format LLVM 22 derives from `triple`.
pub fn object_format(triple: &str) -> ObjectFormat {
    Triple::new(triple).object_format()
}

/// True for the NVPTX architectures, whose symbol names cannot hold dots.
pub fn is_nvptx(triple: &str) -> bool {
    Triple::new(triple).is_nvptx()
}

/// True for macOS proper (`darwin*` or `macos*`), where CUDA uses Mach-O
/// section names.
pub(crate) fn is_macos(triple: &str) -> bool {
    matches!(Triple::new(triple).os(), Os::Darwin | Os::MacOsx)
}

/// The CPU type LLVM stores in the Darwin bitcode wrapper header for this
/// triple, when LLVM wraps the bitcode at all (a Darwin OS or a Mach-O
/// object format).
pub(crate) fn darwin_wrapper_cpu(triple: &str, flavour: Flavour) -> Option<u32> {
    let (arch, os, format) = view(triple, flavour);
    if !(is_darwin(os) || format == ObjectFormat::MachO) {
        return None;
    }
    const ABI64: u32 = 0x0100_0000;
    const X86: u32 = 7;
    const ARM: u32 = 12;
    const POWERPC: u32 = 18;
    Some(match arch {
        Arch::X86_64 => X86 | ABI64,
        Arch::X86 => X86,
        Arch::Ppc => POWERPC,
        Arch::Ppc64 => POWERPC | ABI64,
        Arch::Arm | Arch::Thumb => ARM,
        _ => !0,
    })
}

/// True when LLVM 14's triple parser recognises the architecture of
/// `triple` (`clang-offload-wrapper` rejects the rest).
pub fn llvm14_knows_arch_of(triple: &str) -> bool {
    llvm14_knows_arch(Triple::new(triple).arch_name())
}

/// LLVM 14's architecture names: LLVM 22's, less the ones added since
/// (LoongArch, DXIL, Xtensa, `pe`, bare and versioned SPIR-V spellings),
/// plus `le32`/`le64`, which LLVM 22 no longer has.
fn llvm14_knows_arch(arch: &str) -> bool {
    if matches!(arch, "le32" | "le64") {
        return true;
    }
    if arch.starts_with("loongarch")
        || arch.starts_with("dxil")
        || arch == "xtensa"
        || arch == "pe"
        || arch.starts_with("spirv") && !matches!(arch, "spirv32" | "spirv64")
    {
        return false;
    }
    crate::triple::parse_arch(arch) != Arch::Unknown
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
            ("wasm32-unknown-unknown", ObjectFormat::Wasm),
            ("powerpc64-ibm-aix", ObjectFormat::Xcoff),
            ("s390x-ibm-zos", ObjectFormat::Goff),
            ("mips-pc-windows", ObjectFormat::Elf),
            ("armv7-pc-windows", ObjectFormat::Coff),
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
        assert_eq!(
            darwin_wrapper_cpu("x86_64-apple-macosx", Flavour::Llvm14),
            Some(0x0100_0007)
        );
    }

    #[test]
    fn llvm14_architectures() {
        // Accepted and rejected by clang-offload-wrapper-14 (observed).
        for a in [
            "x86_64", "armv7", "armv7eb", "armebv7", "armv", "thumbv4", "bpf", "csky", "arm64e",
            "spirv32", "le64", "kalimba5",
        ] {
            assert!(llvm14_knows_arch_of(&format!("{a}-unknown-linux")), "{a}");
        }
        for a in [
            "loongarch64",
            "dxil",
            "spirv",
            "spirv32v1.5",
            "xtensa",
            "pe",
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
