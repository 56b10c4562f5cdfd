//! The input archive, walked member by member.
//!
//! The archive is one byte slice: the command-line tool maps the file
//! (LLVM maps it too), so only the pages actually looked at are read, and
//! member data that is copied to an output unchanged can go from file to
//! file in the kernel. Nothing here keeps anything per member: each pass
//! walks the members again with LLVM's reader ([`Archive::members`]),
//! which costs only the headers.

use std::borrow::Cow;
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::archive::{thin_member_path, Archive, ArchiveError, CutMember, LoadThin, MemberContent};

use super::Error;

/// How much of the archive a walk gets through between two calls of the
/// release hook.
const RELEASE_STEP: usize = 1 << 20;

/// An input archive being unbundled.
pub struct Input<'a> {
    data: Cow<'a, [u8]>,
    /// Where thin members are looked up from.
    archive_path: PathBuf,
    /// Reused for members of thin archives, which are separate files.
    buf: Vec<u8>,
    /// Told which bytes of `data` a walk is done with.
    release: Option<Box<dyn FnMut(Range<usize>) + 'a>>,
    /// Reads the members of a thin archive (the caller's I/O).
    load_thin: Option<Box<LoadThin<'a>>>,
}

impl<'a> Input<'a> {
    /// An archive in memory (typically a mapped file). `archive_path` is
    /// used only to find the members of a thin archive (relative to its
    /// directory). Fails as LLVM does when opening the archive: no magic,
    /// or damaged special members.
    pub fn from_bytes(
        data: impl Into<Cow<'a, [u8]>>,
        archive_path: &Path,
    ) -> Result<Input<'a>, ArchiveError> {
        let data = data.into();
        Archive::parse(&data)?;
        Ok(Input {
            data,
            archive_path: archive_path.to_path_buf(),
            buf: Vec::new(),
            release: None,
            load_thin: None,
        })
    }

    /// Has each walk over the members report, about every MiB and at its
    /// end, a range of the archive's bytes it has finished with (about a
    /// MiB behind where it is). A caller that mapped the archive drops
    /// those pages from memory, so that the resident set stays at a few
    /// MiB and one member whatever the archive's size.
    pub fn with_release(mut self, release: impl FnMut(Range<usize>) + 'a) -> Input<'a> {
        self.release = Some(Box::new(release));
        self
    }

    /// Has the members of a thin archive, which are separate files, read
    /// by `load` (given each member's path, [`thin_member_path`], and a
    /// buffer to fill). Without it a thin archive's members cannot be read
    /// and fail as [`ArchiveError::ThinMember`]s.
    pub fn with_thin_members(
        mut self,
        load: impl FnMut(&Path, &mut Vec<u8>) -> std::io::Result<()> + 'a,
    ) -> Input<'a> {
        self.load_thin = Some(Box::new(load));
        self
    }

    /// Calls `visit` with the name (as LLVM resolves it; a path in thin
    /// archives) and the bytes of each regular member, in archive order.
    /// The walk stops at the first error `visit` returns. A damaged
    /// member header, or data running past the end of the archive, ends
    /// the walk after the members before it were visited, with LLVM's
    /// error; a thin member that cannot be read fails at that member.
    pub(crate) fn for_each_member<'s>(
        &'s mut self,
        mut visit: impl FnMut(&[u8], MemberBytes<'s, '_>) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let Input {
            data,
            archive_path,
            buf,
            release,
            load_thin,
        } = self;
        let data: &'s Cow<'a, [u8]> = data;
        let data: &'s [u8] = data;
        let archive = Archive::parse(data).map_err(Error::Archive)?;
        let base = data.as_ptr() as usize;
        // The bytes before `from` are released; those up to `mark` will be
        // at the next step. Releasing one step behind the walk keeps the
        // pages of code objects still waiting to be written (the writer
        // gathers them) and catches the pages the kernel maps around each
        // one touched (fault-around).
        let (mut from, mut mark) = (0, 0);
        let mut members = archive.members();
        while let Some(member) = members.next() {
            let member = match member {
                Ok(member) => member,
                Err(e) => {
                    if let Some(cut) = members.cut_member() {
                        visit_cut_member(cut, buf, &mut visit)?;
                    }
                    return Err(Error::Archive(e));
                }
            };
            match member.content {
                MemberContent::Inline(bytes) => {
                    visit(member.name, MemberBytes::Archive(bytes))?;
                    if let Some(release) = release.as_mut() {
                        // The reader hands out subslices of `data`.
                        let done = bytes.as_ptr() as usize - base + bytes.len();
                        if done.saturating_sub(mark) >= RELEASE_STEP {
                            release(from..mark);
                            (from, mark) = (mark, done);
                        }
                    }
                }
                MemberContent::Thin { .. } => {
                    load_thin_member(archive_path, member.name, buf, load_thin.as_deref_mut())?;
                    visit(member.name, MemberBytes::Loaded(buf))?;
                }
            }
        }
        if let Some(release) = release.as_mut() {
            release(from..data.len());
        }
        Ok(())
    }
}

/// The most bytes a member cut by the end of the archive may lack for
/// [`visit_cut_member`] to look at it.
const CUT_MEMBER_PAD: u64 = 1 << 20;

/// A member whose data runs past the end of the archive: LLVM 22 hands it
/// out with whatever lies beyond its buffer, and reports the archive's
/// damage only after the member. Where the member's own error is decided
/// by the bytes the file has ([`cut_member_error`]), that error is LLVM's
/// first: the member is visited, zero-padded, and its error returned.
/// Otherwise the caller reports the damage.
fn visit_cut_member<'s>(
    cut: CutMember<'_>,
    buf: &mut Vec<u8>,
    visit: &mut impl FnMut(&[u8], MemberBytes<'s, '_>) -> Result<(), Error>,
) -> Result<(), Error> {
    if cut_member_error(cut, buf).is_none() {
        return Ok(());
    }
    visit(cut.name, MemberBytes::Loaded(buf))
}

/// The error of a member cut by the end of the archive (a damaged ELF
/// header, say) when it is the same whatever follows the bytes the file
/// has: with them followed by zeros and by `0xFF`s up to the recorded
/// size (at most `CUT_MEMBER_PAD` bytes missing). Leaves the member,
/// zero-padded, in `buf`.
pub fn cut_member_error(cut: CutMember<'_>, buf: &mut Vec<u8>) -> Option<String> {
    if cut.size.saturating_sub(cut.present.len() as u64) > CUT_MEMBER_PAD {
        return None;
    }
    let mut padded = |fill: u8| {
        buf.clear();
        buf.extend_from_slice(cut.present);
        buf.resize(cut.size as usize, fill);
        super::entries::entries(buf, false)
            .into_iter()
            .find_map(Result::err)
            .map(|e| e.to_string())
    };
    let with_ones = padded(0xFF)?;
    (padded(0) == Some(with_ones.clone())).then_some(with_ones)
}

/// [`cut_member_error`] for the member of `archive` that runs past its end,
/// if there is one.
pub fn first_cut_member_error(archive: &[u8]) -> Option<String> {
    let archive = Archive::parse(archive).ok()?;
    let mut members = archive.members();
    while let Some(member) = members.next() {
        if member.is_err() {
            return cut_member_error(members.cut_member()?, &mut Vec::new());
        }
    }
    None
}

/// A member's bytes during a walk.
#[derive(Clone, Copy)]
pub(crate) enum MemberBytes<'s, 't> {
    /// Inside the archive: valid as long as the input is borrowed.
    Archive(&'s [u8]),
    /// A thin archive's member, read from its own file: valid during the
    /// visit only.
    Loaded(&'t [u8]),
}

impl MemberBytes<'_, '_> {
    pub(crate) fn bytes(&self) -> &[u8] {
        match *self {
            MemberBytes::Archive(b) | MemberBytes::Loaded(b) => b,
        }
    }
}

/// Reads a thin archive's member (a file named relative to the archive)
/// into `buf`.
fn load_thin_member(
    archive_path: &Path,
    name: &[u8],
    buf: &mut Vec<u8>,
    load: Option<&mut LoadThin<'_>>,
) -> Result<(), Error> {
    let path = thin_member_path(archive_path, name);
    crate::archive::load_thin_with(load, &path, buf).map_err(|error| {
        Error::Archive(ArchiveError::ThinMember {
            name: name.to_vec(),
            error,
        })
    })
}
