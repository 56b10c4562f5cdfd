//! What an offload entry's bytes are, and which target they were built for.
//!
//! [`classify`] looks at the first bytes (through the crate's sniffer and,
//! for ELF files, its ELF header reader) and names the payload: an AMDGPU code object with the processor and `xnack`/`sramecc`
//! settings from its `e_flags` (`amdgpu_target`), an NVIDIA cubin with its
//! SM (`cuda_sm`), PTX text, SPIR-V, LLVM bitcode, a nested offload
//! container, a host object, or unknown bytes.
//!
//! The `EF_AMDGPU_MACH` table is LLVM 22's (checked value by value against
//! `llvm-readobj-22 -h`); the feature bits are decoded in both encodings:
//! code object v3 (one bit each, on or off) and v4 and later (two bits
//! each: unsupported, any, off, on).
//!
//! [`check_nvidia_header`] is the rule that an NVIDIA fat binary entry's
//! header (its kind and architecture, which `thin` decides on) must agree
//! with the payload it holds.

use std::fmt;

use crate::identify::{identify, FileKind};
use crate::nvidia::fatbin::EntryKind;
use crate::nvidia::{CudaArch, Isa};
use crate::objfile::elf;
use crate::target_id::TargetId;
use crate::triple::Triple;

/// `e_machine` of AMDGPU code objects.
pub const EM_AMDGPU: u16 = 224;
/// `e_machine` of NVIDIA device objects (cubins).
pub(crate) const EM_CUDA: u16 = 190;
/// `EI_OSABI` of AMD HSA code objects.
pub(crate) const ELFOSABI_AMDGPU_HSA: u8 = 64;

/// The ELF header fields [`classify`] needs ([`elf_facts`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ElfFacts {
    /// ELF64 (else ELF32).
    pub is_64: bool,
    /// `e_machine`.
    pub machine: u16,
    /// `e_flags`.
    pub flags: u32,
    /// `e_ident[EI_OSABI]`.
    pub os_abi: u8,
    /// `e_ident[EI_ABIVERSION]`.
    pub abi_version: u8,
    /// `e_type` (1 relocatable, 2 executable, 3 shared object).
    pub file_type: u16,
}

/// A target-ID feature setting as an AMDGPU code object records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feature {
    /// The processor does not support the feature (v4+), or the object
    /// does not say (v3 with the bit clear means off; see `amdgpu_target`).
    Unsupported,
    /// Built to run either way (v4+).
    Any,
    /// Off.
    Off,
    /// On.
    On,
}

impl Feature {
    /// The target-ID suffix (`+`, `-`) or `None` for any/unsupported.
    pub(crate) fn sign(self) -> Option<char> {
        match self {
            Feature::On => Some('+'),
            Feature::Off => Some('-'),
            _ => None,
        }
    }
}

/// The target an AMDGPU code object's `e_flags` name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AmdgpuTarget {
    /// The processor (`gfx90a`), or `None` for a value LLVM 22 does not
    /// know (`mach` then holds it).
    pub processor: Option<&'static str>,
    /// The `EF_AMDGPU_MACH` value.
    pub mach: u32,
    /// The xnack setting.
    pub xnack: Feature,
    /// The sramecc setting.
    pub sramecc: Feature,
    /// Code object version (2 to 6), from the ABI version of an HSA object.
    pub code_object_version: Option<u32>,
    /// The generic version of a `gfx*-generic` target (v6), 0 if none.
    pub generic_version: u32,
}

impl AmdgpuTarget {
    /// The target ID the flags spell (`gfx90a:sramecc+:xnack-`): features
    /// with a setting on or off, in byte order, as clang writes them.
    pub fn target_id(&self) -> String {
        let mut out = self
            .processor
            .map_or_else(|| format!("mach-0x{:x}", self.mach), str::to_owned);
        for (name, f) in [("sramecc", self.sramecc), ("xnack", self.xnack)] {
            if let Some(sign) = f.sign() {
                out.push(':');
                out.push_str(name);
                out.push(sign);
            }
        }
        out
    }

    /// Whether this code object can be what the entry ID's target ID
    /// (`gfx90a:xnack+`, say) names: same processor, and every feature the
    /// ID sets is set the same way in the flags (an ID that leaves a
    /// feature out matches any setting; a flag setting of "any" matches an
    /// ID that leaves it out only).
    pub fn matches_target_id(&self, target_id: &str) -> bool {
        let Ok(id) = TargetId::parse_syntax(target_id) else {
            return false;
        };
        if self.processor != Some(id.processor()) {
            // The ID may use an alternative name (`fiji`).
            let canonical = TargetId::parse(target_id, &Triple::new("amdgcn-amd-amdhsa"))
                .ok()
                .map(|t| t.processor().to_owned());
            if self.processor.map(str::to_owned) != canonical {
                return false;
            }
        }
        [("xnack", self.xnack), ("sramecc", self.sramecc)]
            .into_iter()
            .all(|(name, f)| match id.feature(name) {
                None => true,
                Some(true) => f == Feature::On,
                Some(false) => f == Feature::Off,
            })
    }
}

/// LLVM 22's `EF_AMDGPU_MACH` values and processor names.
pub const AMDGPU_MACH: &[(u32, &str)] = &[
    (0x001, "r600"),
    (0x002, "r630"),
    (0x003, "rs880"),
    (0x004, "rv670"),
    (0x005, "rv710"),
    (0x006, "rv730"),
    (0x007, "rv770"),
    (0x008, "cedar"),
    (0x009, "cypress"),
    (0x00a, "juniper"),
    (0x00b, "redwood"),
    (0x00c, "sumo"),
    (0x00d, "barts"),
    (0x00e, "caicos"),
    (0x00f, "cayman"),
    (0x010, "turks"),
    (0x020, "gfx600"),
    (0x021, "gfx601"),
    (0x022, "gfx700"),
    (0x023, "gfx701"),
    (0x024, "gfx702"),
    (0x025, "gfx703"),
    (0x026, "gfx704"),
    (0x028, "gfx801"),
    (0x029, "gfx802"),
    (0x02a, "gfx803"),
    (0x02b, "gfx810"),
    (0x02c, "gfx900"),
    (0x02d, "gfx902"),
    (0x02e, "gfx904"),
    (0x02f, "gfx906"),
    (0x030, "gfx908"),
    (0x031, "gfx909"),
    (0x032, "gfx90c"),
    (0x033, "gfx1010"),
    (0x034, "gfx1011"),
    (0x035, "gfx1012"),
    (0x036, "gfx1030"),
    (0x037, "gfx1031"),
    (0x038, "gfx1032"),
    (0x039, "gfx1033"),
    (0x03a, "gfx602"),
    (0x03b, "gfx705"),
    (0x03c, "gfx805"),
    (0x03d, "gfx1035"),
    (0x03e, "gfx1034"),
    (0x03f, "gfx90a"),
    (0x041, "gfx1100"),
    (0x042, "gfx1013"),
    (0x043, "gfx1150"),
    (0x044, "gfx1103"),
    (0x045, "gfx1036"),
    (0x046, "gfx1101"),
    (0x047, "gfx1102"),
    (0x048, "gfx1200"),
    (0x049, "gfx1250"),
    (0x04a, "gfx1151"),
    (0x04c, "gfx942"),
    (0x04e, "gfx1201"),
    (0x04f, "gfx950"),
    (0x051, "gfx9-generic"),
    (0x052, "gfx10-1-generic"),
    (0x053, "gfx10-3-generic"),
    (0x054, "gfx11-generic"),
    (0x055, "gfx1152"),
    (0x058, "gfx1153"),
    (0x059, "gfx12-generic"),
    (0x05a, "gfx1251"),
    (0x05f, "gfx9-4-generic"),
];

/// Decodes an AMDGPU code object's `e_flags`. `hsa_abi_version` is
/// `EI_ABIVERSION` of an `ELFOSABI_AMDGPU_HSA` object (0 = v2, 1 = v3,
/// 2 = v4, 3 = v5, 4 = v6), `None` for other OS ABIs, which are read with
/// the v4+ encoding.
pub(crate) fn amdgpu_target(flags: u32, hsa_abi_version: Option<u8>) -> AmdgpuTarget {
    let mach = flags & 0xff;
    let processor = AMDGPU_MACH
        .iter()
        .find(|&&(m, _)| m == mach)
        .map(|&(_, n)| n);
    let code_object_version = hsa_abi_version.map(|v| u32::from(v) + 2);
    let (xnack, sramecc) = match code_object_version {
        Some(2) => (Feature::Unsupported, Feature::Unsupported),
        Some(3) => {
            let bit = |b: u32| {
                if flags & b != 0 {
                    Feature::On
                } else {
                    Feature::Off
                }
            };
            (bit(0x100), bit(0x200))
        }
        _ => {
            let two = |v: u32| match v {
                0 => Feature::Unsupported,
                1 => Feature::Any,
                2 => Feature::Off,
                _ => Feature::On,
            };
            (two((flags >> 8) & 3), two((flags >> 10) & 3))
        }
    };
    let generic_version = if code_object_version.is_some_and(|v| v >= 6) {
        flags >> 24
    } else {
        0
    };
    AmdgpuTarget {
        processor,
        mach,
        xnack,
        sramecc,
        code_object_version,
        generic_version,
    }
}

/// The SM number of an NVIDIA cubin: `e_flags & 0xff` for ABI versions
/// before 8, bits 8 to 15 from ABI version 8 on (CUDA 12.8, `sm_100` and
/// later); both observed on NVIDIA's own libraries.
pub(crate) fn cuda_sm(flags: u32, abi_version: u8) -> u32 {
    if abi_version >= 8 {
        (flags >> 8) & 0xff
    } else {
        flags & 0xff
    }
}

/// An NVIDIA fat binary entry's header checked against its payload
/// ([`check_nvidia_header`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeaderCheck {
    /// The payload is of the header's kind and names the header's
    /// architecture (as far as it records one: see
    /// [`check_nvidia_header`]).
    Agrees,
    /// Nothing to compare: the header names a kind whose payload says
    /// nothing of its architecture (NVVM IR, a kind this reader does not
    /// know), and the payload is no cubin or PTX.
    Unchecked,
    /// They disagree: the header, or the payload, is damaged.
    Disagrees(HeaderMismatch),
}

impl HeaderCheck {
    /// `Some(true)` when they agree, `Some(false)` when not, `None` when
    /// nothing was compared.
    pub fn matches(&self) -> Option<bool> {
        match self {
            HeaderCheck::Agrees => Some(true),
            HeaderCheck::Unchecked => None,
            HeaderCheck::Disagrees(_) => Some(false),
        }
    }
}

/// How an NVIDIA fat binary entry's header and its payload disagree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderMismatch {
    /// The header's kind.
    pub kind: EntryKind,
    /// The header's architecture.
    pub arch: CudaArch,
    /// What the payload says, in words (`its cubin's e_flags say sm_90`).
    pub payload: String,
}

impl fmt::Display for HeaderMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            EntryKind::Elf => "a cubin",
            EntryKind::Ptx => "PTX",
            EntryKind::NvvmIr => "NVVM IR",
            EntryKind::Concatenated => "concatenated entries",
            EntryKind::Other(_) => "an unknown kind",
        };
        let kind = match self.kind {
            EntryKind::Other(n) => format!(" ({n})"),
            _ => String::new(),
        };
        write!(
            f,
            "the entry header says {what}{kind} for {}, but {}",
            self.arch, self.payload
        )
    }
}

/// Checks what an NVIDIA fat binary entry's header records, its `kind`
/// and `arch` (what `thin` keeps or drops it by), against the payload it
/// holds: `payload` is [`classify`] of `head`, the payload's first bytes
/// as decoded (4 KiB, or all of a shorter one).
///
/// - An ELF entry must hold a cubin whose SM (`cuda_sm`: `e_flags` read
///   as their ELF ABI version says) is the header's number. The `a`/`f`
///   variant is not compared: nvcc 13.5 writes the same `e_flags` for
///   `sm_90` and `sm_90a` cubins (0x6005a04), and for `sm_100`, `sm_100a`
///   and `sm_100f` (0x6006402): checked on the cubins of
///   `tests/fixtures/nvidia` (`variants.o`, `libk.so`).
/// - A PTX entry must hold PTX; its `.target` directive (`.target sm_90a`,
///   in the first 4 KiB wherever the payload is named PTX at all) must
///   name the header's architecture, variant included. PTX whose
///   `.target` is not an `sm_` architecture this reader spells is checked
///   for its kind only.
/// - An entry of any other kind must not hold a cubin or PTX (its kind
///   field would then be what is wrong); otherwise nothing is compared.
pub fn check_nvidia_header(
    kind: EntryKind,
    arch: CudaArch,
    payload: &Payload,
    head: &[u8],
) -> HeaderCheck {
    let mismatch = |payload: String| {
        HeaderCheck::Disagrees(HeaderMismatch {
            kind,
            arch,
            payload,
        })
    };
    match (kind, payload) {
        (EntryKind::Elf, Payload::Cubin { sm }) if *sm == arch.number() => HeaderCheck::Agrees,
        (EntryKind::Elf, Payload::Cubin { sm }) => {
            mismatch(format!("its cubin's e_flags say sm_{sm}"))
        }
        (EntryKind::Ptx, Payload::Ptx) => match ptx_target(head) {
            Some(target) if target != arch => mismatch(format!("its PTX says .target {target}")),
            _ => HeaderCheck::Agrees,
        },
        (EntryKind::Elf | EntryKind::Ptx, _) | (_, Payload::Cubin { .. } | Payload::Ptx) => {
            mismatch(match payload.target() {
                Some(t) => format!("its payload reads as {} ({t})", payload.name()),
                None => format!("its payload reads as {}", payload.name()),
            })
        }
        _ => HeaderCheck::Unchecked,
    }
}

/// The architecture of PTX text's `.target` directive (`.target sm_90a`,
/// `.target sm_52, texmode_independent`), from the first complete line
/// that holds it; `None` if no complete line does or it names no `sm_`
/// architecture.
fn ptx_target(head: &[u8]) -> Option<CudaArch> {
    let line = &head[ptx_target_line(head)?];
    let rest = line
        .trim_ascii_start()
        .strip_prefix(b".target")?
        .trim_ascii_start();
    let end = rest
        .iter()
        .position(|&b| b == b',' || b.is_ascii_whitespace())
        .unwrap_or(rest.len());
    match CudaArch::parse(std::str::from_utf8(&rest[..end]).ok()?) {
        Ok((Isa::Real, arch)) => Some(arch),
        _ => None,
    }
}

/// The first complete line of `head` that is a `.target` directive, its
/// newline included. The last piece of `head` is not known to be a whole
/// line: the head may end inside it (`sm_10` of `sm_100`).
fn ptx_target_line(head: &[u8]) -> Option<std::ops::Range<usize>> {
    let mut start = 0;
    for (n, &b) in head.iter().enumerate() {
        if b != b'\n' {
            continue;
        }
        let directive = head[start..n]
            .trim_ascii_start()
            .strip_prefix(b".target")
            .is_some_and(|rest| rest.first().is_some_and(u8::is_ascii_whitespace));
        if directive {
            return Some(start..n + 1);
        }
        start = n + 1;
    }
    None
}

/// Whether [`classify`] could name a payload differently from more bytes
/// than `head` (a prefix of it, as a compressed payload's first bytes
/// decoded): text without a complete `.target` line yet (PTX may still
/// show), a zstd frame (its content is decoded from the frame's bytes), and
/// `MZ` whose PE signature lies past `head`.
pub fn needs_more(head: &[u8]) -> bool {
    (head.is_ascii() && ptx_target_line(head).is_none())
        || head.starts_with(&ZSTD_MAGIC)
        || crate::identify::pe_extent(head).is_some_and(|end| end > head.len() as u64)
}

/// What a payload is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Payload {
    /// Zero bytes.
    Empty,
    /// An AMDGPU code object.
    AmdgpuCodeObject(AmdgpuTarget),
    /// An NVIDIA device ELF.
    Cubin {
        /// `sm_NN`'s number.
        sm: u32,
    },
    /// Another ELF file (a host object, say).
    Elf {
        /// `e_machine`.
        machine: u16,
    },
    /// Some other object format (COFF, Mach-O), as the caller's sniffer
    /// named it.
    Object(&'static str),
    /// PTX assembly text.
    Ptx,
    /// A SPIR-V module.
    SpirV,
    /// LLVM bitcode (`wrapper`: inside the bitcode wrapper header).
    Bitcode {
        /// Has the `0x0B17C0DE` wrapper.
        wrapper: bool,
    },
    /// A binary offload bundle.
    Bundle,
    /// A compressed offload bundle.
    Ccob,
    /// An offload binary (`0x10FF10AD`).
    OffloadBinary,
    /// An NVIDIA fat binary container.
    Fatbin,
    /// A zstd frame: a device image compressed whole, as DPC++ stores the
    /// images of its SYCL bundles when compression is on. `inner` names
    /// what its first decompressed bytes hold, when they decode.
    Zstd {
        /// The payload inside, from its first bytes.
        inner: Option<Box<Payload>>,
    },
    /// Anything else.
    Unknown,
}

impl Payload {
    /// A short name for listings (`amdgpu-code-object`, `cubin`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            Payload::Empty => "empty",
            Payload::AmdgpuCodeObject(_) => "amdgpu-code-object",
            Payload::Cubin { .. } => "cubin",
            Payload::Elf { .. } => "elf",
            Payload::Object(_) => "object",
            Payload::Ptx => "ptx",
            Payload::SpirV => "spirv",
            Payload::Bitcode { .. } => "bitcode",
            Payload::Bundle => "offload-bundle",
            Payload::Ccob => "compressed-offload-bundle",
            Payload::OffloadBinary => "offload-binary",
            Payload::Fatbin => "nvidia-fatbin",
            Payload::Zstd { .. } => "zstd-frame",
            Payload::Unknown => "unknown",
        }
    }

    /// The target the payload itself names: an AMDGPU target ID, `sm_NN`.
    pub fn target(&self) -> Option<String> {
        match self {
            Payload::AmdgpuCodeObject(t) => Some(t.target_id()),
            Payload::Cubin { sm } => Some(format!("sm_{sm}")),
            Payload::Zstd { inner: Some(inner) } => inner.target(),
            _ => None,
        }
    }
}

/// The ELF header fields of `data`, read with [`crate::objfile::elf`];
/// `None` when `data` is not an ELF file or its header is cut short.
pub(crate) fn elf_facts(data: &[u8]) -> Option<ElfFacts> {
    if !matches!(identify(data), FileKind::Elf(_)) {
        return None;
    }
    let class = elf::ident_class(data).ok()?;
    let h = elf::parse_header(data, class)?;
    Some(ElfFacts {
        is_64: class.is64,
        machine: h.machine,
        flags: h.flags,
        os_abi: h.os_abi,
        abi_version: h.abi_version,
        file_type: h.e_type,
    })
}

/// What an ELF file with these header fields is.
pub(crate) fn classify_elf(e: ElfFacts) -> Payload {
    match e.machine {
        EM_AMDGPU => Payload::AmdgpuCodeObject(amdgpu_target(
            e.flags,
            (e.os_abi == ELFOSABI_AMDGPU_HSA).then_some(e.abi_version),
        )),
        EM_CUDA => Payload::Cubin {
            sm: cuda_sm(e.flags, e.abi_version),
        },
        machine => Payload::Elf { machine },
    }
}

/// Names the payload `data` from its first bytes: the file-type sniffer
/// ([`identify`]) for everything with a magic, the ELF header for ELF
/// files, and a look at the text for PTX.
pub fn classify(data: &[u8]) -> Payload {
    classify_at_depth(data, true)
}

/// [`classify`]; `open_zstd` says whether a zstd frame's content is looked
/// at (once: a frame inside a frame is not opened).
fn classify_at_depth(data: &[u8], open_zstd: bool) -> Payload {
    if data.is_empty() {
        return Payload::Empty;
    }
    // The sniffer, as LLVM, names only bundles whose entry count starts
    // with "__"; the bundle reader's check sees them all.
    if crate::bundle::has_magic(data) {
        return Payload::Bundle;
    }
    match identify(data) {
        FileKind::Elf(_) => elf_facts(data).map_or(Payload::Unknown, classify_elf),
        FileKind::Coff { .. } | FileKind::CoffImport | FileKind::CoffClGl => {
            Payload::Object("COFF")
        }
        FileKind::Pe => Payload::Object("PE"),
        FileKind::MachO(_) | FileKind::MachOUniversal => Payload::Object("Mach-O"),
        FileKind::Archive | FileKind::ThinArchive => Payload::Object("archive"),
        FileKind::Spirv => Payload::SpirV,
        FileKind::Bitcode => Payload::Bitcode { wrapper: false },
        FileKind::BitcodeWrapper => Payload::Bitcode { wrapper: true },
        FileKind::OffloadBundle => Payload::Bundle,
        FileKind::Ccob => Payload::Ccob,
        FileKind::OffloadBinary => Payload::OffloadBinary,
        FileKind::NvFatbin => Payload::Fatbin,
        _ if data.starts_with(&ZSTD_MAGIC) => Payload::Zstd {
            inner: open_zstd
                .then(|| zstd_head(data))
                .flatten()
                .map(|head| Box::new(classify_at_depth(&head, false))),
        },
        _ if looks_like_ptx(data) => Payload::Ptx,
        _ => Payload::Unknown,
    }
}

/// The first four bytes of a zstd frame (RFC 8878), little-endian
/// `0xFD2FB528`.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// How much of a zstd frame's content is decoded to name what it holds:
/// enough for every header [`classify`] reads.
const ZSTD_HEAD: usize = 4096;

/// The first [`ZSTD_HEAD`] bytes (fewer if the content is shorter) of the
/// zstd frame starting `data`; `None` if they do not decode.
fn zstd_head(data: &[u8]) -> Option<Vec<u8>> {
    crate::zstd_bounded::head(data, ZSTD_HEAD)
}

/// PTX text: printable ASCII up to its first `.target` directive line,
/// with `.version` before it (where the first 4 KiB hold no complete
/// `.target` line: all of them printable, holding `.version` and
/// `.target`). What follows the directive is not looked at, so that a
/// head decoded only as far as that line names the payload as the whole
/// would.
fn looks_like_ptx(data: &[u8]) -> bool {
    let head = &data[..data.len().min(4096)];
    let scope = &head[..ptx_target_line(head).map_or(head.len(), |l| l.end)];
    let text = scope
        .iter()
        .all(|&b| b.is_ascii() && (b >= 0x20 || b"\t\r\n".contains(&b)) || b == 0);
    if !text {
        return false;
    }
    let has = |needle: &[u8]| scope.windows(needle.len()).any(|w| w == needle);
    has(b".version") && has(b".target")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(machine: u16, flags: u32, os_abi: u8, abi_version: u8) -> ElfFacts {
        ElfFacts {
            is_64: true,
            machine,
            flags,
            os_abi,
            abi_version,
            file_type: 3,
        }
    }

    #[test]
    fn amdgpu_flags_in_both_encodings() {
        // v5 (ABI 3): gfx90a, xnack any, sramecc any: 0x53f.
        let t = amdgpu_target(0x53f, Some(3));
        assert_eq!(t.processor, Some("gfx90a"));
        assert_eq!((t.xnack, t.sramecc), (Feature::Any, Feature::Any));
        assert_eq!(t.code_object_version, Some(5));
        assert_eq!(t.target_id(), "gfx90a");
        // xnack on (0x300), sramecc off (0x800).
        let t = amdgpu_target(0xb3f, Some(2));
        assert_eq!(t.target_id(), "gfx90a:sramecc-:xnack+");
        assert!(t.matches_target_id("gfx90a:xnack+"));
        assert!(t.matches_target_id("gfx90a"));
        assert!(!t.matches_target_id("gfx90a:xnack-"));
        assert!(!t.matches_target_id("gfx906"));
        // v3: one bit each.
        let t = amdgpu_target(0x12f, Some(1));
        assert_eq!((t.xnack, t.sramecc), (Feature::On, Feature::Off));
        assert_eq!(t.target_id(), "gfx906:sramecc-:xnack+");
        // Unknown mach value.
        let t = amdgpu_target(0x27, Some(3));
        assert_eq!(t.processor, None);
        assert_eq!(t.target_id(), "mach-0x27");
        // v6 generic version.
        let t = amdgpu_target(0x0100_0051, Some(4));
        assert_eq!(t.processor, Some("gfx9-generic"));
        assert_eq!(t.generic_version, 1);
    }

    #[test]
    fn mach_table_is_sorted_and_unique() {
        assert!(AMDGPU_MACH.windows(2).all(|w| w[0].0 < w[1].0));
        // Every amdgcn name is a processor LLVM 22's target parser knows.
        for &(_, name) in AMDGPU_MACH.iter().filter(|(m, _)| *m >= 0x20) {
            assert!(
                crate::target_id::is_offload_arch(name)
                    || TargetId::parse(name, &Triple::new("amdgcn-amd-amdhsa")).is_ok(),
                "{name}"
            );
        }
    }

    #[test]
    fn cuda_sm_in_both_abis() {
        assert_eq!(cuda_sm(0x5a055a, 7), 90);
        assert_eq!(cuda_sm(0x5007802, 8), 120);
        assert_eq!(
            classify_elf(facts(EM_CUDA, 0x320532, 51, 7)),
            Payload::Cubin { sm: 50 }
        );
    }

    /// The header's kind and architecture against the payload's: cubins
    /// by number (with the `e_flags` of nvcc 13.5's `sm_90a` and
    /// `sm_100f` cubins, which are the plain ones'), PTX by its
    /// `.target`, variant included.
    #[test]
    fn nvidia_headers_against_their_payloads() {
        let arch = |t: &str| CudaArch::parse(t).unwrap().1;
        let cubin = |flags: u32, abi: u8| {
            let mut elf = b"\x7fELF\x02\x01\x01\x41".to_vec();
            elf.push(abi);
            elf.resize(64, 0);
            elf[18..20].copy_from_slice(&EM_CUDA.to_le_bytes());
            elf[48..52].copy_from_slice(&flags.to_le_bytes());
            elf
        };
        let check =
            |kind, a: &str, head: &[u8]| check_nvidia_header(kind, arch(a), &classify(head), head);
        let sm90 = cubin(0x6005a04, 8);
        let sm100 = cubin(0x6006402, 8);
        let sm90_abi7 = cubin(0x5a055a, 7);
        for (a, head) in [
            ("sm_90", &sm90),
            ("sm_90a", &sm90),
            ("sm_90", &sm90_abi7),
            ("sm_100f", &sm100),
            ("sm_100a", &sm100),
        ] {
            assert_eq!(check(EntryKind::Elf, a, head), HeaderCheck::Agrees, "{a}");
        }
        let flipped = check(EntryKind::Elf, "sm_75", &sm90);
        assert_eq!(flipped.matches(), Some(false));
        assert_eq!(
            match flipped {
                HeaderCheck::Disagrees(m) => m.to_string(),
                other => panic!("{other:?}"),
            },
            "the entry header says a cubin for sm_75, but its cubin's e_flags say sm_90"
        );
        // The same flags read with the other ABI's layout name another SM.
        assert!(matches!(
            check(EntryKind::Elf, "sm_90", &cubin(0x6005a04, 7)),
            HeaderCheck::Disagrees(_)
        ));
        // PTX: the .target line, variant and all.
        let ptx = b"//\n// Generated by NVIDIA NVVM Compiler\n\n.version 9.1\n.target sm_100a\n.address_size 64\n";
        assert_eq!(check(EntryKind::Ptx, "sm_100a", ptx), HeaderCheck::Agrees);
        for wrong in ["sm_100", "sm_100f", "sm_90a"] {
            let c = check(EntryKind::Ptx, wrong, ptx);
            assert_eq!(c.matches(), Some(false), "{wrong}");
        }
        let ptx = b".version 7.0\n  .target\tsm_52, texmode_independent\n.address_size 64\n";
        assert_eq!(check(EntryKind::Ptx, "sm_52", ptx), HeaderCheck::Agrees);
        // A .target cut by the end of the head, or one this reader does
        // not spell: the kind alone is checked.
        let cut = b".version 9.0\n.target sm_10";
        assert_eq!(check(EntryKind::Ptx, "sm_100", cut), HeaderCheck::Agrees);
        let odd = b".version 9.0\n.target sm_9x\n";
        assert_eq!(check(EntryKind::Ptx, "sm_90", odd), HeaderCheck::Agrees);
        // Kinds: a cubin under a PTX header or an unknown kind, PTX under
        // an ELF header, bytes that are neither under either.
        assert!(matches!(
            check(EntryKind::Ptx, "sm_90", &sm90),
            HeaderCheck::Disagrees(_)
        ));
        let c = check(EntryKind::Other(3), "sm_90", &sm90);
        assert_eq!(
            match c {
                HeaderCheck::Disagrees(m) => m.to_string(),
                other => panic!("{other:?}"),
            },
            "the entry header says an unknown kind (3) for sm_90, but its payload reads as cubin (sm_90)"
        );
        assert!(matches!(
            check(EntryKind::Elf, "sm_90", b".version 9.0\n.target sm_90\n"),
            HeaderCheck::Disagrees(_)
        ));
        assert!(matches!(
            check(EntryKind::Elf, "sm_90", b"random bytes"),
            HeaderCheck::Disagrees(_)
        ));
        assert_eq!(
            check(EntryKind::NvvmIr, "sm_90", b"BC\xC0\xDE\x35"),
            HeaderCheck::Unchecked
        );
        assert_eq!(
            check(EntryKind::Other(9), "sm_90", b"random bytes").matches(),
            None
        );
    }

    /// PTX is named from its bytes up to its first `.target` line, so a
    /// head decoded that far names a payload as all of it would: what
    /// follows the line is not looked at, and only text without the line
    /// yet asks for more.
    #[test]
    fn ptx_named_up_to_its_target_line() {
        let nvcc = b"//\n// Generated by NVIDIA NVVM Compiler\n//\n// Compiler Build ID: CL-36424714\n// Cuda compilation tools, release 13.0, V13.0.88\n// Based on NVVM 7.0.1\n//\n\n.version 9.0\n.target sm_90a\n.address_size 64\n\n\t// .globl\t_Z4axpyfPKfPfi\n";
        let end = ptx_target_line(nvcc).unwrap().end;
        assert!(end < 256, "{end}");
        assert!(!needs_more(&nvcc[..end]));
        for cut in 0..end {
            assert!(needs_more(&nvcc[..cut]), "{cut}");
        }
        // Every head from the end of the line on names it the same way.
        let mut long = nvcc.to_vec();
        long.resize(8192, b' ');
        for cut in [end, end + 1, 256, 4096, 8192] {
            assert_eq!(classify(&long[..cut]), Payload::Ptx, "{cut}");
            assert_eq!(ptx_target(&long[..cut]), ptx_target(&long), "{cut}");
        }
        // Bytes after the line, even binary, do not unmake the PTX.
        let mut tail = nvcc[..end].to_vec();
        tail.extend_from_slice(b"\xff\xfe\x01binary");
        assert_eq!(classify(&tail), Payload::Ptx);
        // Before it they do; so does `.version` only after it.
        assert_eq!(
            classify(b".version 9.0\n\x01\n.target sm_90\n"),
            Payload::Unknown
        );
        assert_eq!(classify(b".target sm_90\n.version 9.0\n"), Payload::Unknown);
        // Without a complete `.target` line in 4 KiB: printable text
        // holding both words, all of it.
        assert_eq!(classify(b".version 9.0\n.target sm_9"), Payload::Ptx);
        assert_eq!(classify(b".version 9.0 .target sm_90"), Payload::Ptx);
        assert_eq!(
            classify(b".version 9.0\n.target sm_9\xff"),
            Payload::Unknown
        );
        // Binary heads ask for no more; `.targets` is not the directive.
        assert!(!needs_more(b"\x7fELF\x02\x01\xff"));
        assert!(needs_more(b".version 9.0\n.targets sm_90\n"));
        // A zstd frame does, and so does `MZ` (text or not) until its PE
        // signature is in: PTX-looking text that is a PE image is named
        // as the PE image it is.
        assert!(needs_more(&ZSTD_MAGIC));
        let mut pe = nvcc[..end].to_vec();
        pe[..2].copy_from_slice(b"MZ");
        pe[0x3c..0x40].copy_from_slice(&0x200u32.to_le_bytes());
        assert!(needs_more(&pe));
        pe.resize(0x204, b' ');
        pe[0x200..0x204].copy_from_slice(b"PE\0\0");
        assert!(!needs_more(&pe));
        assert_eq!(classify(&pe), Payload::Object("PE"));
    }

    #[test]
    fn classify_by_magic() {
        assert_eq!(classify(b""), Payload::Empty);
        assert_eq!(classify(&[3, 2, 0x23, 7, 0]), Payload::SpirV);
        assert_eq!(
            classify(b"BC\xC0\xDE\x35"),
            Payload::Bitcode { wrapper: false }
        );
        assert_eq!(
            classify(&[0xDE, 0xC0, 0x17, 0x0B, 0]),
            Payload::Bitcode { wrapper: true }
        );
        assert_eq!(
            classify(b"__CLANG_OFFLOAD_BUNDLE__\x02\0\0\0\0\0\0\0"),
            Payload::Bundle
        );
        assert_eq!(classify(b"CCOB\x03\0\x01\0"), Payload::Ccob);
        assert_eq!(classify(&[0x10, 0xFF, 0x10, 0xAD]), Payload::OffloadBinary);
        assert_eq!(classify(b"//\n.version 8.8\n.target sm_90\n"), Payload::Ptx);
        assert_eq!(classify(b"random"), Payload::Unknown);
        assert_eq!(
            classify(b"\x28\xb5\x2f\xfd\x60\xa0"),
            Payload::Zstd { inner: None }
        );
        // A SPIR-V module compressed whole, as DPC++ stores its images.
        let spirv = [3u8, 2, 0x23, 7, 0, 1, 0, 0].repeat(100);
        let framed = zstd::bulk::compress(&spirv, 3).unwrap();
        assert_eq!(
            classify(&framed),
            Payload::Zstd {
                inner: Some(Box::new(Payload::SpirV))
            }
        );
        // A frame inside a frame is not opened.
        let twice = zstd::bulk::compress(&framed, 3).unwrap();
        assert_eq!(
            classify(&twice),
            Payload::Zstd {
                inner: Some(Box::new(Payload::Zstd { inner: None }))
            }
        );
        // An ELF64 header: AMDGPU, HSA ABI version 3 (code object v5),
        // gfx90a with xnack on and sramecc any.
        let mut elf = b"\x7fELF\x02\x01\x01\x40\x03".to_vec();
        elf.resize(64, 0);
        elf[18..20].copy_from_slice(&EM_AMDGPU.to_le_bytes());
        elf[48..52].copy_from_slice(&0x73fu32.to_le_bytes());
        let p = classify(&elf);
        assert_eq!(p.target().as_deref(), Some("gfx90a:xnack+"));
        match p {
            Payload::AmdgpuCodeObject(t) => {
                assert_eq!(t.code_object_version, Some(5));
                assert_eq!(t.sramecc, Feature::Any);
            }
            other => panic!("{other:?}"),
        }
        // Cut short: not an ELF file any more.
        assert_eq!(classify(&elf[..40]), Payload::Unknown);
        assert_eq!(
            classify_elf(facts(62, 0, 0, 0)),
            Payload::Elf { machine: 62 }
        );
        let p = classify_elf(facts(EM_AMDGPU, 0x32f, 64, 3));
        assert_eq!(p.target().as_deref(), Some("gfx906:xnack+"));
        assert_eq!(p.name(), "amdgpu-code-object");
    }
}
