//! The body of the `nvidia_lz` and `nvidia_zstd` targets: one codec of
//! fat binary entries through the public decoder. Any stream with any
//! recorded size decodes to at most that size, or is an error; never a
//! panic, never more memory than a piece and a window.

use offload_format::nvidia::fatbin::{self, EntryKind};
use offload_format::nvidia::Codec;

/// The first byte picks the kind, the next four the recorded size, the
/// rest is the stream.
pub fn run(codec: Codec, data: &[u8]) {
    if data.len() < 5 {
        return;
    }
    let kind = if data[0] & 1 == 0 {
        EntryKind::Elf
    } else {
        EntryKind::Ptx
    };
    let recorded = u64::from(u32::from_le_bytes([data[1], data[2], data[3], data[4]]));
    let mut out = Counter(0);
    if let Ok(n) = fatbin::write_content(kind, Some(codec), recorded, &data[5..], &mut out) {
        assert!(n <= recorded);
        assert_eq!(n, out.0);
    }
}

/// A writer that only counts.
struct Counter(u64);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
