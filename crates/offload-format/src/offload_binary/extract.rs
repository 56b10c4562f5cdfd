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

use object::elf::{FileHeader32, FileHeader64};
use object::read::elf::{FileHeader, SectionHeader};
use object::{Endianness, Pod};

use super::read::{parse_binaries, Binary, ReadError};
use crate::archive::LoadThin;

/// `SHT_LLVM_OFFLOADING`: the ELF section type clang gives embedded
/// offload binaries.
pub const SHT_LLVM_OFFLOADING: u32 = 0x6fff_4c0b;

/// Prefix of the COFF section names that hold offload binaries.
pub const COFF_SECTION_PREFIX: &[u8] = b".llvm.offloading";

/// LLVM's "unexpected end of file" text.
pub const EOF_TEXT: &str = "The end of the file was unexpectedly encountered";

/// What the first bytes of a file say it is (the subset of LLVM's
/// `identify_magic` that matters for extraction).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// An offload binary.
    OffloadBinary,
    /// An ELF relocatable object, executable or shared object.
    Elf,
    /// A COFF object (regular or bigobj).
    Coff,
    /// A regular, thin or AIX big archive.
    Archive,
    /// LLVM bitcode (raw or wrapped).
    Bitcode,
    /// Anything else: holds no offload binaries.
    Other,
}

/// Classifies `data` the way LLVM 22's `identify_magic` does.
pub fn identify(data: &[u8]) -> FileKind {
    if data.len() < 4 {
        return FileKind::Other;
    }
    let (b0, b1) = (data[0], data[1]);
    match b0 {
        0x00 => {
            if data.starts_with(b"\0\0\xff\xff") {
                let uuid = data.get(12..28);
                return match uuid {
                    Some(u) if u == object::pe::ANON_OBJECT_HEADER_BIGOBJ_CLASS_ID.0 => {
                        FileKind::Coff
                    }
                    _ => FileKind::Other,
                };
            }
            const WINRES: &[u8] = b"\0\0\0\0\x20\0\0\0\xff\xff\0\0\xff\xff\0\0";
            if data.starts_with(WINRES) {
                return FileKind::Other;
            }
            if b1 == 0 {
                FileKind::Coff
            } else {
                FileKind::Other
            }
        }
        0x10 if data.starts_with(&super::MAGIC) => FileKind::OffloadBinary,
        0xDE if data.starts_with(b"\xDE\xC0\x17\x0B") => FileKind::Bitcode,
        b'B' if data.starts_with(b"BC\xC0\xDE") => FileKind::Bitcode,
        b'!' if data.starts_with(b"!<arch>\n") || data.starts_with(b"!<thin>\n") => {
            FileKind::Archive
        }
        b'<' if data.starts_with(b"<bigaf>\n") => FileKind::Archive,
        0x7f if data.starts_with(b"\x7fELF") && data.len() >= 18 => {
            let (high, low) = if data[5] == 2 { (16, 17) } else { (17, 16) };
            if data[high] == 0 && matches!(data[low], 1..=3) {
                FileKind::Elf
            } else {
                FileKind::Other
            }
        }
        // Machine types of COFF objects; some share a first byte, so the
        // second byte decides (0x50 0xED 0x55 0xBA is a CUDA fatbinary).
        0xF0 | 0x83 | 0x84 | 0x66 | 0x50 => {
            if data.starts_with(b"\x50\xed\x55\xba") {
                FileKind::Other
            } else if b1 == 0x01 || b1 == 0x02 {
                FileKind::Coff
            } else {
                FileKind::Other
            }
        }
        0x4c | 0xc4 if b1 == 0x01 || b1 == 0x02 => FileKind::Coff,
        0x90 | 0x68 if b1 == 0x02 => FileKind::Coff,
        0x64 if b1 == 0x86 || b1 == 0xaa => FileKind::Coff,
        0x41 | 0x4e if b1 == 0xa6 => FileKind::Coff,
        _ => FileKind::Other,
    }
}

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
    /// LLVM's text for the problem.
    Container {
        /// Name of the container.
        source: Vec<u8>,
        /// LLVM's message.
        message: String,
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
    pub fn llvm_message(&self) -> Option<String> {
        match self {
            ExtractError::Binary { error, .. } => {
                error.kind.is_llvm_error().then(|| error.kind.to_string())
            }
            ExtractError::Container { message, .. } => Some(message.clone()),
            ExtractError::Bitcode { .. } => Some("Failed to create module".to_string()),
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
            ExtractError::Container { message, .. } => f.write_str(message),
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
    extract_into(Cow::Borrowed(data), source, &mut out, None)?;
    Ok(out)
}

/// [`extract`], with thin archives' members read by `load`. `source` is
/// also the path those members are found relative to (LLVM uses the
/// buffer's name the same way).
pub fn extract_with_thin_members<'a>(
    data: &'a [u8],
    source: &[u8],
    load: &mut LoadThin<'_>,
) -> Result<Vec<Found<'a>>, ExtractError> {
    let mut out = Vec::new();
    extract_into(Cow::Borrowed(data), source, &mut out, Some(load))?;
    Ok(out)
}

fn binaries_of<'a>(
    blob: Cow<'a, [u8]>,
    source: &[u8],
    out: &mut Vec<Found<'a>>,
) -> Result<(), ExtractError> {
    let err = |error| ExtractError::Binary {
        source: source.to_vec(),
        error,
    };
    match blob {
        Cow::Borrowed(b) => {
            for binary in parse_binaries(b).map_err(err)? {
                out.push(Found {
                    source: source.to_vec(),
                    binary,
                });
            }
        }
        Cow::Owned(v) => {
            for binary in parse_binaries(&v).map_err(err)? {
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
) -> Result<(), ExtractError> {
    let container = |message: String| ExtractError::Container {
        source: source.to_vec(),
        message,
    };
    match identify(&data) {
        FileKind::OffloadBinary => binaries_of(data, source, out),
        FileKind::Elf => {
            let ranges = elf_offloading_sections(&data).map_err(container)?;
            for (start, end) in ranges {
                binaries_of(slice_cow(&data, start, end), source, out)?;
            }
            Ok(())
        }
        FileKind::Coff => {
            let ranges = coff_offloading_sections(&data).map_err(container)?;
            for (start, end) in ranges {
                binaries_of(slice_cow(&data, start, end), source, out)?;
            }
            Ok(())
        }
        FileKind::Archive => match data {
            Cow::Borrowed(b) => archive_members(b, source, out, load),
            Cow::Owned(v) => {
                // A nested archive read from disk: its images must own
                // their bytes.
                let mut found = Vec::new();
                archive_members(&v, source, &mut found, load)?;
                out.extend(found.into_iter().map(|f| Found {
                    source: f.source,
                    binary: f.binary.into_owned(),
                }));
                Ok(())
            }
        },
        FileKind::Bitcode => {
            let objects =
                crate::bitcode::embedded_objects(&data).map_err(|e| ExtractError::Bitcode {
                    source: source.to_vec(),
                    detail: e.to_string(),
                })?;
            for blob in objects {
                binaries_of(Cow::Owned(blob), source, out)?;
            }
            Ok(())
        }
        FileKind::Other => Ok(()),
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
) -> Result<(), ExtractError> {
    use std::os::unix::ffi::OsStrExt;
    let container = |e: crate::archive::ArchiveError| ExtractError::Container {
        source: source.to_vec(),
        message: e.to_string(),
    };
    let archive = crate::archive::Archive::parse(data).map_err(container)?;
    let path = std::path::Path::new(std::ffi::OsStr::from_bytes(source));
    for member in archive.members() {
        let member = member.map_err(container)?;
        let contents = archive
            .member_data(&member, path, load.as_deref_mut())
            .map_err(container)?;
        extract_into(contents, member.name, out, load.as_deref_mut())?;
    }
    Ok(())
}

/// `data[start..end]`, borrowed when `data` is.
fn slice_cow<'a>(data: &Cow<'a, [u8]>, start: usize, end: usize) -> Cow<'a, [u8]> {
    match data {
        Cow::Borrowed(b) => Cow::Borrowed(&b[start..end]),
        Cow::Owned(v) => Cow::Owned(v[start..end].to_vec()),
    }
}

/// The byte ranges of the `SHT_LLVM_OFFLOADING` sections of an ELF file, with
/// LLVM's checks and messages for malformed headers.
pub fn elf_offloading_sections(data: &[u8]) -> Result<Vec<(usize, usize)>, String> {
    let endian = match data.get(5) {
        Some(1) => Endianness::Little,
        Some(2) => Endianness::Big,
        _ => {
            return Err(if matches!(data.get(4), Some(1 | 2)) {
                "Invalid ELF data".to_string()
            } else {
                "Invalid ELF class".to_string()
            })
        }
    };
    match data.get(4) {
        Some(1) => elf_sections::<FileHeader32<Endianness>>(data, endian),
        Some(2) => elf_sections::<FileHeader64<Endianness>>(data, endian),
        _ => Err("Invalid ELF class".to_string()),
    }
}

fn elf_sections<Elf>(data: &[u8], endian: Endianness) -> Result<Vec<(usize, usize)>, String>
where
    Elf: FileHeader<Endian = Endianness> + Pod,
{
    let ehdr_size = std::mem::size_of::<Elf>();
    let shdr_size = std::mem::size_of::<Elf::SectionHeader>() as u64;
    if data.len() < ehdr_size {
        return Err(format!(
            "invalid buffer: the size ({}) is smaller than an ELF header ({ehdr_size})",
            data.len()
        ));
    }
    // object's structs need natural alignment; archive members and
    // sections often are not aligned, so headers are read from copies.
    let header_copy = Aligned::new(&data[..ehdr_size]);
    let (header, _) = object::pod::from_bytes::<Elf>(header_copy.bytes())
        .expect("an aligned copy of the right size");
    let file_size = data.len() as u64;
    let shoff: u64 = header.e_shoff(endian).into();
    if shoff == 0 {
        return Ok(Vec::new());
    }
    let shentsize = header.e_shentsize(endian);
    if u64::from(shentsize) != shdr_size {
        return Err(format!("invalid e_shentsize in ELF header: {shentsize}"));
    }
    if shoff
        .checked_add(shdr_size)
        .is_none_or(|end| end > file_size)
    {
        return Err(format!(
            "section header table goes past the end of the file: e_shoff = 0x{shoff:x}"
        ));
    }
    // LLVM also checks the table's alignment, but against the alignment of
    // its packed header structs, which is 1: the check never fires.
    let section_copy = |i: u64| -> Aligned {
        let at = (shoff + i * shdr_size) as usize;
        Aligned::new(&data[at..at + shdr_size as usize])
    };
    let section = |copy: &Aligned| -> Elf::SectionHeader {
        *object::pod::from_bytes::<Elf::SectionHeader>(copy.bytes())
            .expect("an aligned copy of the right size")
            .0
    };
    // With e_shnum 0, the count lives in the first section header's size.
    let count: u64 = if header.e_shnum(endian) == 0 {
        section(&section_copy(0)).sh_size(endian).into()
    } else {
        u64::from(header.e_shnum(endian))
    };
    if count > u64::MAX / shdr_size {
        return Err(format!(
            "invalid number of sections specified in the NULL section's sh_size field ({count})"
        ));
    }
    let table = count * shdr_size;
    match shoff.checked_add(table) {
        None => {
            return Err(format!(
                "invalid section header table offset (e_shoff = 0x{shoff:x}) or invalid number \
                 of sections specified in the first section header's sh_size field (0x{count:x})"
            ))
        }
        Some(end) if end > file_size => {
            return Err("section table goes past the end of file".to_string())
        }
        Some(_) => {}
    }
    let mut out = Vec::new();
    for i in 0..count {
        let sh = section(&section_copy(i));
        if sh.sh_type(endian) != SHT_LLVM_OFFLOADING {
            continue;
        }
        let offset: u64 = sh.sh_offset(endian).into();
        let size: u64 = sh.sh_size(endian).into();
        match offset.checked_add(size) {
            Some(end) if end <= file_size => out.push((offset as usize, end as usize)),
            _ => return Err(EOF_TEXT.to_string()),
        }
    }
    Ok(out)
}

/// A copy of a few bytes in 8-aligned storage.
struct Aligned {
    words: Vec<u64>,
    len: usize,
}

impl Aligned {
    fn new(bytes: &[u8]) -> Aligned {
        let mut words = vec![0u64; bytes.len().div_ceil(8)];
        object::pod::bytes_of_slice_mut(&mut words)[..bytes.len()].copy_from_slice(bytes);
        Aligned {
            words,
            len: bytes.len(),
        }
    }

    fn bytes(&self) -> &[u8] {
        &object::pod::bytes_of_slice(&self.words)[..self.len]
    }
}

fn le16(d: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([d[at], d[at + 1]])
}
fn le32(d: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]])
}

/// Decodes the base-64 offset of a `//XXXXXX` COFF section name.
fn base64_offset(s: &[u8]) -> Option<u32> {
    if s.len() > 6 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in s {
        let d = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        v = v * 64 + u64::from(d);
    }
    u32::try_from(v).ok()
}

/// Decodes the decimal offset of a `/123` COFF section name.
fn decimal_offset(s: &[u8]) -> Option<u32> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &c in s {
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    u32::try_from(v).ok()
}

/// Where the parts of a COFF object are, as LLVM's reader finds them.
struct CoffLayout {
    /// Offset of the section table.
    table: u64,
    nsections: u64,
    symtab: u32,
    nsyms: u32,
    /// Size of one symbol (18, or 20 in bigobj files).
    symsize: u64,
}

/// LLVM's checks when it opens a COFF object: the header must be there and
/// the section table inside the file. `None` for an import-library header,
/// which LLVM treats as having no sections.
fn coff_layout(data: &[u8]) -> Result<Option<CoffLayout>, String> {
    const FILE_HEADER: usize = 20;
    const BIGOBJ_HEADER: usize = 56;
    const SECTION: u64 = 40;
    if data.len() < FILE_HEADER {
        return Err(EOF_TEXT.to_string());
    }
    let machine = le16(data, 0);
    let nsections = u64::from(le16(data, 2));
    let bigobj = machine == 0
        && nsections == 0xffff
        && data.len() >= BIGOBJ_HEADER
        && le16(data, 4) >= 2
        && data[12..28] == object::pe::ANON_OBJECT_HEADER_BIGOBJ_CLASS_ID.0;
    let layout = if bigobj {
        CoffLayout {
            table: BIGOBJ_HEADER as u64,
            nsections: u64::from(le32(data, 44)),
            symtab: le32(data, 48),
            nsyms: le32(data, 52),
            symsize: 20,
        }
    } else {
        if nsections == 0xffff {
            return Ok(None);
        }
        CoffLayout {
            table: FILE_HEADER as u64 + u64::from(le16(data, 16)),
            nsections,
            symtab: le32(data, 8),
            nsyms: le32(data, 12),
            symsize: 18,
        }
    };
    if layout.table + layout.nsections * SECTION > data.len() as u64 {
        return Err(EOF_TEXT.to_string());
    }
    Ok(Some(layout))
}

/// The error LLVM gives when opening `data` as a COFF object, if any.
pub fn coff_open_error(data: &[u8]) -> Option<String> {
    coff_layout(data).err()
}

/// The byte ranges of the `.llvm.offloading*` sections of a COFF object,
/// with LLVM's checks and messages for malformed headers.
pub fn coff_offloading_sections(data: &[u8]) -> Result<Vec<(usize, usize)>, String> {
    const SECTION: u64 = 40;
    let eof = || EOF_TEXT.to_string();
    let Some(CoffLayout {
        table,
        nsections,
        symtab,
        nsyms,
        symsize,
    }) = coff_layout(data)?
    else {
        return Ok(Vec::new());
    };
    let file_size = data.len() as u64;
    // The string table sits after the symbol table; LLVM ignores a broken
    // symbol or string table until a name needs it.
    // LLVM checks only that the symbol table starts inside the file (it
    // asks for the table's size before it knows the symbol count, and gets
    // 0), then finds the string table after the symbols, computing its
    // offset in 32 bits. Without a symbol-table pointer the symbol count
    // reads as 0, so a count without a table is not an error either.
    let strings: Option<&[u8]> = if symtab != 0 && u64::from(symtab) <= file_size {
        let str_off = (u64::from(symtab) + u64::from(nsyms) * symsize) as u32 as u64;
        let table_size = data
            .get(str_off as usize..)
            .and_then(|s| s.get(..4))
            .map(|s| u64::from(le32(s, 0)));
        match table_size {
            Some(n) if str_off + n <= file_size => {
                let n = n.max(4);
                let t = &data[str_off as usize..(str_off + n) as usize];
                if n > 4 && t[t.len() - 1] != 0 {
                    None
                } else {
                    Some(t)
                }
            }
            _ => None,
        }
    } else {
        None
    };
    let mut out = Vec::new();
    for i in 0..nsections {
        let at = (table + i * SECTION) as usize;
        let raw = &data[at..at + 8];
        let name = raw.split(|&c| c == 0).next().unwrap_or(&[]);
        let name: &[u8] = if let Some(rest) = name.strip_prefix(b"/") {
            let offset = if let Some(b64) = rest.strip_prefix(b"/") {
                base64_offset(b64)
            } else {
                decimal_offset(rest)
            }
            .ok_or_else(|| "invalid section name".to_string())?;
            let t = match strings {
                Some(t) if t.len() > 4 => t,
                _ => return Err("string table empty".to_string()),
            };
            if offset as usize >= t.len() {
                return Err(eof());
            }
            let s = &t[offset as usize..];
            s.split(|&c| c == 0).next().unwrap_or(&[])
        } else {
            name
        };
        if !name.starts_with(COFF_SECTION_PREFIX) {
            continue;
        }
        let size = u64::from(le32(data, at + 16));
        let pointer = u64::from(le32(data, at + 20));
        if pointer == 0 {
            out.push((0, 0));
            continue;
        }
        if pointer + size > file_size {
            return Err(eof());
        }
        out.push((pointer as usize, (pointer + size) as usize));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_sniffing_follows_llvm() {
        let cases: &[(&[u8], FileKind)] = &[
            (b"\x10\xff\x10\xad....", FileKind::OffloadBinary),
            (b"\x10\xff\x10", FileKind::Other),
            (b"BC\xc0\xde", FileKind::Bitcode),
            (b"\xde\xc0\x17\x0b", FileKind::Bitcode),
            (b"!<arch>\n", FileKind::Archive),
            (b"!<thin>\n", FileKind::Archive),
            (b"<bigaf>\n", FileKind::Archive),
            (
                b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x01\0",
                FileKind::Elf,
            ),
            (
                b"\x7fELF\x02\x02\x01\0\0\0\0\0\0\0\0\0\0\x03",
                FileKind::Elf,
            ),
            // Core files and short ELF headers hold nothing.
            (
                b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x04\0",
                FileKind::Other,
            ),
            (
                b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x01",
                FileKind::Other,
            ),
            (b"\x64\x86\0\0", FileKind::Coff),
            (b"\x64\xaa\0\0", FileKind::Coff),
            (b"\x4c\x01\0\0", FileKind::Coff),
            (b"\x4c\x02\0\0", FileKind::Coff),
            (b"\x90\x01\0\0", FileKind::Other),
            (b"\x50\xed\x55\xba", FileKind::Other),
            (b"\x41\xa6\0\0", FileKind::Coff),
            (b"\0\0\0\0", FileKind::Coff),
            (b"\0\0\xff\xff\0\0", FileKind::Other),
            (b"\0asm\x01\0\0\0", FileKind::Other),
            (b"MZ\0\0", FileKind::Other),
            (b"text", FileKind::Other),
        ];
        for (data, kind) in cases {
            assert_eq!(identify(data), *kind, "{data:?}");
        }
    }

    #[test]
    fn coff_header_checks() {
        assert_eq!(
            coff_open_error(&[0x64, 0x86, 0, 0]),
            Some(EOF_TEXT.to_string())
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
