//! GNU `ar` archive pieces written byte by byte, for tests and corpus files
//! that need archives the format library's writer never makes (damaged
//! headers, long-name tables pointing anywhere, thin members naming
//! devices).

/// A member header in `ar`'s layout: `name` (with its `/`) in the 16-byte
/// name field, date, owner and group 0, mode 644, `size`, and the "`\n"
/// terminator.
pub fn member_header(name: &str, size: u64) -> Vec<u8> {
    format!("{name:<16}{:<12}{:<6}{:<6}{:<8}{size:<10}`\n", 0, 0, 0, 644).into_bytes()
}

/// The GNU long-name table `//` with its header as `llvm-ar` writes it
/// (blank date, owner, group and mode), padded to an even length.
pub fn long_names(table: &[u8]) -> Vec<u8> {
    let mut v = format!("{:<48}{:<10}`\n", "//", table.len()).into_bytes();
    v.extend_from_slice(table);
    if table.len() % 2 == 1 {
        v.push(b'\n');
    }
    v
}
