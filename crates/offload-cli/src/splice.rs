//! Copying a range of one file into another through a pipe with
//! `splice(2)`, for ranges whose offsets differ modulo the page size.
//!
//! The kernel's own file-to-file copy (`copy_file_range`, which std's
//! `io::copy` uses) moves 64 KiB per round when source and destination
//! pages do not line up, and pays for it: about 15–25% more than an
//! aligned copy of the same bytes (docs/performance.md). Splicing through a
//! pipe enlarged to 1 MiB moves the same pages in 16 times fewer rounds and
//! measures as fast as an aligned copy. Entries of bundles and images of
//! offload binaries sit at such offsets by the formats' design.
//!
//! It also starts the write-back of an output's pages ([`start_writeback`]).
//!
//! With `mapped` and `staging`, one of the three modules of the crate with
//! `unsafe`: these are plain system calls on descriptors we own or borrow.
//!
//! `splice`, `F_SETPIPE_SZ` and `sync_file_range` are Linux's: elsewhere
//! [`copy`] copies nothing and the caller's usual path copies the whole
//! range, and [`start_writeback`] does nothing.

#![allow(unsafe_code)]

use std::fs::File;
use std::io;
#[cfg(target_os = "linux")]
use std::io::{Read, Write};
#[cfg(target_os = "linux")]
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The pipe size asked for; the kernel may refuse (then the copy is left to
/// the caller's usual path).
#[cfg(target_os = "linux")]
const PIPE_SIZE: usize = 1 << 20;

/// Asks the kernel to start writing `file`'s dirty pages to the disk,
/// without waiting for them (`sync_file_range` with
/// `SYNC_FILE_RANGE_WRITE` over the whole file; pages already being
/// written are left alone). A durable output calls it as it grows, so
/// that the disk writes while the rest is made and the `fsync` before
/// its rename waits for the tail only. Advice: failure changes nothing
/// but speed, and it guarantees nothing (the `fsync` does).
#[cfg(target_os = "linux")]
pub(crate) fn start_writeback(file: &File) {
    // SAFETY: a system call on a descriptor borrowed for its duration; it
    // reads no memory of ours.
    let _ = unsafe { libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
}

/// See the Linux `start_writeback`: nothing to do elsewhere.
#[cfg(not(target_os = "linux"))]
pub(crate) fn start_writeback(_file: &File) {}

/// Copies `len` bytes of `src` starting at `offset` to `dst` at its current
/// position, advancing that position, and returns how many bytes were
/// copied. Fewer than `len` (possibly none) means splicing was not possible
/// from that point on (no pipe of the size wanted, a file system without
/// splice support); the caller copies the rest its own way. Errors are real
/// I/O errors, or the source ending early.
#[cfg(not(target_os = "linux"))]
pub(crate) fn copy(_src: &File, _offset: u64, _len: u64, _dst: &File) -> io::Result<u64> {
    Ok(0)
}

/// See the non-Linux `copy`: the same contract, with `splice(2)`.
///
/// The pipe is made once and kept for the next copy (a command writing
/// hundreds of entries would otherwise make and enlarge one per output):
/// every successful copy leaves it empty, and one that fails drops it.
#[cfg(target_os = "linux")]
pub(crate) fn copy(src: &File, offset: u64, len: u64, dst: &File) -> io::Result<u64> {
    let Ok(at) = libc::loff_t::try_from(offset) else {
        return Ok(0);
    };
    let Some(pipe) = PIPE.with(|p| p.take()).or_else(pipe) else {
        return Ok(0);
    };
    let result = copy_through(&pipe, src, at, len, dst);
    if result.is_ok() {
        PIPE.with(|p| p.set(Some(pipe)));
    }
    result
}

#[cfg(target_os = "linux")]
type Pipe = (OwnedFd, OwnedFd, usize);

#[cfg(target_os = "linux")]
thread_local! {
    /// The pipe of the last successful copy, empty, for the next one.
    static PIPE: std::cell::Cell<Option<Pipe>> = const { std::cell::Cell::new(None) };
}

/// [`copy`] through a given (empty) pipe.
#[cfg(target_os = "linux")]
fn copy_through(
    (reader, writer, capacity): &Pipe,
    src: &File,
    mut at: libc::loff_t,
    len: u64,
    dst: &File,
) -> io::Result<u64> {
    let capacity = *capacity;
    let mut done = 0u64;
    while done < len {
        let want = usize::try_from(len - done).map_or(capacity, |left| left.min(capacity));
        // SAFETY: both descriptors are open for the duration of the call
        // (borrowed from `src` and owned by this function); `at` is a valid
        // offset variable the kernel updates; no output offset is passed.
        let n = unsafe {
            libc::splice(
                src.as_raw_fd(),
                &mut at,
                writer.as_raw_fd(),
                std::ptr::null_mut(),
                want,
                libc::SPLICE_F_MOVE,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EINVAL) | Some(libc::ENOSYS) => Ok(done),
                _ => Err(e),
            };
        }
        if n == 0 {
            // Only if the file shrank under us.
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
        }
        let n = n as usize;
        drain(reader, n, dst)?;
        done += n as u64;
    }
    Ok(done)
}

/// Moves the `n` bytes waiting in the pipe to `dst`: spliced, or read and
/// written should the destination not take splices.
#[cfg(target_os = "linux")]
fn drain(reader: &OwnedFd, mut n: usize, dst: &File) -> io::Result<()> {
    while n > 0 {
        // SAFETY: as in `copy`; neither offset is passed, so the pipe is
        // read from its head and `dst` written at its position.
        let m = unsafe {
            libc::splice(
                reader.as_raw_fd(),
                std::ptr::null_mut(),
                dst.as_raw_fd(),
                std::ptr::null_mut(),
                n,
                libc::SPLICE_F_MOVE,
            )
        };
        if m > 0 {
            n -= m as usize;
            continue;
        }
        let e = io::Error::last_os_error();
        if m == 0 || !matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOSYS)) {
            return Err(if m == 0 {
                io::Error::from(io::ErrorKind::WriteZero)
            } else {
                e
            });
        }
        let mut pipe = File::from(reader.try_clone()?);
        let mut buf = vec![0u8; n];
        pipe.read_exact(&mut buf)?;
        let mut dst = dst;
        return dst.write_all(&buf);
    }
    Ok(())
}

/// A pipe of [`PIPE_SIZE`] bytes (reader, writer, capacity), or `None` if
/// one cannot be had.
#[cfg(target_os = "linux")]
fn pipe() -> Option<Pipe> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return None;
    }
    // SAFETY: pipe2 succeeded, so both are fresh descriptors that nothing
    // else owns.
    let (reader, writer) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: a plain fcntl on a descriptor we own.
    let size = unsafe {
        libc::fcntl(
            writer.as_raw_fd(),
            libc::F_SETPIPE_SZ,
            PIPE_SIZE as libc::c_int,
        )
    };
    // Without the larger pipe there is no gain over the kernel's own copy.
    (size >= PIPE_SIZE as libc::c_int).then_some((reader, writer, size as usize))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::io::{Seek, SeekFrom};

    /// Every offset phase and length lands the same bytes as a plain copy,
    /// at the destination's position, which advances.
    #[test]
    fn copies_ranges_at_any_phase() {
        let d = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let src_path = d.path().join("src");
        std::fs::write(&src_path, &data).unwrap();
        let src = File::open(&src_path).unwrap();
        for (offset, len, lead) in [
            (0u64, 0u64, 0usize),
            (144, 2_500_000, 0),
            (4096, 1 << 20, 7),
            (1, 3_000_000 - 1, 4095),
            (5000, 1_234_567, 100),
        ] {
            let dst_path = d.path().join("dst");
            let mut dst = File::create(&dst_path).unwrap();
            dst.write_all(&vec![b'x'; lead]).unwrap();
            let copied = copy(&src, offset, len, &dst).unwrap();
            if copied < len {
                // No large pipe here (pipe-max-size): nothing to check.
                assert_eq!(copied, 0);
                continue;
            }
            assert_eq!(dst.stream_position().unwrap(), lead as u64 + len);
            dst.seek(SeekFrom::End(0)).unwrap();
            let got = std::fs::read(&dst_path).unwrap();
            assert!(got[..lead].iter().all(|&b| b == b'x'));
            let (o, l) = (offset as usize, len as usize);
            assert!(got[lead..] == data[o..o + l], "offset {offset} len {len}");
        }
    }

    /// A range past the end of the source is an error, not a short copy
    /// taken for success.
    #[test]
    fn source_ending_early_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("src"), vec![1u8; 10_000]).unwrap();
        let src = File::open(d.path().join("src")).unwrap();
        let dst = File::create(d.path().join("dst")).unwrap();
        match copy(&src, 5000, 20_000, &dst) {
            Ok(0) => {}
            Ok(n) => panic!("short copy of {n} taken for success"),
            Err(e) => assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof),
        }
    }
}
