//! The body of the `nvidia_lz` and `nvidia_zstd` targets: one codec of
//! fat binary entries through the public decoder. Any stream with any
//! recorded size decodes to at most that size, or is an error; never a
//! panic, never more memory than a piece and a window. LZ streams also
//! decode whole (as profiling does) exactly where they stream, the same.

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
    let streamed = fatbin::write_content(kind, Some(codec), recorded, &data[5..], &mut out);
    if let Ok(n) = streamed {
        assert!(n <= recorded);
        assert_eq!(n, out.0);
    }
    // LZ: the whole-buffer decoding profiling uses parses the same stream,
    // so it succeeds exactly where the streaming one gives a whole cubin
    // (PTX stops at its NUL), with the same bytes.
    if codec == Codec::Lz && kind == EntryKind::Elf && recorded <= 1 << 20 {
        let mut whole = vec![0u8; recorded as usize];
        let made = offload_format::profile::decode_nvidia(codec, &data[5..], &mut whole);
        assert_eq!(made.is_ok(), streamed.is_ok(), "{made:?} {streamed:?}");
        if made.is_ok() {
            let mut bytes = Vec::new();
            fatbin::write_content(kind, Some(codec), recorded, &data[5..], &mut bytes).unwrap();
            assert_eq!(bytes, whole);
        }
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
