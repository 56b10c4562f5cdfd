//! LLVM target triples: parsing into components, `Triple::normalize`, and
//! the compatibility test the offload bundler uses when matching entries.
//!
//! This is a behavioural port of LLVM 22's `llvm::Triple`, limited to what
//! the offload tools need. Component spellings are matched exactly as LLVM
//! 22 matches them (architecture and vendor by exact name, OS and
//! environment by name prefix, object format by suffix), and
//! [`normalize`] moves components into place with LLVM's reordering rules.
//!
//! ```
//! use offload_format::triple::{normalize, Arch, CanonicalForm, Os, Triple};
//!
//! assert_eq!(normalize("x86_64-linux-gnu", CanonicalForm::Any).unwrap(), "x86_64-unknown-linux-gnu");
//! assert_eq!(normalize("x86_64-w64-mingw32", CanonicalForm::Any).unwrap(), "x86_64-w64-windows-gnu");
//! assert_eq!(
//!     normalize("nvptx64-nvidia-cuda", CanonicalForm::FourIdent).unwrap(),
//!     "nvptx64-nvidia-cuda-unknown"
//! );
//!
//! let t = Triple::from_parts("amdgcn", "amd", "amdhsa", "");
//! assert_eq!(t.arch(), Arch::Amdgcn);
//! assert_eq!(t.os(), Os::AmdHsa);
//! // An empty environment and "unknown" are the same parsed value.
//! assert!(t.is_compatible_with(&Triple::from_parts("amdgcn", "amd", "amdhsa", "unknown")));
//! ```

mod arm;
mod names;
mod normalize;

pub(crate) use names::default_object_format;
#[cfg(feature = "wrapper")]
pub(crate) use names::is_darwin;
pub(crate) use names::parse_arch;
pub(crate) use names::parse_environment;
pub(crate) use names::parse_object_format;
pub(crate) use names::parse_os;
pub(crate) use names::parse_sub_arch;
pub(crate) use names::parse_vendor;
pub use names::{Arch, Environment, ObjectFormat, Os, SubArch, Vendor};
pub use normalize::{normalize, CanonicalForm, NormalizeError};

/// A target triple: the text it was built from plus the components LLVM
/// parses out of it.
///
/// Building a `Triple` never fails and never reorders anything: each
/// component is parsed at its position, unknown spellings become the
/// `Unknown` value of their enum. Use [`Triple::normalize`] for LLVM's
/// canonical spelling.
///
/// `PartialEq` compares the text as well; LLVM's `Triple::operator==`
/// (components only) is [`Triple::same_components`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Triple {
    data: String,
    arch: Arch,
    sub_arch: SubArch,
    vendor: Vendor,
    os: Os,
    environment: Environment,
    object_format: ObjectFormat,
}

impl Triple {
    /// Parses a triple string the way LLVM's `Triple(StringRef)` constructor
    /// does: split at the first three `-`, so the fourth component keeps any
    /// further dashes (`x86_64-pc-windows-msvc-coff` has environment
    /// `msvc-coff`). A bare MIPS architecture name implies its GNU
    /// environment, as in LLVM.
    pub fn new(text: &str) -> Triple {
        let mut parts = text.splitn(4, '-');
        let arch_text = parts.next().unwrap_or("");
        let vendor_text = parts.next();
        let os_text = parts.next();
        let env_text = parts.next();

        let arch = parse_arch(arch_text);
        let sub_arch = parse_sub_arch(arch_text);
        let vendor = vendor_text.map_or(Vendor::Unknown, parse_vendor);
        let os = os_text.map_or(Os::Unknown, parse_os);
        let (environment, format) = match env_text {
            Some(env) => (parse_environment(env), parse_object_format(env)),
            None if vendor_text.is_none() => {
                (mips_default_environment(arch_text), ObjectFormat::Unknown)
            }
            None => (Environment::Unknown, ObjectFormat::Unknown),
        };
        Triple {
            data: text.to_owned(),
            arch,
            sub_arch,
            vendor,
            os,
            environment,
            object_format: format,
        }
        .with_default_object_format()
    }

    /// Builds a triple from its four components, each parsed at its own
    /// position (LLVM's four-argument `Triple` constructor). The text is the
    /// components joined with `-`, so empty components stay empty.
    ///
    /// This is how the offload bundler turns the pieces of a bundle entry ID
    /// into a triple.
    pub fn from_parts(arch: &str, vendor: &str, os: &str, environment: &str) -> Triple {
        let data = format!("{arch}-{vendor}-{os}-{environment}");
        Triple {
            arch: parse_arch(arch),
            sub_arch: parse_sub_arch(arch),
            vendor: parse_vendor(vendor),
            os: parse_os(os),
            environment: parse_environment(environment),
            object_format: parse_object_format(environment),
            data,
        }
        .with_default_object_format()
    }

    /// An unknown object format becomes the default for the architecture
    /// and OS, as LLVM's constructors do.
    fn with_default_object_format(mut self) -> Triple {
        if self.object_format == ObjectFormat::Unknown {
            self.object_format = default_object_format(self.arch, self.os);
        }
        self
    }

    /// The text the triple was built from.
    pub fn as_str(&self) -> &str {
        &self.data
    }

    /// The text before the first `-`.
    pub fn arch_name(&self) -> &str {
        self.data.split('-').next().unwrap_or("")
    }

    /// The text of the second component (empty when absent).
    pub fn vendor_name(&self) -> &str {
        self.data.split('-').nth(1).unwrap_or("")
    }

    /// The text of the third component (empty when absent).
    pub fn os_name(&self) -> &str {
        self.data.split('-').nth(2).unwrap_or("")
    }

    /// Everything after the third `-` (empty when absent).
    pub fn environment_name(&self) -> &str {
        self.data.splitn(4, '-').nth(3).unwrap_or("")
    }

    /// The parsed architecture.
    pub fn arch(&self) -> Arch {
        self.arch
    }

    /// The parsed sub-architecture.
    pub fn sub_arch(&self) -> SubArch {
        self.sub_arch
    }

    /// The parsed vendor.
    pub fn vendor(&self) -> Vendor {
        self.vendor
    }

    /// The parsed operating system.
    pub fn os(&self) -> Os {
        self.os
    }

    /// The parsed environment.
    pub fn environment(&self) -> Environment {
        self.environment
    }

    /// The object format: named by the environment component, or the
    /// default for the architecture and OS.
    pub fn object_format(&self) -> ObjectFormat {
        self.object_format
    }

    /// LLVM's normalised spelling of this triple's text (see [`normalize`]).
    pub fn normalize(&self, form: CanonicalForm) -> Result<String, NormalizeError> {
        normalize(&self.data, form)
    }

    /// LLVM's `Triple::operator==`: all parsed components equal, text
    /// ignored.
    pub fn same_components(&self, other: &Triple) -> bool {
        self.arch == other.arch
            && self.sub_arch == other.sub_arch
            && self.vendor == other.vendor
            && self.os == other.os
            && self.environment == other.environment
            && self.object_format == other.object_format
    }

    /// LLVM's `Triple::isCompatibleWith`, which the bundler uses to decide
    /// whether a bundle entry's triple satisfies a requested one.
    ///
    /// Parsed components are compared, not text: an empty environment,
    /// `unknown` and an unrecognised word are all "unknown environment", but
    /// `pc` and `unknown` vendors differ. The exceptions LLVM makes:
    /// ARM and Thumb of the same sub-architecture match each other; with an
    /// Apple vendor the environment and object format are ignored; and
    /// when `self` is Windows/GNU (MinGW) the vendor is ignored.
    ///
    /// The test is not symmetric: the Apple and MinGW exceptions look at
    /// `self` only.
    pub fn is_compatible_with(&self, other: &Triple) -> bool {
        let ignore_vendor = self.is_windows_gnu_environment();
        let vendor_ok = self.vendor == other.vendor || ignore_vendor;

        let arm_thumb_pair = matches!(
            (self.arch, other.arch),
            (Arch::Thumb, Arch::Arm)
                | (Arch::Arm, Arch::Thumb)
                | (Arch::Thumbeb, Arch::Armeb)
                | (Arch::Armeb, Arch::Thumbeb)
        );
        if arm_thumb_pair {
            if self.vendor == Vendor::Apple {
                return self.sub_arch == other.sub_arch
                    && self.vendor == other.vendor
                    && self.os == other.os;
            }
            return self.sub_arch == other.sub_arch
                && vendor_ok
                && self.os == other.os
                && self.environment == other.environment
                && self.object_format == other.object_format;
        }

        if self.vendor == Vendor::Apple {
            return self.arch == other.arch
                && self.sub_arch == other.sub_arch
                && vendor_ok
                && self.os == other.os;
        }

        self.arch == other.arch
            && self.sub_arch == other.sub_arch
            && vendor_ok
            && self.os == other.os
            && self.environment == other.environment
            && self.object_format == other.object_format
    }

    /// Windows with the GNU environment (MinGW).
    pub(crate) fn is_windows_gnu_environment(&self) -> bool {
        self.os == Os::Win32 && self.environment == Environment::Gnu
    }

    /// The architecture is `amdgcn`.
    pub fn is_amdgcn(&self) -> bool {
        self.arch == Arch::Amdgcn
    }

    /// The architecture is `amdgcn` or `r600`.
    pub(crate) fn is_amdgpu(&self) -> bool {
        matches!(self.arch, Arch::Amdgcn | Arch::R600)
    }

    /// The architecture is `nvptx` or `nvptx64`.
    pub fn is_nvptx(&self) -> bool {
        matches!(self.arch, Arch::Nvptx | Arch::Nvptx64)
    }

    /// The architecture is one of the SPIR-V ones.
    pub fn is_spirv(&self) -> bool {
        matches!(self.arch, Arch::Spirv | Arch::Spirv32 | Arch::Spirv64)
    }
}

impl std::fmt::Display for Triple {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.data)
    }
}

/// The environment LLVM infers from a triple that is nothing but a MIPS
/// architecture name (`mips64` alone means GNU ABI64, for instance).
fn mips_default_environment(arch: &str) -> Environment {
    if arch.starts_with("mipsn32") {
        Environment::GnuAbiN32
    } else if arch.starts_with("mips64") || arch.starts_with("mipsisa64") {
        Environment::GnuAbi64
    } else if arch.starts_with("mipsisa32")
        || matches!(arch, "mips" | "mipsel" | "mipsr6" | "mipsr6el")
    {
        Environment::Gnu
    } else {
        Environment::Unknown
    }
}
