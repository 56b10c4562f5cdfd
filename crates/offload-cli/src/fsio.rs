//! Reading inputs and writing outputs the way the tools must: `-` is stdin or
//! stdout, and files are never left half-written.
//!
//! Every output is first written to a staging file in the target's own
//! directory and moved over the target only when the whole command has
//! succeeded ([`Outputs::commit`]), so a failure leaves existing files as
//! they were. Targets that are not regular files (`/dev/null`, a FIFO) are
//! written in place, as renaming over them would replace the device node.
//!
//! The staging file has no name where the file system allows (`O_TMPFILE`),
//! so that nothing is left behind whatever ends the process; otherwise it
//! is a hidden `.NAME.XXXXXXXX.tmp`, removed on SIGINT, SIGTERM and SIGHUP
//! (see `staging`). Either way, replacing an existing target is a rename,
//! so a reader (or a concurrent writer of the same path) sees the old file
//! or a complete new one, never a mixture.

use std::ffi::OsStr;
use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};

use crate::mapped::{self, Mapping};
use crate::splice;
use crate::staging;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// Inputs smaller than this are read into memory: mapping them costs more
/// system calls than it saves.
const MAP_THRESHOLD: u64 = 64 * 1024;

/// Writes of mapped bytes shorter than this are plain writes; longer ones
/// become kernel copies from the input file.
pub const COPY_THRESHOLD: usize = 64 * 1024;
/// The page size that decides whether two file offsets line up (4 KiB on
/// the machines these tools serve; a larger one only makes the choice
/// conservative).
const PAGE: u64 = 4096;

/// Zeroed memory of its own from the system (an anonymous mapping),
/// handed back to it when dropped: for a large buffer that lives a short
/// while, which the allocator would otherwise keep for the thread that
/// freed it.
pub struct Anonymous(memmap2::MmapMut, usize);

impl Anonymous {
    /// `len` bytes, all zero.
    pub fn new(len: usize) -> io::Result<Anonymous> {
        // A mapping has at least one byte.
        let m = memmap2::MmapMut::map_anon(len.max(1))?;
        // In huge pages where the system has them: each page of a fresh
        // mapping costs a fault when first written, and a 40 MiB buffer
        // is 10,240 small pages but 20 huge ones. Only a hint.
        let _ = m.advise(memmap2::Advice::HugePage);
        Ok(Anonymous(m, len))
    }
}

impl std::ops::Deref for Anonymous {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0[..self.1]
    }
}

impl std::ops::DerefMut for Anonymous {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.0[..self.1]
    }
}

/// The bytes of one input: a memory mapping for regular files of some
/// size, else the bytes read (stdin, pipes, small files).
///
/// Dereferences to `[u8]`, so the format library parses it like any slice.
/// Writing a slice of a mapped input to an [`OutputFile`] (or through
/// [`ReadThrough`]) copies it from the file, without making it resident.
pub struct Input {
    backing: Backing,
}

enum Backing {
    Mapped(Mapping),
    Owned(Vec<u8>),
}

impl std::ops::Deref for Input {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.backing {
            Backing::Mapped(m) => m.bytes(),
            Backing::Owned(v) => v,
        }
    }
}

impl Input {
    /// Says the caller is done with `range` of the bytes for now. A mapped
    /// input drops those pages from the process's resident set (they stay
    /// in the page cache and come back if touched), so that one pass over
    /// a large input does not end up holding all of it; otherwise this
    /// does nothing.
    pub fn release(&self, range: std::ops::Range<usize>) {
        if let Backing::Mapped(m) = &self.backing {
            m.release(range);
        }
    }

    /// Says the bytes will be read here and there (headers of a large
    /// file), not in order: a mapped input then brings in only the pages
    /// touched, without read-ahead around them. Otherwise does nothing.
    pub fn advise_random(&self) {
        if let Backing::Mapped(m) = &self.backing {
            m.advise_random();
        }
    }

    /// The bytes as a vector (a copy only if they are mapped).
    pub fn into_vec(self) -> Vec<u8> {
        match self.backing {
            Backing::Owned(v) => v,
            Backing::Mapped(m) => m.bytes().to_vec(),
        }
    }
}

impl AsRef<[u8]> for Input {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl From<Vec<u8>> for Input {
    fn from(v: Vec<u8>) -> Input {
        Input {
            backing: Backing::Owned(v),
        }
    }
}

/// The first `n` bytes (at most) of `bytes`, for a look at what they are:
/// read from the file where `bytes` lies in a mapped input, else borrowed.
/// A listing names hundreds of payloads by their first bytes; a `pread`
/// into a small buffer costs less than faulting each page into the
/// mapping and dropping it again, and leaves the resident set as it was.
pub fn head(bytes: &[u8], n: usize) -> std::borrow::Cow<'_, [u8]> {
    use std::os::unix::fs::FileExt;
    let want = &bytes[..bytes.len().min(n)];
    if !want.is_empty() {
        if let Some((file, offset)) = mapped::locate(want) {
            let mut buf = vec![0u8; want.len()];
            if file.read_exact_at(&mut buf, offset).is_ok() {
                return std::borrow::Cow::Owned(buf);
            }
        }
    }
    std::borrow::Cow::Borrowed(want)
}

/// Opens an input; `-` reads standard input.
///
/// An input too large for the memory available is an error, not an abort:
/// buffers are reserved fallibly, and the failure is reported as ENOMEM
/// ("Cannot allocate memory"), the text LLVM's tools print in that case.
pub fn read_input(path: &OsStr) -> io::Result<Input> {
    if path == "-" {
        let mut v = Vec::new();
        io::stdin()
            .lock()
            .read_to_end(&mut v)
            .map_err(out_of_memory)?;
        return Ok(v.into());
    }
    let p = Path::new(path);
    // Reading a directory fails late and with EISDIR only on some systems;
    // check first so the message is always "Is a directory".
    if fs::metadata(p)?.is_dir() {
        return Err(io::Error::from_raw_os_error(21));
    }
    let mut file = File::open(p)?;
    let md = file.metadata()?;
    if md.is_file() && md.len() >= MAP_THRESHOLD {
        // A file system that cannot map (some FUSE ones) is read instead.
        if let Ok(m) = file.try_clone().and_then(Mapping::new) {
            return Ok(Input {
                backing: Backing::Mapped(m),
            });
        }
    }
    let mut v = Vec::new();
    if md.is_file() {
        let len = usize::try_from(md.len()).unwrap_or(usize::MAX);
        v.try_reserve_exact(len)
            .map_err(|_| io::Error::from_raw_os_error(12))?;
    }
    file.read_to_end(&mut v).map_err(out_of_memory)?;
    Ok(v.into())
}

/// Opens an unnamed file for intermediate bytes (a zip member decoded to
/// be read), readable and writable, in the directory `TMPDIR` names (or
/// `/tmp`). It has no name where the file system allows (`O_TMPFILE`), so
/// nothing is left behind however the process ends; elsewhere it is
/// created with a hidden name and unlinked at once.
pub fn scratch_file() -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = std::env::temp_dir();
    match fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .mode(0o600)
        .open(&dir)
    {
        Ok(f) => return Ok(f),
        Err(e)
            if !matches!(
                e.raw_os_error(),
                Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)
            ) =>
        {
            return Err(e)
        }
        Err(_) => {}
    }
    let (f, path) =
        crate::temp::create_unique(16, 0o600, |h| dir.join(format!(".offload-scratch-{h}")))
            .map_err(|(_, e)| e)?;
    drop(f);
    let file = fs::OpenOptions::new().read(true).write(true).open(&path);
    let _ = fs::remove_file(&path);
    file
}

impl Input {
    /// The bytes of an open file, from its start: mapped when large
    /// enough, else read ([`read_input`]'s rule).
    pub fn from_file(mut file: File) -> io::Result<Input> {
        let len = file.metadata()?.len();
        if len >= MAP_THRESHOLD {
            if let Ok(m) = file.try_clone().and_then(Mapping::new) {
                return Ok(Input {
                    backing: Backing::Mapped(m),
                });
            }
        }
        let mut v = Vec::new();
        v.try_reserve_exact(usize::try_from(len).unwrap_or(usize::MAX))
            .map_err(|_| io::Error::from_raw_os_error(12))?;
        file.seek(SeekFrom::Start(0))?;
        file.read_to_end(&mut v).map_err(out_of_memory)?;
        Ok(v.into())
    }
}

/// Reads a member of a thin archive, a separate file named by the archive,
/// into `buf` (cleared first): what the format library's thin-archive
/// readers are handed, since they do no I/O themselves. The name comes from
/// the archive, so a directory is refused with EISDIR and anything but a
/// regular file (`/dev/zero`, a FIFO) with "not a regular file" rather than
/// read without end or blocked on.
pub fn read_member_file(path: &Path, buf: &mut Vec<u8>) -> io::Result<()> {
    let md = fs::metadata(path)?;
    if md.is_dir() {
        return Err(io::Error::from_raw_os_error(21));
    }
    if !md.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    buf.clear();
    File::open(path)
        .and_then(|mut f| f.read_to_end(buf))
        .map(drop)
        .map_err(out_of_memory)
}

fn out_of_memory(e: io::Error) -> io::Error {
    if e.kind() == io::ErrorKind::OutOfMemory {
        io::Error::from_raw_os_error(12)
    } else {
        e
    }
}

/// An error met writing an output (rather than creating it): LLVM's
/// `raw_fd_ostream` turns these into `LLVM ERROR: IO failure on output
/// stream: <text>`, which tools that report them so recognise with
/// [`is_write_failure`].
#[derive(Debug)]
struct WriteFailed(io::Error);

impl std::fmt::Display for WriteFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for WriteFailed {}

fn write_failed(e: io::Error) -> io::Error {
    if is_write_failure(&e) {
        return e;
    }
    io::Error::new(e.kind(), WriteFailed(e))
}

/// Whether `e` was met writing an output (a full file system, `/dev/full`,
/// an I/O error), rather than creating or renaming it. Its text
/// ([`offload_format::llvm::os_error_text`]) is the system's as for any error.
pub fn is_write_failure(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<WriteFailed>())
}

/// For an error met writing an output, the text LLVM 22's tools end with
/// (as `LLVM ERROR: <text>`, exit 1) when a write fails:
/// `IO failure on output stream: <system text>`.
pub fn llvm_write_failure(e: &io::Error) -> Option<String> {
    is_write_failure(e).then(|| {
        format!(
            "IO failure on output stream: {}",
            offload_format::llvm::os_error_text(e)
        )
    })
}

/// Copies `len` bytes at `offset` of `src` to `dst` without passing them
/// through this process's memory where the kernel can do it
/// (`copy_file_range`, `sendfile` or `splice`, which std's `io::copy`
/// chooses between for files, pipes and sockets).
fn copy_range<W: Write>(src: &File, offset: u64, len: u64, dst: &mut W) -> io::Result<()> {
    let mut src = src;
    src.seek(SeekFrom::Start(offset))?;
    let copied = io::copy(&mut src.take(len), dst)?;
    if copied != len {
        // Only if the file shrank under us.
        return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
    }
    Ok(())
}

/// Writes into `W` the way an output does: bytes that lie in a mapped
/// input are read from its file in chunks (`pread`) instead of through the
/// mapping, so that feeding a whole input to, say, a compressor does not
/// make it resident in this process.
pub struct ReadThrough<W> {
    inner: W,
    chunk: Vec<u8>,
}

impl<W: Write> ReadThrough<W> {
    pub fn new(inner: W) -> ReadThrough<W> {
        ReadThrough {
            inner,
            chunk: Vec::new(),
        }
    }

    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    pub fn into_inner(self) -> W {
        self.inner
    }
}

impl<W: Write> Write for ReadThrough<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        const CHUNK: usize = 1 << 20;
        if buf.len() < COPY_THRESHOLD || mapped::locate(buf).is_none() {
            return self.inner.write_all(buf);
        }
        // Through a small buffer, so that only one chunk is ever resident.
        self.chunk.resize(CHUNK.min(buf.len()), 0);
        for piece in buf.chunks(CHUNK) {
            let chunk = &mut self.chunk[..piece.len()];
            read_into(piece, chunk)?;
            self.inner.write_all(chunk)?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Copies `src`, a slice of an input, into `dst` (as long): bytes of a
/// mapped input are read from its file (`pread`) rather than through the
/// mapping, so that reading a whole input piece by piece (a decompressor
/// working through a payload, say) does not make it resident.
pub fn read_into(src: &[u8], dst: &mut [u8]) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    if src.len() != dst.len() {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    match mapped::locate(src) {
        Some((file, offset)) => file.read_exact_at(dst, offset),
        None => {
            dst.copy_from_slice(src);
            Ok(())
        }
    }
}

/// One output being written.
pub struct OutputFile {
    target: Target,
    /// `None` once the output is finished ([`Outputs::finish`]): complete
    /// and closed, waiting only for its rename.
    writer: Option<BufWriter<Sink>>,
    /// For a durable output (synced before its rename): the bytes written
    /// since its write-back was last started ([`OutputFile::sent`]).
    unsent: Option<u64>,
    /// A finished durable output held open whose sync is still to come
    /// ([`OutputFile::sync_held`]): syncing many outputs one after the
    /// other, each right after its last byte, waits for a journal commit
    /// each; synced together, the first commit carries the others.
    unsynced: bool,
}

/// How many bytes a durable output is written between two starts of its
/// write-back: the disk writes while the rest is made, and the sync
/// before the rename waits for the tail only. (Thirty 80 MB files written
/// and synced one after the other: 3.0-4.1 s without, 2.0-2.4 s with.)
const WRITEBACK_STEP: u64 = 8 << 20;

impl OutputFile {
    /// Counts `n` bytes written; for a durable output, starts the
    /// write-back of what the file holds every [`WRITEBACK_STEP`] bytes.
    fn sent(&mut self, n: usize) {
        let Some(unsent) = &mut self.unsent else {
            return;
        };
        *unsent += n as u64;
        if *unsent < WRITEBACK_STEP {
            return;
        }
        *unsent = 0;
        if let Some(Sink::File(f)) = self.writer.as_mut().map(BufWriter::get_mut) {
            splice::start_writeback(f);
        }
    }

    fn writer(&mut self) -> io::Result<&mut BufWriter<Sink>> {
        self.writer
            .as_mut()
            .ok_or_else(|| io::Error::other("output already finished"))
    }

    /// The output's file, for a writer that must seek (to fill in a header
    /// once the data after it is written, say), with what was buffered
    /// flushed first. `None` for outputs written in place (stdout, devices,
    /// FIFOs), which may not seek; write those through the `OutputFile`.
    /// Bytes written through the file skip the kernel-copy path.
    pub fn seekable_file(&mut self) -> io::Result<Option<&mut File>> {
        if !matches!(self.target, Target::Staged(_)) {
            return Ok(None);
        }
        let w = self.writer()?;
        w.flush().map_err(write_failed)?;
        Ok(match w.get_mut() {
            Sink::File(f) => Some(f),
            Sink::Stdout(_) => None,
        })
    }

    /// Flushes the output and closes its writer; what is left is to move
    /// it into place. An unnamed staging file stays open (it would vanish
    /// when closed) if `may_hold` says another descriptor may be held,
    /// else it is given a hidden name now and closed. Returns whether a
    /// descriptor is held.
    fn close(&mut self, may_hold: bool, durable: bool) -> io::Result<bool> {
        let Some(w) = self.writer.take() else {
            return Ok(false);
        };
        let sink = w.into_inner().map_err(|e| write_failed(e.into_error()))?;
        let Target::Staged(staged) = &mut self.target else {
            return Ok(false);
        };
        let Sink::File(file) = sink else {
            return Ok(false);
        };
        // What it replaces gives it its owner, mode and attributes before
        // it has a name, so that it is never visible with other ones.
        if let Some(r) = &staged.replaces {
            r.give_metadata(&file)?;
        }
        let holds = may_hold && matches!(staged.stage, Stage::Unnamed(_));
        if durable && holds {
            // Synced later, with the other outputs held ([`Outputs`]); the
            // disk starts on it now.
            splice::start_writeback(&file);
            self.unsynced = true;
        } else if durable {
            file.sync_all().map_err(write_failed)?;
        }
        let Stage::Unnamed(held) = &mut staged.stage else {
            return Ok(false);
        };
        if holds {
            *held = Some(file);
            return Ok(true);
        }
        staged.stage = Stage::Named(name_beside(&file, &staged.path)?);
        Ok(false)
    }

    /// Syncs a finished output held open whose sync [`OutputFile::close`]
    /// left to come.
    fn sync_held(&mut self) -> io::Result<()> {
        if !self.unsynced {
            return Ok(());
        }
        if let Target::Staged(Staged {
            stage: Stage::Unnamed(Some(file)),
            ..
        }) = &self.target
        {
            file.sync_all().map_err(write_failed)?;
        }
        self.unsynced = false;
        Ok(())
    }

    /// Syncs a held output (if its sync is to come), gives it its hidden
    /// name and closes it; an output not held is left as it is.
    fn let_go(&mut self) -> io::Result<()> {
        self.sync_held()?;
        if let Target::Staged(staged) = &mut self.target {
            if let Stage::Unnamed(held) = &mut staged.stage {
                if let Some(file) = held.take() {
                    staged.stage = Stage::Named(name_beside(&file, &staged.path)?);
                }
            }
        }
        Ok(())
    }
}

enum Target {
    /// Moved into place on commit.
    Staged(Staged),
    /// Written in place (stdout, devices, FIFOs): nothing to do on commit.
    Direct,
}

/// A staged output and where it goes.
struct Staged {
    /// The name it takes.
    path: PathBuf,
    stage: Stage,
    /// The file it replaces, when it is that file rewritten.
    replaces: Option<Replaced>,
}

/// The file a rewritten output replaces ([`Outputs::replace`]).
struct Replaced {
    /// The original, open (and locked, through the [`Original`] it came
    /// from).
    file: File,
    /// Its state when it was read.
    before: FileState,
    /// Its other names (hard links), which name the new file too.
    also: Vec<PathBuf>,
}

impl Replaced {
    /// Gives `file` the original's owner and group, then its extended
    /// attributes (ACLs, file capabilities, security labels), then its
    /// mode, setuid and setgid bits included (a change of owner clears
    /// them, and of capabilities). What the process may not give (another
    /// owner, when not root) is left as the process's.
    fn give_metadata(&self, file: &File) -> io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let b = &self.before;
        match std::os::unix::fs::fchown(file, Some(b.uid), Some(b.gid)) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => {}
            Err(e) => return Err(e),
        }
        staging::copy_xattrs(&self.file, file)?;
        file.set_permissions(fs::Permissions::from_mode(b.mode & 0o7777))
    }
}

/// What identifies a file's content as read: where it is, its size and
/// the times a change of content or of metadata sets, and the metadata a
/// replacement takes over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FileState {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    mode: u32,
    uid: u32,
    gid: u32,
}

impl FileState {
    fn of(md: &fs::Metadata) -> FileState {
        use std::os::unix::fs::MetadataExt;
        FileState {
            dev: md.dev(),
            ino: md.ino(),
            size: md.size(),
            mtime: (md.mtime(), md.mtime_nsec()),
            ctime: (md.ctime(), md.ctime_nsec()),
            mode: md.mode(),
            uid: md.uid(),
            gid: md.gid(),
        }
    }

    /// The same file (device and inode).
    fn same_file(&self, other: &FileState) -> bool {
        (self.dev, self.ino) == (other.dev, other.ino)
    }

    /// The same file with the same content as far as the system says:
    /// size and modification time, and the change time where `ctime`
    /// (a rename of the file changes it, so it is not compared after one).
    fn unchanged(&self, now: &FileState, ctime: bool) -> bool {
        self.same_file(now)
            && self.size == now.size
            && self.mtime == now.mtime
            && (!ctime || self.ctime == now.ctime)
    }
}

/// A regular file opened to be rewritten in place: its real path
/// (symbolic links resolved, so the link stays and its target is
/// rewritten), the open file, locked against other `offload` runs that
/// rewrite it, and its state when locked. Its bytes are read from this
/// descriptor ([`Original::input`]), and [`Outputs::replace`] stages its
/// replacement; the commit checks that the path still names this file,
/// unchanged, and the lock is let go of when this is dropped.
pub struct Original {
    path: PathBuf,
    file: File,
    state: FileState,
}

impl Original {
    /// Opens `path` to rewrite it. A symbolic link is followed to the file
    /// it names; anything but a regular file is refused. The lock is
    /// waited for while another process holds it; if that process replaced
    /// the file meanwhile, the new file is opened instead.
    pub fn open(path: &Path) -> io::Result<Original> {
        for _ in 0..100 {
            let real = fs::canonicalize(path)?;
            let file = open_regular(&real)?;
            staging::lock(&file, true)?;
            let md = file.metadata()?;
            let state = FileState::of(&md);
            // Still the file at that path (not replaced while we waited)?
            match fs::symlink_metadata(&real) {
                Ok(now) if FileState::of(&now).same_file(&state) => {
                    return Ok(Original {
                        path: real,
                        file,
                        state,
                    })
                }
                Ok(_) => continue,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::other("keeps being replaced by another process"))
    }

    /// The file's real path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its bytes, read from the open file ([`Input::from_file`]).
    pub fn input(&self) -> io::Result<Input> {
        Input::from_file(self.file.try_clone()?)
    }
}

/// Opens `path` for reading if it is a regular file (following symbolic
/// links). Anything else is refused without blocking on it: a directory
/// with EISDIR, a device, FIFO or socket with "not a regular file".
pub fn open_regular(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    // Sockets cannot be opened at all (ENXIO): say what they are first.
    let md = fs::metadata(path)?;
    if !md.is_file() && !md.is_dir() {
        return Err(not_regular());
    }
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
    // writer (one put there since the look). It changes nothing for a
    // regular file.
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let md = file.metadata()?;
    if md.is_dir() {
        return Err(io::Error::from_raw_os_error(libc::EISDIR));
    }
    if !md.is_file() {
        return Err(not_regular());
    }
    Ok(file)
}

fn not_regular() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "not a regular file")
}

/// How much of standard input a command that reads it as a file takes
/// from a pipe ([`read_regular`]).
pub const STDIN_LIMIT: u64 = 16 << 30;

/// Reads an input that must be a file: `path` opened with
/// [`open_regular`] and mapped or read; `-` is standard input, mapped
/// where it is a regular file, refused where it is a device (`< /dev/zero`
/// would never end), and read from a pipe or socket into an unnamed
/// scratch file up to [`STDIN_LIMIT`] bytes.
pub fn read_regular(path: &OsStr) -> io::Result<Input> {
    if path != "-" {
        return Input::from_file(open_regular(Path::new(path))?);
    }
    let stdin = io::stdin();
    let fd = std::os::fd::AsFd::as_fd(&stdin).try_clone_to_owned()?;
    let file = File::from(fd);
    let md = file.metadata()?;
    let ft = md.file_type();
    if md.is_file() {
        return Input::from_file(file);
    }
    if md.is_dir() || ft.is_char_device() || ft.is_block_device() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "standard input is not a file or a pipe",
        ));
    }
    let mut scratch = scratch_file()?;
    let copied = io::copy(&mut (&file).take(STDIN_LIMIT + 1), &mut scratch)?;
    if copied > STDIN_LIMIT {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "standard input is longer than {} GiB; name the file instead",
                STDIN_LIMIT >> 30
            ),
        ));
    }
    Input::from_file(scratch)
}

/// Where a staged output's bytes are until the commit.
enum Stage {
    /// An `O_TMPFILE` file: in the writer while it is written, then here
    /// (`Some`) until it is linked into place.
    Unnamed(Option<File>),
    /// A hidden file beside the target, removed unless renamed over it.
    Named(TempPath),
}

/// How many finished unnamed outputs one [`Outputs`] keeps open before it
/// syncs (durable outputs), names and closes them, together (a command
/// with thousands of outputs must not run out of descriptors; the soft
/// limit is often 1024).
const HOLD_LIMIT: usize = 64;

enum Sink {
    File(File),
    Stdout(io::Stdout),
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sink::File(f) => f.write(buf),
            Sink::Stdout(s) => s.write(buf),
        }
    }
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Sink::File(f) => f.write_vectored(bufs),
            Sink::Stdout(s) => s.write_vectored(bufs),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::File(f) => f.flush(),
            Sink::Stdout(s) => s.flush(),
        }
    }
}

impl OutputFile {
    /// If `buf` lies in a mapped input, has the kernel copy it from the
    /// input file and returns true.
    fn copy_if_mapped(&mut self, buf: &[u8]) -> io::Result<bool> {
        if buf.len() < COPY_THRESHOLD {
            return Ok(false);
        }
        let Some((file, offset)) = mapped::locate(buf) else {
            return Ok(false);
        };
        let w = self.writer()?;
        w.flush()?;
        let len = buf.len() as u64;
        match w.get_mut() {
            Sink::File(f) => {
                // Ranges whose pages do not line up with the output's go
                // through a large pipe (see `splice`); what that cannot do
                // is left to the kernel's file copy.
                // (FIFOs and devices have no position: kernel copy.)
                let mut done = 0;
                if f.stream_position()
                    .is_ok_and(|at| at % PAGE != offset % PAGE)
                {
                    done = splice::copy(&file, offset, len, f)?;
                }
                copy_range(&file, offset + done, len - done, f)?;
            }
            Sink::Stdout(s) => copy_range(&file, offset, len, &mut s.lock())?,
        }
        Ok(true)
    }
}

/// Errors writing are marked as such ([`is_write_failure`]).
impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = if self.copy_if_mapped(buf).map_err(write_failed)? {
            buf.len()
        } else {
            self.writer()?.write(buf).map_err(write_failed)?
        };
        self.sent(n);
        Ok(n)
    }
    /// Gathered writes at least as large as the buffer go to the file as
    /// one `writev`, so a caller gathering many small pieces of a mapped
    /// input has them copied once, by the kernel, not first into the
    /// buffer.
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        let w = self.writer()?;
        let total = bufs.iter().fold(0usize, |n, b| n.saturating_add(b.len()));
        let n = if total < w.capacity() {
            w.write_vectored(bufs).map_err(write_failed)?
        } else {
            w.flush().map_err(write_failed)?;
            w.get_mut().write_vectored(bufs).map_err(write_failed)?
        };
        self.sent(n);
        Ok(n)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        if !self.copy_if_mapped(buf).map_err(write_failed)? {
            self.writer()?.write_all(buf).map_err(write_failed)?;
        }
        self.sent(buf.len());
        Ok(())
    }
    fn flush(&mut self) -> io::Result<()> {
        match &mut self.writer {
            Some(w) => w.flush().map_err(write_failed),
            None => Ok(()),
        }
    }
}

/// A group of outputs committed together: all of them or none.
#[derive(Default)]
pub struct Outputs {
    files: Vec<OutputFile>,
    /// Finished outputs holding an unnamed file open.
    held: usize,
    /// Each output is flushed to the disk before it is moved into place,
    /// and its directory after ([`Outputs::durable`]).
    durable: bool,
    /// The new directory the outputs go to, staged whole
    /// ([`Outputs::durable_in_new_dir`]); last, so that it goes after the
    /// staged files when dropped.
    dir: Option<NewDir>,
}

impl Outputs {
    pub fn new() -> Outputs {
        Outputs::default()
    }

    /// Outputs that survive a crash of the system once committed: each
    /// file is synced to the disk before it is moved into place, and each
    /// directory after, as package managers do (`offload`'s outputs; the
    /// drop-in tools do as LLVM's and rely on the rename alone).
    pub fn durable() -> Outputs {
        Outputs {
            durable: true,
            ..Outputs::default()
        }
    }

    /// [`Outputs::durable`] outputs for a directory `dir` that does not
    /// exist yet (its parent does): it is made now under a staging name
    /// beside its place (of [`STAGING_PREFIX`]), outputs named inside `dir`
    /// are written and committed in it, and the commit then publishes it
    /// with one rename, so that a run ended at any moment, SIGKILL
    /// included, leaves all the outputs or no `dir`. Should `dir` appear
    /// meanwhile, the commit fails (an `AlreadyExists` error naming `dir`)
    /// and nothing is written. Dropped uncommitted, or ended by a signal
    /// of `staging`, it removes the staged directory.
    pub fn durable_in_new_dir(dir: &Path) -> io::Result<Outputs> {
        Ok(Outputs {
            dir: Some(NewDir::create(dir)?),
            ..Outputs::durable()
        })
    }

    /// Where output `path` is written until the commit: inside the staged
    /// directory for one named in the new directory, else `path` itself.
    fn staged_path(&self, path: &OsStr) -> PathBuf {
        let p = Path::new(path);
        match &self.dir {
            Some(d) => match p.strip_prefix(&d.path) {
                Ok(rest) if !rest.as_os_str().is_empty() => d.staged.join(rest),
                _ => p.to_path_buf(),
            },
            None => p.to_path_buf(),
        }
    }

    /// The name `path` (maybe in the staged directory) has once committed.
    fn final_path(dir: Option<&NewDir>, path: &Path) -> PathBuf {
        match dir.map(|d| (d, path.strip_prefix(&d.staged))) {
            Some((d, Ok(rest))) => d.path.join(rest),
            _ => path.to_path_buf(),
        }
    }

    /// Starts the output that replaces `original`, a file opened to be
    /// rewritten, and returns its index. It is staged in the original's
    /// directory, takes its owner, extended attributes and mode, and on
    /// commit replaces it only if it is still the file read, unchanged;
    /// `also` are other names (hard links) of the original, which then
    /// name the new file too.
    pub fn replace(&mut self, original: &Original, also: &[PathBuf]) -> io::Result<usize> {
        let mut f = open_output(original.path().as_os_str(), false)?;
        let Target::Staged(staged) = &mut f.target else {
            // A regular file always is staged.
            return Err(not_regular());
        };
        staged.replaces = Some(Replaced {
            file: original.file.try_clone()?,
            before: original.state,
            also: also.to_vec(),
        });
        f.unsent = self.durable.then_some(0);
        self.files.push(f);
        Ok(self.files.len() - 1)
    }

    /// Drops output `index` unwritten: it will not be committed (a file
    /// rewritten with nothing changed, say). Its staging file goes now.
    pub fn discard(&mut self, index: usize) {
        let f = &mut self.files[index];
        // Dropping the writer closes an unnamed file (gone with it);
        // dropping the staged target removes a named one. What is left has
        // nothing to commit.
        f.writer = None;
        f.target = Target::Direct;
    }

    /// Starts an output at `path` (`-` is stdout when `dash_is_stdout`) and
    /// returns its index; write to it with [`Outputs::file`].
    pub fn create(&mut self, path: &OsStr, dash_is_stdout: bool) -> io::Result<usize> {
        let mut f = open_output(self.staged_path(path).as_os_str(), dash_is_stdout)?;
        if matches!(f.target, Target::Staged(_)) {
            f.unsent = self.durable.then_some(0);
        }
        self.files.push(f);
        Ok(self.files.len() - 1)
    }

    /// The writer of output `index`.
    pub fn file(&mut self, index: usize) -> &mut OutputFile {
        &mut self.files[index]
    }

    /// Every output, in creation order, for writing several at once.
    pub fn files_mut(&mut self) -> &mut [OutputFile] {
        &mut self.files
    }

    /// Says output `index` is complete: flushes it and closes its writer.
    /// An unnamed staging file stays open (it would vanish when closed),
    /// with up to 63 others; when 64 are held they are synced together
    /// (durable outputs), named and closed, so that a command writing many
    /// outputs does not hold them all open. It still becomes visible only
    /// at [`Outputs::commit`]; writing to it again is an error.
    pub fn finish(&mut self, index: usize) -> io::Result<()> {
        if self.held >= HOLD_LIMIT {
            // The outputs held are synced together, then named and
            // closed: room for the next ones.
            for f in &mut self.files {
                f.sync_held()?;
            }
            for f in &mut self.files {
                f.let_go()?;
            }
            self.held = 0;
        }
        if self.files[index].close(true, self.durable)? {
            self.held += 1;
        }
        Ok(())
    }

    /// Convenience: creates an output, writes `bytes` to it and finishes it.
    pub fn write(&mut self, path: &OsStr, dash_is_stdout: bool, bytes: &[u8]) -> io::Result<()> {
        let i = self.create(path, dash_is_stdout)?;
        self.files[i].write_all(bytes)?;
        self.finish(i)
    }

    /// Flushes every output, then moves each staged file into place, all
    /// together or none: a failure part-way puts back what was replaced
    /// and removes what was added, and SIGINT, SIGTERM and the other
    /// signals of `staging` wait until the moves are done. A replacement
    /// ([`Outputs::replace`]) is made only if its original is still the
    /// file read, unchanged, both before and after the swap (else the
    /// error is `ErrorKind::Other` "changed while being read" and nothing
    /// is replaced). Where the file system cannot swap two names
    /// atomically, files are renamed over their targets, and a failure
    /// part-way leaves those before it moved.
    pub fn commit(self) -> io::Result<()> {
        self.commit_then(|| ())
    }

    /// [`Outputs::commit`], then `after` (printing what was done, say)
    /// while the signals still wait, so that an interrupted command has
    /// either committed nothing or committed and said so.
    pub fn commit_then<T>(self, after: impl FnOnce() -> T) -> io::Result<T> {
        let Outputs {
            files,
            durable,
            mut dir,
            ..
        } = self;
        // Every output complete, synced (together: see
        // `OutputFile::unsynced`), metadata given, and named.
        let mut files = files;
        for f in &mut files {
            f.close(true, durable)?;
        }
        for f in &mut files {
            f.sync_held()?;
        }
        let mut moves: Vec<Move> = Vec::new();
        for f in files {
            let Target::Staged(staged) = f.target else {
                continue;
            };
            let temp = match staged.stage {
                Stage::Named(temp) => temp,
                Stage::Unnamed(Some(file)) => name_beside(&file, &staged.path)?,
                Stage::Unnamed(None) => continue,
            };
            let mut also = Vec::new();
            let mut original = None;
            if let Some(r) = staged.replaces {
                for other in &r.also {
                    let t =
                        with_temp_name(&dir_and_name(other).0, |p| fs::hard_link(temp.path(), p))
                            .map(|((), t)| t)?;
                    also.push(Move {
                        from: t,
                        to: other.clone(),
                        original: Some((r.file.try_clone()?, r.before)),
                        // The first move changed it (a rename does).
                        ctime: false,
                    });
                }
                original = Some((r.file, r.before));
            }
            moves.push(Move {
                from: temp,
                to: staged.path,
                original,
                ctime: true,
            });
            moves.extend(also);
        }
        let held = staging::SignalsHeld::new();
        let mut done: Vec<Done> = Vec::with_capacity(moves.len());
        let mut failure = None;
        for m in moves {
            let to = m.to.clone();
            match m
                .apply()
                .map_err(|e| named(&Outputs::final_path(dir.as_ref(), &to), e))
            {
                Ok(d) => done.push(d),
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        if let Some(e) = failure {
            for d in done.into_iter().rev() {
                d.undo();
            }
            return Err(e);
        }
        // The new directory, its files in place and synced, under its own
        // name in one step.
        if let Some(new) = &mut dir {
            if durable {
                let _ = File::open(&new.staged).and_then(|d| d.sync_all());
            }
            if let Err(e) = new.publish() {
                for d in done.into_iter().rev() {
                    d.undo();
                }
                // Dropping it removes the staged tree.
                let path = new.path.clone();
                drop(dir);
                return Err(named(&path, e));
            }
        }
        let mut dirs: Vec<PathBuf> = Vec::new();
        for d in done {
            let at = dir_and_name(d.path()).0;
            d.settle();
            let published = dir.as_ref().is_some_and(|n| at.starts_with(&n.staged));
            if durable && !published && !dirs.contains(&at) {
                dirs.push(at);
            }
        }
        if let Some(new) = &dir {
            let parent = dir_and_name(&new.path).0;
            if durable && !dirs.contains(&parent) {
                dirs.push(parent);
            }
        }
        for dir in dirs {
            // Best effort: the files are in place whatever this says.
            let _ = File::open(&dir).and_then(|d| d.sync_all());
        }
        let out = after();
        drop(held);
        Ok(out)
    }
}

/// A new output directory staged whole ([`Outputs::durable_in_new_dir`]).
struct NewDir {
    /// Its name, as given.
    path: PathBuf,
    /// Where it is made and filled: a staging name in its parent.
    staged: PathBuf,
    /// Removal of the staged directory on a signal; `None` once published.
    record: Option<staging::Recorded>,
}

impl NewDir {
    fn create(path: &Path) -> io::Result<NewDir> {
        let (parent, _) = dir_and_name(path);
        remove_stale(&parent);
        for _ in 0..100 {
            let staged = parent.join(staging_name());
            match fs::create_dir(&staged) {
                Ok(()) => {
                    // Recorded once made (a directory that was there is
                    // never removed). Before the signal handler removes
                    // it, it removes the staged files in it, which are
                    // recorded on their own or unnamed: it is empty then.
                    let record = Some(staging::remove_dir_on_signal(&staged));
                    return Ok(NewDir {
                        path: path.to_path_buf(),
                        staged,
                        record,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::from(io::ErrorKind::AlreadyExists))
    }

    /// Renames the staged directory to its name, which must still name
    /// nothing.
    fn publish(&mut self) -> io::Result<()> {
        let (parent, name) = dir_and_name(&self.path);
        let to = parent.join(name);
        let appeared = || {
            io::Error::new(
                io::ErrorKind::AlreadyExists,
                "made by another program during the run; nothing written to it",
            )
        };
        match staging::rename(&self.staged, &to, staging::RenameMode::NoReplace) {
            Ok(()) => {}
            Err(e) if staging::rename_unsupported(&e) => {
                // No rename without replacing here: check, then rename (a
                // directory is never renamed over a file, nor over one
                // with anything in it).
                if fs::symlink_metadata(&to).is_ok() {
                    return Err(appeared());
                }
                fs::rename(&self.staged, &to)?;
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Err(appeared()),
            Err(e) => return Err(e),
        }
        self.record = None;
        Ok(())
    }
}

impl Drop for NewDir {
    fn drop(&mut self) {
        if self.record.is_some() {
            // Not published: the staged tree goes (`remove_dir_all` does
            // not follow symbolic links).
            let _ = fs::remove_dir_all(&self.staged);
            self.record = None;
        }
    }
}

/// An error moving a file into place: its text is the system's alone (what
/// LLVM's tools print), and [`failed_output`] gives the file's name to a
/// tool that says more.
#[derive(Debug)]
struct MoveFailed {
    path: PathBuf,
    inner: io::Error,
}

impl std::fmt::Display for MoveFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&offload_format::llvm::os_error_text(&self.inner))
    }
}

impl std::error::Error for MoveFailed {}

fn named(to: &Path, e: io::Error) -> io::Error {
    io::Error::new(
        e.kind(),
        MoveFailed {
            path: to.to_path_buf(),
            inner: e,
        },
    )
}

/// The output a commit error is about, where it is about one.
pub fn failed_output(e: &io::Error) -> Option<&Path> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<MoveFailed>())
        .map(|m| m.path.as_path())
}

/// A staged file about to be moved to its name.
struct Move {
    from: TempPath,
    to: PathBuf,
    /// The file `to` must still be, unchanged, for a replacement.
    original: Option<(File, FileState)>,
    /// Whether its change time is compared too.
    ctime: bool,
}

/// A move made, and how to undo it.
enum Done {
    /// `to` named nothing; now it names the new file.
    Added(PathBuf),
    /// The two names were swapped: `old` (the staging name) now names the
    /// file that was at `to`, removed when the commit is through.
    Swapped { to: PathBuf, old: TempPath },
    /// Renamed over `to` (no swap on this file system): cannot be undone.
    Replaced(PathBuf),
}

impl Move {
    fn apply(self) -> io::Result<Done> {
        use staging::RenameMode;
        let changed = || io::Error::other("changed while being read");
        if let Some((file, before)) = &self.original {
            let here = fs::symlink_metadata(&self.to).map(|m| FileState::of(&m));
            let now = FileState::of(&file.metadata()?);
            if !here.is_ok_and(|h| h.same_file(before)) || !before.unchanged(&now, self.ctime) {
                return Err(changed());
            }
        }
        let exists = fs::symlink_metadata(&self.to).is_ok();
        if !exists {
            return match staging::rename(self.from.path(), &self.to, RenameMode::NoReplace) {
                Ok(()) => {
                    self.from.forget();
                    Ok(Done::Added(self.to))
                }
                Err(e) if staging::rename_unsupported(&e) => {
                    let to = self.to.clone();
                    self.from.persist(&to)?;
                    Ok(Done::Replaced(to))
                }
                Err(e) => Err(e),
            };
        }
        match staging::rename(self.from.path(), &self.to, RenameMode::Exchange) {
            Ok(()) => {}
            Err(e) if staging::rename_unsupported(&e) => {
                let to = self.to.clone();
                self.from.persist(&to)?;
                return Ok(Done::Replaced(to));
            }
            Err(e) => return Err(e),
        }
        let done = Done::Swapped {
            to: self.to,
            old: self.from,
        };
        // Written to between the check and the swap: put it back.
        if let Some((file, before)) = &self.original {
            let now = FileState::of(&file.metadata()?);
            if !before.unchanged(&now, false) {
                done.undo();
                return Err(changed());
            }
        }
        Ok(done)
    }
}

impl Done {
    fn path(&self) -> &Path {
        match self {
            Done::Added(p) | Done::Replaced(p) => p,
            Done::Swapped { to, .. } => to,
        }
    }

    /// Puts things back as they were (best effort: what cannot be undone
    /// stays).
    fn undo(self) {
        match self {
            Done::Added(p) => {
                let _ = fs::remove_file(p);
            }
            Done::Swapped { to, old } => {
                // The swap again: the new file back at the staging name,
                // removed with it.
                let _ = staging::rename(old.path(), &to, staging::RenameMode::Exchange);
            }
            Done::Replaced(_) => {}
        }
    }

    /// Removes what the move left (the replaced file).
    fn settle(self) {
        if let Done::Swapped { old, .. } = self {
            drop(old);
        }
    }
}

/// The directory an output is staged in, and the name it is staged for.
fn dir_and_name(p: &Path) -> (PathBuf, &OsStr) {
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    (dir, p.file_name().unwrap_or(OsStr::new("out")))
}

fn open_output(path: &OsStr, dash_is_stdout: bool) -> io::Result<OutputFile> {
    if dash_is_stdout && path == "-" {
        return Ok(OutputFile {
            target: Target::Direct,
            writer: Some(BufWriter::with_capacity(
                1 << 16,
                Sink::Stdout(io::stdout()),
            )),
            unsent: None,
            unsynced: false,
        });
    }
    let p = Path::new(path);
    if let Ok(md) = fs::metadata(p) {
        if md.is_dir() {
            return Err(io::Error::from_raw_os_error(21));
        }
        let ft = md.file_type();
        if ft.is_char_device() || ft.is_block_device() || ft.is_fifo() || ft.is_socket() {
            let f = fs::OpenOptions::new().write(true).open(p)?;
            return Ok(OutputFile {
                target: Target::Direct,
                writer: Some(BufWriter::with_capacity(1 << 16, Sink::File(f))),
                unsent: None,
                unsynced: false,
            });
        }
    }
    let (dir, name) = dir_and_name(p);
    // The name is only used at the commit: a name no file system takes is
    // refused now, as creating the file would be.
    if std::os::unix::ffi::OsStrExt::as_bytes(name).len() > 255 {
        return Err(io::Error::from_raw_os_error(libc::ENAMETOOLONG));
    }
    let (file, stage) = match staging::unnamed_in(&dir)? {
        Some(file) => (file, Stage::Unnamed(None)),
        None => {
            let (file, temp) = create_temp_beside(&dir)?;
            (file, Stage::Named(temp))
        }
    };
    Ok(OutputFile {
        target: Target::Staged(Staged {
            path: p.to_path_buf(),
            stage,
            replaces: None,
        }),
        writer: Some(BufWriter::with_capacity(1 << 16, Sink::File(file))),
        unsent: None,
        unsynced: false,
    })
}

/// A named staging file, removed on drop (and on the signals `staging`
/// handles) unless persisted.
struct TempPath(Option<(PathBuf, staging::Recorded)>);

impl TempPath {
    fn path(&self) -> &Path {
        &self.0.as_ref().expect("not yet persisted").0
    }

    fn persist(mut self, to: &Path) -> io::Result<()> {
        let (from, _recorded) = self.0.take().expect("persisted once");
        fs::rename(&from, to).inspect_err(|_| {
            let _ = fs::remove_file(&from);
        })
    }

    /// The file was moved away by other means: nothing to remove.
    fn forget(mut self) {
        self.0 = None;
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        if let Some((p, _recorded)) = self.0.take() {
            let _ = fs::remove_file(p);
        }
    }
}

/// The prefix of every named staging file and staged directory:
/// `.offload-tmp-PID-XXXXXXXX`, the process ID of the run that made it
/// and a random part. A file or directory of that form whose process no
/// longer exists was left by a run that was killed; the next run staging
/// in that directory removes it.
pub const STAGING_PREFIX: &str = ".offload-tmp-";

/// Whether `name` is a staging file's ([`STAGING_PREFIX`]).
pub fn is_staging_name(name: &OsStr) -> bool {
    staging_pid(name).is_some()
}

/// The process ID in a staging file's name.
fn staging_pid(name: &OsStr) -> Option<i32> {
    use std::os::unix::ffi::OsStrExt;
    let rest = name.as_bytes().strip_prefix(STAGING_PREFIX.as_bytes())?;
    let dash = rest.iter().position(|&b| b == b'-')?;
    let (pid, hex) = (&rest[..dash], &rest[dash + 1..]);
    if hex.len() != 8 || !hex.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    std::str::from_utf8(pid).ok()?.parse().ok()
}

/// Removes, once per directory and process, the staging files and staged
/// directories (with what they hold) in `dir` left by runs whose process
/// is gone (killed with SIGKILL, or a crash of the system). A symbolic
/// link of that name is left alone, and none is followed.
fn remove_stale(dir: &Path) {
    use std::sync::Mutex;
    static SEEN: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    {
        let Ok(mut seen) = SEEN.lock() else { return };
        if seen.iter().any(|d| d == dir) {
            return;
        }
        seen.push(dir.to_path_buf());
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = staging_pid(&name) else {
            continue;
        };
        if pid == std::process::id() as i32 || staging::process_exists(pid) {
            continue;
        }
        // The entry's own type, not what a link points to.
        match e.file_type() {
            Ok(t) if t.is_file() => {
                let _ = fs::remove_file(e.path());
            }
            Ok(t) if t.is_dir() => {
                let _ = fs::remove_dir_all(e.path());
            }
            _ => {}
        }
    }
}

/// Creates a named staging file in `dir` with mode 0666 before the umask
/// (what LLVM's outputs get). Errors are the bare OS errors, so messages
/// read like LLVM's ("No such file or directory", "Permission denied").
fn create_temp_beside(dir: &Path) -> io::Result<(File, TempPath)> {
    use std::os::unix::fs::OpenOptionsExt;
    with_temp_name(dir, |path| {
        fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o666)
            .open(path)
    })
}

/// Gives an unnamed staging file a staging name beside `target`.
fn name_beside(file: &File, target: &Path) -> io::Result<TempPath> {
    let (dir, _) = dir_and_name(target);
    with_temp_name(&dir, |p| staging::link(file, p)).map(|((), temp)| temp)
}

/// A fresh staging name: [`STAGING_PREFIX`], this process's ID and a
/// random part.
fn staging_name() -> String {
    format!(
        "{STAGING_PREFIX}{}-{}",
        std::process::id(),
        crate::temp::random_hex(8)
    )
}

/// Calls `make` with fresh staging names in `dir` ([`STAGING_PREFIX`]; of
/// the same length whatever the target's name, so a name of 255 bytes can
/// be staged too) until one did not exist yet, and returns what it made
/// with that path, which is recorded for removal on a signal before it is
/// made.
fn with_temp_name<T>(
    dir: &Path,
    mut make: impl FnMut(&Path) -> io::Result<T>,
) -> io::Result<(T, TempPath)> {
    remove_stale(dir);
    for _ in 0..100 {
        let path = dir.join(staging_name());
        let recorded = staging::remove_on_signal(&path);
        match make(&path) {
            Ok(made) => return Ok((made, TempPath(Some((path, recorded))))),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::from(io::ErrorKind::AlreadyExists))
}

/// A directory a command made for its outputs, removed if a signal ends
/// the command while this is alive (drop it once the outputs are
/// committed; removing it on a failure is the caller's).
pub struct MadeDir {
    _record: staging::Recorded,
}

impl MadeDir {
    /// Creates the directory `path` (its parent must exist) and records it.
    pub fn create(path: &Path) -> io::Result<MadeDir> {
        // Recorded once made: a directory that was there already is
        // never removed (at worst an empty one of ours stays).
        fs::create_dir(path)?;
        Ok(MadeDir {
            _record: staging::remove_dir_on_signal(path),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    /// The head of a mapped input is read from its file, that of other
    /// bytes borrowed; either way it is the same bytes.
    #[test]
    fn heads_are_read_or_borrowed() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("in");
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 253) as u8).collect();
        fs::write(&p, &data).unwrap();
        let input = read_input(p.as_os_str()).unwrap();
        assert!(matches!(input.backing, Backing::Mapped(_)));
        let h = head(&input[5000..], 4096);
        assert!(matches!(h, std::borrow::Cow::Owned(_)));
        assert_eq!(&h[..], &data[5000..9096]);
        assert_eq!(&head(&input[199_990..], 4096)[..], &data[199_990..]);
        assert!(head(&input[..0], 4096).is_empty());
        let h = head(&data[10..], 100);
        assert!(matches!(h, std::borrow::Cow::Borrowed(_)));
        assert_eq!(&h[..], &data[10..110]);
    }

    #[test]
    fn nothing_visible_until_commit() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a");
        let b = d.path().join("b");
        fs::write(&a, b"old").unwrap();
        let mut outs = Outputs::new();
        outs.write(a.as_os_str(), true, b"new a").unwrap();
        outs.write(b.as_os_str(), true, b"new b").unwrap();
        assert_eq!(fs::read(&a).unwrap(), b"old");
        assert!(!b.exists());
        outs.commit().unwrap();
        assert_eq!(fs::read(&a).unwrap(), b"new a");
        assert_eq!(fs::read(&b).unwrap(), b"new b");
        let names: Vec<_> = fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(names.len(), 2, "no temporary files left behind");
    }

    /// Gathered writes, small ones buffered and large ones going straight
    /// to the file, keep their order with the plain writes around them.
    #[test]
    fn vectored_writes_keep_order() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a");
        let mut outs = Outputs::new();
        let i = outs.create(a.as_os_str(), true).unwrap();
        let big = vec![b'b'; 100_000];
        let mut expected = Vec::new();
        let f = outs.file(i);
        for round in 0..3u8 {
            f.write_all(&[round; 10]).unwrap();
            expected.extend_from_slice(&[round; 10]);
            let pieces = [&b"head"[..], &big[..round as usize * 40_000], b"tail"];
            let mut slices: Vec<io::IoSlice<'_>> =
                pieces.iter().map(|p| io::IoSlice::new(p)).collect();
            let mut rest = &mut slices[..];
            while !rest.is_empty() {
                let n = f.write_vectored(rest).unwrap();
                io::IoSlice::advance_slices(&mut rest, n);
            }
            pieces.iter().for_each(|p| expected.extend_from_slice(p));
        }
        outs.commit().unwrap();
        assert!(fs::read(&a).unwrap() == expected);
    }

    #[test]
    fn dropped_outputs_leave_nothing() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a");
        fs::write(&a, b"old").unwrap();
        {
            let mut outs = Outputs::new();
            outs.write(a.as_os_str(), true, b"new").unwrap();
        }
        assert_eq!(fs::read(&a).unwrap(), b"old");
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn errors_for_directories_and_missing_dirs() {
        let d = tempfile::tempdir().unwrap();
        let mut outs = Outputs::new();
        let e = outs.create(d.path().as_os_str(), true).err().unwrap();
        assert_eq!(e.raw_os_error(), Some(21));
        let e = outs
            .create(d.path().join("no/such").as_os_str(), true)
            .err()
            .unwrap();
        assert_eq!(e.raw_os_error(), Some(2));
    }

    /// A huge input costs nothing until it is read: an 8 TiB sparse file
    /// (no disk) is mapped, not read, and only the pages looked at become
    /// resident.
    #[test]
    fn a_huge_input_is_mapped_not_read() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("huge");
        let f = File::create(&p).unwrap();
        if f.set_len(8 << 40).is_err() {
            eprintln!("skipped: the file system refuses an 8 TiB sparse file");
            return;
        }
        let input = read_input(p.as_os_str()).unwrap();
        assert_eq!(input.len() as u64, 8 << 40);
        assert_eq!(input[..16], [0; 16]);
        assert_eq!(input[(8 << 40) - 1], 0);
    }

    /// Mapped bytes written to an output arrive whole, whether they are
    /// copied by the kernel (long slices) or written (short ones), and
    /// mixed with ordinary buffered writes in the right order.
    #[test]
    fn mapped_slices_are_copied_in_order() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("src");
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
        fs::write(&src, &data).unwrap();
        let input = read_input(src.as_os_str()).unwrap();
        assert!(matches!(input.backing, Backing::Mapped(_)));
        let out = d.path().join("out");
        let mut outs = Outputs::new();
        let i = outs.create(out.as_os_str(), true).unwrap();
        let f = outs.file(i);
        f.write_all(b"head").unwrap();
        f.write_all(&input[1000..250_000]).unwrap();
        f.write_all(&input[5..10]).unwrap();
        assert_eq!(f.write(&input[100_000..]).unwrap(), 200_000);
        f.write_all(b"tail").unwrap();
        outs.commit().unwrap();
        let mut want = b"head".to_vec();
        want.extend_from_slice(&data[1000..250_000]);
        want.extend_from_slice(&data[5..10]);
        want.extend_from_slice(&data[100_000..]);
        want.extend_from_slice(b"tail");
        assert_eq!(fs::read(&out).unwrap(), want);

        let mut through = ReadThrough::new(Vec::new());
        through.write_all(b"x").unwrap();
        through.write_all(&input[..]).unwrap();
        let got = through.into_inner();
        assert_eq!(got[0], b'x');
        assert_eq!(&got[1..], &data[..]);
    }

    #[test]
    fn small_files_and_empty_files_are_read() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("small");
        fs::write(&p, b"abc").unwrap();
        let input = read_input(p.as_os_str()).unwrap();
        assert!(matches!(input.backing, Backing::Owned(_)));
        assert_eq!(&input[..], b"abc");
        fs::write(&p, b"").unwrap();
        assert!(read_input(p.as_os_str()).unwrap().is_empty());
        let e = read_input(d.path().as_os_str()).err().unwrap();
        assert_eq!(e.raw_os_error(), Some(21));
    }

    /// Outputs written whole with [`Outputs::write`] are closed at once, so
    /// a command with many outputs does not run out of file descriptors;
    /// nothing is visible before the commit all the same.
    #[test]
    fn finished_outputs_hold_no_file_open() {
        let open_fds = || {
            fs::read_dir("/proc/self/fd")
                .map(|d| d.count())
                .unwrap_or(0)
        };
        let d = tempfile::tempdir().unwrap();
        let before = open_fds();
        let mut outs = Outputs::new();
        for i in 0..300 {
            let p = d.path().join(format!("o{i}"));
            outs.write(p.as_os_str(), true, b"x").unwrap();
        }
        // Unnamed staging files vanish when closed: a few are held open,
        // the rest are named.
        assert!(open_fds() < before + HOLD_LIMIT + 4, "outputs left open");
        assert!(!d.path().join("o0").exists());
        outs.commit().unwrap();
        assert_eq!(fs::read(d.path().join("o0")).unwrap(), b"x");
        assert_eq!(fs::read(d.path().join("o299")).unwrap(), b"x");
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 300);
    }

    /// Durable outputs held open are synced together: when the held ones
    /// reach HOLD_LIMIT (all synced, then named and closed), and at the
    /// commit (before any is moved into place). Every output arrives whole.
    #[test]
    fn durable_outputs_are_synced_together() {
        let d = tempfile::tempdir().unwrap();
        if staging::unnamed_in(d.path()).unwrap().is_none() {
            eprintln!("skipped: no O_TMPFILE here");
            return;
        }
        let mut outs = Outputs::durable();
        let n = HOLD_LIMIT + 10;
        for i in 0..n {
            let p = d.path().join(format!("o{i}"));
            outs.write(p.as_os_str(), false, format!("output {i}").as_bytes())
                .unwrap();
            let held = |f: &OutputFile| {
                matches!(
                    &f.target,
                    Target::Staged(Staged {
                        stage: Stage::Unnamed(Some(_)),
                        ..
                    })
                )
            };
            if i < HOLD_LIMIT {
                // Held, its sync to come.
                assert!(outs.files[..=i].iter().all(|f| f.unsynced && held(f)));
            } else {
                // The first HOLD_LIMIT went together, synced and named.
                assert!(outs.files[..HOLD_LIMIT]
                    .iter()
                    .all(|f| !f.unsynced && !held(f)));
                assert!(outs.files[HOLD_LIMIT..=i]
                    .iter()
                    .all(|f| f.unsynced && held(f)));
            }
        }
        // Nothing visible before the commit.
        assert!(!d.path().join("o0").exists());
        outs.commit().unwrap();
        for i in 0..n {
            let got = fs::read(d.path().join(format!("o{i}"))).unwrap();
            assert_eq!(got, format!("output {i}").as_bytes());
        }
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), n);
        // Not durable: nothing is left to sync.
        let mut plain = Outputs::new();
        plain
            .write(d.path().join("p").as_os_str(), false, b"p")
            .unwrap();
        assert!(!plain.files[0].unsynced);
        plain.commit().unwrap();
    }

    /// A durable output starts its write-back every WRITEBACK_STEP bytes
    /// however they are written (plain, gathered, copied from a mapped
    /// input); other outputs never do. The bytes are the same either way.
    #[test]
    fn durable_outputs_start_their_write_back_as_they_grow() {
        let d = tempfile::tempdir().unwrap();
        let src_path = d.path().join("input");
        let chunk: Vec<u8> = (0..(1u32 << 20)).map(|i| (i % 251) as u8).collect();
        fs::write(&src_path, &chunk).unwrap();
        let input = read_input(src_path.as_os_str()).unwrap();
        let mut outs = Outputs::durable();
        let i = outs
            .create(d.path().join("out").as_os_str(), false)
            .unwrap();
        assert_eq!(outs.file(i).unsent, Some(0));
        let f = outs.file(i);
        let mut written = 0u64;
        for round in 0..20u64 {
            match round % 3 {
                0 => f.write_all(&chunk).unwrap(),
                1 => {
                    let mut parts = [
                        io::IoSlice::new(&chunk[..1000]),
                        io::IoSlice::new(&chunk[1000..]),
                    ];
                    offload_format::bundle::write_all_vectored(f, &mut parts).unwrap();
                }
                _ => f.write_all(&input).unwrap(),
            }
            written += chunk.len() as u64;
            assert_eq!(
                f.unsent,
                Some(written % WRITEBACK_STEP),
                "after round {round}"
            );
        }
        outs.finish(i).unwrap();
        outs.commit().unwrap();
        let out = fs::read(d.path().join("out")).unwrap();
        assert_eq!(out.len() as u64, written);
        assert!(out.chunks(chunk.len()).all(|c| c == &chunk[..]));
        // Not durable, or not a file: no write-back started.
        let mut plain = Outputs::new();
        let j = plain
            .create(d.path().join("plain").as_os_str(), false)
            .unwrap();
        assert_eq!(plain.file(j).unsent, None);
        let k = plain.create(OsStr::new("-"), true).unwrap();
        assert_eq!(plain.file(k).unsent, None);
        let mut durable = Outputs::durable();
        let k = durable.create(OsStr::new("-"), true).unwrap();
        assert_eq!(durable.file(k).unsent, None);
    }

    /// Where the file system has `O_TMPFILE`, an output being written has
    /// no name at all; one replacing a file is renamed over it, and one
    /// failing (or dropped) leaves nothing.
    #[test]
    fn staging_files_have_no_name_where_possible() {
        let d = tempfile::tempdir().unwrap();
        if staging::unnamed_in(d.path()).unwrap().is_none() {
            eprintln!("skipped: no O_TMPFILE here");
            return;
        }
        let a = d.path().join("a");
        let b = d.path().join("b");
        fs::write(&a, b"old").unwrap();
        let mut outs = Outputs::new();
        let i = outs.create(a.as_os_str(), true).unwrap();
        outs.file(i).write_all(&[7; 200_000]).unwrap();
        let j = outs.create(b.as_os_str(), true).unwrap();
        outs.file(j).write_all(b"new b").unwrap();
        outs.finish(j).unwrap();
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1, "only the old a");
        outs.commit().unwrap();
        assert_eq!(fs::read(&a).unwrap(), vec![7; 200_000]);
        assert_eq!(fs::read(&b).unwrap(), b"new b");
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 2);
        let mode = fs::metadata(&b).unwrap().permissions().mode() & 0o777;
        let umask = {
            let probe = d.path().join("probe");
            fs::File::create(&probe).unwrap();
            fs::metadata(&probe).unwrap().permissions().mode() & 0o777
        };
        assert_eq!(mode, umask, "same mode as a file created plainly");
    }

    #[test]
    fn read_into_copies_mapped_and_unmapped_bytes() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("big");
        let bytes: Vec<u8> = (0..MAP_THRESHOLD as usize * 4)
            .map(|i| (i % 251) as u8)
            .collect();
        fs::write(&p, &bytes).unwrap();
        let input = read_input(p.as_os_str()).unwrap();
        assert!(matches!(input.backing, Backing::Mapped(_)));
        for range in [0..10, 5000..200_000, bytes.len() - 7..bytes.len()] {
            let mut dst = vec![0u8; range.len()];
            read_into(&input[range.clone()], &mut dst).unwrap();
            assert_eq!(dst, bytes[range.clone()]);
            let mut dst = vec![0u8; range.len()];
            read_into(&bytes[range.clone()], &mut dst).unwrap();
            assert_eq!(dst, bytes[range]);
        }
        assert!(read_into(&input[..3], &mut [0u8; 2]).is_err());
    }

    #[test]
    fn staged_outputs_can_seek_and_others_cannot() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a");
        let mut outs = Outputs::new();
        let i = outs.create(a.as_os_str(), true).unwrap();
        outs.file(i).write_all(b"buffered ").unwrap();
        let f = outs
            .file(i)
            .seekable_file()
            .unwrap()
            .expect("a staged file");
        f.write_all(b"XXXX tail").unwrap();
        f.seek(SeekFrom::Start(9)).unwrap();
        f.write_all(b"head").unwrap();
        f.seek(SeekFrom::End(0)).unwrap();
        outs.file(i).write_all(b"!").unwrap();
        let n = outs.create(OsStr::new("/dev/null"), true).unwrap();
        assert!(outs.file(n).seekable_file().unwrap().is_none());
        let s = outs.create(OsStr::new("-"), true).unwrap();
        assert!(outs.file(s).seekable_file().unwrap().is_none());
        assert!(!a.exists());
        outs.commit().unwrap();
        assert_eq!(fs::read(&a).unwrap(), b"buffered head tail!");
    }

    /// A file written to after it was read is not replaced, whether the
    /// write comes before the commit's check or between the check and the
    /// swap: the writer's bytes stay, and nothing of the commit is left.
    #[test]
    fn replacement_of_a_changed_file_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a");
        let b = d.path().join("b");
        fs::write(&a, b"original").unwrap();
        fs::write(&b, b"other").unwrap();
        let original = Original::open(&a).unwrap();
        let mut outs = Outputs::durable();
        let i = outs.replace(&original, &[]).unwrap();
        outs.file(i).write_all(b"rewritten").unwrap();
        // A second output in the same commit: all or none.
        outs.write(b.as_os_str(), false, b"new b").unwrap();
        fs::OpenOptions::new()
            .append(true)
            .open(&a)
            .unwrap()
            .write_all(b" and more")
            .unwrap();
        let e = outs.commit().unwrap_err();
        assert!(e.to_string().contains("changed while being read"), "{e}");
        assert_eq!(fs::read(&a).unwrap(), b"original and more");
        assert_eq!(fs::read(&b).unwrap(), b"other", "none committed");
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 2, "nothing left");
    }

    /// A move that fails after others were made puts those back: the first
    /// output's file is swapped into place, the second's original has
    /// changed, and the first is swapped back.
    #[test]
    fn a_failed_move_puts_back_the_ones_before() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a");
        let b = d.path().join("b");
        let c = d.path().join("c");
        fs::write(&a, b"old a").unwrap();
        fs::write(&b, b"old b").unwrap();
        let a_ino = fs::metadata(&a).unwrap().ino();
        let original = Original::open(&b).unwrap();
        let mut outs = Outputs::new();
        outs.write(a.as_os_str(), false, b"new a").unwrap();
        outs.write(c.as_os_str(), false, b"new c").unwrap();
        let i = outs.replace(&original, &[]).unwrap();
        outs.file(i).write_all(b"new b").unwrap();
        fs::write(&b, b"changed b").unwrap();
        let e = outs.commit().unwrap_err();
        assert!(e.to_string().contains("changed while being read"), "{e}");
        assert_eq!(fs::read(&a).unwrap(), b"old a");
        assert_eq!(fs::metadata(&a).unwrap().ino(), a_ino, "the same file back");
        assert!(!c.exists(), "the new file removed");
        assert_eq!(fs::read(&b).unwrap(), b"changed b");
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 2, "nothing left");
    }

    /// A second opener of a file being rewritten waits for the first, and
    /// then reads the file the first one committed.
    #[test]
    fn a_second_rewrite_waits_and_reads_the_new_file() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a");
        fs::write(&a, b"first").unwrap();
        let original = Original::open(&a).unwrap();
        let waiter = {
            let a = a.clone();
            std::thread::spawn(move || {
                let o = Original::open(&a).unwrap();
                o.input().unwrap().to_vec()
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(!waiter.is_finished(), "waits for the lock");
        let mut outs = Outputs::durable();
        let i = outs.replace(&original, &[]).unwrap();
        outs.file(i).write_all(b"second").unwrap();
        outs.commit().unwrap();
        drop(original);
        assert_eq!(waiter.join().unwrap(), b"second");
    }

    #[test]
    fn staging_names_are_recognised() {
        let pid = std::process::id();
        assert!(is_staging_name(OsStr::new(&format!(
            ".offload-tmp-{pid}-0123abcd"
        ))));
        assert!(!is_staging_name(OsStr::new(".offload-tmp-x-0123abcd")));
        assert!(!is_staging_name(OsStr::new(".offload-tmp-12-0123abc")));
        assert!(!is_staging_name(OsStr::new("libfoo.so")));
    }

    #[test]
    fn dev_null_is_written_in_place() {
        let mut outs = Outputs::new();
        outs.write(OsStr::new("/dev/null"), true, b"x").unwrap();
        outs.commit().unwrap();
        assert!(fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
    }

    fn staging_entries(dir: &Path) -> Vec<PathBuf> {
        fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter(|e| is_staging_name(&e.file_name()))
            .map(|e| e.path())
            .collect()
    }

    /// A new directory appears only at the commit, with every output in
    /// it; until then it is one staged directory beside its place.
    #[test]
    fn a_new_directory_appears_whole() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out");
        let mut outs = Outputs::durable_in_new_dir(&out).unwrap();
        for name in ["a", "b", "c"] {
            outs.write(out.join(name).as_os_str(), false, name.as_bytes())
                .unwrap();
        }
        assert!(!out.exists(), "nothing at the final name before the commit");
        let staged = staging_entries(d.path());
        assert_eq!(staged.len(), 1, "{staged:?}");
        assert!(staged[0].is_dir());
        outs.commit().unwrap();
        for name in ["a", "b", "c"] {
            assert_eq!(fs::read(out.join(name)).unwrap(), name.as_bytes());
        }
        assert_eq!(fs::read_dir(&out).unwrap().count(), 3, "only the outputs");
        assert!(
            staging_entries(d.path()).is_empty(),
            "the staged name is gone"
        );
    }

    /// Outputs dropped uncommitted (a later failure) leave no directory,
    /// staged or final.
    #[test]
    fn an_uncommitted_new_directory_goes() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out");
        let mut outs = Outputs::durable_in_new_dir(&out).unwrap();
        outs.write(out.join("a").as_os_str(), false, b"a").unwrap();
        let i = outs.create(out.join("b").as_os_str(), false).unwrap();
        outs.file(i).write_all(b"half").unwrap();
        drop(outs);
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 0);
    }

    /// A directory made at the final name during the run is not replaced:
    /// the commit fails naming it, and the staged tree goes.
    #[test]
    fn a_directory_made_meanwhile_is_kept() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out");
        let mut outs = Outputs::durable_in_new_dir(&out).unwrap();
        outs.write(out.join("a").as_os_str(), false, b"ours")
            .unwrap();
        fs::create_dir(&out).unwrap();
        fs::write(out.join("theirs"), b"theirs").unwrap();
        let e = outs.commit().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{e}");
        assert_eq!(failed_output(&e), Some(out.as_path()));
        assert_eq!(fs::read(out.join("theirs")).unwrap(), b"theirs");
        assert!(!out.join("a").exists());
        assert!(staging_entries(d.path()).is_empty(), "staged tree removed");
        // And an empty one made meanwhile is not replaced either.
        fs::remove_dir_all(&out).unwrap();
        let mut outs = Outputs::durable_in_new_dir(&out).unwrap();
        outs.write(out.join("a").as_os_str(), false, b"ours")
            .unwrap();
        fs::create_dir(&out).unwrap();
        assert!(outs.commit().is_err());
        assert_eq!(fs::read_dir(&out).unwrap().count(), 0);
        assert!(staging_entries(d.path()).is_empty());
    }

    /// A staged directory of a process that is gone is removed with what
    /// it holds, without following a link out of it; one of a live
    /// process, and a link of a staging name, stay.
    #[test]
    fn stale_staged_directories_are_removed() {
        let d = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let kept = elsewhere.path().join("kept");
        fs::write(&kept, b"kept").unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let stale = d.path().join(format!(".offload-tmp-{dead}-0123abcd"));
        fs::create_dir_all(stale.join("sub")).unwrap();
        fs::write(stale.join("sub/file"), b"x").unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), stale.join("link")).unwrap();
        let live = d
            .path()
            .join(format!(".offload-tmp-{}-89abcdef", std::process::id()));
        fs::create_dir(&live).unwrap();
        fs::write(live.join("file"), b"x").unwrap();
        let linked = d.path().join(format!(".offload-tmp-{dead}-fedcba98"));
        std::os::unix::fs::symlink(elsewhere.path(), &linked).unwrap();
        let out = d.path().join("out");
        let mut outs = Outputs::durable_in_new_dir(&out).unwrap();
        outs.write(out.join("a").as_os_str(), false, b"a").unwrap();
        outs.commit().unwrap();
        assert!(!stale.exists(), "stale staged directory removed");
        assert_eq!(fs::read(&kept).unwrap(), b"kept", "no link followed");
        assert!(live.join("file").exists(), "a live run's directory stays");
        assert!(fs::symlink_metadata(&linked).is_ok(), "a link stays");
    }
}

/// What [`files_under`] found.
#[derive(Debug, Default)]
pub struct Tree {
    /// The regular files, each once.
    pub files: Vec<PathBuf>,
    /// Other names of those files (hard links) in the tree: (the name in
    /// `files`, the other name).
    pub links: Vec<(PathBuf, PathBuf)>,
    /// Directories (and entries) that could not be read, with the error.
    pub errors: Vec<(PathBuf, io::Error)>,
}

/// The regular files under `dir`, at any depth (a directory's files in
/// name order, then its subdirectories, in name order), for the tools that
/// take a directory tree: symbolic links are not followed (a link's target
/// inside the tree is visited as itself; one outside it is not the
/// tree's), and a file with several hard links in the tree is given once
/// (its first path; the others are in [`Tree::links`]).
pub fn files_under(dir: &Path) -> Tree {
    use std::os::unix::fs::MetadataExt;
    let mut tree = Tree::default();
    let mut seen = std::collections::HashMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = match std::fs::read_dir(&d) {
            Ok(e) => e,
            Err(e) => {
                tree.errors.push((d, e));
                continue;
            }
        };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        let mut subdirs = Vec::new();
        for e in entries {
            let path = e.path();
            // A staging file of a run (this one's or one killed) is no
            // input.
            if is_staging_name(&e.file_name()) {
                continue;
            }
            let md = match std::fs::symlink_metadata(&path) {
                Ok(md) => md,
                // A path too long to name, say: said, not passed over.
                Err(err) => {
                    tree.errors.push((path, err));
                    continue;
                }
            };
            let kind = md.file_type();
            if kind.is_dir() {
                subdirs.push(path);
            } else if kind.is_file() {
                match seen.entry((md.dev(), md.ino())) {
                    std::collections::hash_map::Entry::Vacant(v) => {
                        v.insert(path.clone());
                        tree.files.push(path);
                    }
                    std::collections::hash_map::Entry::Occupied(o) => {
                        tree.links.push((o.get().clone(), path));
                    }
                }
            }
        }
        // Depth first, in name order.
        stack.extend(subdirs.into_iter().rev());
    }
    tree
}
