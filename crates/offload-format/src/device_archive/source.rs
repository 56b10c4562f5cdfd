//! The input archive: its member list, and the bytes of one member at a time.
//!
//! LLVM maps the whole archive into memory. Here a regular GNU archive on
//! disk is indexed by reading its member headers only, and each member is
//! read when it is needed, so memory stays at the size of the largest
//! member whatever the size of the archive. Anything the header walk does
//! not recognise as plainly well formed (BSD or thin archives, unusual
//! names, damage of any kind) is handed to [`crate::archive::Archive`] over
//! the whole file instead, which gives LLVM's exact behaviour and messages;
//! the walk accepts only archives on which both readers agree (see the
//! `walk_agrees_with_archive_reader` test).

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::archive::{thin_member_path, Archive, ArchiveError, MemberContent, HEADER_SIZE, MAGIC};

use super::Error;

/// One regular member of the input archive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberInfo {
    /// The member name as LLVM resolves it (a path in thin archives).
    pub name: Vec<u8>,
    data: DataAt,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DataAt {
    /// `size` bytes at `offset` of the archive.
    Inline { offset: u64, size: u64 },
    /// A separate file (thin archive), found from the name.
    Thin,
}

impl MemberInfo {
    /// Whether the member's bytes are in a separate file (thin archive).
    pub fn is_thin(&self) -> bool {
        self.data == DataAt::Thin
    }
}

enum Store<'a> {
    Memory(Cow<'a, [u8]>),
    File(File),
}

/// An input archive being unbundled.
pub struct Input<'a> {
    store: Store<'a>,
    /// Where thin members are looked up from.
    archive_path: PathBuf,
    members: Vec<MemberInfo>,
    /// The error LLVM's member iterator reports after the last good member.
    error: Option<ArchiveError>,
    /// Reused for members read from disk.
    buf: Vec<u8>,
}

impl<'a> Input<'a> {
    /// An archive already in memory. `archive_path` is used only to find
    /// the members of a thin archive (relative to its directory).
    pub fn from_bytes(
        data: impl Into<Cow<'a, [u8]>>,
        archive_path: &Path,
    ) -> Result<Input<'a>, ArchiveError> {
        let data = data.into();
        let (members, error) = index_in_memory(&data)?;
        Ok(Input {
            store: Store::Memory(data),
            archive_path: archive_path.to_path_buf(),
            members,
            error,
            buf: Vec::new(),
        })
    }

    /// Opens the archive at `path`. A well-formed GNU archive in a regular
    /// file is indexed from its headers and read member by member; anything
    /// else is read whole.
    pub fn open(path: &Path) -> Result<Input<'static>, Error> {
        let input_error = |error: io::Error| Error::Input {
            path: path.to_path_buf(),
            error,
        };
        let metadata = std::fs::metadata(path).map_err(input_error)?;
        if metadata.is_dir() {
            return Err(input_error(io::Error::from_raw_os_error(21)));
        }
        let mut file = File::open(path).map_err(input_error)?;
        if metadata.is_file() {
            if let Some(members) = walk_gnu(&mut file, metadata.len()).map_err(input_error)? {
                return Ok(Input {
                    store: Store::File(file),
                    archive_path: path.to_path_buf(),
                    members,
                    error: None,
                    buf: Vec::new(),
                });
            }
            file.seek(SeekFrom::Start(0)).map_err(input_error)?;
        }
        let mut data = Vec::new();
        file.read_to_end(&mut data)
            .map_err(enomem)
            .map_err(input_error)?;
        Input::from_bytes(data, path).map_err(Error::Archive)
    }

    /// Whether the archive is being read member by member from disk
    /// (rather than held in memory).
    pub fn is_streamed(&self) -> bool {
        matches!(self.store, Store::File(_))
    }

    /// The regular members in archive order, up to the first one LLVM's
    /// iterator cannot get past.
    pub fn members(&self) -> &[MemberInfo] {
        &self.members
    }

    /// The error met after the last listed member, if any: a damaged
    /// header, or data running past the end of the archive.
    pub fn error_after_members(&self) -> Option<&ArchiveError> {
        self.error.as_ref()
    }

    /// Takes the error met after the last listed member (see
    /// [`Input::error_after_members`]).
    pub fn take_error(&mut self) -> Option<ArchiveError> {
        self.error.take()
    }

    /// The bytes of member `index`.
    pub fn load(&mut self, index: usize) -> Result<&[u8], Error> {
        let member = &self.members[index];
        match member.data {
            DataAt::Thin => {
                let path = thin_member_path(&self.archive_path, &member.name);
                let read = match std::fs::metadata(&path) {
                    Ok(md) if md.is_dir() => Err(io::Error::from_raw_os_error(21)),
                    // The name comes from the archive: a device or FIFO
                    // (`/dev/zero`) would be read without end or block, as
                    // `Archive::member_data` also refuses.
                    Ok(md) if !md.is_file() => Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "not a regular file",
                    )),
                    Ok(_) => read_into(&path, &mut self.buf),
                    Err(e) => Err(e),
                };
                read.map_err(|error| {
                    Error::Archive(ArchiveError::ThinMember {
                        name: member.name.clone(),
                        error,
                    })
                })?;
                Ok(&self.buf)
            }
            DataAt::Inline { offset, size } => self.range(index, offset, size),
        }
    }

    /// `len` bytes at `offset` of member `index`'s bytes. For a member in
    /// the archive only those bytes are read.
    pub fn load_range(&mut self, index: usize, offset: u64, len: u64) -> Result<&[u8], Error> {
        match self.members[index].data {
            DataAt::Thin => {
                let data = self.load(index)?;
                slice(data, offset, len).ok_or(Error::Changed)
            }
            DataAt::Inline {
                offset: start,
                size,
            } => {
                if offset.checked_add(len).is_none_or(|end| end > size) {
                    return Err(Error::Changed);
                }
                self.range(index, start + offset, len)
            }
        }
    }

    fn range(&mut self, _index: usize, offset: u64, len: u64) -> Result<&[u8], Error> {
        match &mut self.store {
            Store::Memory(data) => slice(data, offset, len).ok_or(Error::Changed),
            Store::File(file) => {
                let n = usize::try_from(len).map_err(|_| Error::Changed)?;
                self.buf.clear();
                if self.buf.capacity() < n {
                    // A fresh buffer: growing the old one would copy it.
                    self.buf = Vec::new();
                    self.buf.try_reserve_exact(n).map_err(|_| Error::Changed)?;
                }
                let read = file
                    .seek(SeekFrom::Start(offset))
                    .and_then(|_| file.take(len).read_to_end(&mut self.buf));
                match read {
                    Ok(got) if got == n => Ok(&self.buf),
                    Ok(_) => Err(Error::Changed),
                    Err(error) => Err(Error::Input {
                        path: self.archive_path.clone(),
                        error,
                    }),
                }
            }
        }
    }
}

pub(super) fn slice(data: &[u8], offset: u64, len: u64) -> Option<&[u8]> {
    let start = usize::try_from(offset).ok()?;
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    data.get(start..end)
}

fn read_into(path: &Path, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.clear();
    File::open(path)?.read_to_end(buf).map_err(enomem)?;
    Ok(())
}

/// A failed reservation while reading reports Rust's "out of memory"; the
/// tools print the OS text for ENOMEM, as LLVM does for an input it cannot
/// hold.
fn enomem(e: io::Error) -> io::Error {
    if e.kind() == io::ErrorKind::OutOfMemory {
        io::Error::from_raw_os_error(12)
    } else {
        e
    }
}

/// Lists the members with LLVM's reader, stopping at the first error.
fn index_in_memory(data: &[u8]) -> Result<(Vec<MemberInfo>, Option<ArchiveError>), ArchiveError> {
    let archive = Archive::parse(data)?;
    let base = data.as_ptr() as usize;
    let mut members = Vec::new();
    for member in archive.members() {
        let member = match member {
            Ok(m) => m,
            Err(e) => return Ok((members, Some(e))),
        };
        let data = match member.content {
            MemberContent::Inline(bytes) => DataAt::Inline {
                // The reader hands out subslices of `data`.
                offset: (bytes.as_ptr() as usize - base) as u64,
                size: bytes.len() as u64,
            },
            MemberContent::Thin { .. } => DataAt::Thin,
        };
        members.push(MemberInfo {
            name: member.name.to_vec(),
            data,
        });
    }
    Ok((members, None))
}

/// LLVM's `getAsInteger(10)` on a header field with trailing spaces.
fn decimal_field(field: &[u8]) -> Option<u64> {
    let end = field.iter().rposition(|&b| b != b' ').map_or(0, |p| p + 1);
    let digits = &field[..end];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    digits.iter().try_fold(0u64, |v, &b| {
        v.checked_mul(10)?.checked_add(u64::from(b - b'0'))
    })
}

/// Indexes a GNU archive from its member headers, reading nothing else but
/// the long-name table. Returns `None` for anything that is not plainly
/// well formed, so that the caller uses the full reader instead.
///
/// Accepted: the `!<arch>\n` magic; an optional `/` or `/SYM64/` symbol
/// table, then an optional `//` long-name table, as the first members;
/// then regular members named `name/` (no `/` inside) or `/<offset>` into
/// the long-name table (`name/\n` entries); decimal sizes; terminators
/// `` `\n ``; every member inside the file; an even-aligned end.
fn walk_gnu(file: &mut File, len: u64) -> io::Result<Option<Vec<MemberInfo>>> {
    let mut magic = [0u8; 8];
    if len < 8 {
        return Ok(None);
    }
    file.seek(SeekFrom::Start(0))?;
    file.read_exact(&mut magic)?;
    if &magic != MAGIC {
        return Ok(None);
    }
    let mut members = Vec::new();
    let mut names: Vec<u8> = Vec::new();
    let mut pos = MAGIC.len() as u64;
    // 0: symbol table allowed; 1: long-name table allowed; 2: members only.
    let mut stage = 0;
    let mut header = [0u8; HEADER_SIZE];
    while pos < len {
        if len - pos < HEADER_SIZE as u64 {
            return Ok(None);
        }
        file.seek(SeekFrom::Start(pos))?;
        file.read_exact(&mut header)?;
        if &header[58..60] != b"`\n" {
            return Ok(None);
        }
        let Some(size) = decimal_field(&header[48..58]) else {
            return Ok(None);
        };
        let data_start = pos + HEADER_SIZE as u64;
        let Some(end) = data_start.checked_add(size).filter(|&e| e <= len) else {
            return Ok(None);
        };
        let field = &header[..16];
        let trimmed = &field[..field.iter().rposition(|&b| b != b' ').map_or(0, |p| p + 1)];
        if stage == 0 && (trimmed == b"/" || trimmed == b"/SYM64/") {
            stage = 1;
        } else if stage <= 1 && trimmed == b"//" {
            let n = usize::try_from(size).map_err(|_| io::ErrorKind::InvalidData)?;
            names = vec![0; n];
            file.read_exact(&mut names)?;
            stage = 2;
        } else {
            stage = 2;
            let name = match field[0] {
                b'/' => {
                    let Some(at) = decimal_field(&field[1..]).and_then(|v| usize::try_from(v).ok())
                    else {
                        return Ok(None);
                    };
                    let Some(rest) = names.get(at..) else {
                        return Ok(None);
                    };
                    match rest.iter().position(|&b| b == b'\n') {
                        Some(nl) if nl >= 1 && rest[nl - 1] == b'/' => rest[..nl - 1].to_vec(),
                        _ => return Ok(None),
                    }
                }
                b'#' => return Ok(None),
                // LLVM drops spaces before the terminating `/`.
                _ => match field.iter().position(|&b| b == b'/') {
                    Some(p) => {
                        let name = &field[..p];
                        let end = name.iter().rposition(|&b| b != b' ').map_or(0, |q| q + 1);
                        name[..end].to_vec()
                    }
                    None => return Ok(None),
                },
            };
            members.push(MemberInfo {
                name,
                data: DataAt::Inline {
                    offset: data_start,
                    size,
                },
            });
        }
        let next = end + (end & 1);
        if next > len {
            return Ok(None);
        }
        pos = next;
    }
    Ok(Some(members))
}

#[cfg(test)]
pub(super) fn walk_for_test(path: &Path) -> Option<Vec<MemberInfo>> {
    let mut f = File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    walk_gnu(&mut f, len).ok()?
}

#[cfg(test)]
pub(super) fn index_for_test(
    data: &[u8],
) -> Result<(Vec<MemberInfo>, Option<ArchiveError>), ArchiveError> {
    index_in_memory(data)
}
