//! LLVM's POSIX path rules for the last component of a path, its stem and
//! its extension, on raw bytes.
//!
//! They differ from Rust's `Path` in a few corners that decide output names
//! and image kinds: a path ending in `/` has the last component `.`, a
//! leading `//name` is a single root component, `.o` has the extension `o`
//! and the stem `""`, and `trail.` has an empty extension.

fn root_dir_start(p: &[u8]) -> Option<usize> {
    // "//net" style root names: the root directory is the next separator.
    if p.len() > 3 && p[0] == b'/' && p[1] == b'/' && p[2] != b'/' {
        return p[2..].iter().position(|&c| c == b'/').map(|i| i + 2);
    }
    if p.first() == Some(&b'/') {
        return Some(0);
    }
    None
}

fn filename_pos(s: &[u8]) -> usize {
    if s.last() == Some(&b'/') {
        return s.len() - 1;
    }
    match s.iter().rposition(|&c| c == b'/') {
        None => 0,
        Some(1) if s[0] == b'/' => 0,
        Some(p) => p + 1,
    }
}

/// The last component of `path` (LLVM's `sys::path::filename`).
pub fn filename(path: &[u8]) -> &[u8] {
    if path.is_empty() {
        return path;
    }
    let root = root_dir_start(path);
    let mut end = path.len();
    while end > 0 && Some(end - 1) != root && path[end - 1] == b'/' {
        end -= 1;
    }
    let past_root = match root {
        None => true,
        Some(r) => end - 1 > r,
    };
    if path[path.len() - 1] == b'/' && past_root {
        return b".";
    }
    let start = filename_pos(&path[..end]);
    &path[start..end]
}

/// `filename(path)` without its extension (LLVM's `sys::path::stem`).
pub fn stem(path: &[u8]) -> &[u8] {
    let name = filename(path);
    if name == b"." || name == b".." {
        return name;
    }
    match name.iter().rposition(|&c| c == b'.') {
        None => name,
        Some(p) => &name[..p],
    }
}

/// The extension of `path` without the dot, or `None` when it has none
/// (LLVM's `has_extension` / `extension`). `trail.` has the extension `""`.
pub fn extension(path: &[u8]) -> Option<&[u8]> {
    let name = filename(path);
    if name == b"." || name == b".." {
        return None;
    }
    name.iter()
        .rposition(|&c| c == b'.')
        .map(|p| &name[p + 1..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llvm_path_corners() {
        let cases: &[(&str, &str, &str, Option<&str>)] = &[
            // path, filename, stem, extension
            ("a.o", "a.o", "a", Some("o")),
            ("dir/x.bin", "x.bin", "x", Some("bin")),
            (".hidden", ".hidden", "", Some("hidden")),
            ("-", "-", "-", None),
            ("my.tar.gz", "my.tar.gz", "my.tar", Some("gz")),
            ("trail.", "trail.", "trail", Some("")),
            ("..o", "..o", ".", Some("o")),
            ("d.x/noext", "noext", "noext", None),
            ("dir/", ".", ".", None),
            ("/", "/", "/", None),
            ("//net", "//net", "//net", None),
            ("//net/a.b", "a.b", "a", Some("b")),
            ("a//b.c", "b.c", "b", Some("c")),
            ("..", "..", "..", None),
            ("", "", "", None),
        ];
        for (p, f, s, e) in cases {
            let p = p.as_bytes();
            assert_eq!(filename(p), f.as_bytes(), "filename {p:?}");
            assert_eq!(stem(p), s.as_bytes(), "stem {p:?}");
            assert_eq!(extension(p), e.map(str::as_bytes), "extension {p:?}");
        }
    }
}
