//! Archive reader following LLVM's archive reader, including its error
//! texts, but bounded: no member is ever read past the end of the input.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use super::error::ArchiveError;
use super::{BIG_MAGIC, HEADER_SIZE, MAGIC, THIN_MAGIC};

/// The archive flavour, as LLVM classifies it from the special members.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArchiveKind {
    /// GNU / System V (also the kind of an archive with no special member).
    Gnu,
    /// GNU with a 64-bit symbol table (`/SYM64/`).
    Gnu64,
    /// BSD (`__.SYMDEF` or `#1/` names).
    Bsd,
    /// Darwin 64-bit (`__.SYMDEF_64`).
    Darwin64,
    /// COFF import library layout (two `/` members).
    Coff,
}

/// A parsed archive.
#[derive(Clone, Debug)]
pub struct Archive<'a> {
    data: &'a [u8],
    kind: ArchiveKind,
    thin: bool,
    symbol_table: &'a [u8],
    string_table: &'a [u8],
    /// Offset of the first regular member, `None` when there is none.
    first_regular: Option<usize>,
}

/// Where a member's bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemberContent<'a> {
    /// Inside the archive.
    Inline(&'a [u8]),
    /// In a separate file (thin archive); `size` is the size recorded in
    /// the header.
    Thin {
        /// Recorded size.
        size: u64,
    },
}

/// One regular member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member<'a> {
    /// Offset of the member header in the archive.
    pub header_offset: u64,
    /// The member name, resolved (long names looked up, terminators
    /// removed). Thin archives store paths here.
    pub name: &'a [u8],
    /// The contents.
    pub content: MemberContent<'a>,
    /// The raw 60-byte header.
    pub header: &'a [u8],
}

/// A regular member whose data runs past the end of the archive: what the
/// file holds of it. LLVM hands such a member out (reading the rest from
/// beyond its buffer) before it reports the archive's damage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CutMember<'a> {
    /// The member name, resolved.
    pub name: &'a [u8],
    /// The member's bytes up to the end of the archive.
    pub present: &'a [u8],
    /// The size its header records (more than `present.len()`).
    pub size: u64,
}

/// Parsed header fields needed to walk the archive.
struct Child<'a> {
    offset: usize,
    header: &'a [u8],
    /// Size from the header (for `#1/` names this includes the name).
    raw_size: u64,
    /// Header plus name bytes that precede the data.
    start_of_file: u64,
    thin: bool,
}

fn malformed(text: String) -> ArchiveError {
    ArchiveError::Malformed(text)
}

/// A structural problem whose text quotes header bytes (a member name, a
/// size field) as stored: LLVM prints them byte for byte.
fn malformed_bytes(pieces: &[&[u8]]) -> ArchiveError {
    ArchiveError::MalformedBytes(pieces.concat())
}

fn malformed_name(text: String) -> ArchiveError {
    ArchiveError::MalformedName(text)
}

/// LLVM's escaping of bytes in error messages: backslash, tab, newline and
/// quote escaped, other non-printable bytes as three octal digits.
fn escape(bytes: &[u8]) -> String {
    let mut out = String::new();
    for &c in bytes {
        match c {
            b'\\' => out.push_str("\\\\"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            b'"' => out.push_str("\\\""),
            0x20..=0x7e => out.push(c as char),
            _ => {
                out.push('\\');
                out.push(char::from(b'0' + ((c >> 6) & 7)));
                out.push(char::from(b'0' + ((c >> 3) & 7)));
                out.push(char::from(b'0' + (c & 7)));
            }
        }
    }
    out
}

/// The length in a BSD long name `#1/<len>` (`len` is what follows the
/// `#1/`), for the member header at `offset`.
/// How a `#1/` name length that is not decimal is quoted: LLVM escapes it
/// when it resolves a member's name, and gives it as stored when it steps
/// to the member.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Quote {
    Escaped,
    AsStored,
}

fn bsd_name_len(len: &[u8], offset: usize, quote: Quote) -> Result<u64, ArchiveError> {
    let len = rtrim(len, b' ');
    crate::llvm::decimal_u64(len).ok_or_else(|| {
        let what = "long name length characters after the #1/ are not all decimal numbers: '";
        let tail = format!("' for archive member header at offset {offset}");
        match quote {
            Quote::Escaped => malformed(format!("{what}{}{tail}", escape(len))),
            Quote::AsStored => {
                let mut text = what.as_bytes().to_vec();
                text.extend_from_slice(len);
                text.extend_from_slice(tail.as_bytes());
                ArchiveError::MalformedBytes(text)
            }
        }
    })
}

fn rtrim(bytes: &[u8], c: u8) -> &[u8] {
    let end = bytes.iter().rposition(|&b| b != c).map_or(0, |p| p + 1);
    &bytes[..end]
}

/// Reads the member of a thin archive at the given path into the buffer
/// (cleared first). The library does no I/O: a caller that wants thin
/// archives' members read passes one of these (the command-line tools
/// pass `offload_cli::fsio::read_member_file`).
pub type LoadThin<'l> = dyn FnMut(&Path, &mut Vec<u8>) -> std::io::Result<()> + 'l;

/// `load` applied to `path`, or, without one, the error that says the
/// member cannot be read here.
pub(crate) fn load_thin_with(
    load: Option<&mut LoadThin<'_>>,
    path: &Path,
    buf: &mut Vec<u8>,
) -> std::io::Result<()> {
    match load {
        Some(load) => load(path, buf),
        None => Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "members of thin archives are not read without a loader",
        )),
    }
}

impl<'a> Archive<'a> {
    /// Checks the magic and locates the special members, as LLVM does when
    /// opening an archive.
    pub fn parse(data: &'a [u8]) -> Result<Self, ArchiveError> {
        let thin = if data.starts_with(THIN_MAGIC) {
            true
        } else if data.starts_with(MAGIC) {
            false
        } else if data.starts_with(BIG_MAGIC) {
            return Err(ArchiveError::UnsupportedBigArchive);
        } else {
            return Err(ArchiveError::NotAnArchive);
        };
        let mut archive = Archive {
            data,
            kind: ArchiveKind::Gnu,
            thin,
            symbol_table: &[],
            string_table: &[],
            first_regular: None,
        };
        if data.len() == MAGIC.len() {
            return Ok(archive);
        }
        let mut child = archive.child_at(MAGIC.len())?;
        let mut name = archive.raw_name(&child)?;

        if name == b"__.SYMDEF" || name == b"__.SYMDEF_64" {
            archive.kind = if name == b"__.SYMDEF" {
                ArchiveKind::Bsd
            } else {
                ArchiveKind::Darwin64
            };
            archive.symbol_table = archive.inline_data(&child)?;
            if let Some(next) = archive.next_child(&child)? {
                archive.first_regular = Some(next.offset);
            }
            return Ok(archive);
        }
        if name.starts_with(b"#1/") {
            archive.kind = ArchiveKind::Bsd;
            let full = archive.name(&child)?;
            let is_symdef = full == b"__.SYMDEF SORTED" || full == b"__.SYMDEF";
            let is_symdef64 = full == b"__.SYMDEF_64 SORTED" || full == b"__.SYMDEF_64";
            if is_symdef || is_symdef64 {
                if is_symdef64 {
                    archive.kind = ArchiveKind::Darwin64;
                }
                archive.symbol_table = archive.inline_data(&child)?;
                archive.first_regular = archive.next_child(&child)?.map(|c| c.offset);
            } else {
                archive.first_regular = Some(child.offset);
            }
            return Ok(archive);
        }

        let mut sym64 = false;
        if name == b"/" || name == b"/SYM64/" {
            archive.symbol_table = archive.inline_data(&child)?;
            sym64 = name == b"/SYM64/";
            match archive.next_child(&child)? {
                None => return Ok(archive),
                Some(next) => child = next,
            }
            name = archive.raw_name(&child)?;
        }
        let gnu_kind = if sym64 {
            ArchiveKind::Gnu64
        } else {
            ArchiveKind::Gnu
        };
        if name == b"//" {
            archive.kind = gnu_kind;
            archive.string_table = archive.inline_data(&child)?;
            archive.first_regular = archive.next_child(&child)?.map(|c| c.offset);
            return Ok(archive);
        }
        if name.first() != Some(&b'/') {
            archive.kind = gnu_kind;
            archive.first_regular = Some(child.offset);
            return Ok(archive);
        }
        if name != b"/" {
            return Err(ArchiveError::ParseFailed);
        }
        // COFF: a second linker member, then optionally `//`.
        archive.kind = ArchiveKind::Coff;
        archive.symbol_table = archive.inline_data(&child)?;
        match archive.next_child(&child)? {
            None => return Ok(archive),
            Some(next) => child = next,
        }
        name = archive.raw_name(&child)?;
        if name == b"//" {
            archive.string_table = archive.inline_data(&child)?;
            match archive.next_child(&child)? {
                None => return Ok(archive),
                Some(next) => child = next,
            }
            name = archive.raw_name(&child)?;
        }
        if name == b"/<ECSYMBOLS>/" {
            archive.first_regular = archive.next_child(&child)?.map(|c| c.offset);
            return Ok(archive);
        }
        archive.first_regular = Some(child.offset);
        Ok(archive)
    }

    /// The archive flavour.
    pub fn kind(&self) -> ArchiveKind {
        self.kind
    }

    /// Whether this is a thin archive (`!<thin>\n`).
    pub fn is_thin(&self) -> bool {
        self.thin
    }

    /// The raw symbol table member contents (empty if none).
    pub fn symbol_table(&self) -> &'a [u8] {
        self.symbol_table
    }

    /// The raw long-name table (`//`) contents (empty if none).
    pub fn string_table(&self) -> &'a [u8] {
        self.string_table
    }

    /// The regular members in order (special members skipped). Iteration
    /// stops after the first error.
    pub fn members(&self) -> Members<'_, 'a> {
        Members {
            archive: self,
            state: self.first_regular.map_or(State::Done, State::At),
            cut: None,
        }
    }

    /// Loads a member's bytes: the inline slice, or for a thin member the
    /// file named by [`thin_member_path`] relative to `archive_path`, read
    /// by `load` (without one, a thin member fails as
    /// [`ArchiveError::ThinMember`]).
    pub fn member_data(
        &self,
        member: &Member<'a>,
        archive_path: &Path,
        load: Option<&mut LoadThin<'_>>,
    ) -> Result<Cow<'a, [u8]>, ArchiveError> {
        match member.content {
            MemberContent::Inline(bytes) => Ok(Cow::Borrowed(bytes)),
            MemberContent::Thin { .. } => {
                let path = thin_member_path(archive_path, member.name);
                let mut buf = Vec::new();
                load_thin_with(load, &path, &mut buf)
                    .map(|()| Cow::Owned(buf))
                    .map_err(|error| ArchiveError::ThinMember {
                        name: member.name.to_vec(),
                        error,
                    })
            }
        }
    }

    fn child_at(&self, offset: usize) -> Result<Child<'a>, ArchiveError> {
        let remaining = self.data.len().saturating_sub(offset);
        let Some(header) = self.data.get(offset..offset.saturating_add(HEADER_SIZE)) else {
            // Name the member if its name field is there and resolvable.
            let msg = "remaining size of archive too small for next archive member header ";
            return Err(match self.partial_name(offset, remaining) {
                Some(name) => malformed_bytes(&[msg.as_bytes(), b"for ", &name]),
                None => malformed(format!("{msg}at offset {offset}")),
            });
        };
        if &header[58..60] != b"`\n" {
            let msg = format!(
                "terminator characters in archive member \"{}\" not the correct \"`\\n\" values for the archive member header ",
                escape(&header[58..60])
            );
            // LLVM names the member using the whole remaining size.
            let probe = Child {
                offset,
                header,
                raw_size: remaining.saturating_sub(HEADER_SIZE) as u64,
                start_of_file: HEADER_SIZE as u64,
                thin: false,
            };
            return Err(match self.name_with_size(&probe, remaining as u64) {
                Ok(name) => malformed_bytes(&[msg.as_bytes(), b"for ", name]),
                Err(_) => malformed(format!("{msg}at offset {offset}")),
            });
        }
        let mut child = Child {
            offset,
            header,
            raw_size: 0,
            start_of_file: HEADER_SIZE as u64,
            thin: false,
        };
        let raw_name = self.raw_name(&child)?;
        child.thin = self.thin && raw_name != b"/" && raw_name != b"//" && raw_name != b"/SYM64/";
        child.raw_size = self.size_field(&child)?;
        if let Some(len) = raw_name.strip_prefix(b"#1/") {
            child.start_of_file += bsd_name_len(len, offset, Quote::AsStored)?;
        }
        Ok(child)
    }

    /// The member name for an error message about a truncated header, when
    /// at least the name field is present.
    fn partial_name(&self, offset: usize, remaining: usize) -> Option<Vec<u8>> {
        if remaining < 16 {
            return None;
        }
        let field = self.data.get(offset..offset + 16)?;
        let mut padded = [b' '; HEADER_SIZE];
        padded[..16].copy_from_slice(field);
        // Without a size field the resolution only works for names that do
        // not need one; mimic by resolving against the remaining size.
        let leaked: &[u8] = &padded;
        let probe = Child {
            offset,
            header: leaked,
            raw_size: 0,
            start_of_file: HEADER_SIZE as u64,
            thin: false,
        };
        self.name_with_size(&probe, remaining as u64)
            .ok()
            .map(<[u8]>::to_vec)
    }

    fn size_field(&self, child: &Child<'_>) -> Result<u64, ArchiveError> {
        let raw = rtrim(&child.header[48..58], b' ');
        crate::llvm::decimal_u64(raw).ok_or_else(|| {
            malformed_bytes(&[
                b"characters in size field in archive member header are not all decimal numbers: '",
                raw,
                format!("' for the archive member header at offset {}", child.offset).as_bytes(),
            ])
        })
    }

    /// The name field up to its terminator (`/` for plain GNU names, space
    /// otherwise), as LLVM's `getRawName`.
    fn raw_name(&self, child: &Child<'a>) -> Result<&'a [u8], ArchiveError> {
        let field: &'a [u8] = &child.header[..16];
        let end_cond = if matches!(self.kind, ArchiveKind::Bsd | ArchiveKind::Darwin64) {
            if field[0] == b' ' {
                return Err(malformed(format!(
                    "name contains a leading space for archive member header at offset {}",
                    child.offset
                )));
            }
            b' '
        } else if field[0] == b'/' || field[0] == b'#' {
            b' '
        } else {
            b'/'
        };
        let end = field.iter().position(|&b| b == end_cond).unwrap_or(16);
        Ok(&field[..end])
    }

    fn name(&self, child: &Child<'a>) -> Result<&'a [u8], ArchiveError> {
        self.name_with_size(child, HEADER_SIZE as u64 + child.raw_size)
    }

    /// LLVM's `getName(Size)`, where `size` bounds a BSD name that follows
    /// the header.
    fn name_with_size(&self, child: &Child<'a>, size: u64) -> Result<&'a [u8], ArchiveError> {
        let offset = child.offset;
        let name = self.raw_name(child)?;
        if name.is_empty() {
            // Only possible for an empty BSD-style field; LLVM asserts.
            return Ok(name);
        }
        if name[0] == b'/' {
            if name == b"/"
                || name == b"//"
                || name == b"/<XFGHASHMAP>/"
                || name == b"/<ECSYMBOLS>/"
            {
                return Ok(name);
            }
            let digits = rtrim(&name[1..], b' ');
            let at = crate::llvm::decimal_u64(digits)
                .and_then(|v| usize::try_from(v).ok())
                .ok_or_else(|| {
                    malformed_name(format!(
                        "long name offset characters after the '/' are not all decimal numbers: '{}' for archive member header at offset {offset}",
                        escape(digits)
                    ))
                })?;
            let table = self.string_table;
            if at >= table.len() {
                return Err(malformed_name(format!(
                    "long name offset {at} past the end of the string table for archive member header at offset {offset}"
                )));
            }
            if matches!(self.kind, ArchiveKind::Gnu | ArchiveKind::Gnu64) {
                let end = table[at..].iter().position(|&b| b == b'\n').map(|p| p + at);
                return match end {
                    // A terminator right at the offset (the `/` before it
                    // ending the previous name) gives an empty name, as
                    // LLVM's clamping slice does.
                    Some(end) if end >= 1 && table[end - 1] == b'/' => {
                        Ok(table.get(at..end - 1).unwrap_or_default())
                    }
                    _ => Err(malformed_name(format!(
                        "string table at long name offset {at} not terminated"
                    ))),
                };
            }
            // Other kinds store NUL-terminated names.
            let rest = &table[at..];
            return Ok(crate::bytes::until_nul(rest));
        }
        if let Some(len) = name.strip_prefix(b"#1/") {
            let n = bsd_name_len(len, offset, Quote::Escaped)?;
            let past = || {
                malformed(format!(
                    "long name length: {n} extends past the end of the member or archive for archive member header at offset {offset}"
                ))
            };
            if (HEADER_SIZE as u64)
                .checked_add(n)
                .is_none_or(|end| end > size)
            {
                return Err(past());
            }
            // Within the member's recorded size but past the end of the
            // file, LLVM reads on beyond its buffer; what lies there is
            // most often zero, which its trimming drops: the name is the
            // bytes the file has.
            let start = offset + HEADER_SIZE;
            let end = usize::try_from(n)
                .ok()
                .and_then(|n| start.checked_add(n))
                .ok_or_else(past)?
                .min(self.data.len());
            let bytes = self.data.get(start..end).ok_or_else(past)?;
            return Ok(rtrim(bytes, 0));
        }
        if name[name.len() - 1] != b'/' {
            return Ok(rtrim(name, b' '));
        }
        Ok(&name[..name.len() - 1])
    }

    /// The bytes of a non-thin member, bounded by the archive.
    fn inline_data(&self, child: &Child<'a>) -> Result<&'a [u8], ArchiveError> {
        let start = child.offset as u64 + child.start_of_file;
        let end = child.offset as u64 + HEADER_SIZE as u64 + child.raw_size;
        if end > self.data.len() as u64 || start > end {
            return Err(self.past_end_error(child));
        }
        Ok(&self.data[start as usize..end as usize])
    }

    fn past_end_error(&self, child: &Child<'a>) -> ArchiveError {
        let msg = "offset to next archive member past the end of the archive after member ";
        match self.name(child) {
            Ok(name) => malformed_bytes(&[msg.as_bytes(), name]),
            Err(_) => malformed(format!("{msg}at offset {}", child.offset)),
        }
    }

    fn next_child(&self, child: &Child<'a>) -> Result<Option<Child<'a>>, ArchiveError> {
        let mut size = HEADER_SIZE as u64;
        if !child.thin {
            size += child.raw_size;
        }
        let next = (child.offset as u64).checked_add(size.next_multiple_of(2));
        match next {
            Some(n) if n == self.data.len() as u64 => Ok(None),
            Some(n) if n < self.data.len() as u64 => self.child_at(n as usize).map(Some),
            _ => Err(self.past_end_error(child)),
        }
    }

    /// The member at `child` if its data runs past the end of the archive.
    fn cut_member(&self, child: &Child<'a>) -> Option<CutMember<'a>> {
        if child.thin {
            return None;
        }
        let start = child.offset as u64 + child.start_of_file;
        let end = (child.offset as u64 + HEADER_SIZE as u64).checked_add(child.raw_size)?;
        let len = self.data.len() as u64;
        if start > len || end <= len || start > end {
            return None;
        }
        Some(CutMember {
            name: self.name(child).ok()?,
            present: &self.data[start as usize..],
            size: end - start,
        })
    }

    fn member(&self, child: &Child<'a>) -> Result<Member<'a>, ArchiveError> {
        let name = self.name(child)?;
        let content = if child.thin {
            MemberContent::Thin {
                size: child.raw_size,
            }
        } else {
            MemberContent::Inline(self.inline_data(child)?)
        };
        Ok(Member {
            header_offset: child.offset as u64,
            name,
            content,
            header: child.header,
        })
    }
}

/// Iterator over the regular members of an [`Archive`].
pub struct Members<'r, 'a> {
    archive: &'r Archive<'a>,
    state: State,
    cut: Option<CutMember<'a>>,
}

impl<'a> Members<'_, 'a> {
    /// After the iterator gave an error: the member it was at, when the
    /// error is that member's data running past the end of the archive.
    pub fn cut_member(&self) -> Option<CutMember<'a>> {
        self.cut
    }
}

enum State {
    At(usize),
    Failed(ArchiveError),
    Done,
}

impl<'a> Iterator for Members<'_, 'a> {
    type Item = Result<Member<'a>, ArchiveError>;

    fn next(&mut self) -> Option<Self::Item> {
        let offset = match std::mem::replace(&mut self.state, State::Done) {
            State::Done => return None,
            State::Failed(e) => return Some(Err(e)),
            State::At(offset) => offset,
        };
        let child = match self.archive.child_at(offset) {
            Ok(child) => child,
            Err(e) => return Some(Err(e)),
        };
        match self.archive.member(&child) {
            Ok(member) => {
                // The next header is only looked at after this member is
                // handed out, so a consumer sees it before a later error,
                // as with LLVM's iterator.
                self.state = match self.archive.next_child(&child) {
                    Ok(Some(next)) => State::At(next.offset),
                    Ok(None) => State::Done,
                    Err(e) => State::Failed(e),
                };
                Some(Ok(member))
            }
            Err(e) => {
                self.cut = self.archive.cut_member(&child);
                Some(Err(e))
            }
        }
    }
}

/// The path LLVM reads a thin member from: the stored name if absolute,
/// else the name relative to the archive's directory. LLVM hands the path
/// to the system as a C string, so a name holding a NUL byte is read as
/// the part before it (the messages still quote the whole name).
pub fn thin_member_path(archive_path: &Path, name: &[u8]) -> PathBuf {
    let name = name.split(|&b| b == 0).next().unwrap_or(name);
    if name.is_empty() {
        // Opening "" fails with ENOENT, as LLVM's open of an empty string.
        return PathBuf::new();
    }
    let name = bytes_to_path(name);
    if name.is_absolute() {
        return name;
    }
    match archive_path.parent() {
        Some(dir) => dir.join(name),
        None => name,
    }
}

#[cfg(unix)]
fn bytes_to_path(bytes: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
}

#[cfg(not(unix))]
fn bytes_to_path(bytes: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
}
