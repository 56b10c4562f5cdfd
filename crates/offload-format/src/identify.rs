//! What a buffer is, from its first bytes: the one file-type sniffer of
//! this crate (goblin's `peek` is the model).
//!
//! [`identify`] decides the way LLVM 22's `identify_magic` does for every
//! kind LLVM knows (object files, archives, bitcode, the CUDA fat binary),
//! so that a tool which asks LLVM "is this an object file?" can ask
//! [`FileKind`] instead and reach the same answer. The kinds LLVM does not
//! sniff (offload bundles, CCOB) are recognised by their magic strings. It
//! looks at most at the first 32 bytes, plus the four bytes a PE image's
//! DOS header points to.
//!
//! ```
//! use offload_format::identify::{identify, FileKind};
//!
//! assert_eq!(identify(b"!<arch>\n"), FileKind::Archive);
//! assert_eq!(identify(b"CCOB\x03\x00"), FileKind::Ccob);
//! assert_eq!(identify(b"hello"), FileKind::Unknown);
//! ```

use crate::bytes::{Bytes, Endian};

/// The kind of a file, as its magic bytes tell it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FileKind {
    /// An ELF file (at least 18 bytes starting with `\x7fELF`).
    Elf(ElfIdent),
    /// A COFF object (regular, or bigobj when `bigobj`).
    Coff {
        /// `Machine` of the header (for bigobj, the machine field of the
        /// bigobj header; 0 when that header is short).
        machine: u16,
        /// A bigobj file (`\0\0\xff\xff` and the bigobj class ID).
        bigobj: bool,
    },
    /// A short import library member, or another `\0\0\xff\xff` file that
    /// is not a bigobj object (LLVM: `coff_import_library`).
    CoffImport,
    /// An object made by `cl.exe /GL` (LLVM: `coff_cl_gl_object`).
    CoffClGl,
    /// A PE image (`MZ`, and `PE\0\0` where offset 0x3c points).
    Pe,
    /// A compiled Windows resource file (`.res`).
    WindowsResource,
    /// A Mach-O file with a file type LLVM knows (1 to 12).
    MachO(MachOIdent),
    /// A Mach-O universal (fat) file (big-endian `0xcafebabe` or
    /// `0xcafebabf`, and a small enough architecture count to not be a
    /// Java class file).
    MachOUniversal,
    /// An `ar` archive (`!<arch>\n`): GNU, BSD, COFF or Darwin flavour.
    Archive,
    /// A thin archive (`!<thin>\n`).
    ThinArchive,
    /// An AIX big archive (`<bigaf>\n`).
    AixBigArchive,
    /// LLVM bitcode (`BC\xc0\xde`).
    Bitcode,
    /// LLVM bitcode in a wrapper header (`0x0b17c0de`).
    BitcodeWrapper,
    /// An offload binary (`0x10ff10ad`).
    OffloadBinary,
    /// A binary offload bundle (`__CLANG_OFFLOAD_BUNDLE____`).
    OffloadBundle,
    /// A compressed offload bundle (`CCOB`).
    Ccob,
    /// An NVIDIA fat binary (little-endian `0xba55ed50`; LLVM:
    /// `cuda_fatbinary`).
    NvFatbin,
    /// A WebAssembly object (`\0asm`).
    Wasm,
    /// An XCOFF object (AIX).
    Xcoff {
        /// 64-bit XCOFF.
        is64: bool,
    },
    /// A GOFF object (z/OS).
    Goff,
    /// A DirectX container (`DXBC`).
    DxContainer,
    /// A SPIR-V module.
    Spirv,
    /// Anything else.
    Unknown,
}

/// The identification of an ELF file: the bytes LLVM's sniffer looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ElfIdent {
    /// `EI_CLASS` (1: 32-bit, 2: 64-bit; anything else is invalid).
    pub class: u8,
    /// `EI_DATA` (1: little-endian, 2: big-endian; anything else is invalid).
    pub data: u8,
    /// `e_type`, read big-endian when `EI_DATA` is 2 and little-endian
    /// otherwise, as LLVM's sniffer does.
    pub e_type: u16,
    /// `e_machine`, when the buffer holds it (same byte order as `e_type`).
    pub machine: Option<u16>,
}

impl ElfIdent {
    /// True for a 64-bit class; `None` for an invalid class.
    pub fn is64(&self) -> Option<bool> {
        match self.class {
            1 => Some(false),
            2 => Some(true),
            _ => None,
        }
    }

    /// The byte order; `None` for an invalid `EI_DATA`.
    pub fn endian(&self) -> Option<Endian> {
        match self.data {
            1 => Some(Endian::Little),
            2 => Some(Endian::Big),
            _ => None,
        }
    }

    /// A relocatable object, executable or shared object (`e_type` 1 to
    /// 3): the kinds LLVM opens as object files for their sections.
    #[cfg(feature = "offload-binary")]
    pub(crate) fn is_loadable_kind(&self) -> bool {
        matches!(self.e_type, 1..=3)
    }
}

/// The identification of a Mach-O file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MachOIdent {
    /// 64-bit header (`0xfeedfacf`).
    pub is64: bool,
    /// Byte order of the file.
    pub endian: Endian,
    /// `filetype` (1: `MH_OBJECT`, 2: `MH_EXECUTE`, 6: `MH_DYLIB`,
    /// 8: `MH_BUNDLE`, ...).
    pub filetype: u32,
    /// `cputype`.
    pub cputype: u32,
}

/// The 16-byte class ID that marks a bigobj COFF header.
pub(crate) const BIGOBJ_CLASS_ID: [u8; 16] = [
    0xc7, 0xa1, 0xba, 0xd1, 0xee, 0xba, 0xa9, 0x4b, 0xaf, 0x20, 0xfa, 0xf6, 0x6a, 0xa4, 0xdc, 0xb8,
];

/// The class ID of `cl.exe /GL` objects.
const CL_GL_CLASS_ID: [u8; 16] = [
    0x38, 0xfe, 0xb3, 0x0c, 0xa5, 0xd9, 0xab, 0x4d, 0xac, 0x9b, 0xd6, 0xb6, 0x22, 0x26, 0x53, 0xc2,
];

/// The 32-byte header of a Windows `.res` file.
const WIN_RES_MAGIC: [u8; 32] = [
    0, 0, 0, 0, 0x20, 0, 0, 0, 0xff, 0xff, 0, 0, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0,
];

/// Magic of a binary offload bundle.
pub(crate) const OFFLOAD_BUNDLE_MAGIC: &[u8] = b"__CLANG_OFFLOAD_BUNDLE____";

/// Classifies `data` from its magic bytes. Never fails: what is not
/// recognised is [`FileKind::Unknown`]. Fewer than 4 bytes are always
/// unknown, as in LLVM.
pub fn identify(data: &[u8]) -> FileKind {
    let b = Bytes::new(data);
    if data.len() < 4 {
        return FileKind::Unknown;
    }
    let (b0, b1) = (data[0], data[1]);
    match b0 {
        0x00 => {
            if data.starts_with(b"\0\0\xff\xff") {
                return match b.slice(12, 16) {
                    Some(id) if id == BIGOBJ_CLASS_ID => FileKind::Coff {
                        machine: b.u16_at(6, Endian::Little).unwrap_or(0),
                        bigobj: true,
                    },
                    Some(id) if id == CL_GL_CLASS_ID => FileKind::CoffClGl,
                    _ => FileKind::CoffImport,
                };
            }
            if data.starts_with(&WIN_RES_MAGIC) {
                return FileKind::WindowsResource;
            }
            if b1 == 0 {
                // COFF with an unknown machine type.
                return coff(0);
            }
            if data.starts_with(b"\0asm") {
                return FileKind::Wasm;
            }
            FileKind::Unknown
        }
        0x01 if b1 == 0xdf => FileKind::Xcoff { is64: false },
        0x01 if b1 == 0xf7 => FileKind::Xcoff { is64: true },
        0x03 if data.starts_with(b"\x03\xf0\x00") => FileKind::Goff,
        0x03 if data.starts_with(b"\x03\x02\x23\x07") => FileKind::Spirv,
        0x07 if data.starts_with(b"\x07\x23\x02\x03") => FileKind::Spirv,
        0x10 if data.starts_with(b"\x10\xff\x10\xad") => FileKind::OffloadBinary,
        0xde if data.starts_with(b"\xde\xc0\x17\x0b") => FileKind::BitcodeWrapper,
        b'B' if data.starts_with(b"BC\xc0\xde") => FileKind::Bitcode,
        b'!' if data.starts_with(b"!<arch>\n") => FileKind::Archive,
        b'!' if data.starts_with(b"!<thin>\n") => FileKind::ThinArchive,
        b'<' if data.starts_with(b"<bigaf>\n") => FileKind::AixBigArchive,
        b'_' if data.starts_with(OFFLOAD_BUNDLE_MAGIC) => FileKind::OffloadBundle,
        b'C' if data.starts_with(b"CCOB") => FileKind::Ccob,
        0x7f if data.starts_with(b"\x7fELF") && data.len() >= 18 => elf(b),
        0xca if (data.starts_with(b"\xca\xfe\xba\xbe")
            || data.starts_with(b"\xca\xfe\xba\xbf"))
            && data.len() >= 8
            && data[7] < 43 =>
        {
            FileKind::MachOUniversal
        }
        0xfe | 0xce | 0xcf => macho(b).unwrap_or(FileKind::Unknown),
        // COFF machine types; several share a first byte with other magic,
        // and the second byte decides.
        0xf0 | 0x83 | 0x84 | 0x66 | 0x50 => {
            if data.starts_with(b"\x50\xed\x55\xba") {
                FileKind::NvFatbin
            } else if b1 == 0x01 || b1 == 0x02 {
                coff(u16::from_le_bytes([b0, b1]))
            } else {
                FileKind::Unknown
            }
        }
        0x4c | 0xc4 if b1 == 0x01 || b1 == 0x02 => coff(u16::from_le_bytes([b0, b1])),
        0x90 | 0x68 if b1 == 0x02 => coff(u16::from_le_bytes([b0, b1])),
        0x64 if b1 == 0x86 || b1 == 0xaa => coff(u16::from_le_bytes([b0, b1])),
        0x41 | 0x4e if b1 == 0xa6 => coff(u16::from_le_bytes([b0, b1])),
        b'M' if is_pe(b) => FileKind::Pe,
        b'D' if data.starts_with(b"DXBC") => FileKind::DxContainer,
        _ => FileKind::Unknown,
    }
}

fn coff(machine: u16) -> FileKind {
    FileKind::Coff {
        machine,
        bigobj: false,
    }
}

fn elf(b: Bytes<'_>) -> FileKind {
    let class = b.u8_at(4).unwrap_or(0);
    let data = b.u8_at(5).unwrap_or(0);
    let e = if data == 2 {
        Endian::Big
    } else {
        Endian::Little
    };
    FileKind::Elf(ElfIdent {
        class,
        data,
        e_type: b.u16_at(16, e).unwrap_or(0),
        machine: b.u16_at(18, e),
    })
}

/// A PE image: `MZ`, and `PE\0\0` at the offset stored at 0x3c.
/// How far into `data` [`identify`] looks to tell a PE image (`MZ`, and
/// `PE\0\0` at the offset stored at 0x3c): past the signature, or past
/// that offset where it is cut off; `None` for data that does not start
/// with `MZ`.
pub fn pe_extent(data: &[u8]) -> Option<u64> {
    if !data.starts_with(b"MZ") {
        return None;
    }
    Some(match Bytes::new(data).u32_at(0x3c, Endian::Little) {
        Some(at) => u64::from(at) + 4,
        None => 0x40,
    })
}

fn is_pe(b: Bytes<'_>) -> bool {
    if !b.as_slice().starts_with(b"MZ") {
        return false;
    }
    b.u32_at(0x3c, Endian::Little)
        .and_then(|at| b.slice(u64::from(at), 4))
        == Some(b"PE\0\0")
}

/// A Mach-O header whose file type LLVM knows (1 to 12); the header must
/// be complete for the type to be read.
fn macho(b: Bytes<'_>) -> Option<FileKind> {
    let (endian, is64) = match b.array_at::<4>(0)? {
        [0xfe, 0xed, 0xfa, 0xce] => (Endian::Big, false),
        [0xfe, 0xed, 0xfa, 0xcf] => (Endian::Big, true),
        [0xce, 0xfa, 0xed, 0xfe] => (Endian::Little, false),
        [0xcf, 0xfa, 0xed, 0xfe] => (Endian::Little, true),
        _ => return None,
    };
    let min = if is64 { 32 } else { 28 };
    if b.len() < min {
        return None;
    }
    let filetype = b.u32_at(12, endian)?;
    (1..=12)
        .contains(&filetype)
        .then_some(FileKind::MachO(MachOIdent {
            is64,
            endian,
            filetype,
            cputype: b.u32_at(4, endian)?,
        }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bigobj_header() -> Vec<u8> {
        let mut h = vec![0, 0, 0xff, 0xff, 2, 0, 0x64, 0x86];
        h.extend_from_slice(&[0; 4]);
        h.extend_from_slice(&BIGOBJ_CLASS_ID);
        h.resize(56, 0);
        h
    }

    #[test]
    fn llvm_magic_rules() {
        let mut pe = b"MZ".to_vec();
        pe.resize(0x40, 0);
        pe[0x3c] = 0x40;
        pe.extend_from_slice(b"PE\0\0");
        let mut res = WIN_RES_MAGIC.to_vec();
        res.push(1);
        let elf_dyn = *b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0\x3e\0";
        let cases: &[(&[u8], FileKind)] = &[
            (b"\x10\xff\x10\xad", FileKind::OffloadBinary),
            (b"\x10\xff\x10", FileKind::Unknown),
            (b"BC\xc0\xde", FileKind::Bitcode),
            (b"\xde\xc0\x17\x0b", FileKind::BitcodeWrapper),
            (b"!<arch>\n", FileKind::Archive),
            (b"!<thin>\n", FileKind::ThinArchive),
            (b"<bigaf>\n", FileKind::AixBigArchive),
            (b"__CLANG_OFFLOAD_BUNDLE____", FileKind::OffloadBundle),
            (b"__CLANG_OFFLOAD_BUNDLE___", FileKind::Unknown),
            (b"CCOB", FileKind::Ccob),
            (b"\x50\xed\x55\xba\x01\0", FileKind::NvFatbin),
            (b"\x50\x01", FileKind::Unknown),
            (b"\x50\x01\0\0", coff(0x150)),
            (b"\x4c\x02\0\0", coff(0x24c)),
            (b"\x90\x01\0\0", FileKind::Unknown),
            (b"\x64\x86\0\0", coff(0x8664)),
            (b"\x64\xaa\0\0", coff(0xaa64)),
            (b"\x4e\xa6\0\0", coff(0xa64e)),
            (b"\0\0\0\0", coff(0)),
            (b"\0asm", FileKind::Wasm),
            (b"\0\0\xff\xff\0\0", FileKind::CoffImport),
            (
                &bigobj_header(),
                FileKind::Coff {
                    machine: 0x8664,
                    bigobj: true,
                },
            ),
            (&pe, FileKind::Pe),
            (&pe[..0x40], FileKind::Unknown),
            (&res, FileKind::WindowsResource),
            (&res[..31], coff(0)),
            (b"\x01\xdf\0\0", FileKind::Xcoff { is64: false }),
            (b"\xca\xfe\xba\xbe\0\0\0\x02", FileKind::MachOUniversal),
            (b"\xca\xfe\xba\xbe\0\0\0\x2b", FileKind::Unknown),
            (
                b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x01",
                FileKind::Unknown,
            ),
            (
                &elf_dyn,
                FileKind::Elf(ElfIdent {
                    class: 2,
                    data: 1,
                    e_type: 3,
                    machine: Some(0x3e),
                }),
            ),
            (b"DXBC", FileKind::DxContainer),
            (b"\x03\xf0\x00\x00", FileKind::Goff),
            (b"abc", FileKind::Unknown),
        ];
        for (data, want) in cases {
            assert_eq!(identify(data), *want, "{data:x?}");
        }
    }

    #[test]
    fn macho_needs_a_whole_header_and_a_known_type() {
        let mut h = vec![0xcf, 0xfa, 0xed, 0xfe, 7, 0, 0, 1, 3, 0, 0, 0, 1, 0, 0, 0];
        h.resize(32, 0);
        assert_eq!(
            identify(&h),
            FileKind::MachO(MachOIdent {
                is64: true,
                endian: Endian::Little,
                filetype: 1,
                cputype: 0x0100_0007,
            })
        );
        assert_eq!(identify(&h[..31]), FileKind::Unknown);
        h[12] = 13;
        assert_eq!(identify(&h), FileKind::Unknown);
    }
}
