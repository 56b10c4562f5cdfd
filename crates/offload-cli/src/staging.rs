//! What keeps an interrupted run from leaving staging files behind.
//!
//! Where the file system allows it, an output is written to an unnamed
//! file (`O_TMPFILE`) in the target's directory and only given a name when
//! the command commits (`linkat` through `/proc/self/fd`): until then there
//! is nothing to leave behind, whatever ends the process, SIGKILL included.
//! Elsewhere (file systems without `O_TMPFILE`, no `/proc`) an output is a
//! named hidden file; those names are recorded here, and a handler for
//! SIGINT, SIGTERM and SIGHUP removes them, then lets the signal take its
//! default course, so the process ends by that signal (status 128 + its
//! number in a shell), as LLVM's tools do.
//!
//! The handler is installed the first time a name is recorded, and only
//! for signals whose disposition is the default one (a signal the parent
//! set to be ignored stays ignored). It does only async-signal-safe work:
//! atomic loads and swaps, `unlink` and `raise`.
//!
//! With `mapped` and `splice`, one of the three modules of the crate with
//! `unsafe`: system calls (`linkat`, `sigaction`, `unlink`, `raise`) on
//! paths and descriptors we own, and the ownership hand-over of the
//! recorded names.

#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, CString};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Once, OnceLock};

/// Set (to anything) in the environment, makes every output a named
/// staging file, as on a file system without `O_TMPFILE`: the tests use it
/// to check that path on file systems that have it.
pub const NAMED_STAGING_ENV: &str = "OFFLOAD_TOOLS_NAMED_STAGING";

/// The signals after which recorded staging files (and directories) are
/// removed: every signal whose default action ends the process and that a
/// user or a job control system sends (SIGKILL cannot be caught; the next
/// run removes what it leaves, see `fsio`).
const SIGNALS: [c_int; 7] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
];

/// Opens an unnamed file for writing in `dir` (mode 0666 before the
/// umask, as LLVM's outputs), or `None` where that cannot be done or the
/// file could not be named later: no `/proc/self/fd`, a file system or
/// kernel without `O_TMPFILE`, or [`NAMED_STAGING_ENV`] set. Other errors
/// (a missing directory, no permission, a read-only file system) are the
/// same a named file would meet, and are returned.
pub(crate) fn unnamed_in(dir: &Path) -> io::Result<Option<File>> {
    use std::os::unix::fs::OpenOptionsExt;
    static USABLE: OnceLock<bool> = OnceLock::new();
    let usable = *USABLE.get_or_init(|| {
        std::env::var_os(NAMED_STAGING_ENV).is_none() && Path::new("/proc/self/fd").is_dir()
    });
    if !usable {
        return Ok(None);
    }
    match std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .mode(0o666)
        .open(dir)
    {
        Ok(f) => Ok(Some(f)),
        // Kernels before 3.11 take O_TMPFILE for O_DIRECTORY (EISDIR);
        // file systems without it say EOPNOTSUPP; EINVAL for flags unknown.
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Gives `file`, opened by [`unnamed_in`], the name `to` (which must not
/// exist: EEXIST otherwise).
pub(crate) fn link(file: &File, to: &Path) -> io::Result<()> {
    let from = CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let to = CString::new(to.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: both paths are NUL-terminated strings that outlive the call;
    // the descriptor named by `from` is open (borrowed from `file`).
    let r = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// How many names one block of the record holds; more blocks are chained
/// as needed.
const SLOTS: usize = 64;

/// A block of recorded names: each slot is null or owns a `CString`
/// (leaked with `into_raw`). Whoever swaps a pointer out of a slot owns it.
struct Block {
    names: [AtomicPtr<c_char>; SLOTS],
    next: OnceLock<Box<Block>>,
}

impl Block {
    const fn new() -> Block {
        Block {
            names: [const { AtomicPtr::new(ptr::null_mut()) }; SLOTS],
            next: OnceLock::new(),
        }
    }

    fn chain(first: &'static Block) -> impl Iterator<Item = &'static Block> {
        std::iter::successors(Some(first), |b| b.next.get().map(|n| &**n))
    }
}

static RECORD: Block = Block::new();
/// Directories a command made for its outputs, removed (if empty) after
/// the files on a signal.
static DIRS: Block = Block::new();

/// A named staging file recorded for removal on a signal; dropping it
/// withdraws the record (the file itself is the caller's to rename or
/// remove).
pub struct Recorded {
    slot: &'static AtomicPtr<c_char>,
    name: *mut c_char,
}

/// Records `path` to be removed if SIGINT, SIGTERM or SIGHUP ends the
/// process before the record is dropped.
pub(crate) fn remove_on_signal(path: &Path) -> Recorded {
    record_in(&RECORD, path)
}

/// Records a directory the command made, to be removed (when empty, after
/// the recorded files) if a signal ends the process before the record is
/// dropped.
pub fn remove_dir_on_signal(path: &Path) -> Recorded {
    record_in(&DIRS, path)
}

fn record_in(first: &'static Block, path: &Path) -> Recorded {
    install_handlers();
    let name = CString::new(path.as_os_str().as_bytes())
        // A path with a NUL could not have been created.
        .unwrap_or_default()
        .into_raw();
    let mut block = first;
    loop {
        for slot in &block.names {
            if slot
                .compare_exchange(ptr::null_mut(), name, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                return Recorded { slot, name };
            }
        }
        block = block.next.get_or_init(|| Box::new(Block::new()));
    }
}

// SAFETY: the pointer is owned (see `Block`) and only handed between
// threads through the atomic slot, so the record may move to another
// thread with the output that holds it.
unsafe impl Send for Recorded {}

impl Drop for Recorded {
    fn drop(&mut self) {
        if self
            .slot
            .compare_exchange(
                self.name,
                ptr::null_mut(),
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_ok()
        {
            // SAFETY: the pointer came from `CString::into_raw` in
            // `remove_on_signal`, and swapping it out of its slot made this
            // the only owner (a handler that took it first keeps it, and
            // then this branch is not reached).
            drop(unsafe { CString::from_raw(self.name) });
        }
    }
}

fn install_handlers() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        for sig in SIGNALS {
            // SAFETY: an all-zero sigaction is a valid value, and
            // `sigaction` with a null new action only reads the current
            // one into `old`, which we own.
            let current = unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                (libc::sigaction(sig, ptr::null(), &mut old) == 0).then_some(old.sa_sigaction)
            };
            if current != Some(libc::SIG_DFL) {
                continue;
            }
            // SAFETY: a zeroed sigaction is a valid value; the handler is
            // an `extern "C" fn(c_int)` doing only async-signal-safe work;
            // `sa_mask` is initialised by `sigemptyset`/`sigaddset`.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as extern "C" fn(c_int) as libc::sighandler_t;
                action.sa_flags = libc::SA_RESETHAND | libc::SA_RESTART;
                libc::sigemptyset(&mut action.sa_mask);
                for s in SIGNALS {
                    libc::sigaddset(&mut action.sa_mask, s);
                }
                libc::sigaction(sig, &action, ptr::null_mut());
            }
        }
    });
}

/// Removes every recorded file, then raises `sig` again: its disposition
/// is the default one by now (`SA_RESETHAND`), and it is blocked until the
/// handler returns, when it ends the process.
extern "C" fn on_signal(sig: c_int) {
    for block in Block::chain(&RECORD) {
        for slot in &block.names {
            let name = slot.swap(ptr::null_mut(), Ordering::AcqRel);
            if !name.is_null() {
                // SAFETY: a non-null slot holds a NUL-terminated string
                // from `CString::into_raw`, now owned here (and leaked:
                // freeing is not async-signal-safe).
                unsafe { libc::unlink(name) };
            }
        }
    }
    // Directories: innermost ones were recorded last, but chained blocks
    // do not iterate backwards; a few passes remove any nesting the
    // commands make (`-d a/b/c`).
    for _ in 0..8 {
        let mut left = false;
        for block in Block::chain(&DIRS) {
            for slot in &block.names {
                let name = slot.load(Ordering::Acquire);
                if name.is_null() {
                    continue;
                }
                // SAFETY: as above; the slot keeps the string until its
                // directory is gone (leaked then).
                if unsafe { libc::rmdir(name) } == 0 {
                    slot.store(ptr::null_mut(), Ordering::Release);
                } else {
                    left = true;
                }
            }
        }
        if !left {
            break;
        }
    }
    // SAFETY: raising a signal is async-signal-safe.
    unsafe { libc::raise(sig) };
}

/// Converts a path for a system call.
fn c_path(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

fn check(r: c_int) -> io::Result<()> {
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Takes an exclusive advisory lock (`flock`) on `file`, waiting for it
/// where another process holds one; `Ok(false)` only when `wait` is false
/// and the lock is held elsewhere.
pub(crate) fn lock(file: &File, wait: bool) -> io::Result<bool> {
    let op = if wait {
        libc::LOCK_EX
    } else {
        libc::LOCK_EX | libc::LOCK_NB
    };
    loop {
        // SAFETY: `flock` on a descriptor borrowed from `file`, open for
        // the whole call.
        let r = unsafe { libc::flock(file.as_raw_fd(), op) };
        if r == 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EWOULDBLOCK) if !wait => return Ok(false),
            _ => return Err(e),
        }
    }
}

/// How [`rename`] moves a file over a name.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum RenameMode {
    /// Swaps the two names atomically (`RENAME_EXCHANGE`): both must exist.
    Exchange,
    /// Fails with EEXIST where `to` exists (`RENAME_NOREPLACE`).
    NoReplace,
}

/// `renameat2(from, to, mode)`. File systems without the flags answer
/// EINVAL (or ENOSYS on old kernels): the caller falls back to a plain
/// rename.
pub(crate) fn rename(from: &Path, to: &Path, mode: RenameMode) -> io::Result<()> {
    let (from, to) = (c_path(from)?, c_path(to)?);
    let flags: libc::c_uint = match mode {
        RenameMode::Exchange => libc::RENAME_EXCHANGE,
        RenameMode::NoReplace => libc::RENAME_NOREPLACE,
    };
    // SAFETY: both paths are NUL-terminated strings that outlive the call;
    // `renameat2` takes them with AT_FDCWD and flags by value.
    let r = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            flags,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether a rename error says the file system lacks `renameat2`'s flags.
pub(crate) fn rename_unsupported(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP)
    )
}

/// Copies every extended attribute of `from` to `to` (POSIX ACLs,
/// `security.capability`, SELinux labels and user attributes alike), both
/// open files. An attribute the process may not set (EPERM, EACCES, a
/// file system without it) is passed over; other errors are returned.
pub(crate) fn copy_xattrs(from: &File, to: &File) -> io::Result<()> {
    let list = read_sized(|buf, len| {
        // SAFETY: `buf` is valid for `len` bytes (or null with len 0, which
        // asks for the size); the descriptor is borrowed from `from`.
        unsafe { libc::flistxattr(from.as_raw_fd(), buf.cast(), len) }
    });
    let list = match list {
        Ok(l) => l,
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTSUP)) => return Ok(()),
        Err(e) => return Err(e),
    };
    for name in list.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let cname = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidData))?;
        let value = read_sized(|buf, len| {
            // SAFETY: as above; `cname` is NUL-terminated and outlives the call.
            unsafe { libc::fgetxattr(from.as_raw_fd(), cname.as_ptr(), buf.cast(), len) }
        });
        let value = match value {
            Ok(v) => v,
            // Gone since it was listed.
            Err(e) if e.raw_os_error() == Some(libc::ENODATA) => continue,
            Err(e) => return Err(e),
        };
        // SAFETY: `value` is valid for its length; `cname` is NUL-terminated;
        // the descriptor is borrowed from `to`.
        let r = unsafe {
            libc::fsetxattr(
                to.as_raw_fd(),
                cname.as_ptr(),
                value.as_ptr().cast(),
                value.len(),
                0,
            )
        };
        if let Err(e) = check(r) {
            if !matches!(
                e.raw_os_error(),
                Some(libc::EPERM | libc::EACCES | libc::ENOTSUP)
            ) {
                return Err(e);
            }
        }
    }
    Ok(())
}

/// Calls a size-probing system call (`flistxattr`, `fgetxattr`) until the
/// buffer is large enough for what it returns.
fn read_sized(mut call: impl FnMut(*mut u8, usize) -> isize) -> io::Result<Vec<u8>> {
    for _ in 0..8 {
        let want = call(ptr::null_mut(), 0);
        if want < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut buf = vec![0u8; want as usize];
        let got = call(buf.as_mut_ptr(), buf.len());
        if got >= 0 {
            buf.truncate(got as usize);
            return Ok(buf);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::ERANGE) {
            return Err(e);
        }
        // Grew between the calls: ask again.
    }
    Err(io::Error::from_raw_os_error(libc::ERANGE))
}

/// While alive, the signals that end a command ([`SIGNALS`]) wait: a
/// commit that moves several files into place finishes before one of them
/// takes effect (SIGKILL excepted).
pub(crate) struct SignalsHeld {
    old: libc::sigset_t,
}

impl SignalsHeld {
    pub(crate) fn new() -> SignalsHeld {
        // SAFETY: zeroed `sigset_t`s are initialised by `sigemptyset`
        // before use; `pthread_sigmask` reads `set` and writes `old`, both
        // owned here.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for s in SIGNALS {
                libc::sigaddset(&mut set, s);
            }
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            SignalsHeld { old }
        }
    }
}

impl Drop for SignalsHeld {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved by `new`, a valid `sigset_t`.
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, ptr::null_mut());
        }
    }
}

/// Whether process `pid` exists (on this system's view of process IDs):
/// `kill(pid, 0)` succeeds or is refused for permission.
pub(crate) fn process_exists(pid: i32) -> bool {
    if pid <= 0 {
        return true;
    }
    // SAFETY: signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}
