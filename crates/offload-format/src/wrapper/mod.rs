//! The host modules the offload wrappers emit, written as LLVM bitcode.
//!
//! An offload wrapper turns device images into a host-side LLVM module that
//! embeds the images as constant data and registers them with the offload
//! runtime from a global constructor. Two generations exist:
//!
//! * `llvm-offload-wrapper` (LLVM 22): opaque pointers, an entry table in
//!   section `llvm_offload_entries`, one registration constructor of priority
//!   101 that also installs the unregistration function with `atexit`; kinds
//!   OpenMP (a `__tgt_bin_desc` descriptor over any number of images), CUDA
//!   and HIP (one fat binary plus code that registers every entry of the
//!   kind). See [`wrap_llvm22`].
//! * `clang-offload-wrapper` (LLVM 14): typed pointers, entry table
//!   `omp_offloading_entries`, constructor and destructor of priority 1; plus
//!   the AMD extension that records one target ID per image. See
//!   [`wrap_clang14`].
//!
//! The module is modelled in `ir`, serialised by `writer` and can be
//! printed as `.ll` text by `printer` (for debugging and golden tests).
//! Device images are borrowed, never copied, from parsing to the output.

mod bitstream;
pub(crate) mod ir;
pub(crate) mod printer;
pub(crate) mod shapes;
pub mod triple;
pub(crate) mod writer;

pub use ir::{Flavour, Module};
pub use shapes::Image;
pub use writer::{Bitcode, WriteError};

use std::fmt;

use crate::bytes::{Bytes, Endian};

/// The offload kinds `llvm-offload-wrapper` wraps for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OffloadKind {
    /// OpenMP: a descriptor over all images, registered with libomptarget.
    OpenMp,
    /// CUDA: one fat binary registered with the CUDA runtime.
    Cuda,
    /// HIP: one fat binary registered with the HIP runtime.
    Hip,
}

/// Errors from building a wrapper module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WrapError {
    /// A packaged input (offload binary magic) whose header points outside
    /// the file. LLVM 22 reads out of bounds here; we refuse.
    TruncatedOffloadBinary {
        /// Position of the input in the input list.
        input: usize,
        /// Which structure does not fit.
        what: &'static str,
        /// Offset the header gives for it.
        offset: u64,
        /// Its size.
        size: u64,
        /// Size of the whole input.
        file_size: u64,
    },
    /// CUDA and HIP wrap exactly one image.
    SingleImageKind,
    /// `--offload-arch` was given, but not once per image.
    ArchCountMismatch {
        /// Number of `--offload-arch` values.
        archs: usize,
        /// Number of input images.
        images: usize,
    },
    /// The module cannot be encoded.
    Write(WriteError),
}

impl fmt::Display for WrapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WrapError::TruncatedOffloadBinary {
                what,
                offset,
                size,
                file_size,
                ..
            } => write!(
                f,
                "truncated offload binary: the {what} ({size} bytes at offset {offset}) \
                 extends past the end of the file ({file_size} bytes)"
            ),
            WrapError::SingleImageKind => {
                f.write_str("CUDA / HIP offloading uses a single fatbinary or offload bundle")
            }
            WrapError::ArchCountMismatch { archs, images } => write!(
                f,
                "{archs} architecture{} given for {images} input image{}; \
                 give one per image, in input order",
                if *archs == 1 { "" } else { "s" },
                if *images == 1 { "" } else { "s" },
            ),
            WrapError::Write(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for WrapError {}

impl From<WriteError> for WrapError {
    fn from(e: WriteError) -> Self {
        WrapError::Write(e)
    }
}

/// Magic number at the start of an offload binary (`llvm-offload-binary`).
const OFFLOAD_BINARY_MAGIC: [u8; 4] = [0x10, 0xFF, 0x10, 0xAD];

fn read_u64(data: &[u8], at: usize) -> Option<u64> {
    Bytes::new(data).u64_at(at as u64, Endian::Little)
}

/// Where the device code lies inside an OpenMP input.
///
/// A packaged input (one that starts with the offload binary magic) is
/// embedded whole, but the descriptor points at the image of its first
/// entry: the header's entry offset (bytes 16..24) locates the entry, whose
/// bytes 24..32 and 32..40 give the image offset and size. Other inputs are
/// raw device code. Unlike LLVM 22, every offset is checked against the
/// file. (Errors name input 0; [`wrap_llvm22`] gives the real position.)
pub(crate) fn openmp_image(data: &[u8]) -> Result<Image<'_>, WrapError> {
    if data.len() < 4 || data[..4] != OFFLOAD_BINARY_MAGIC {
        return Ok(Image::raw(data));
    }
    let file_size = data.len() as u64;
    let truncated = |what, offset, size| WrapError::TruncatedOffloadBinary {
        input: 0,
        what,
        offset,
        size,
        file_size,
    };
    const HEADER: u64 = 32;
    const ENTRY: u64 = 40;
    let entry = read_u64(data, 16).ok_or_else(|| truncated("header", 0, HEADER))?;
    match entry.checked_add(ENTRY) {
        Some(end) if end <= file_size => {}
        _ => return Err(truncated("first entry", entry, ENTRY)),
    }
    let at = entry as usize;
    let offset = read_u64(data, at + 24).expect("entry checked to fit");
    let size = read_u64(data, at + 32).expect("entry checked to fit");
    match offset.checked_add(size) {
        Some(end) if end <= file_size => Ok(Image {
            data,
            begin: offset,
            end,
        }),
        _ => Err(truncated("device image", offset, size)),
    }
}

/// Builds the module `llvm-offload-wrapper --kind=<kind> --triple=<triple>`
/// produces for `inputs`.
pub fn wrap_llvm22<'a>(
    kind: OffloadKind,
    triple: &str,
    inputs: &[&'a [u8]],
) -> Result<Module<'a>, WrapError> {
    let images = match kind {
        OffloadKind::OpenMp => inputs
            .iter()
            .enumerate()
            .map(|(n, d)| {
                openmp_image(d).map_err(|e| match e {
                    WrapError::TruncatedOffloadBinary {
                        what,
                        offset,
                        size,
                        file_size,
                        ..
                    } => WrapError::TruncatedOffloadBinary {
                        input: n,
                        what,
                        offset,
                        size,
                        file_size,
                    },
                    other => other,
                })
            })
            .collect::<Result<Vec<_>, _>>()?,
        OffloadKind::Cuda | OffloadKind::Hip => {
            if inputs.len() != 1 {
                return Err(WrapError::SingleImageKind);
            }
            vec![Image::raw(inputs[0])]
        }
    };
    Ok(shapes::llvm22_module(kind, triple, &images))
}

/// Builds the module `clang-offload-wrapper --target=<triple>` produces for
/// `inputs`, with one `__tgt_image_info` per `--offload-arch` value when
/// `archs` is not empty (then it must have one value per input).
pub fn wrap_clang14<'a>(
    triple: &str,
    inputs: &[&'a [u8]],
    archs: &[&str],
) -> Result<Module<'a>, WrapError> {
    if !archs.is_empty() && archs.len() != inputs.len() {
        return Err(WrapError::ArchCountMismatch {
            archs: archs.len(),
            images: inputs.len(),
        });
    }
    Ok(shapes::clang14_module(triple, inputs, archs))
}

impl<'a> Module<'a> {
    /// Serialises the module as LLVM bitcode (wrapped in the Darwin header
    /// for Darwin targets, as LLVM does).
    pub fn to_bitcode(&self) -> Result<Bitcode<'a>, WriteError> {
        writer::write(self, triple::darwin_wrapper_cpu(&self.triple, self.flavour))
    }

    /// The module as `.ll` text in `llvm-dis` layout.
    pub fn to_ll(&self, module_id: &str) -> String {
        printer::print(self, module_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packaged(entry_at: u64, image_at: u64, image_size: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        v[..4].copy_from_slice(&OFFLOAD_BINARY_MAGIC);
        v[4] = 1;
        v[8..16].copy_from_slice(&(len as u64).to_le_bytes());
        v[16..24].copy_from_slice(&entry_at.to_le_bytes());
        v[24..32].copy_from_slice(&40u64.to_le_bytes());
        if entry_at.checked_add(40).is_some_and(|x| x <= len as u64) {
            let e = entry_at as usize;
            v[e + 24..e + 32].copy_from_slice(&image_at.to_le_bytes());
            v[e + 32..e + 40].copy_from_slice(&image_size.to_le_bytes());
        }
        v
    }

    #[test]
    fn raw_inputs_cover_the_whole_file() {
        let img = openmp_image(b"\x7fELF....").unwrap();
        assert_eq!((img.begin, img.end), (0, 8));
        let img = openmp_image(b"").unwrap();
        assert_eq!((img.begin, img.end), (0, 0));
    }

    #[test]
    fn packaged_inputs_point_at_the_first_image() {
        let v = packaged(32, 96, 16, 112);
        let img = openmp_image(&v).unwrap();
        assert_eq!((img.begin, img.end), (96, 112));
        assert_eq!(img.data.len(), 112);
    }

    #[test]
    fn truncated_packaged_inputs_are_refused() {
        // Just the magic: the header does not fit.
        assert!(matches!(
            openmp_image(&OFFLOAD_BINARY_MAGIC),
            Err(WrapError::TruncatedOffloadBinary { what: "header", .. })
        ));
        // Entry offset past the end.
        let v = packaged(1000, 0, 0, 64);
        assert!(matches!(
            openmp_image(&v),
            Err(WrapError::TruncatedOffloadBinary {
                what: "first entry",
                ..
            })
        ));
        // Entry offset that overflows.
        let v = packaged(u64::MAX - 3, 0, 0, 64);
        assert!(openmp_image(&v).is_err());
        // Image past the end, and an image size that overflows.
        let v = packaged(32, 100, 100, 112);
        assert!(matches!(
            openmp_image(&v),
            Err(WrapError::TruncatedOffloadBinary {
                what: "device image",
                ..
            })
        ));
        let v = packaged(32, 8, u64::MAX, 112);
        assert!(openmp_image(&v).is_err());
    }

    #[test]
    fn cuda_and_hip_take_one_image() {
        for kind in [OffloadKind::Cuda, OffloadKind::Hip] {
            assert_eq!(
                wrap_llvm22(kind, "x86_64-pc-linux-gnu", &[b"a", b"b"]).unwrap_err(),
                WrapError::SingleImageKind
            );
        }
    }

    #[test]
    fn arch_values_must_match_images() {
        let e = wrap_clang14("x86_64-pc-linux-gnu", &[b"a", b"b"], &["gfx906"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "1 architecture given for 2 input images; give one per image, in input order"
        );
    }
}
