//! Bounds-checked, zero-copy reading of byte buffers.
//!
//! Every reader in this crate takes offsets and sizes from the file it
//! reads, so none of them may be trusted: [`Bytes`] reads integers, slices
//! and C strings at offsets with overflow-checked arithmetic and answers
//! `None` instead of panicking. It works both as a view (`*_at` methods
//! taking an offset) and as a cursor (`read_*` methods that advance).
//!
//! [`ReadRef`] abstracts over where the bytes live, as gimli-rs/object's
//! trait of the same name does: a plain slice, or an image made of several
//! borrowed runs that is never assembled (the object-bundle rewriter reads
//! its output back this way).
//!
//! ```
//! use offload_format::bytes::{Bytes, Endian};
//!
//! let data = [0x7f, b'E', b'L', b'F', 2, 1, 0, 0];
//! let b = Bytes::new(&data);
//! assert_eq!(b.u32_at(0, Endian::Big), Some(0x7f45_4c46));
//! assert_eq!(b.u32_at(6, Endian::Little), None); // past the end
//! assert_eq!(b.slice(u64::MAX, 2), None); // overflow, not a panic
//!
//! let mut cursor = Bytes::new(b"ab\0cd");
//! assert_eq!(cursor.read_cstr(), Some(&b"ab"[..]));
//! assert_eq!(cursor.read_u8(), Some(b'c'));
//! ```

/// Byte order of the integers in a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Endian {
    /// Least significant byte first.
    Little,
    /// Most significant byte first.
    Big,
}

impl Endian {
    /// `Big` when `big` is true.
    pub fn from_big(big: bool) -> Endian {
        if big {
            Endian::Big
        } else {
            Endian::Little
        }
    }

    /// True for [`Endian::Big`].
    pub fn is_big(self) -> bool {
        self == Endian::Big
    }

    /// A `u16` from two bytes in this order.
    pub fn u16(self, b: [u8; 2]) -> u16 {
        match self {
            Endian::Little => u16::from_le_bytes(b),
            Endian::Big => u16::from_be_bytes(b),
        }
    }

    /// A `u32` from four bytes in this order.
    pub fn u32(self, b: [u8; 4]) -> u32 {
        match self {
            Endian::Little => u32::from_le_bytes(b),
            Endian::Big => u32::from_be_bytes(b),
        }
    }

    /// A `u64` from eight bytes in this order.
    pub fn u64(self, b: [u8; 8]) -> u64 {
        match self {
            Endian::Little => u64::from_le_bytes(b),
            Endian::Big => u64::from_be_bytes(b),
        }
    }
}

/// A source of bytes that can lend out sub-ranges for lifetime `'a`.
///
/// Implemented by `&'a [u8]`; other implementations may answer `None` for a
/// range that is inside the data but cannot be lent as one slice.
pub trait ReadRef<'a>: Clone + Copy {
    /// Total size in bytes.
    fn len(self) -> u64;

    /// True when the source holds no bytes.
    fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// The `size` bytes at `offset`, or `None` if they are not all there.
    fn read_bytes_at(self, offset: u64, size: u64) -> Option<&'a [u8]>;

    /// The first `n` bytes, or all of them if there are fewer.
    fn head(self, n: u64) -> &'a [u8] {
        self.read_bytes_at(0, n.min(self.len())).unwrap_or(&[])
    }
}

impl<'a> ReadRef<'a> for &'a [u8] {
    fn len(self) -> u64 {
        <[u8]>::len(self) as u64
    }

    fn read_bytes_at(self, offset: u64, size: u64) -> Option<&'a [u8]> {
        Bytes::new(self).slice(offset, size)
    }
}

/// A bounds-checked view of (and cursor over) a byte slice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bytes<'a>(&'a [u8]);

impl<'a> Bytes<'a> {
    /// A view of `data`.
    pub fn new(data: &'a [u8]) -> Bytes<'a> {
        Bytes(data)
    }

    /// The bytes not yet read.
    pub fn as_slice(self) -> &'a [u8] {
        self.0
    }

    /// Number of bytes not yet read.
    pub fn len(self) -> usize {
        self.0.len()
    }

    /// True when nothing is left.
    pub fn is_empty(self) -> bool {
        self.0.is_empty()
    }

    /// The `len` bytes at `offset`; `None` if any of them is missing or the
    /// end does not fit in a `u64`.
    pub fn slice(self, offset: u64, len: u64) -> Option<&'a [u8]> {
        let start = usize::try_from(offset).ok()?;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        self.0.get(start..end)
    }

    /// Everything from `offset` to the end (empty at the very end).
    pub fn tail(self, offset: u64) -> Option<&'a [u8]> {
        self.0.get(usize::try_from(offset).ok()?..)
    }

    /// `N` bytes at `offset` as an array.
    pub fn array_at<const N: usize>(self, offset: u64) -> Option<[u8; N]> {
        self.slice(offset, N as u64)?.try_into().ok()
    }

    /// The byte at `offset`.
    pub fn u8_at(self, offset: u64) -> Option<u8> {
        self.0.get(usize::try_from(offset).ok()?).copied()
    }

    /// A `u16` at `offset`.
    pub fn u16_at(self, offset: u64, e: Endian) -> Option<u16> {
        self.array_at(offset).map(|b| e.u16(b))
    }

    /// A `u32` at `offset`.
    pub fn u32_at(self, offset: u64, e: Endian) -> Option<u32> {
        self.array_at(offset).map(|b| e.u32(b))
    }

    /// A `u64` at `offset`.
    pub fn u64_at(self, offset: u64, e: Endian) -> Option<u64> {
        self.array_at(offset).map(|b| e.u64(b))
    }

    /// A 32- or 64-bit word at `offset`, widened to `u64`.
    pub fn word_at(self, offset: u64, is64: bool, e: Endian) -> Option<u64> {
        if is64 {
            self.u64_at(offset, e)
        } else {
            self.u32_at(offset, e).map(u64::from)
        }
    }

    /// The NUL-terminated string at `offset`, without its NUL; `None` when
    /// `offset` is out of range or no NUL follows.
    pub fn cstr_at(self, offset: u64) -> Option<&'a [u8]> {
        let rest = self.tail(offset)?;
        let n = find_nul(rest)?;
        rest.get(..n)
    }

    /// Skips `n` bytes; `None` (and no move) if fewer are left.
    pub fn skip(&mut self, n: u64) -> Option<()> {
        self.0 = self.tail(n)?;
        Some(())
    }

    /// Reads `n` bytes.
    pub fn read_bytes(&mut self, n: u64) -> Option<&'a [u8]> {
        let b = self.slice(0, n)?;
        self.0 = &self.0[b.len()..];
        Some(b)
    }

    /// Reads an array of `N` bytes.
    pub fn read_array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.read_bytes(N as u64)?.try_into().ok()
    }

    /// Reads one byte.
    pub fn read_u8(&mut self) -> Option<u8> {
        self.read_array::<1>().map(|[b]| b)
    }

    /// Reads a `u16`.
    pub fn read_u16(&mut self, e: Endian) -> Option<u16> {
        self.read_array().map(|b| e.u16(b))
    }

    /// Reads a `u32`.
    pub fn read_u32(&mut self, e: Endian) -> Option<u32> {
        self.read_array().map(|b| e.u32(b))
    }

    /// Reads a `u64`.
    pub fn read_u64(&mut self, e: Endian) -> Option<u64> {
        self.read_array().map(|b| e.u64(b))
    }

    /// Reads a 32- or 64-bit word, widened to `u64`.
    pub fn read_word(&mut self, is64: bool, e: Endian) -> Option<u64> {
        if is64 {
            self.read_u64(e)
        } else {
            self.read_u32(e).map(u64::from)
        }
    }

    /// Reads a NUL-terminated string and its NUL; returns the string
    /// without the NUL.
    pub fn read_cstr(&mut self) -> Option<&'a [u8]> {
        let s = self.cstr_at(0)?;
        self.0 = &self.0[s.len() + 1..];
        Some(s)
    }
}

/// The bytes of `b` up to its first NUL, or all of `b` when it has none
/// (fixed-size name fields: COFF and Mach-O section names, ELF strings
/// that run to the end of their table).
pub fn until_nul(b: &[u8]) -> &[u8] {
    match find_nul(b) {
        Some(n) => &b[..n],
        None => b,
    }
}

/// The index of the first NUL in `b`. Eight bytes at a time: symbol and
/// section names in device code run to hundreds of bytes (mangled C++
/// templates), and a cubin holds thousands of them: a byte-at-a-time
/// scan was a quarter of `offload size`'s own (non-zstd) time.
pub fn find_nul(b: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut chunks = b.chunks_exact(8);
    let mut at = 0usize;
    for c in &mut chunks {
        let v = u64::from_le_bytes(c.try_into().expect("eight bytes"));
        // The lowest byte whose high bit is set here is the first zero
        // byte (a borrow only sets bits above a zero byte).
        let zeros = v.wrapping_sub(ONES) & !v & HIGHS;
        if zeros != 0 {
            return Some(at + (zeros.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&c| c == 0)
        .map(|n| at + n)
}

/// Appends `v` little-endian: the writers' half of [`Endian::Little`].
#[cfg(any(feature = "offload-binary", feature = "zip"))]
pub(crate) fn put16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v` little-endian.
#[cfg(any(feature = "offload-binary", feature = "zip"))]
pub(crate) fn put32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v` little-endian.
#[cfg(any(feature = "offload-binary", feature = "zip"))]
pub(crate) fn put64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_check_every_bound() {
        let d = [1u8, 2, 3, 4, 5, 6, 7, 8, 9];
        let b = Bytes::new(&d);
        assert_eq!(b.u16_at(0, Endian::Little), Some(0x0201));
        assert_eq!(b.u16_at(0, Endian::Big), Some(0x0102));
        assert_eq!(b.u64_at(1, Endian::Big), Some(0x0203_0405_0607_0809));
        assert_eq!(b.u64_at(2, Endian::Big), None);
        assert_eq!(b.u32_at(u64::MAX - 1, Endian::Big), None);
        assert_eq!(b.slice(9, 0), Some(&[][..]));
        assert_eq!(b.slice(10, 0), None);
        assert_eq!(b.slice(1, u64::MAX), None);
        assert_eq!(b.tail(9), Some(&[][..]));
        assert_eq!(b.word_at(5, false, Endian::Little), Some(0x0908_0706));
        assert_eq!(b.u8_at(9), None);
    }

    #[test]
    fn strings_need_their_terminator() {
        let b = Bytes::new(b"abc\0de");
        assert_eq!(b.cstr_at(0), Some(&b"abc"[..]));
        assert_eq!(b.cstr_at(3), Some(&b""[..]));
        assert_eq!(b.cstr_at(4), None);
        assert_eq!(b.cstr_at(100), None);
        assert_eq!(until_nul(b"de"), b"de");
        assert_eq!(until_nul(b"d\0e"), b"d");
    }

    #[test]
    fn nul_found_as_a_byte_scan_finds_it() {
        // Every length to three words, with NULs at every place (alone,
        // after 0x80/0xff/0x01 bytes that a word-wise test could mistake,
        // and in pairs), against the plain scan.
        for len in 0..24usize {
            for fill in [b'a', 0x80, 0xff, 0x01] {
                let plain = vec![fill; len];
                assert_eq!(find_nul(&plain), None, "{len} {fill:#x}");
                for first in 0..len {
                    for second in first..len {
                        let mut v = plain.clone();
                        v[second] = 0;
                        v[first] = 0;
                        let want = v.iter().position(|&c| c == 0);
                        assert_eq!(find_nul(&v), want, "{len} {fill:#x} {first} {second}");
                        // Unaligned starts too.
                        if first > 0 {
                            let want = v[1..].iter().position(|&c| c == 0);
                            assert_eq!(find_nul(&v[1..]), want);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_cursor_advances_only_on_success() {
        let mut c = Bytes::new(&[1, 0, 0, 0, 2]);
        assert_eq!(c.read_u32(Endian::Little), Some(1));
        assert_eq!(c.read_u32(Endian::Little), None);
        assert_eq!(c.len(), 1);
        assert_eq!(c.skip(2), None);
        assert_eq!(c.read_u8(), Some(2));
        assert!(c.is_empty());
        assert_eq!(c.read_cstr(), None);
    }

    #[test]
    fn slices_are_a_read_ref() {
        let d: &[u8] = b"hello";
        assert_eq!(d.read_bytes_at(1, 3), Some(&b"ell"[..]));
        assert_eq!(d.read_bytes_at(4, 2), None);
        assert_eq!(d.head(100), b"hello");
        assert_eq!(ReadRef::len(d), 5);
    }
}
