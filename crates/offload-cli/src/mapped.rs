//! Memory-mapped inputs, and finding out which input a byte slice came
//! from. With `splice` (and `zstd-stable-in`'s `raw`), one of the three
//! modules of the tools with `unsafe`.
//!
//! Mapping an input instead of reading it costs no memory up front: the
//! format library parses the mapping as an ordinary `&[u8]` and touches only
//! the pages it looks at (headers, tables). Entry data is then never touched
//! at all: when a slice of a mapping is written to an output, the output
//! asks the kernel to copy that range of the input file
//! ([`locate`] gives the file and offset), so peak memory stays flat
//! whatever the input's size.
//!
//! The safety condition of a file mapping is that nobody shrinks the file
//! while it is mapped (the pages would vanish and reading them raise
//! SIGBUS). LLVM's tools map their inputs under the same condition; build
//! systems do not truncate a compiler's inputs while it runs.

#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::sync::{Arc, Mutex};

/// A mapped file, registered for [`locate`] while it lives.
pub(crate) struct Mapping {
    map: memmap2::Mmap,
}

struct Region {
    start: usize,
    len: usize,
    file: Arc<File>,
}

/// Every live mapping. A handful at most, so a vector is the right map.
static REGIONS: Mutex<Vec<Region>> = Mutex::new(Vec::new());

fn regions() -> std::sync::MutexGuard<'static, Vec<Region>> {
    // A panic while the lock was held cannot leave the vector inconsistent
    // (each update is one push or one retain), so poisoning is ignored.
    REGIONS.lock().unwrap_or_else(|p| p.into_inner())
}

/// How far back of its range [`Mapping::release`] drops pages too: the
/// largest folio the page cache maps on one fault (a huge page).
const RELEASE_SLACK: usize = 2 << 20;

impl Mapping {
    /// Maps all of `file` (which must not be empty) read-only.
    pub(crate) fn new(file: File) -> io::Result<Mapping> {
        // SAFETY: the mapping is read-only, so we never write through it; the remaining hazard, the file being truncated by
        // another process while mapped, is the documented condition of
        // this module.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        regions().push(Region {
            start: map.as_ptr() as usize,
            len: map.len(),
            file: Arc::new(file),
        });
        Ok(Mapping { map })
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Tells the kernel that the mapping will be read here and there, not
    /// in order: no read-ahead, and a page fault maps that page only
    /// (instead of its neighbours already in the page cache).
    pub(crate) fn advise_random(&self) {
        // Advice only; failure changes nothing but speed.
        let _ = self.map.advise(memmap2::Advice::Random);
    }

    /// Drops the pages of `range` (clamped to the mapping, widened to
    /// whole pages, and back by up to [`RELEASE_SLACK`]) from this
    /// process's resident set. They stay in the page cache, and touching
    /// them again maps them back with the same contents.
    ///
    /// Why the slack: the kernel maps a whole large folio of the page
    /// cache on one fault (a file written in 256 KiB pieces, such as a
    /// decoded zip member, is cached in such folios), so the first read
    /// past a released range maps the end of that range back in. A reader
    /// going forward and releasing as it goes would keep those tails, a
    /// few hundred KiB per release; widening each release backwards drops
    /// them again.
    pub(crate) fn release(&self, range: std::ops::Range<usize>) {
        let end = range.end.min(self.map.len());
        if range.start >= end {
            return;
        }
        let start = range.start.saturating_sub(RELEASE_SLACK);
        // SAFETY: the mapping is private, read-only and never written, so
        // dropping its pages loses nothing: the next access reads the same
        // bytes from the file (the file not changing is this module's
        // condition anyway). Failure only means the pages stay.
        let _ = unsafe {
            self.map
                .unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start)
        };
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        let start = self.map.as_ptr() as usize;
        regions().retain(|r| r.start != start);
    }
}

/// If `bytes` lies wholly inside a live mapping: the mapped file and the
/// offset of `bytes` in it.
pub(crate) fn locate(bytes: &[u8]) -> Option<(Arc<File>, u64)> {
    let start = bytes.as_ptr() as usize;
    let end = start.checked_add(bytes.len())?;
    regions().iter().find_map(|r| {
        let offset = start.checked_sub(r.start)?;
        (end <= r.start + r.len).then(|| (Arc::clone(&r.file), offset as u64))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn slices_of_a_mapping_are_located_and_forgotten_on_drop() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&[7u8; 10000]).unwrap();
        let m = Mapping::new(f).unwrap();
        let bytes = m.bytes();
        let (_, off) = locate(&bytes[100..200]).unwrap();
        assert_eq!(off, 100);
        assert_eq!(locate(&bytes[9999..]).unwrap().1, 9999);
        let elsewhere = vec![7u8; 100];
        assert!(locate(&elsewhere).is_none());
        let start = bytes.as_ptr() as usize;
        drop(m);
        assert!(regions().iter().all(|r| r.start != start));
    }
}
