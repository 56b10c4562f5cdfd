//! Processor tables: AMDGPU processors known to LLVM 22's target parser,
//! and the offload architecture names clang 22 accepts.

/// One AMDGPU processor of LLVM's target parser table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AmdgpuProcessor {
    /// Canonical name (`gfx906`).
    pub name: &'static str,
    /// Other names that mean the same processor (`fiji` for `gfx803`).
    pub alt_names: &'static [&'static str],
    /// Whether the `xnack` target-ID feature may be given.
    pub xnack: bool,
    /// Whether the `sramecc` target-ID feature may be given.
    pub sramecc: bool,
}

impl AmdgpuProcessor {
    /// The target-ID features this processor accepts, in byte order.
    pub(crate) fn target_id_features(&self) -> impl Iterator<Item = &'static str> {
        [("sramecc", self.sramecc), ("xnack", self.xnack)]
            .into_iter()
            .filter(|&(_, on)| on)
            .map(|(name, _)| name)
    }

    /// Whether `name` is this processor's canonical or alternative name.
    pub(crate) fn is_named(&self, name: &str) -> bool {
        self.name == name || self.alt_names.contains(&name)
    }
}

const fn gcn(
    name: &'static str,
    alt_names: &'static [&'static str],
    xnack: bool,
    sramecc: bool,
) -> AmdgpuProcessor {
    AmdgpuProcessor {
        name,
        alt_names,
        xnack,
        sramecc,
    }
}

/// The `amdgcn` processors of LLVM 22, in LLVM's enum order. Canonical names
/// and feature flags come from LLVM 22's `getArchNameAMDGCN` /
/// `getArchAttrAMDGCN`; `gfx1250`/`gfx1251` have xnack always on, which is
/// not an xnack target-ID feature.
pub static AMDGCN_PROCESSORS: &[AmdgpuProcessor] = &[
    gcn("gfx600", &["tahiti"], false, false),
    gcn("gfx601", &["pitcairn", "verde"], false, false),
    gcn("gfx602", &["hainan", "oland"], false, false),
    gcn("gfx700", &["kaveri"], false, false),
    gcn("gfx701", &["hawaii"], false, false),
    gcn("gfx702", &[], false, false),
    gcn("gfx703", &["kabini", "mullins"], false, false),
    gcn("gfx704", &["bonaire"], false, false),
    gcn("gfx705", &[], false, false),
    gcn("gfx801", &["carrizo"], true, false),
    gcn("gfx802", &["iceland", "tonga"], false, false),
    gcn("gfx803", &["fiji", "polaris10", "polaris11"], false, false),
    gcn("gfx805", &["tongapro"], false, false),
    gcn("gfx810", &["stoney"], true, false),
    gcn("gfx900", &[], true, false),
    gcn("gfx902", &[], true, false),
    gcn("gfx904", &[], true, false),
    gcn("gfx906", &[], true, true),
    gcn("gfx908", &[], true, true),
    gcn("gfx909", &[], true, false),
    gcn("gfx90a", &[], true, true),
    gcn("gfx90c", &[], true, false),
    gcn("gfx942", &[], true, true),
    gcn("gfx950", &[], true, true),
    gcn("gfx1010", &[], true, false),
    gcn("gfx1011", &[], true, false),
    gcn("gfx1012", &[], true, false),
    gcn("gfx1013", &[], true, false),
    gcn("gfx1030", &[], false, false),
    gcn("gfx1031", &[], false, false),
    gcn("gfx1032", &[], false, false),
    gcn("gfx1033", &[], false, false),
    gcn("gfx1034", &[], false, false),
    gcn("gfx1035", &[], false, false),
    gcn("gfx1036", &[], false, false),
    gcn("gfx1100", &[], false, false),
    gcn("gfx1101", &[], false, false),
    gcn("gfx1102", &[], false, false),
    gcn("gfx1103", &[], false, false),
    gcn("gfx1150", &[], false, false),
    gcn("gfx1151", &[], false, false),
    gcn("gfx1152", &[], false, false),
    gcn("gfx1153", &[], false, false),
    gcn("gfx1200", &[], false, false),
    gcn("gfx1201", &[], false, false),
    gcn("gfx1250", &[], false, false),
    gcn("gfx1251", &[], false, false),
    gcn("gfx9-generic", &[], true, false),
    gcn("gfx10-1-generic", &[], true, false),
    gcn("gfx10-3-generic", &[], false, false),
    gcn("gfx11-generic", &[], false, false),
    gcn("gfx12-generic", &[], false, false),
    gcn("gfx9-4-generic", &[], true, true),
];

/// The `r600` processors of LLVM 22. None of them takes a target-ID
/// feature. (No R600 name is an offload architecture, so the bundler never
/// keeps a target ID that would resolve here; the table exists for
/// completeness of [`super::TargetId::parse`].)
pub(crate) static R600_PROCESSORS: &[AmdgpuProcessor] = &[
    gcn("r600", &["rv630", "rv635"], false, false),
    gcn("r630", &[], false, false),
    gcn("rs880", &["rs780", "rv610", "rv620"], false, false),
    gcn("rv670", &[], false, false),
    gcn("rv710", &[], false, false),
    gcn("rv730", &[], false, false),
    gcn("rv770", &["rv740"], false, false),
    gcn("cedar", &["palm"], false, false),
    gcn("cypress", &["hemlock"], false, false),
    gcn("juniper", &[], false, false),
    gcn("redwood", &[], false, false),
    gcn("sumo", &["sumo2"], false, false),
    gcn("barts", &[], false, false),
    gcn("caicos", &[], false, false),
    gcn("cayman", &["aruba"], false, false),
    gcn("turks", &[], false, false),
];

/// Looks up an `amdgcn` processor by canonical or alternative name
/// (case-sensitive, like LLVM).
pub fn amdgcn_processor(name: &str) -> Option<&'static AmdgpuProcessor> {
    AMDGCN_PROCESSORS.iter().find(|p| p.is_named(name))
}

/// Looks up an `r600` processor by canonical or alternative name.
pub fn r600_processor(name: &str) -> Option<&'static AmdgpuProcessor> {
    R600_PROCESSORS.iter().find(|p| p.is_named(name))
}

/// The offload architecture names of clang 22 (`StringToOffloadArch`), in
/// clang's enum order. The bundler keeps the target-ID part of an entry ID
/// only when the text before its first `:` is exactly one of these.
pub static OFFLOAD_ARCHS: &[&str] = &[
    "sm_20",
    "sm_21",
    "sm_30",
    "sm_32",
    "sm_35",
    "sm_37",
    "sm_50",
    "sm_52",
    "sm_53",
    "sm_60",
    "sm_61",
    "sm_62",
    "sm_70",
    "sm_72",
    "sm_75",
    "sm_80",
    "sm_86",
    "sm_87",
    "sm_88",
    "sm_89",
    "sm_90",
    "sm_90a",
    "sm_100",
    "sm_100a",
    "sm_101",
    "sm_101a",
    "sm_103",
    "sm_103a",
    "sm_110",
    "sm_110a",
    "sm_120",
    "sm_120a",
    "sm_121",
    "sm_121a",
    "gfx600",
    "gfx601",
    "gfx602",
    "gfx700",
    "gfx701",
    "gfx702",
    "gfx703",
    "gfx704",
    "gfx705",
    "gfx801",
    "gfx802",
    "gfx803",
    "gfx805",
    "gfx810",
    "gfx9-generic",
    "gfx900",
    "gfx902",
    "gfx904",
    "gfx906",
    "gfx908",
    "gfx909",
    "gfx90a",
    "gfx90c",
    "gfx9-4-generic",
    "gfx942",
    "gfx950",
    "gfx10-1-generic",
    "gfx1010",
    "gfx1011",
    "gfx1012",
    "gfx1013",
    "gfx10-3-generic",
    "gfx1030",
    "gfx1031",
    "gfx1032",
    "gfx1033",
    "gfx1034",
    "gfx1035",
    "gfx1036",
    "gfx11-generic",
    "gfx1100",
    "gfx1101",
    "gfx1102",
    "gfx1103",
    "gfx1150",
    "gfx1151",
    "gfx1152",
    "gfx1153",
    "gfx12-generic",
    "gfx1200",
    "gfx1201",
    "gfx1250",
    "gfx1251",
    "amdgcnspirv",
    "generic",
    "graniterapids",
    "bmg_g21",
];

/// Whether `name` is one of clang 22's offload architecture names
/// (case-sensitive; alternative AMDGPU names such as `fiji` are not).
pub fn is_offload_arch(name: &str) -> bool {
    OFFLOAD_ARCHS.contains(&name)
}
