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

use std::ffi::{OsStr, OsString};
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
const COPY_THRESHOLD: usize = 64 * 1024;
/// The page size that decides whether two file offsets line up (4 KiB on
/// the machines these tools serve; a larger one only makes the choice
/// conservative).
const PAGE: u64 = 4096;

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
}

impl OutputFile {
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
        if !matches!(self.target, Target::Staged(..)) {
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
    fn close(&mut self, may_hold: bool) -> io::Result<bool> {
        let Some(w) = self.writer.take() else {
            return Ok(false);
        };
        let sink = w.into_inner().map_err(|e| write_failed(e.into_error()))?;
        let Target::Staged(path, stage) = &mut self.target else {
            return Ok(false);
        };
        let (Stage::Unnamed(held), Sink::File(file)) = (&mut *stage, sink) else {
            return Ok(false);
        };
        if may_hold {
            *held = Some(file);
            return Ok(true);
        }
        *stage = Stage::Named(name_beside(&file, path)?);
        Ok(false)
    }
}

enum Target {
    /// Moved to `path` on commit.
    Staged(PathBuf, Stage),
    /// Written in place (stdout, devices, FIFOs): nothing to do on commit.
    Direct,
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
/// names the next ones (a command with thousands of outputs must not run
/// out of descriptors; the soft limit is often 1024).
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
        if self.copy_if_mapped(buf).map_err(write_failed)? {
            return Ok(buf.len());
        }
        self.writer()?.write(buf).map_err(write_failed)
    }
    /// Gathered writes at least as large as the buffer go to the file as
    /// one `writev`, so a caller gathering many small pieces of a mapped
    /// input has them copied once, by the kernel, not first into the
    /// buffer.
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        let w = self.writer()?;
        let total = bufs.iter().fold(0usize, |n, b| n.saturating_add(b.len()));
        if total < w.capacity() {
            return w.write_vectored(bufs).map_err(write_failed);
        }
        w.flush().map_err(write_failed)?;
        w.get_mut().write_vectored(bufs).map_err(write_failed)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        if self.copy_if_mapped(buf).map_err(write_failed)? {
            return Ok(());
        }
        self.writer()?.write_all(buf).map_err(write_failed)
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
}

impl Outputs {
    pub fn new() -> Outputs {
        Outputs::default()
    }

    /// Starts an output at `path` (`-` is stdout when `dash_is_stdout`) and
    /// returns its index; write to it with [`Outputs::file`].
    pub fn create(&mut self, path: &OsStr, dash_is_stdout: bool) -> io::Result<usize> {
        let f = open_output(path, dash_is_stdout)?;
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

    /// Says output `index` is complete: flushes and closes its file now, so
    /// a command writing many outputs does not hold them all open. It still
    /// becomes visible only at [`Outputs::commit`]; writing to it again is
    /// an error.
    pub fn finish(&mut self, index: usize) -> io::Result<()> {
        if self.files[index].close(self.held < HOLD_LIMIT)? {
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

    /// Flushes every output, then moves each staged file into place. If
    /// anything fails before the first rename, no target is touched.
    pub fn commit(self) -> io::Result<()> {
        let mut ready = Vec::with_capacity(self.files.len());
        for mut f in self.files {
            // No fsync: like LLVM, rely on rename for atomicity against
            // other readers; an fsync per output costs more than the work.
            f.close(true)?;
            ready.push(f.target);
        }
        for t in ready {
            match t {
                Target::Staged(path, Stage::Named(temp)) => temp.persist(&path)?,
                Target::Staged(path, Stage::Unnamed(Some(file))) => link_into_place(&file, &path)?,
                Target::Staged(_, Stage::Unnamed(None)) | Target::Direct => {}
            }
        }
        Ok(())
    }
}

/// Links an unnamed staging file to `path`: directly where `path` does not
/// exist, else under a hidden name renamed over it, so that replacing a
/// file stays atomic.
fn link_into_place(file: &File, path: &Path) -> io::Result<()> {
    match staging::link(file, path) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            name_beside(file, path)?.persist(path)
        }
        other => other,
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
            });
        }
    }
    let (dir, name) = dir_and_name(p);
    let (file, stage) = match staging::unnamed_in(&dir)? {
        Some(file) => (file, Stage::Unnamed(None)),
        None => {
            let (file, temp) = create_temp_beside(&dir, name)?;
            (file, Stage::Named(temp))
        }
    };
    Ok(OutputFile {
        target: Target::Staged(p.to_path_buf(), stage),
        writer: Some(BufWriter::with_capacity(1 << 16, Sink::File(file))),
    })
}

/// A named staging file, removed on drop (and on SIGINT, SIGTERM or
/// SIGHUP) unless persisted.
struct TempPath(Option<(PathBuf, staging::Recorded)>);

impl TempPath {
    fn persist(mut self, to: &Path) -> io::Result<()> {
        let (from, _recorded) = self.0.take().expect("persisted once");
        fs::rename(&from, to).inspect_err(|_| {
            let _ = fs::remove_file(&from);
        })
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        if let Some((p, _recorded)) = self.0.take() {
            let _ = fs::remove_file(p);
        }
    }
}

/// Creates `<dir>/.<name>.<random>.tmp` with mode 0666 before the umask
/// (what LLVM's outputs get). Errors are the bare OS errors, so messages
/// read like LLVM's ("No such file or directory", "Permission denied").
fn create_temp_beside(dir: &Path, name: &OsStr) -> io::Result<(File, TempPath)> {
    use std::os::unix::fs::OpenOptionsExt;
    with_temp_name(dir, name, |path| {
        fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o666)
            .open(path)
    })
}

/// Gives an unnamed staging file a hidden name beside `target`.
fn name_beside(file: &File, target: &Path) -> io::Result<TempPath> {
    let (dir, name) = dir_and_name(target);
    with_temp_name(&dir, name, |p| staging::link(file, p)).map(|((), temp)| temp)
}

/// Calls `make` with fresh `<dir>/.<name>.<random>.tmp` paths until one
/// did not exist yet, and returns what it made with that path, which is
/// recorded for removal on a signal before it is made.
fn with_temp_name<T>(
    dir: &Path,
    name: &OsStr,
    mut make: impl FnMut(&Path) -> io::Result<T>,
) -> io::Result<(T, TempPath)> {
    for _ in 0..100 {
        let mut file_name = OsString::from(".");
        file_name.push(name);
        file_name.push(format!(".{}.tmp", crate::temp::random_hex(8)));
        let path = dir.join(file_name);
        let recorded = staging::remove_on_signal(&path);
        match make(&path) {
            Ok(made) => return Ok((made, TempPath(Some((path, recorded))))),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::from(io::ErrorKind::AlreadyExists))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

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
}

/// What [`files_under`] found.
#[derive(Debug, Default)]
pub struct Tree {
    /// The regular files, each once.
    pub files: Vec<PathBuf>,
    /// Other names of those files (hard links) in the tree: (the name in
    /// `files`, the other name).
    pub links: Vec<(PathBuf, PathBuf)>,
    /// Directories that could not be read, with the error.
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
            let Ok(md) = std::fs::symlink_metadata(&path) else {
                continue;
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
