//! LLVM's small rules that several formats and tools share: how it parses
//! an integer out of a string, and how its messages show an OS error.
//!
//! One place for each, so that an archive header, a COFF section name, an
//! environment variable and a command-line value are read alike.

use std::io;

/// `StringRef::getAsInteger(10, unsigned)`: one or more ASCII decimal
/// digits and nothing else (no sign, no spaces), fitting in a `u64`.
///
/// ```
/// use offload_format::llvm::decimal_u64;
/// assert_eq!(decimal_u64(b"0042"), Some(42));
/// assert_eq!(decimal_u64(b""), None);
/// assert_eq!(decimal_u64(b"+1"), None);
/// assert_eq!(decimal_u64(b"18446744073709551616"), None);
/// ```
pub fn decimal_u64(text: &[u8]) -> Option<u64> {
    if text.is_empty() {
        return None;
    }
    text.iter().try_fold(0u64, |n, &c| {
        if c.is_ascii_digit() {
            n.checked_mul(10)?.checked_add(u64::from(c - b'0'))
        } else {
            None
        }
    })
}

/// [`decimal_u64`] narrowed to a `u32` (LLVM's `getAsInteger` into a
/// 32-bit unsigned: a value that does not fit is an error).
pub(crate) fn decimal_u32(text: &[u8]) -> Option<u32> {
    decimal_u64(text).and_then(|n| u32::try_from(n).ok())
}

/// `StringRef::getAsInteger(10, signed)`: an optional leading `-`, then
/// what [`decimal_u64`] accepts, fitting in an `i64`.
///
/// ```
/// use offload_format::llvm::decimal_i64;
/// assert_eq!(decimal_i64(b"-9223372036854775808"), Some(i64::MIN));
/// assert_eq!(decimal_i64(b"9223372036854775808"), None);
/// assert_eq!(decimal_i64(b"-"), None);
/// ```
pub fn decimal_i64(text: &[u8]) -> Option<i64> {
    match text.strip_prefix(b"-") {
        Some(rest) => {
            let n = decimal_u64(rest)?;
            if n > i64::MAX as u64 + 1 {
                None
            } else {
                Some((n as i64).wrapping_neg())
            }
        }
        None => decimal_u64(text).and_then(|n| i64::try_from(n).ok()),
    }
}

/// The text the C library's `strerror` gives for an I/O error, as LLVM's
/// messages show it: Rust's `" (os error N)"` suffix removed.
///
/// ```
/// let e = std::io::Error::from_raw_os_error(2);
/// assert_eq!(offload_format::llvm::os_error_text(&e), "No such file or directory");
/// ```
pub fn os_error_text(error: &io::Error) -> String {
    let text = error.to_string();
    match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => text[..at].to_string(),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_is_get_as_integer() {
        assert_eq!(decimal_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(decimal_u64(b"1 "), None);
        assert_eq!(decimal_u64(b"0x10"), None);
        assert_eq!(decimal_u32(b"4294967295"), Some(u32::MAX));
        assert_eq!(decimal_u32(b"4294967296"), None);
        assert_eq!(decimal_i64(b"-0"), Some(0));
        assert_eq!(decimal_i64(b"--1"), None);
        assert_eq!(decimal_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(decimal_i64(b"-9223372036854775809"), None);
    }

    #[test]
    fn os_error_text_drops_the_code() {
        let e = io::Error::from_raw_os_error(21);
        assert_eq!(os_error_text(&e), "Is a directory");
        let custom = io::Error::new(io::ErrorKind::InvalidInput, "not a regular file");
        assert_eq!(os_error_text(&custom), "not a regular file");
    }
}
