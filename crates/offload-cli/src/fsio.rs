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
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// Reads a whole input; `-` reads standard input.
///
/// An input too large for the memory available is an error, not an abort:
/// the buffer is reserved fallibly, and the failure is reported as ENOMEM
/// ("Cannot allocate memory"), the text LLVM's tools print in that case.
pub fn read_input(path: &OsStr) -> io::Result<Vec<u8>> {
    let out_of_memory = |e: io::Error| {
        if e.kind() == io::ErrorKind::OutOfMemory {
            io::Error::from_raw_os_error(12)
        } else {
            e
        }
    };
    if path == "-" {
        let mut v = Vec::new();
        io::stdin()
            .lock()
            .read_to_end(&mut v)
            .map_err(out_of_memory)?;
        Ok(v)
    } else {
        let p = Path::new(path);
        // Reading a directory fails late and with EISDIR only on some
        // systems; check first so the message is always "Is a directory".
        if fs::metadata(p)?.is_dir() {
            return Err(io::Error::from_raw_os_error(21));
        }
        // `fs::read` sizes its buffer from the file's length with a
        // fallible reservation.
        fs::read(p).map_err(out_of_memory)
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
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::File(f) => f.flush(),
            Sink::Stdout(s) => s.flush(),
        }
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer()?.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
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
    use std::os::unix::fs::OpenOptionsExt;
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
        ^ ((std::process::id() as u64) << 32);
    for _ in 0..100 {
        let n = seed.wrapping_add(
            COUNTER
                .fetch_add(1, Ordering::Relaxed)
                .wrapping_mul(0x9e37_79b9),
        );
        let mut file_name = OsString::from(".");
        file_name.push(name);
        file_name.push(format!(".{:08x}.tmp", n as u32));
        let path = dir.join(file_name);
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o666)
            .open(&path)
        {
            Ok(f) => return Ok((f, TempPath(Some(path)))),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::from(io::ErrorKind::AlreadyExists))
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

    /// An input larger than any allocation can be must give ENOMEM, not
    /// abort. A sparse file of 8 TiB costs no disk; the allocation for it
    /// is refused up front under the kernel's default overcommit policy
    /// (with overcommit forced on, the read would really happen, so the
    /// test does not run then).
    #[test]
    fn an_input_too_large_for_memory_is_enomem() {
        let policy = fs::read_to_string("/proc/sys/vm/overcommit_memory").unwrap_or_default();
        if policy.trim() == "1" {
            eprintln!("skipped: vm.overcommit_memory=1 would let the read go ahead");
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("huge");
        let f = File::create(&p).unwrap();
        if f.set_len(8 << 40).is_err() {
            eprintln!("skipped: the file system refuses an 8 TiB sparse file");
            return;
        }
        let e = read_input(p.as_os_str()).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(12), "{e}");
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
