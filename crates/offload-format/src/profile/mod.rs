//! Where a device image's bytes go: each byte of an image attributed to
//! exactly one function (a kernel or a device function) or to one shared
//! part, for NVIDIA cubins, PTX text and AMD GPU code objects.
//!
//! Pure attribution: the caller hands in the image's bytes (decoded, for a
//! compressed entry; [`decode_nvidia`] decodes one) and gets an
//! [`ImageProfile`] whose parts add up to the image's length exactly,
//! whatever the bytes hold. Offsets and sizes read from the image are never
//! trusted: a section, symbol or string that lies outside the image, or
//! over another's bytes, is clipped, and what cannot be read is reported in
//! [`ImageProfile::damage`] with the bytes it covered counted as shared.
//!
//! The rules, per format:
//!
//! - cubin (ELF, `EM_CUDA`): a function is a `.text.<name>` section; it
//!   owns the sections made for it (`.nv.info.<name>`,
//!   `.nv.constant<N>.<name>`, `.nv.shared.<name>` and `.nv.local.<name>`
//!   which have no file bytes, and the `.rel`/`.rela` sections of these),
//!   their section header entries and names, and the symbols defined in
//!   them with their names. A kernel is a function with an
//!   `.nv.info.<name>` section or an entry symbol (`STO_CUDA_ENTRY`).
//! - AMD code object (ELF, `EM_AMDGPU`): a function is a `STT_FUNC`
//!   symbol with a size in an executable section; it owns its code
//!   (`st_size` bytes at its address), its kernel descriptor
//!   (`<name>.kd`, 64 bytes in `.rodata`), and its symbol entries and
//!   names in `.symtab`/`.dynsym`. A kernel is a function with a
//!   descriptor.
//! - PTX: a function is an `.entry` (kernel) or `.func` with a body, from
//!   the start of the line that declares it to the end of the line of its
//!   closing brace.
//!
//! Everything else is shared, named by the section it lies in (`.strtab`,
//! `.note`, ...), or `ELF headers`, `padding`.

mod elf;
pub mod embedded;
mod ptx;
mod resolve;

pub use resolve::{resolve, split_proportional, Claim};

use std::sync::Arc;

use crate::nvidia::Codec;

/// What kind of image was profiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ImageKind {
    /// An NVIDIA cubin (ELF, `EM_CUDA`).
    Cubin,
    /// PTX text.
    Ptx,
    /// An AMD GPU code object (ELF, `EM_AMDGPU`).
    AmdgpuCodeObject,
    /// NVIDIA NVVM IR (LTO IR), in NVIDIA's own encoding: one shared part,
    /// not decoded.
    NvvmIr,
    /// Anything else (SPIR-V, bitcode, host code, damage): one shared part.
    Other,
}

impl ImageKind {
    /// The name used in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            ImageKind::Cubin => "cubin",
            ImageKind::Ptx => "ptx",
            ImageKind::AmdgpuCodeObject => "code-object",
            ImageKind::NvvmIr => "nvvm",
            ImageKind::Other => "other",
        }
    }
}

/// One function of an image and the bytes it owns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function {
    /// Its name as stored (mangled); shared, so that a caller holding the
    /// profiles of many images can keep one copy of each name.
    pub name: Arc<str>,
    /// Whether it is a kernel (an entry point), not a device function.
    pub kernel: bool,
    /// Its code alone: the `.text.<name>` section's size (cubin), the
    /// symbol's `st_size` (code object), the body's bytes (PTX).
    pub code: u64,
    /// Every byte attributed to it (code included).
    pub bytes: u64,
}

/// A part of an image that no one function owns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shared {
    /// What it is: a section name, `ELF headers`, `padding`.
    pub what: String,
    /// Its bytes.
    pub bytes: u64,
}

/// Where an image's bytes go. `functions` and `shared` add up to `size`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageProfile {
    /// What the image is.
    pub kind: ImageKind,
    /// Its length.
    pub size: u64,
    /// The functions, in the order the image lists them.
    pub functions: Vec<Function>,
    /// The shared parts, in order of first appearance.
    pub shared: Vec<Shared>,
    /// What could not be read (the bytes concerned are shared).
    pub damage: Vec<String>,
}

impl ImageProfile {
    /// An image of `size` bytes attributed as one shared part.
    pub fn whole(kind: ImageKind, size: u64, what: &str) -> ImageProfile {
        ImageProfile {
            kind,
            size,
            functions: Vec::new(),
            shared: if size > 0 {
                vec![Shared {
                    what: what.to_owned(),
                    bytes: size,
                }]
            } else {
                Vec::new()
            },
            damage: Vec::new(),
        }
    }

    /// The sum of every part: `size`, always.
    pub fn total(&self) -> u64 {
        self.functions.iter().map(|f| f.bytes).sum::<u64>()
            + self.shared.iter().map(|s| s.bytes).sum::<u64>()
    }
}

/// `EM_CUDA`.
pub const EM_CUDA: u16 = 190;
/// `EM_AMDGPU`.
pub const EM_AMDGPU: u16 = 224;

/// Profiles an image: a cubin, an AMD code object or PTX text by their
/// rules (see the module documentation), anything else as one shared part.
pub fn profile(data: &[u8]) -> ImageProfile {
    if data.starts_with(b"\x7fELF") {
        return elf::profile(data);
    }
    if ptx::looks_like_ptx(data) {
        return ptx::profile(data);
    }
    ImageProfile::whole(ImageKind::Other, data.len() as u64, "image")
}

/// Decodes a compressed NVIDIA fat binary payload whole into `out`,
/// whose length is the uncompressed size its entry records (the caller
/// bounds that size and provides the memory, so that a large image can
/// live in memory it hands back to the system after); the codec checks
/// the stream against it.
pub fn decode_nvidia(codec: Codec, payload: &[u8], out: &mut [u8]) -> Result<(), String> {
    let recorded = out.len() as u64;
    match codec {
        Codec::Zstd => {
            if let Some(frame) = crate::zstd_bounded::content_size(payload) {
                if frame != recorded {
                    return Err(format!(
                        "the zstd frame records {frame} bytes, the entry {recorded}"
                    ));
                }
            }
            crate::zstd_bounded::decode_whole(payload, out)
        }
        Codec::Lz => crate::nvidia::codec::decode_lz_into(payload, out).map_err(|e| e.to_string()),
    }
}
