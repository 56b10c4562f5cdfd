//! The truncated MD5 of data produced piece by piece, computed beside the
//! work that produces it.
//!
//! MD5 is strictly sequential and runs at roughly half the speed of zstd
//! decoding, so hashing a decompressed bundle afterwards costs about as much
//! as decoding it. Handing each freshly decoded piece to a second thread
//! hides that cost when a second core is free. The piece is copied into a
//! small recycled buffer while it is still in cache: a few percent of the
//! hashing time, and it keeps the decoder's buffer to itself. Compression
//! hashes its input the same way, beside the compressor.

use std::sync::mpsc;

use md5::{Digest, Md5};

/// Bytes per message to the hashing thread.
const PIECE: usize = 256 << 10;
/// Pieces that may wait for the hashing thread; the producer blocks beyond
/// that, which bounds the buffers in flight to a few MiB.
const QUEUE: usize = 8;
/// Below this much data a thread is not worth starting.
const PARALLEL_MIN: usize = 2 << 20;

/// The first 8 bytes of an MD5 digest, read as a little-endian integer.
pub(super) fn truncate(md5: Md5) -> u64 {
    let digest = md5.finalize();
    let mut low = [0u8; 8];
    low.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(low)
}

/// Runs `work`, which passes every byte it produces, in order, to the sink
/// it is given; returns its result and the truncated MD5 of those bytes.
///
/// `expected_len` is how much data is coming (an upper bound is fine): see
/// [`Background::new`].
pub(super) fn hash_alongside<T>(
    expected_len: usize,
    work: impl FnOnce(&mut dyn FnMut(&[u8])) -> T,
) -> (T, u64) {
    let mut md5 = Background::new(expected_len as u64);
    let result = work(&mut |bytes: &[u8]| md5.update(bytes));
    (result, md5.finish())
}

/// The truncated MD5 of data fed piece by piece, computed on a second
/// thread when there is enough data and a second core; inline otherwise
/// (or when no thread can be started).
pub(super) struct Background(Inner);

enum Inner {
    Inline(Md5),
    Thread {
        pieces: mpsc::SyncSender<Vec<u8>>,
        spare: mpsc::Receiver<Vec<u8>>,
        hasher: std::thread::JoinHandle<u64>,
    },
}

impl Background {
    /// A hasher for about `expected_len` bytes (an upper bound is fine).
    pub(super) fn new(expected_len: u64) -> Background {
        let parallel = expected_len >= PARALLEL_MIN as u64
            && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
        if !parallel {
            return Background(Inner::Inline(Md5::new()));
        }
        let (pieces, incoming) = mpsc::sync_channel::<Vec<u8>>(QUEUE);
        let (recycle, spare) = mpsc::channel::<Vec<u8>>();
        let spawned = std::thread::Builder::new()
            .name("ccob-md5".into())
            .spawn(move || {
                let mut md5 = Md5::new();
                for piece in incoming {
                    md5.update(&piece);
                    // The producer may be gone already; the buffer is then
                    // simply freed.
                    let _ = recycle.send(piece);
                }
                truncate(md5)
            });
        match spawned {
            Ok(hasher) => Background(Inner::Thread {
                pieces,
                spare,
                hasher,
            }),
            Err(_) => Background(Inner::Inline(Md5::new())),
        }
    }

    /// Adds the next bytes.
    pub(super) fn update(&mut self, bytes: &[u8]) {
        match &mut self.0 {
            Inner::Inline(md5) => md5.update(bytes),
            Inner::Thread { pieces, spare, .. } => {
                for chunk in bytes.chunks(PIECE) {
                    let mut buf = spare
                        .try_recv()
                        .unwrap_or_else(|_| Vec::with_capacity(PIECE));
                    buf.clear();
                    buf.extend_from_slice(chunk);
                    // Sending fails only if the hasher is gone, which only
                    // a panic (an abort in release builds) can cause;
                    // `finish` reports it.
                    let _ = pieces.send(buf);
                }
            }
        }
    }

    /// The truncated MD5 of everything added.
    pub(super) fn finish(self) -> u64 {
        match self.0 {
            Inner::Inline(md5) => truncate(md5),
            Inner::Thread { pieces, hasher, .. } => {
                drop(pieces);
                hasher
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 31 % 253) as u8).collect()
    }

    #[test]
    fn equals_the_hash_of_the_whole_for_any_split() {
        for len in [
            0,
            1,
            PIECE - 1,
            PIECE + 1,
            PARALLEL_MIN,
            PARALLEL_MIN * 2 + 7,
        ] {
            let bytes = data(len);
            let expected = super::super::truncated_md5(&bytes);
            for step in [1usize << 20, 4093, PIECE * 3] {
                let (n, hash) = hash_alongside(len, |sink| {
                    let mut n = 0;
                    for part in bytes.chunks(step) {
                        sink(part);
                        n += 1;
                    }
                    n
                });
                assert_eq!(hash, expected, "len {len} step {step}");
                assert_eq!(n, bytes.chunks(step).count());
            }
        }
    }

    #[test]
    fn work_that_stops_early_still_ends_the_hasher() {
        let bytes = data(PARALLEL_MIN * 2);
        let (r, hash) = hash_alongside(bytes.len(), |sink| {
            sink(&bytes[..1000]);
            "stopped"
        });
        assert_eq!(r, "stopped");
        assert_eq!(hash, super::super::truncated_md5(&bytes[..1000]));
    }

    /// A hasher dropped unfinished (a writer that failed) stops its thread
    /// without being joined, and another one works as before.
    #[test]
    fn dropping_unfinished_is_fine() {
        let bytes = data(PARALLEL_MIN * 2);
        let mut md5 = Background::new(bytes.len() as u64);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(matches!(md5.0, Inner::Thread { .. }), cores > 1);
        md5.update(&bytes[..PIECE * 3]);
        drop(md5);
        let mut md5 = Background::new(bytes.len() as u64);
        md5.update(&bytes);
        assert_eq!(md5.finish(), super::super::truncated_md5(&bytes));
    }
}
