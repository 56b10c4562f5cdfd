//! Reading inputs and writing outputs the way the tools must: `-` is stdin or
//! stdout, and files are never left half-written.
//!
//! Every output is first written to a temporary file in the target's own
//! directory and renamed over the target only when the whole command has
//! succeeded ([`Outputs::commit`]), so a failure leaves existing files as
//! they were. Targets that are not regular files (`/dev/null`, a FIFO) are
//! written in place, as renaming over them would replace the device node.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};

use crate::mapped::{self, Mapping};
use crate::splice;
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
        w.flush()?;
        Ok(match w.get_mut() {
            Sink::File(f) => Some(f),
            Sink::Stdout(_) => None,
        })
    }

    /// Flushes and closes the file; what is left is the rename.
    fn close(&mut self) -> io::Result<()> {
        if let Some(w) = self.writer.take() {
            drop(w.into_inner().map_err(|e| e.into_error())?);
        }
        Ok(())
    }
}

enum Target {
    /// Renamed over `path` on commit.
    Staged(PathBuf, TempPath),
    /// Written in place (stdout, devices, FIFOs): nothing to do on commit.
    Direct,
}

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

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.copy_if_mapped(buf)? {
            return Ok(buf.len());
        }
        self.writer()?.write(buf)
    }
    /// Gathered writes at least as large as the buffer go to the file as
    /// one `writev`, so a caller gathering many small pieces of a mapped
    /// input has them copied once, by the kernel, not first into the
    /// buffer.
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        let w = self.writer()?;
        let total = bufs.iter().fold(0usize, |n, b| n.saturating_add(b.len()));
        if total < w.capacity() {
            return w.write_vectored(bufs);
        }
        w.flush()?;
        w.get_mut().write_vectored(bufs)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        if self.copy_if_mapped(buf)? {
            return Ok(());
        }
        self.writer()?.write_all(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        match &mut self.writer {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }
}

/// A group of outputs committed together: all of them or none.
#[derive(Default)]
pub struct Outputs {
    files: Vec<OutputFile>,
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
        self.files[index].close()
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
            f.close()?;
            ready.push(f.target);
        }
        for t in ready {
            if let Target::Staged(path, temp) = t {
                temp.persist(&path)?;
            }
        }
        Ok(())
    }
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
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = p.file_name().unwrap_or(OsStr::new("out"));
    let (file, temp) = create_temp_beside(&dir, name)?;
    Ok(OutputFile {
        target: Target::Staged(p.to_path_buf(), temp),
        writer: Some(BufWriter::with_capacity(1 << 16, Sink::File(file))),
    })
}

/// A temporary file that is removed on drop unless persisted.
struct TempPath(Option<PathBuf>);

impl TempPath {
    fn persist(mut self, to: &Path) -> io::Result<()> {
        let from = self.0.take().expect("persisted once");
        fs::rename(&from, to).inspect_err(|_| {
            let _ = fs::remove_file(&from);
        })
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = fs::remove_file(p);
        }
    }
}

/// Creates `<dir>/.<name>.<random>.tmp` with mode 0666 before the umask
/// (what LLVM's outputs get). Errors are the bare OS errors, so messages
/// read like LLVM's ("No such file or directory", "Permission denied").
fn create_temp_beside(dir: &Path, name: &OsStr) -> io::Result<(File, TempPath)> {
    crate::temp::create_unique(8, 0o666, |random| {
        let mut file_name = OsString::from(".");
        file_name.push(name);
        file_name.push(format!(".{random}.tmp"));
        dir.join(file_name)
    })
    .map(|(f, path)| (f, TempPath(Some(path))))
    .map_err(|(_, e)| e)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        for i in 0..64 {
            let p = d.path().join(format!("o{i}"));
            outs.write(p.as_os_str(), true, b"x").unwrap();
        }
        assert!(open_fds() < before + 4, "outputs left open");
        assert!(!d.path().join("o0").exists());
        outs.commit().unwrap();
        assert_eq!(fs::read(d.path().join("o63")).unwrap(), b"x");
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 64);
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
