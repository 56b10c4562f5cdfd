//! The text of `clang-offload-bundler`'s `-verbose` compression reports:
//! LLVM emulation, apart from the format.
//!
//! The figures are measured by the caller (or taken from [`super::CompressInfo`]
//! / [`super::Decompressed::report`]); these functions only lay them out the
//! way LLVM 22 prints them, including its C `printf` conventions for
//! infinities and NaN.

use std::fmt::Write as _;
use std::time::Duration;

use super::codec::{CompressInfo, DecompressReport};
use super::error::format_hash;

/// Decimal digits with a comma every three, as LLVM's bundler prints sizes.
pub(crate) fn with_commas(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A double with two decimals, spelled as glibc's `%.2f` spells it.
fn two_decimals(value: f64) -> String {
    if value.is_nan() {
        // A NaN here comes from 0/0, which x86 produces with the sign bit
        // set; glibc prints that as "-nan".
        "-nan".to_string()
    } else if value.is_infinite() {
        if value > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        // Rust rounds exact ties to even like glibc does.
        format!("{value:.2}")
    }
}

/// MiB per second, as the reports compute it.
fn speed(bytes: u64, time: Duration) -> f64 {
    (bytes as f64 / (1024.0 * 1024.0)) / time.as_secs_f64()
}

/// The report LLVM 22 prints on stderr after compressing with `-verbose`.
pub fn format_compress_report(info: &CompressInfo) -> String {
    let rate = info.uncompressed_len as f64 / info.payload_len as f64;
    let mut s = String::new();
    // Writing to a String cannot fail.
    let _ = write!(
        s,
        "Compressed bundle format version: {}\n\
         Total file size (including headers): {} bytes\n\
         Compression method used: {}\n\
         Compression level: {}\n\
         Binary size before compression: {} bytes\n\
         Binary size after compression: {} bytes\n\
         Compression rate: {}\n\
         Compression ratio: {}%\n\
         Compression speed: {} MB/s\n\
         Truncated MD5 hash: {}\n",
        info.version.number(),
        with_commas(info.total_len),
        info.method.name(),
        info.level,
        with_commas(info.uncompressed_len),
        with_commas(info.payload_len),
        two_decimals(rate),
        two_decimals(100.0 / rate),
        two_decimals(speed(info.uncompressed_len, info.codec_time)),
        format_hash(info.hash),
    );
    s
}

/// The report LLVM 22 prints on stderr after decompressing with `-verbose`.
///
/// The sizes and the rate use the header's uncompressed size; "Size before
/// decompression" is the payload length.
pub fn format_decompress_report(r: &DecompressReport) -> String {
    let rate = r.uncompressed_size as f64 / r.payload_len as f64;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Compressed bundle format version: {}",
        r.version.number()
    );
    if let Some(total) = r.total_size {
        let _ = writeln!(
            s,
            "Total file size (from header): {} bytes",
            with_commas(total)
        );
    }
    let _ = write!(
        s,
        "Decompression method: {}\n\
         Size before decompression: {} bytes\n\
         Size after decompression: {} bytes\n\
         Compression rate: {}\n\
         Compression ratio: {}%\n\
         Decompression speed: {} MB/s\n\
         Stored hash: {}\n\
         Recalculated hash: {}\n\
         Hashes match: {}\n",
        r.method.name(),
        with_commas(r.payload_len),
        with_commas(r.uncompressed_size),
        two_decimals(rate),
        two_decimals(100.0 / rate),
        two_decimals(speed(r.uncompressed_size, r.codec_time)),
        format_hash(r.stored_hash),
        format_hash(r.computed_hash),
        if r.stored_hash == r.computed_hash {
            "Yes"
        } else {
            "No"
        },
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commas() {
        assert_eq!(with_commas(0), "0");
        assert_eq!(with_commas(999), "999");
        assert_eq!(with_commas(1000), "1,000");
        assert_eq!(with_commas(24939), "24,939");
        assert_eq!(with_commas(193587), "193,587");
        assert_eq!(with_commas(1234567), "1,234,567");
        assert_eq!(with_commas(u64::MAX), "18,446,744,073,709,551,615");
    }

    #[test]
    fn hashes() {
        assert_eq!(format_hash(0x0000_3cd7_9f23_6d1b), "0x003cd79f236d1b");
        assert_eq!(format_hash(0x04b2_008f_d98c_1dd4), "0x4b2008fd98c1dd4");
        assert_eq!(format_hash(0x78cf_1eaa_3745_f83e), "0x78cf1eaa3745f83e");
        assert_eq!(format_hash(0), "0x00000000000000");
    }

    #[test]
    fn c_style_doubles() {
        assert_eq!(two_decimals(f64::NAN), "-nan");
        assert_eq!(two_decimals(1.0 / 0.0), "inf");
        assert_eq!(two_decimals(0.125), "0.12");
        assert_eq!(two_decimals(0.375), "0.38");
        assert_eq!(two_decimals(61.58), "61.58");
    }
}
