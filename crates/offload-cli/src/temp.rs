//! Temporary file names: one generator of random suffixes, and one way to
//! create a file under a fresh name.

use std::collections::hash_map::RandomState;
use std::fs::{File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// `digits` random lowercase hexadecimal digits (at most 16), different at
/// every call: what LLVM's `createUniqueFile` puts in place of the `%`s of
/// a model such as `clang-offload-bundler-%%%%%%.tmp`.
pub fn random_hex(digits: usize) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    let digits = digits.min(16);
    let value = h.finish();
    let value = if digits == 16 {
        value
    } else {
        value & ((1u64 << (4 * digits)) - 1)
    };
    format!("{value:0digits$x}")
}

/// Creates a new file at `path(random_hex(digits))`, trying other names
/// while one exists already; `mode` is the permission before the umask.
/// Errors are the bare OS errors, with the path tried.
pub fn create_unique(
    digits: usize,
    mode: u32,
    mut path: impl FnMut(&str) -> PathBuf,
) -> Result<(File, PathBuf), (PathBuf, io::Error)> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut last = None;
    for _ in 0..100 {
        let p = path(&random_hex(digits));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&p)
        {
            Ok(f) => return Ok((f, p)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some((p, e)),
            Err(e) => return Err((p, e)),
        }
    }
    Err(last.unwrap_or_else(|| (PathBuf::new(), io::ErrorKind::AlreadyExists.into())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_names_have_the_asked_length_and_differ() {
        let a = random_hex(6);
        let b = random_hex(6);
        assert_eq!(a.len(), 6);
        assert!(a
            .bytes()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_ne!(a, b);
        assert_eq!(random_hex(16).len(), 16);
    }

    #[test]
    fn unique_files_do_not_collide() {
        let dir = tempfile::tempdir().unwrap();
        let (_, p1) = create_unique(2, 0o600, |r| dir.path().join(format!("x{r}"))).unwrap();
        let (_, p2) = create_unique(2, 0o600, |r| dir.path().join(format!("x{r}"))).unwrap();
        assert_ne!(p1, p2);
        let (p, e) = create_unique(6, 0o600, |r| dir.path().join("missing").join(r)).unwrap_err();
        assert!(p.starts_with(dir.path().join("missing")));
        assert_eq!(e.raw_os_error(), Some(2));
    }
}
