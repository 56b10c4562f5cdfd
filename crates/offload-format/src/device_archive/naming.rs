//! Names of the members of the per-target output archives.
//!
//! LLVM 22 names the code object taken from input member `M` for entry `E`
//!
//! ```text
//! stem(M) "-" E stem(M) ext
//! ```
//!
//! with every `:` replaced by `_`, where `M` is the last path component of
//! the member name, `E` is the entry ID exactly as stored in the member,
//! and `ext` is `.bc` when the entry's target ID contains `gfx`, `.cubin`
//! when it contains `sm_`, and `M`'s own extension otherwise. The path
//! helpers below follow LLVM's POSIX path rules, which differ from Rust's
//! `Path` in the corner cases (`dir/` has the file name `.`, `.hidden` has
//! an empty stem, `//x` is a network root).

/// The last component of `path` as LLVM's `sys::path::filename` sees it
/// (POSIX style): a trailing `/` gives `.`, the root `/` is itself, and a
/// path that starts with `//` followed by a name keeps that prefix.
pub fn file_name(path: &[u8]) -> &[u8] {
    let root = root_dir_start(path);
    let mut end = path.len();
    while end > 0 && Some(end - 1) != root && path[end - 1] == b'/' {
        end -= 1;
    }
    // With a root, the loop above stops at it, so `end >= 1` here.
    if path.last() == Some(&b'/') && root.is_none_or(|r| end - 1 > r) {
        return b".";
    }
    let head = &path[..end];
    &head[file_name_start(head)..]
}

/// Where the root directory separator is, if the path has one: `/x` has it
/// at 0; `//name/...` (a network root) at the separator after `name`.
fn root_dir_start(path: &[u8]) -> Option<usize> {
    if path.len() > 3 && path[0] == b'/' && path[1] == b'/' && path[2] != b'/' {
        return path[2..].iter().position(|&b| b == b'/').map(|p| p + 2);
    }
    (path.first() == Some(&b'/')).then_some(0)
}

/// Start of the last component of `path` (which has no trailing separator
/// unless it is a root).
fn file_name_start(path: &[u8]) -> usize {
    if path.last() == Some(&b'/') {
        return path.len() - 1;
    }
    match path.iter().rposition(|&b| b == b'/') {
        None => 0,
        Some(1) if path[0] == b'/' => 0,
        Some(p) => p + 1,
    }
}

/// LLVM's `sys::path::stem`: the file name up to its last `.` (`.` and
/// `..` are kept whole; `.hidden` gives an empty stem).
pub fn stem(path: &[u8]) -> &[u8] {
    let name = file_name(path);
    match name.iter().rposition(|&b| b == b'.') {
        None => name,
        Some(_) if name == b"." || name == b".." => name,
        Some(p) => &name[..p],
    }
}

/// LLVM's `sys::path::extension`: the file name from its last `.` on, or
/// nothing.
pub fn extension(path: &[u8]) -> &[u8] {
    let name = file_name(path);
    match name.iter().rposition(|&b| b == b'.') {
        None => b"",
        Some(_) if name == b"." || name == b".." => b"",
        Some(p) => &name[p..],
    }
}

/// The extension LLVM 22 gives a device code object: by the entry's kept
/// target ID (`gfx…` → `.bc`, `sm_…` → `.cubin`), else the member's own.
pub(crate) fn device_extension<'a>(target_id: &str, member_file: &'a [u8]) -> &'a [u8] {
    if target_id.contains("gfx") {
        b".bc"
    } else if target_id.contains("sm_") {
        b".cubin"
    } else {
        extension(member_file)
    }
}

/// The output member name for entry `entry_id` (as stored) with kept
/// target ID `target_id`, taken from the input member named `member_name`
/// (the full stored name; only its last component is used).
#[cfg(test)]
fn output_member_name(member_name: &[u8], entry_id: &[u8], target_id: &str) -> Vec<u8> {
    let mut name = Vec::new();
    output_member_name_into(&mut name, member_name, entry_id, target_id);
    name
}

/// [`output_member_name`] into `name` (cleared first), so that a caller
/// naming many members reuses one buffer.
pub(crate) fn output_member_name_into(
    name: &mut Vec<u8>,
    member_name: &[u8],
    entry_id: &[u8],
    target_id: &str,
) {
    let file = file_name(member_name);
    let stem = stem(file);
    let ext = device_extension(target_id, file);
    name.clear();
    name.reserve(2 * stem.len() + entry_id.len() + ext.len() + 1);
    name.extend_from_slice(stem);
    name.push(b'-');
    name.extend_from_slice(entry_id);
    name.extend_from_slice(stem);
    name.extend_from_slice(ext);
    for b in name.iter_mut() {
        if *b == b':' {
            *b = b'_';
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(b: &[u8]) -> &str {
        std::str::from_utf8(b).unwrap()
    }

    #[test]
    fn file_names_follow_llvm_posix_rules() {
        let cases: &[(&str, &str)] = &[
            ("k.o", "k.o"),
            ("dir/k.o", "k.o"),
            ("/abs/dir/k.o", "k.o"),
            ("/k.o", "k.o"),
            ("../k.o", "k.o"),
            ("dir/", "."),
            ("dir//", "."),
            ("/", "/"),
            ("", ""),
            ("//net", "//net"),
            ("//k.o", "//k.o"),
            ("//net/k.o", "k.o"),
            ("///k.o", "k.o"),
            ("a/.hidden", ".hidden"),
        ];
        for (path, want) in cases {
            assert_eq!(s(file_name(path.as_bytes())), *want, "filename({path:?})");
        }
    }

    #[test]
    fn stems_and_extensions() {
        let cases: &[(&str, &str, &str)] = &[
            ("k_gfx906.o", "k_gfx906", ".o"),
            ("a.b.o", "a.b", ".o"),
            (".hidden", "", ".hidden"),
            ("foo", "foo", ""),
            (".", ".", ""),
            ("..", "..", ""),
            ("x.", "x", "."),
            ("dir/", ".", ""),
        ];
        for (path, st, ext) in cases {
            assert_eq!(s(stem(path.as_bytes())), *st, "stem({path:?})");
            assert_eq!(s(extension(path.as_bytes())), *ext, "extension({path:?})");
        }
    }

    /// The spec's worked examples (C3), all checked against 22.
    #[test]
    fn output_names_of_the_worked_examples() {
        let cases: &[(&str, &str, &str, &str)] = &[
            (
                "k_gfx906.o",
                "hip-amdgcn-amd-amdhsa--gfx906",
                "gfx906",
                "k_gfx906-hip-amdgcn-amd-amdhsa--gfx906k_gfx906.bc",
            ),
            (
                "k_gfx906_xnack+.o",
                "hip-amdgcn-amd-amdhsa--gfx906:xnack+",
                "gfx906:xnack+",
                "k_gfx906_xnack+-hip-amdgcn-amd-amdhsa--gfx906_xnack+k_gfx906_xnack+.bc",
            ),
            (
                "a.b.o",
                "openmp-nvptx64-nvidia-cuda--sm_70",
                "sm_70",
                "a.b-openmp-nvptx64-nvidia-cuda--sm_70a.b.cubin",
            ),
            (
                ".hidden",
                "openmp-nvptx64-nvidia-cuda--sm_70",
                "sm_70",
                "-openmp-nvptx64-nvidia-cuda--sm_70.cubin",
            ),
            (
                "x:y.o",
                "openmp-nvptx64-nvidia-cuda--sm_70",
                "sm_70",
                "x_y-openmp-nvptx64-nvidia-cuda--sm_70x_y.cubin",
            ),
            (
                "foo",
                "hip-spirv64-amd-amdhsa--amdgcnspirv",
                "amdgcnspirv",
                "foo-hip-spirv64-amd-amdhsa--amdgcnspirvfoo",
            ),
            (
                "k_gfx906.o",
                "host-x86_64-pc-linux-gnu-",
                "",
                "k_gfx906-host-x86_64-pc-linux-gnu-k_gfx906.o",
            ),
            (
                "gen.o",
                "hip-amdgcn-amd-amdhsa--gfx9-generic:xnack+",
                "gfx9-generic:xnack+",
                "gen-hip-amdgcn-amd-amdhsa--gfx9-generic_xnack+gen.bc",
            ),
            // A thin archive stores paths; only the last component counts.
            (
                "sub/dir/k.o",
                "hip-amdgcn-amd-amdhsa--gfx90a",
                "gfx90a",
                "k-hip-amdgcn-amd-amdhsa--gfx90ak.bc",
            ),
            // An entry whose target ID was dropped keeps the member's
            // extension even though its text mentions gfx.
            (
                "m.o",
                "hip-amdgcn-amd-amdhsa-gfx906",
                "",
                "m-hip-amdgcn-amd-amdhsa-gfx906m.o",
            ),
        ];
        for (member, id, tid, want) in cases {
            let got = output_member_name(member.as_bytes(), id.as_bytes(), tid);
            assert_eq!(s(&got), *want, "member {member:?}, entry {id:?}");
        }
    }
}
