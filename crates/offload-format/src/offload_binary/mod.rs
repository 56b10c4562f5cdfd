//! The LLVM offload binary: a device image plus string metadata, marked by the
//! magic bytes `10 FF 10 AD`. This is what `llvm-offload-binary` (formerly
//! `clang-offload-packager`) writes and what clang embeds in the
//! `.llvm.offloading` section of host objects.
//!
//! * [`write`](mod@write): version 1, the only version LLVM 22 writes and reads; also
//!   versions 2 and 3 of newer LLVM, for interoperability tests.
//! * [`read`]: versions 1, 2 and 3 (3 possibly zlib/zstd compressed), with
//!   LLVM 22's validation order and error classes, plus the bounds checks 22
//!   lacks.
//! * [`extract`]: finding offload binaries inside raw files, ELF and COFF
//!   objects, archives and LLVM bitcode.
//! * [`spec`]: the `key=value,...` image description of the command line,
//!   whose keys end up in LLVM's hash-table order.
//! * [`path`]: LLVM's rules for file names, stems and extensions.
//!
//! The byte layout is described in `docs/formats/offload-binary.md`.

pub mod extract;
pub mod path;
pub mod read;
pub mod spec;
pub mod write;

pub use read::{
    parse_binaries, parse_binaries_with, Binary, BodyCodecError, Images, ReadError, ReadErrorKind,
};
pub use write::ImageEntry;

/// The four magic bytes at the start of every offload binary.
pub const MAGIC: [u8; 4] = [0x10, 0xFF, 0x10, 0xAD];

/// Alignment of binaries, images and sizes.
pub(crate) const ALIGNMENT: u64 = 8;

/// Size of the version 1 and 2 header.
pub const HEADER_SIZE: u64 = 32;

/// Size of the version 3 header (adds the inflated size).
pub(crate) const HEADER_SIZE_V3: u64 = 40;

/// Size of one image entry.
pub(crate) const ENTRY_SIZE: u64 = 40;

/// Size of one version 1 string entry (key offset, value offset).
pub(crate) const STRING_ENTRY_SIZE_V1: u64 = 16;

/// Size of one version 2/3 string entry (key offset, value offset, value size).
pub(crate) const STRING_ENTRY_SIZE_V2: u64 = 24;

/// What an image holds. Any 16-bit value can occur in a file; the named
/// constants are the ones LLVM defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ImageKind(pub u16);

impl ImageKind {
    /// Unknown contents.
    pub const NONE: ImageKind = ImageKind(0);
    /// A relocatable or executable object (extension `o`).
    pub const OBJECT: ImageKind = ImageKind(1);
    /// LLVM bitcode (`bc`).
    pub const BITCODE: ImageKind = ImageKind(2);
    /// NVIDIA cubin (`cubin`).
    pub const CUBIN: ImageKind = ImageKind(3);
    /// NVIDIA fatbinary (`fatbin`).
    pub const FATBINARY: ImageKind = ImageKind(4);
    /// PTX assembly (`s`).
    pub const PTX: ImageKind = ImageKind(5);
    /// SPIR-V (defined, but LLVM 22 maps no extension to it).
    pub const SPIRV: ImageKind = ImageKind(6);

    /// The kind LLVM 22 gives a file extension (without the dot). Matching
    /// is case-sensitive; unknown extensions give [`ImageKind::NONE`].
    pub(crate) fn from_extension(ext: &[u8]) -> ImageKind {
        match ext {
            b"o" => ImageKind::OBJECT,
            b"bc" => ImageKind::BITCODE,
            b"cubin" => ImageKind::CUBIN,
            b"fatbin" => ImageKind::FATBINARY,
            b"s" => ImageKind::PTX,
            _ => ImageKind::NONE,
        }
    }

    /// The kind `llvm-offload-binary` records for the file `path` with
    /// contents `data`: bitcode by its magic whatever the name, otherwise by
    /// the extension of the path.
    pub fn infer(path: &[u8], data: &[u8]) -> ImageKind {
        if is_bitcode(data) {
            return ImageKind::BITCODE;
        }
        match path::extension(path) {
            Some(ext) => ImageKind::from_extension(ext),
            None => ImageKind::NONE,
        }
    }

    /// The extension used when naming an extracted image of this kind
    /// (empty for kinds without one).
    pub fn extension(self) -> &'static str {
        match self {
            ImageKind::OBJECT => "o",
            ImageKind::BITCODE => "bc",
            ImageKind::CUBIN => "cubin",
            ImageKind::FATBINARY => "fatbin",
            ImageKind::PTX => "s",
            _ => "",
        }
    }
}

/// The programming model that produced an image: a bit flag. Any 16-bit
/// value can occur in a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OffloadKind(pub u16);

impl OffloadKind {
    /// No producer recorded.
    pub const NONE: OffloadKind = OffloadKind(0);
    /// OpenMP offloading.
    pub const OPENMP: OffloadKind = OffloadKind(1);
    /// CUDA.
    pub const CUDA: OffloadKind = OffloadKind(2);
    /// HIP.
    pub const HIP: OffloadKind = OffloadKind(4);
    /// SYCL.
    pub const SYCL: OffloadKind = OffloadKind(8);

    /// The kind LLVM 22 gives a name on the command line: exact,
    /// case-sensitive; anything else is [`OffloadKind::NONE`].
    pub fn from_name(name: &[u8]) -> OffloadKind {
        match name {
            b"openmp" => OffloadKind::OPENMP,
            b"cuda" => OffloadKind::CUDA,
            b"hip" => OffloadKind::HIP,
            b"sycl" => OffloadKind::SYCL,
            _ => OffloadKind::NONE,
        }
    }

    /// The name LLVM prints for this kind (`none` for unknown values).
    pub fn name(self) -> &'static str {
        match self {
            OffloadKind::OPENMP => "openmp",
            OffloadKind::CUDA => "cuda",
            OffloadKind::HIP => "hip",
            OffloadKind::SYCL => "sycl",
            _ => "none",
        }
    }
}

/// True when `data` starts with LLVM bitcode magic (raw `BC C0 DE` or the
/// wrapper `DE C0 17 0B`).
pub fn is_bitcode(data: &[u8]) -> bool {
    data.starts_with(b"BC\xC0\xDE") || data.starts_with(b"\xDE\xC0\x17\x0B")
}

/// Rounds `v` up to a multiple of [`ALIGNMENT`]; `None` on overflow.
pub(crate) fn align8(v: u64) -> Option<u64> {
    v.checked_add(ALIGNMENT - 1).map(|x| x & !(ALIGNMENT - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_kind_inference() {
        let cases: &[(&[u8], &[u8], u16)] = &[
            (b"a.o", b"", 1),
            (b"a.bc", b"", 2),
            (b"a.cubin", b"", 3),
            (b"a.fatbin", b"", 4),
            (b"a.s", b"", 5),
            (b"a.S", b"", 0),
            (b"a.O", b"", 0),
            (b"a.ptx", b"", 0),
            (b"a.spv", b"", 0),
            (b"a", b"", 0),
            (b".o", b"", 1),
            (b"..o", b"", 1),
            (b"x.tar.o", b"", 1),
            (b"trail.", b"", 0),
            (b"d.x/noext", b"", 0),
            (b"lto.o", b"BC\xC0\xDE....", 2),
            (b"w.txt", b"\xDE\xC0\x17\x0B", 2),
            (b"short.o", b"BC\xC0", 1),
        ];
        for (path, data, kind) in cases {
            assert_eq!(
                ImageKind::infer(path, data).0,
                *kind,
                "{}",
                String::from_utf8_lossy(path)
            );
        }
    }

    #[test]
    fn offload_kinds_are_bit_flags() {
        assert_eq!(OffloadKind::from_name(b"openmp").0, 1);
        assert_eq!(OffloadKind::from_name(b"cuda").0, 2);
        assert_eq!(OffloadKind::from_name(b"hip").0, 4);
        assert_eq!(OffloadKind::from_name(b"sycl").0, 8);
        for other in [&b"OpenMP"[..], b"none", b"", b"openmp,hip"] {
            assert_eq!(OffloadKind::from_name(other), OffloadKind::NONE);
        }
        assert_eq!(OffloadKind(16).name(), "none");
    }
}
