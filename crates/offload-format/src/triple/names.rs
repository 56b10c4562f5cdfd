//! The component enums of a target triple and the tables that map component
//! spellings to them, as LLVM 22 has them.
//!
//! Only the matching rules are reproduced here (exact name, name prefix, or
//! name suffix, depending on the component); what each enum value means is
//! LLVM's business.

/// Declares a `Copy` enum whose variants each carry LLVM's canonical name.
macro_rules! named_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident { $($variant:ident = $text:literal,)* }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $name {
            $(
                #[doc = concat!("`", $text, "`")]
                $variant,
            )*
        }

        impl $name {
            /// Every value, in LLVM's enum order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// LLVM's canonical spelling of this value (what
            /// `Triple::get*TypeName` returns).
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

named_enum! {
    /// The architecture component of a triple (`llvm::Triple::ArchType`).
    pub enum Arch {
        Unknown = "unknown",
        Arm = "arm",
        Armeb = "armeb",
        Aarch64 = "aarch64",
        Aarch64Be = "aarch64_be",
        Aarch64_32 = "aarch64_32",
        Arc = "arc",
        Avr = "avr",
        Bpfel = "bpfel",
        Bpfeb = "bpfeb",
        Csky = "csky",
        Dxil = "dxil",
        Hexagon = "hexagon",
        Loongarch32 = "loongarch32",
        Loongarch64 = "loongarch64",
        M68k = "m68k",
        Mips = "mips",
        Mipsel = "mipsel",
        Mips64 = "mips64",
        Mips64el = "mips64el",
        Msp430 = "msp430",
        Ppc = "powerpc",
        Ppcle = "powerpcle",
        Ppc64 = "powerpc64",
        Ppc64le = "powerpc64le",
        R600 = "r600",
        Amdgcn = "amdgcn",
        Riscv32 = "riscv32",
        Riscv64 = "riscv64",
        Riscv32be = "riscv32be",
        Riscv64be = "riscv64be",
        Sparc = "sparc",
        Sparcv9 = "sparcv9",
        Sparcel = "sparcel",
        Systemz = "s390x",
        Tce = "tce",
        Tcele = "tcele",
        Thumb = "thumb",
        Thumbeb = "thumbeb",
        X86 = "i386",
        X86_64 = "x86_64",
        Xcore = "xcore",
        Xtensa = "xtensa",
        Nvptx = "nvptx",
        Nvptx64 = "nvptx64",
        Amdil = "amdil",
        Amdil64 = "amdil64",
        Hsail = "hsail",
        Hsail64 = "hsail64",
        Spir = "spir",
        Spir64 = "spir64",
        Spirv = "spirv",
        Spirv32 = "spirv32",
        Spirv64 = "spirv64",
        Kalimba = "kalimba",
        Shave = "shave",
        Lanai = "lanai",
        Wasm32 = "wasm32",
        Wasm64 = "wasm64",
        Renderscript32 = "renderscript32",
        Renderscript64 = "renderscript64",
        Ve = "ve",
    }
}

named_enum! {
    /// The sub-architecture parsed from the architecture component
    /// (`llvm::Triple::SubArchType`). The names are descriptive only: LLVM
    /// prints no canonical spelling for most of them.
    pub enum SubArch {
        None = "",
        ArmV9_7a = "v9.7a",
        ArmV9_6a = "v9.6a",
        ArmV9_5a = "v9.5a",
        ArmV9_4a = "v9.4a",
        ArmV9_3a = "v9.3a",
        ArmV9_2a = "v9.2a",
        ArmV9_1a = "v9.1a",
        ArmV9 = "v9",
        ArmV8_9a = "v8.9a",
        ArmV8_8a = "v8.8a",
        ArmV8_7a = "v8.7a",
        ArmV8_6a = "v8.6a",
        ArmV8_5a = "v8.5a",
        ArmV8_4a = "v8.4a",
        ArmV8_3a = "v8.3a",
        ArmV8_2a = "v8.2a",
        ArmV8_1a = "v8.1a",
        ArmV8 = "v8",
        ArmV8r = "v8r",
        ArmV8mBaseline = "v8m.base",
        ArmV8mMainline = "v8m.main",
        ArmV8_1mMainline = "v8.1m.main",
        ArmV7 = "v7",
        ArmV7em = "v7em",
        ArmV7m = "v7m",
        ArmV7s = "v7s",
        ArmV7k = "v7k",
        ArmV7ve = "v7ve",
        ArmV6 = "v6",
        ArmV6m = "v6m",
        ArmV6k = "v6k",
        ArmV6t2 = "v6t2",
        ArmV5 = "v5",
        ArmV5te = "v5te",
        ArmV4t = "v4t",
        Aarch64Arm64e = "arm64e",
        Aarch64Arm64ec = "arm64ec",
        Aarch64Lfi = "lfi",
        KalimbaV3 = "kalimba3",
        KalimbaV4 = "kalimba4",
        KalimbaV5 = "kalimba5",
        MipsR6 = "r6",
        PpcSpe = "spe",
        SpirvV10 = "v1.0",
        SpirvV11 = "v1.1",
        SpirvV12 = "v1.2",
        SpirvV13 = "v1.3",
        SpirvV14 = "v1.4",
        SpirvV15 = "v1.5",
        SpirvV16 = "v1.6",
        DxilV1_0 = "dxilv1.0",
        DxilV1_1 = "dxilv1.1",
        DxilV1_2 = "dxilv1.2",
        DxilV1_3 = "dxilv1.3",
        DxilV1_4 = "dxilv1.4",
        DxilV1_5 = "dxilv1.5",
        DxilV1_6 = "dxilv1.6",
        DxilV1_7 = "dxilv1.7",
        DxilV1_8 = "dxilv1.8",
        DxilV1_9 = "dxilv1.9",
    }
}

named_enum! {
    /// The vendor component of a triple (`llvm::Triple::VendorType`).
    pub enum Vendor {
        Unknown = "unknown",
        Apple = "apple",
        Pc = "pc",
        Scei = "scei",
        Freescale = "fsl",
        Ibm = "ibm",
        ImaginationTechnologies = "img",
        MipsTechnologies = "mti",
        Nvidia = "nvidia",
        Csr = "csr",
        Amd = "amd",
        Mesa = "mesa",
        Suse = "suse",
        OpenEmbedded = "oe",
        Intel = "intel",
        Meta = "meta",
    }
}

named_enum! {
    /// The operating-system component of a triple (`llvm::Triple::OSType`).
    pub enum Os {
        Unknown = "unknown",
        Darwin = "darwin",
        DragonFly = "dragonfly",
        FreeBsd = "freebsd",
        Fuchsia = "fuchsia",
        Ios = "ios",
        KFreeBsd = "kfreebsd",
        Linux = "linux",
        Lv2 = "lv2",
        MacOsx = "macosx",
        Managarm = "managarm",
        NetBsd = "netbsd",
        OpenBsd = "openbsd",
        Solaris = "solaris",
        Uefi = "uefi",
        Win32 = "windows",
        Zos = "zos",
        Haiku = "haiku",
        Rtems = "rtems",
        Aix = "aix",
        Cuda = "cuda",
        Nvcl = "nvcl",
        AmdHsa = "amdhsa",
        Ps4 = "ps4",
        Ps5 = "ps5",
        ElfIamcu = "elfiamcu",
        TvOs = "tvos",
        WatchOs = "watchos",
        BridgeOs = "bridgeos",
        DriverKit = "driverkit",
        XrOs = "xros",
        Mesa3d = "mesa3d",
        AmdPal = "amdpal",
        HermitCore = "hermit",
        Hurd = "hurd",
        Wasi = "wasi",
        WasiP1 = "wasip1",
        WasiP2 = "wasip2",
        WasiP3 = "wasip3",
        Emscripten = "emscripten",
        ShaderModel = "shadermodel",
        LiteOs = "liteos",
        Serenity = "serenity",
        Vulkan = "vulkan",
        CheriotRtos = "cheriotrtos",
    }
}

named_enum! {
    /// The environment (ABI) component of a triple
    /// (`llvm::Triple::EnvironmentType`).
    pub enum Environment {
        Unknown = "unknown",
        Gnu = "gnu",
        GnuT64 = "gnut64",
        GnuAbiN32 = "gnuabin32",
        GnuAbi64 = "gnuabi64",
        GnuEabi = "gnueabi",
        GnuEabiT64 = "gnueabit64",
        GnuEabiHf = "gnueabihf",
        GnuEabiHfT64 = "gnueabihft64",
        GnuF32 = "gnuf32",
        GnuF64 = "gnuf64",
        GnuSf = "gnusf",
        GnuX32 = "gnux32",
        GnuIlp32 = "gnu_ilp32",
        Code16 = "code16",
        Eabi = "eabi",
        EabiHf = "eabihf",
        Android = "android",
        Musl = "musl",
        MuslAbiN32 = "muslabin32",
        MuslAbi64 = "muslabi64",
        MuslEabi = "musleabi",
        MuslEabiHf = "musleabihf",
        MuslF32 = "muslf32",
        MuslSf = "muslsf",
        MuslX32 = "muslx32",
        MuslWali = "muslwali",
        Llvm = "llvm",
        Msvc = "msvc",
        Itanium = "itanium",
        Cygnus = "cygnus",
        CoreClr = "coreclr",
        Simulator = "simulator",
        MacAbi = "macabi",
        Pixel = "pixel",
        Vertex = "vertex",
        Geometry = "geometry",
        Hull = "hull",
        Domain = "domain",
        Compute = "compute",
        Library = "library",
        RayGeneration = "raygeneration",
        Intersection = "intersection",
        AnyHit = "anyhit",
        ClosestHit = "closesthit",
        Miss = "miss",
        Callable = "callable",
        Mesh = "mesh",
        Amplification = "amplification",
        RootSignature = "rootsignature",
        OpenCl = "opencl",
        OpenHos = "ohos",
        Mlibc = "mlibc",
        PAuthTest = "pauthtest",
        Mtia = "mtia",
    }
}

named_enum! {
    /// The object-file format of a triple (`llvm::Triple::ObjectFormatType`).
    /// It is written as a suffix of the environment component (`gnu-elf`,
    /// `msvc-coff`) or derived from the architecture and OS.
    pub enum ObjectFormat {
        Unknown = "",
        Coff = "coff",
        DxContainer = "dxcontainer",
        Elf = "elf",
        Goff = "goff",
        MachO = "macho",
        Spirv = "spirv",
        Wasm = "wasm",
        Xcoff = "xcoff",
    }
}

/// Architecture spellings matched exactly, in addition to the canonical
/// names (LLVM 22). Names that need the ARM or BPF rules are handled in
/// [`parse_arch`].
const ARCH_ALIASES: &[(&str, Arch)] = &[
    ("i386", Arch::X86),
    ("i486", Arch::X86),
    ("i586", Arch::X86),
    ("i686", Arch::X86),
    ("i786", Arch::X86),
    ("i886", Arch::X86),
    ("i986", Arch::X86),
    ("amd64", Arch::X86_64),
    ("x86_64", Arch::X86_64),
    ("x86_64h", Arch::X86_64),
    ("powerpc", Arch::Ppc),
    ("powerpcspe", Arch::Ppc),
    ("ppc", Arch::Ppc),
    ("ppc32", Arch::Ppc),
    ("powerpcle", Arch::Ppcle),
    ("ppcle", Arch::Ppcle),
    ("ppc32le", Arch::Ppcle),
    ("powerpc64", Arch::Ppc64),
    ("ppu", Arch::Ppc64),
    ("ppc64", Arch::Ppc64),
    ("powerpc64le", Arch::Ppc64le),
    ("ppc64le", Arch::Ppc64le),
    ("xscale", Arch::Arm),
    ("xscaleeb", Arch::Armeb),
    ("aarch64", Arch::Aarch64),
    ("aarch64_be", Arch::Aarch64Be),
    ("aarch64_32", Arch::Aarch64_32),
    ("aarch64_lfi", Arch::Aarch64),
    ("arc", Arch::Arc),
    ("arm64", Arch::Aarch64),
    ("arm64_32", Arch::Aarch64_32),
    ("arm64e", Arch::Aarch64),
    ("arm64ec", Arch::Aarch64),
    ("arm", Arch::Arm),
    ("armeb", Arch::Armeb),
    ("thumb", Arch::Thumb),
    ("thumbeb", Arch::Thumbeb),
    ("avr", Arch::Avr),
    ("m68k", Arch::M68k),
    ("msp430", Arch::Msp430),
    ("mips", Arch::Mips),
    ("mipseb", Arch::Mips),
    ("mipsallegrex", Arch::Mips),
    ("mipsisa32r6", Arch::Mips),
    ("mipsr6", Arch::Mips),
    ("mipsel", Arch::Mipsel),
    ("mipsallegrexel", Arch::Mipsel),
    ("mipsisa32r6el", Arch::Mipsel),
    ("mipsr6el", Arch::Mipsel),
    ("mips64", Arch::Mips64),
    ("mips64eb", Arch::Mips64),
    ("mipsn32", Arch::Mips64),
    ("mipsisa64r6", Arch::Mips64),
    ("mips64r6", Arch::Mips64),
    ("mipsn32r6", Arch::Mips64),
    ("mips64el", Arch::Mips64el),
    ("mipsn32el", Arch::Mips64el),
    ("mipsisa64r6el", Arch::Mips64el),
    ("mips64r6el", Arch::Mips64el),
    ("mipsn32r6el", Arch::Mips64el),
    ("r600", Arch::R600),
    ("amdgcn", Arch::Amdgcn),
    ("riscv32", Arch::Riscv32),
    ("riscv64", Arch::Riscv64),
    ("riscv32be", Arch::Riscv32be),
    ("riscv64be", Arch::Riscv64be),
    ("hexagon", Arch::Hexagon),
    ("s390x", Arch::Systemz),
    ("systemz", Arch::Systemz),
    ("sparc", Arch::Sparc),
    ("sparcel", Arch::Sparcel),
    ("sparcv9", Arch::Sparcv9),
    ("sparc64", Arch::Sparcv9),
    ("tce", Arch::Tce),
    ("tcele", Arch::Tcele),
    ("xcore", Arch::Xcore),
    ("nvptx", Arch::Nvptx),
    ("nvptx64", Arch::Nvptx64),
    ("amdil", Arch::Amdil),
    ("amdil64", Arch::Amdil64),
    ("hsail", Arch::Hsail),
    ("hsail64", Arch::Hsail64),
    ("spir", Arch::Spir),
    ("spir64", Arch::Spir64),
    ("spirv", Arch::Spirv),
    ("spirv1.5", Arch::Spirv),
    ("spirv1.6", Arch::Spirv),
    ("spirv32", Arch::Spirv32),
    ("spirv32v1.0", Arch::Spirv32),
    ("spirv32v1.1", Arch::Spirv32),
    ("spirv32v1.2", Arch::Spirv32),
    ("spirv32v1.3", Arch::Spirv32),
    ("spirv32v1.4", Arch::Spirv32),
    ("spirv32v1.5", Arch::Spirv32),
    ("spirv32v1.6", Arch::Spirv32),
    ("spirv64", Arch::Spirv64),
    ("spirv64v1.0", Arch::Spirv64),
    ("spirv64v1.1", Arch::Spirv64),
    ("spirv64v1.2", Arch::Spirv64),
    ("spirv64v1.3", Arch::Spirv64),
    ("spirv64v1.4", Arch::Spirv64),
    ("spirv64v1.5", Arch::Spirv64),
    ("spirv64v1.6", Arch::Spirv64),
    ("lanai", Arch::Lanai),
    ("renderscript32", Arch::Renderscript32),
    ("renderscript64", Arch::Renderscript64),
    ("shave", Arch::Shave),
    ("ve", Arch::Ve),
    ("wasm32", Arch::Wasm32),
    ("wasm64", Arch::Wasm64),
    ("csky", Arch::Csky),
    ("loongarch32", Arch::Loongarch32),
    ("loongarch64", Arch::Loongarch64),
    ("dxil", Arch::Dxil),
    ("dxilv1.0", Arch::Dxil),
    ("dxilv1.1", Arch::Dxil),
    ("dxilv1.2", Arch::Dxil),
    ("dxilv1.3", Arch::Dxil),
    ("dxilv1.4", Arch::Dxil),
    ("dxilv1.5", Arch::Dxil),
    ("dxilv1.6", Arch::Dxil),
    ("dxilv1.7", Arch::Dxil),
    ("dxilv1.8", Arch::Dxil),
    ("dxilv1.9", Arch::Dxil),
    ("xtensa", Arch::Xtensa),
];

/// Parses an architecture component (LLVM's `parseArch`).
pub(crate) fn parse_arch(name: &str) -> Arch {
    if let Some(&(_, arch)) = ARCH_ALIASES.iter().find(|(n, _)| *n == name) {
        return arch;
    }
    // Every name that starts with "kalimba" is a Kalimba.
    if name.starts_with("kalimba") {
        return Arch::Kalimba;
    }
    if name.starts_with("arm") || name.starts_with("thumb") || name.starts_with("aarch64") {
        return super::arm::parse_arm_arch(name);
    }
    if name.starts_with("bpf") {
        return parse_bpf_arch(name);
    }
    Arch::Unknown
}

/// BPF spellings; plain `bpf` means the host's byte order, and LLVM 22 as
/// shipped runs on little-endian hosts only in this project.
fn parse_bpf_arch(name: &str) -> Arch {
    match name {
        "bpf" | "bpf_le" | "bpfel" => Arch::Bpfel,
        "bpf_be" | "bpfeb" => Arch::Bpfeb,
        _ => Arch::Unknown,
    }
}

/// Parses the sub-architecture out of an architecture component (LLVM's
/// `parseSubArch`). It looks at the text only, so a component that is not a
/// known architecture can still carry a sub-architecture (`ve` reads as ARM
/// v7ve, for instance), exactly as in LLVM.
pub(crate) fn parse_sub_arch(name: &str) -> SubArch {
    if name.starts_with("mips") && (name.ends_with("r6el") || name.ends_with("r6")) {
        return SubArch::MipsR6;
    }
    match name {
        "powerpcspe" => return SubArch::PpcSpe,
        "arm64e" => return SubArch::Aarch64Arm64e,
        "arm64ec" => return SubArch::Aarch64Arm64ec,
        "aarch64_lfi" => return SubArch::Aarch64Lfi,
        _ => {}
    }
    if name.starts_with("spirv") {
        const SPIRV: &[(&str, SubArch)] = &[
            ("v1.0", SubArch::SpirvV10),
            ("v1.1", SubArch::SpirvV11),
            ("v1.2", SubArch::SpirvV12),
            ("v1.3", SubArch::SpirvV13),
            ("v1.4", SubArch::SpirvV14),
            ("v1.5", SubArch::SpirvV15),
            ("v1.6", SubArch::SpirvV16),
        ];
        return suffix_lookup(name, SPIRV);
    }
    if name.starts_with("dxil") {
        const DXIL: &[(&str, SubArch)] = &[
            ("v1.0", SubArch::DxilV1_0),
            ("v1.1", SubArch::DxilV1_1),
            ("v1.2", SubArch::DxilV1_2),
            ("v1.3", SubArch::DxilV1_3),
            ("v1.4", SubArch::DxilV1_4),
            ("v1.5", SubArch::DxilV1_5),
            ("v1.6", SubArch::DxilV1_6),
            ("v1.7", SubArch::DxilV1_7),
            ("v1.8", SubArch::DxilV1_8),
            ("v1.9", SubArch::DxilV1_9),
        ];
        return suffix_lookup(name, DXIL);
    }
    let canonical = super::arm::canonical_arch_name(name);
    if canonical.is_empty() {
        const KALIMBA: &[(&str, SubArch)] = &[
            ("kalimba3", SubArch::KalimbaV3),
            ("kalimba4", SubArch::KalimbaV4),
            ("kalimba5", SubArch::KalimbaV5),
        ];
        return suffix_lookup(name, KALIMBA);
    }
    super::arm::sub_arch_of(super::arm::parse_arch_kind(canonical))
}

fn suffix_lookup(name: &str, table: &[(&str, SubArch)]) -> SubArch {
    table
        .iter()
        .find(|(suffix, _)| name.ends_with(suffix))
        .map_or(SubArch::None, |&(_, sub)| sub)
}

/// Parses a vendor component (exact match).
pub(crate) fn parse_vendor(name: &str) -> Vendor {
    if name == "sie" {
        return Vendor::Scei;
    }
    Vendor::ALL[1..]
        .iter()
        .copied()
        .find(|v| v.name() == name)
        .unwrap_or(Vendor::Unknown)
}

/// Extra OS prefixes besides the canonical names.
const OS_ALIASES: &[(&str, Os)] = &[
    ("macos", Os::MacOsx),
    ("win32", Os::Win32),
    ("visionos", Os::XrOs),
];

/// Parses an OS component: the longest known name the component starts
/// with wins (`linux-gnu` pieces like `linux5` read as Linux, `wasip1` as
/// WASI preview 1 rather than WASI).
pub(crate) fn parse_os(name: &str) -> Os {
    let canonical = Os::ALL[1..].iter().map(|&o| (o.name(), o));
    longest_prefix(name, canonical.chain(OS_ALIASES.iter().copied())).unwrap_or(Os::Unknown)
}

/// Parses an environment component by longest known prefix
/// (`gnueabihf` beats `gnueabi` beats `gnu`; `androideabi` is Android).
pub(crate) fn parse_environment(name: &str) -> Environment {
    let canonical = Environment::ALL[1..].iter().map(|&e| (e.name(), e));
    longest_prefix(name, canonical).unwrap_or(Environment::Unknown)
}

fn longest_prefix<T>(name: &str, table: impl Iterator<Item = (&'static str, T)>) -> Option<T> {
    let mut best: Option<(usize, T)> = None;
    for (prefix, value) in table {
        let longer = match &best {
            Some((len, _)) => prefix.len() > *len,
            None => true,
        };
        if longer && name.starts_with(prefix) {
            best = Some((prefix.len(), value));
        }
    }
    best.map(|(_, value)| value)
}

/// Parses the object format named at the end of an environment component
/// (`gnu-elf`, `msvc-coff`, `xcoff`).
pub(crate) fn parse_object_format(name: &str) -> ObjectFormat {
    // `xcoff` is tested before `coff` because both are suffixes of it.
    const SUFFIXES: &[(&str, ObjectFormat)] = &[
        ("xcoff", ObjectFormat::Xcoff),
        ("coff", ObjectFormat::Coff),
        ("elf", ObjectFormat::Elf),
        ("goff", ObjectFormat::Goff),
        ("macho", ObjectFormat::MachO),
        ("wasm", ObjectFormat::Wasm),
        ("spirv", ObjectFormat::Spirv),
    ];
    SUFFIXES
        .iter()
        .find(|(suffix, _)| name.ends_with(suffix))
        .map_or(ObjectFormat::Unknown, |&(_, f)| f)
}

/// The object format LLVM assumes when the environment names none.
pub(crate) fn default_object_format(arch: Arch, os: Os) -> ObjectFormat {
    let darwin = is_darwin(os);
    match arch {
        Arch::Unknown
        | Arch::Aarch64
        | Arch::Aarch64_32
        | Arch::Arm
        | Arch::Thumb
        | Arch::X86
        | Arch::X86_64 => match os {
            Os::Win32 | Os::Uefi => ObjectFormat::Coff,
            _ if darwin => ObjectFormat::MachO,
            _ => ObjectFormat::Elf,
        },
        Arch::Mipsel if os == Os::Win32 => ObjectFormat::Coff,
        Arch::Ppc | Arch::Ppc64 if os == Os::Aix => ObjectFormat::Xcoff,
        Arch::Ppc | Arch::Ppc64 if darwin => ObjectFormat::MachO,
        Arch::Systemz if os == Os::Zos => ObjectFormat::Goff,
        Arch::Wasm32 | Arch::Wasm64 => ObjectFormat::Wasm,
        Arch::Spirv | Arch::Spirv32 | Arch::Spirv64 => ObjectFormat::Spirv,
        Arch::Dxil => ObjectFormat::DxContainer,
        _ => ObjectFormat::Elf,
    }
}

/// Apple's operating systems (`Triple::isOSDarwin`).
pub(crate) fn is_darwin(os: Os) -> bool {
    matches!(
        os,
        Os::Darwin
            | Os::MacOsx
            | Os::Ios
            | Os::TvOs
            | Os::WatchOs
            | Os::DriverKit
            | Os::XrOs
            | Os::BridgeOs
    )
}
