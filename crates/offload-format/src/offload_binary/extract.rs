//! Finding offload binaries inside the files LLVM 22 accepts, and reporting
//! the same errors it reports for broken containers.
//!
//! The file type is decided by content (LLVM's magic sniffing), never by
//! name:
//!
//! | content | where the binaries are |
//! |---|---|
//! | offload binary | the whole file, binaries back to back |
//! | ELF relocatable, executable or shared object | every section of type `SHT_LLVM_OFFLOADING`, whatever its name |
//! | COFF object | every section whose name starts with `.llvm.offloading` |
//! | archive | each member, recursively, by its own content |
//! | LLVM bitcode | the globals listed in `!llvm.embedded.objects` for `.llvm.offloading` |
//! | anything else | nowhere (not an error) |
//!
//! Every image remembers the name of the blob it came from (the input name
//! as given, or the archive member's name); `--archive` uses it as the member
//! name.

use std::borrow::Cow;
use std::fmt;

use super::read::{parse_binaries_with, Binary, Images, ReadError};
use crate::archive::LoadThin;
use crate::identify::{identify, FileKind};
use crate::objfile::coff::{CoffFile, SymbolTableCheck};
use crate::objfile::elf::{ElfFile, SHT_LLVM_OFFLOADING};

/// Prefix of the COFF section names that hold offload binaries.
pub(crate) const COFF_SECTION_PREFIX: &[u8] = b".llvm.offloading";

/// An image found in an input, with the name of the blob it came from.
#[derive(Debug, Clone)]
pub struct Found<'a> {
    /// Name of the blob: the input's name, or the archive member's name.
    pub source: Vec<u8>,
    /// The image and its metadata.
    pub binary: Binary<'a>,
}

/// Why extraction failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExtractError {
    /// An offload binary inside `source` is malformed.
    Binary {
        /// Name of the blob holding the binary.
        source: Vec<u8>,
        /// What is wrong with it.
        error: ReadError,
    },
    /// An ELF, COFF or archive container is malformed; the message is
    /// LLVM's text for the problem (bytes: it may quote a file name that
    /// is not UTF-8).
    Container {
        /// Name of the container.
        source: Vec<u8>,
        /// LLVM's message.
        message: Vec<u8>,
    },
    /// Bitcode that cannot be read as a module.
    Bitcode {
        /// Name of the bitcode blob.
        source: Vec<u8>,
        /// What the bitcode reader reported.
        detail: String,
    },
}

impl ExtractError {
    /// The message LLVM 22 prints for this problem, or `None` when LLVM 22
    /// does not detect it (it reads out of bounds instead).
    pub fn llvm_message(&self) -> Option<Vec<u8>> {
        match self {
            ExtractError::Binary { error, .. } => error
                .kind
                .is_llvm_error()
                .then(|| error.kind.to_string().into_bytes()),
            ExtractError::Container { message, .. } => Some(message.clone()),
            ExtractError::Bitcode { .. } => Some(b"Failed to create module".to_vec()),
        }
    }

    /// The name of the blob at fault.
    pub fn source(&self) -> &[u8] {
        match self {
            ExtractError::Binary { source, .. }
            | ExtractError::Container { source, .. }
            | ExtractError::Bitcode { source, .. } => source,
        }
    }
}

impl fmt::Display for ExtractError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExtractError::Binary { error, .. } => write!(f, "{error}"),
            ExtractError::Container { message, .. } => {
                f.write_str(&String::from_utf8_lossy(message))
            }
            ExtractError::Bitcode { detail, .. } => write!(f, "Failed to create module: {detail}"),
        }
    }
}

impl std::error::Error for ExtractError {}

/// Finds every offload binary in `data`, the contents of the input named
/// `source`. Parsing is complete before anything is returned: one error
/// anywhere fails the whole input, as in LLVM.
///
/// Thin archives' members cannot be read by this one (see
/// [`extract_with_thin_members`]).
pub fn extract<'a>(data: &'a [u8], source: &[u8]) -> Result<Vec<Found<'a>>, ExtractError> {
    let mut out = Vec::new();
    extract_into(Cow::Borrowed(data), source, &mut out, None, Images::Checked)?;
    Ok(out)
}

/// [`extract`], with thin archives' members read by `load` and image
/// ranges checked as `images` says. `source` is also the path those
/// members are found relative to (LLVM uses the buffer's name the same
/// way).
pub fn extract_with_thin_members<'a>(
    data: &'a [u8],
    source: &[u8],
    load: &mut LoadThin<'_>,
    images: Images,
) -> Result<Vec<Found<'a>>, ExtractError> {
    let mut out = Vec::new();
    extract_into(Cow::Borrowed(data), source, &mut out, Some(load), images)?;
    Ok(out)
}

fn binaries_of<'a>(
    blob: Cow<'a, [u8]>,
    source: &[u8],
    out: &mut Vec<Found<'a>>,
    images: Images,
) -> Result<(), ExtractError> {
    let err = |error| ExtractError::Binary {
        source: source.to_vec(),
        error,
    };
    match blob {
        Cow::Borrowed(b) => {
            for binary in parse_binaries_with(b, images).map_err(err)? {
                out.push(Found {
                    source: source.to_vec(),
                    binary,
                });
            }
        }
        Cow::Owned(v) => {
            for binary in parse_binaries_with(&v, images).map_err(err)? {
                out.push(Found {
                    source: source.to_vec(),
                    binary: binary.into_owned(),
                });
            }
        }
    }
    Ok(())
}

fn extract_into<'a>(
    data: Cow<'a, [u8]>,
    source: &[u8],
    out: &mut Vec<Found<'a>>,
    load: Option<&mut LoadThin<'_>>,
    images: Images,
) -> Result<(), ExtractError> {
    let container = |message: String| ExtractError::Container {
        source: source.to_vec(),
        message: message.into_bytes(),
    };
    match container_of(&data) {
        Container::OffloadBinary => binaries_of(data, source, out, images),
        Container::Elf => {
            let ranges = elf_offloading_sections(&data).map_err(container)?;
            for (start, end) in ranges {
                binaries_of(slice_cow(&data, start, end), source, out, images)?;
            }
            Ok(())
        }
        Container::Coff => {
            let ranges = coff_offloading_sections(&data).map_err(container)?;
            for (start, end) in ranges {
                binaries_of(slice_cow(&data, start, end), source, out, images)?;
            }
            Ok(())
        }
        Container::Archive => match data {
            Cow::Borrowed(b) => archive_members(b, source, out, load, images),
            Cow::Owned(v) => {
                // A nested archive read from disk: its images must own
                // their bytes.
                let mut found = Vec::new();
                archive_members(&v, source, &mut found, load, images)?;
                out.extend(found.into_iter().map(|f| Found {
                    source: f.source,
                    binary: f.binary.into_owned(),
                }));
                Ok(())
            }
        },
        Container::Bitcode => {
            let objects =
                crate::bitcode::embedded_objects(&data).map_err(|e| ExtractError::Bitcode {
                    source: source.to_vec(),
                    detail: e.to_string(),
                })?;
            for blob in objects {
                binaries_of(Cow::Owned(blob), source, out, images)?;
            }
            Ok(())
        }
        Container::Other => Ok(()),
    }
}

/// Where a file's binaries are, by its content (LLVM's `identify_magic`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Container {
    OffloadBinary,
    /// A relocatable object, executable or shared object.
    Elf,
    /// A COFF object (regular or bigobj).
    Coff,
    /// A regular, thin or AIX big archive.
    Archive,
    /// Raw or wrapped bitcode.
    Bitcode,
    /// Anything else: holds no offload binaries.
    Other,
}

fn container_of(data: &[u8]) -> Container {
    match identify(data) {
        FileKind::OffloadBinary => Container::OffloadBinary,
        FileKind::Elf(id) if id.is_loadable_kind() => Container::Elf,
        FileKind::Coff { .. } => Container::Coff,
        FileKind::Archive | FileKind::ThinArchive | FileKind::AixBigArchive => Container::Archive,
        FileKind::Bitcode | FileKind::BitcodeWrapper => Container::Bitcode,
        _ => Container::Other,
    }
}

/// Each member of an archive, in order and recursively by its own content.
/// A member is searched before the next header is looked at, so errors come
/// in LLVM's order.
fn archive_members<'a>(
    data: &'a [u8],
    source: &[u8],
    out: &mut Vec<Found<'a>>,
    mut load: Option<&mut LoadThin<'_>>,
    images: Images,
) -> Result<(), ExtractError> {
    use std::os::unix::ffi::OsStrExt;
    let container = |e: crate::archive::ArchiveError| ExtractError::Container {
        source: source.to_vec(),
        message: e.to_bytes(),
    };
    let archive = crate::archive::Archive::parse(data).map_err(container)?;
    let path = std::path::Path::new(std::ffi::OsStr::from_bytes(source));
    let mut members = archive.members();
    while let Some(member) = members.next() {
        let member = match member {
            Ok(member) => member,
            Err(e) => {
                // LLVM 22 reads a member cut by the end of the archive
                // before it reports the archive: where the member's own
                // error does not depend on the bytes it lacks, that error
                // comes first.
                let cut = members
                    .cut_member()
                    .and_then(|c| cut_member_error(c, images));
                return Err(cut.unwrap_or_else(|| container(e)));
            }
        };
        let contents = archive
            .member_data(&member, path, load.as_deref_mut())
            .map_err(container)?;
        extract_into(contents, member.name, out, load.as_deref_mut(), images)?;
    }
    Ok(())
}

/// The most bytes a member cut by the end of its archive may lack for
/// [`cut_member_error`] to look at it.
const CUT_MEMBER_PAD: u64 = 1 << 20;

/// The extraction error of a member cut by the end of its archive when it
/// is the same whatever follows the bytes the file has: with them followed
/// by zeros and by `0xFF`s up to the recorded size (at most
/// `CUT_MEMBER_PAD` bytes missing). LLVM 22 reads such a member (the rest
/// from beyond its buffer) before it reports the archive's damage.
pub fn cut_member_error(
    cut: crate::archive::CutMember<'_>,
    images: Images,
) -> Option<ExtractError> {
    if cut.size.saturating_sub(cut.present.len() as u64) > CUT_MEMBER_PAD {
        return None;
    }
    let padded = |fill: u8| {
        let mut member = cut.present.to_vec();
        member.resize(cut.size as usize, fill);
        // A member that is itself an archive would look for members of its
        // own on disk: not for a guess.
        extract_into(Cow::Owned(member), cut.name, &mut Vec::new(), None, images).err()
    };
    let with_ones = padded(0xFF)?;
    (padded(0) == Some(with_ones.clone())).then_some(with_ones)
}

/// [`cut_member_error`] for the first member of `archive` (read whole) that
/// runs past its end, if any.
pub fn first_cut_member_error(archive: &[u8]) -> Option<ExtractError> {
    let archive = crate::archive::Archive::parse(archive).ok()?;
    let mut members = archive.members();
    while let Some(member) = members.next() {
        if member.is_err() {
            return cut_member_error(members.cut_member()?, Images::Deferred);
        }
    }
    None
}

/// `data[start..end]`, borrowed when `data` is.
fn slice_cow<'a>(data: &Cow<'a, [u8]>, start: usize, end: usize) -> Cow<'a, [u8]> {
    match data {
        Cow::Borrowed(b) => Cow::Borrowed(&b[start..end]),
        Cow::Owned(v) => Cow::Owned(v[start..end].to_vec()),
    }
}

/// The byte ranges of the `SHT_LLVM_OFFLOADING` sections of an ELF file
/// (whatever their names), with LLVM's checks and messages for malformed
/// headers.
pub(crate) fn elf_offloading_sections(data: &[u8]) -> Result<Vec<(usize, usize)>, String> {
    let elf = ElfFile::parse(data).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for (i, sh) in elf.section_headers().iter().enumerate() {
        if sh.sh_type != SHT_LLVM_OFFLOADING {
            continue;
        }
        elf.object_section_contents(i).map_err(|e| e.to_string())?;
        // Inside the file, so both ends fit in usize.
        out.push((sh.offset as usize, (sh.offset + sh.size) as usize));
    }
    Ok(out)
}

/// The byte ranges of the `.llvm.offloading*` sections of a COFF object,
/// with LLVM's checks and messages for malformed headers.
pub(crate) fn coff_offloading_sections(data: &[u8]) -> Result<Vec<(usize, usize)>, String> {
    let coff = CoffFile::parse_with(data, SymbolTableCheck::Start).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for i in 0..coff.section_count() {
        let name = coff.section_name(i).map_err(|e| e.to_string())?;
        if !name.starts_with(COFF_SECTION_PREFIX) {
            continue;
        }
        let h = coff.section_header(i).map_err(|e| e.to_string())?;
        let contents = coff.section_contents(i).map_err(|e| e.to_string())?;
        let start = if contents.is_empty() {
            0
        } else {
            h.pointer_to_raw_data as usize
        };
        out.push((start, start + contents.len()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// LLVM's "unexpected end of file" text.
    const EOF_TEXT: &str = "The end of the file was unexpectedly encountered";

    #[test]
    fn magic_sniffing_follows_llvm() {
        let cases: &[(&[u8], Container)] = &[
            (b"\x10\xff\x10\xad....", Container::OffloadBinary),
            (b"\x10\xff\x10", Container::Other),
            (b"BC\xc0\xde", Container::Bitcode),
            (b"\xde\xc0\x17\x0b", Container::Bitcode),
            (b"!<arch>\n", Container::Archive),
            (b"!<thin>\n", Container::Archive),
            (b"<bigaf>\n", Container::Archive),
            (
                b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x01\0",
                Container::Elf,
            ),
            (
                b"\x7fELF\x02\x02\x01\0\0\0\0\0\0\0\0\0\0\x03",
                Container::Elf,
            ),
            // Core files and short ELF headers hold nothing.
            (
                b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x04\0",
                Container::Other,
            ),
            (
                b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x01",
                Container::Other,
            ),
            (b"\x64\x86\0\0", Container::Coff),
            (b"\x64\xaa\0\0", Container::Coff),
            (b"\x4c\x01\0\0", Container::Coff),
            (b"\x4c\x02\0\0", Container::Coff),
            (b"\x90\x01\0\0", Container::Other),
            (b"\x50\xed\x55\xba", Container::Other),
            (b"\x41\xa6\0\0", Container::Coff),
            (b"\0\0\0\0", Container::Coff),
            (b"\0\0\xff\xff\0\0", Container::Other),
            (b"\0asm\x01\0\0\0", Container::Other),
            (b"MZ\0\0", Container::Other),
            (b"text", Container::Other),
        ];
        for (data, kind) in cases {
            assert_eq!(container_of(data), *kind, "{data:?}");
        }
    }

    #[test]
    fn coff_header_checks() {
        assert_eq!(
            coff_offloading_sections(&[0x64, 0x86, 0, 0]),
            Err(EOF_TEXT.to_string())
        );
        // One section announced, none present.
        let mut h = vec![0u8; 20];
        h[0] = 0x64;
        h[1] = 0x86;
        h[2] = 1;
        assert_eq!(coff_offloading_sections(&h), Err(EOF_TEXT.to_string()));
        // A long section name without a string table.
        let mut s = vec![0u8; 40];
        s[..2].copy_from_slice(b"/4");
        h.extend_from_slice(&s);
        assert_eq!(
            coff_offloading_sections(&h),
            Err("string table empty".to_string())
        );
        h[20..22].copy_from_slice(b"/x");
        assert_eq!(
            coff_offloading_sections(&h),
            Err("invalid section name".to_string())
        );
    }

    #[test]
    fn elf_header_messages() {
        let mut e = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x01\0".to_vec();
        assert_eq!(
            elf_offloading_sections(&e),
            Err("invalid buffer: the size (18) is smaller than an ELF header (64)".into())
        );
        e.resize(64, 0);
        assert_eq!(elf_offloading_sections(&e), Ok(Vec::new()));
        e[0x28] = 0x40; // e_shoff = 64, past the end
        e[0x3a] = 64; // e_shentsize
        assert_eq!(
            elf_offloading_sections(&e),
            Err("section header table goes past the end of the file: e_shoff = 0x40".into())
        );
        e[0x3a] = 63;
        assert_eq!(
            elf_offloading_sections(&e),
            Err("invalid e_shentsize in ELF header: 63".into())
        );
        e[4] = 3;
        assert_eq!(elf_offloading_sections(&e), Err("Invalid ELF class".into()));
    }
}
