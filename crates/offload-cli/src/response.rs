//! `@file` response-file expansion with the GNU tokenizer, as LLVM's tools
//! do it before option parsing.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// A response file being expanded: its identity, the name it was first
/// reached by (made absolute, as LLVM reports it), and the file whose
/// expansion included it.
struct Open {
    id: (u64, u64),
    path: std::path::PathBuf,
    parent: Option<usize>,
}

/// Expands every `@file` argument (after `argv[0]`) in place, recursively.
/// A file that cannot be read leaves the argument as it is: LLVM treats it as
/// an ordinary argument, which later fails as an unknown option or input.
///
/// A file that includes itself, directly or through others, is detected by
/// file identity (so a symlink to it counts). LLVM 22 then fails with
/// `recursive expansion of: '<path>'` (the `Err` text, naming the file as
/// first reached); LLVM 14 (`llvm14`) keeps the repeated `@file` argument as
/// it is and goes on.
pub fn expand(args: Vec<OsString>, llvm14: bool) -> Result<Vec<OsString>, String> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::with_capacity(args.len());
    let mut iter = args.into_iter();
    if let Some(argv0) = iter.next() {
        out.push(argv0);
    }
    let mut open: Vec<Open> = Vec::new();
    // A stack of pending arguments keeps nested expansion iterative; each
    // remembers the response file it came from.
    let mut pending: Vec<(OsString, Option<usize>)> = iter.rev().map(|a| (a, None)).collect();
    while let Some((arg, parent)) = pending.pop() {
        let bytes = arg.as_bytes();
        if bytes.first() == Some(&b'@') {
            let path = std::path::Path::new(std::ffi::OsStr::from_bytes(&bytes[1..]));
            let file = std::fs::metadata(path).ok().filter(|m| m.is_file());
            if let (Some(md), Ok(content)) = (file, std::fs::read(path)) {
                let id = (md.dev(), md.ino());
                let mut ancestor = parent;
                while let Some(i) = ancestor {
                    if open[i].id == id {
                        break;
                    }
                    ancestor = open[i].parent;
                }
                if let Some(i) = ancestor {
                    if llvm14 {
                        out.push(arg);
                        continue;
                    }
                    return Err(format!(
                        "recursive expansion of: '{}'",
                        open[i].path.display()
                    ));
                }
                let absolute = std::env::current_dir()
                    .map(|d| d.join(path))
                    .unwrap_or_else(|_| path.to_path_buf());
                open.push(Open {
                    id,
                    path: absolute,
                    parent,
                });
                let me = Some(open.len() - 1);
                for tok in tokenize_gnu(&strip_bom(&content)).into_iter().rev() {
                    pending.push((OsString::from_vec(tok), me));
                }
                continue;
            }
        }
        out.push(arg);
    }
    Ok(out)
}

fn strip_bom(content: &[u8]) -> Vec<u8> {
    content
        .strip_prefix(b"\xEF\xBB\xBF")
        .unwrap_or(content)
        .to_vec()
}

/// GNU-style tokenizing: whitespace separates, single and double quotes
/// group, a backslash takes the next byte literally (inside quotes too).
/// An empty token (`""`) produces nothing, as in LLVM.
pub fn tokenize_gnu(src: &[u8]) -> Vec<Vec<u8>> {
    let mut tokens = Vec::new();
    let mut token = Vec::new();
    let mut i = 0;
    while i < src.len() {
        let c = src[i];
        if c == b'\\' && i + 1 < src.len() {
            token.push(src[i + 1]);
            i += 2;
            continue;
        }
        if c == b'"' || c == b'\'' {
            i += 1;
            while i < src.len() && src[i] != c {
                if src[i] == b'\\' && i + 1 < src.len() {
                    i += 1;
                }
                token.push(src[i]);
                i += 1;
            }
            if i == src.len() {
                break;
            }
            i += 1;
            continue;
        }
        if matches!(c, b' ' | b'\t' | b'\r' | b'\n') {
            if !token.is_empty() {
                tokens.push(std::mem::take(&mut token));
            }
            i += 1;
            continue;
        }
        token.push(c);
        i += 1;
    }
    if !token.is_empty() {
        tokens.push(token);
    }
    tokens
}

#[cfg(test)]
mod tests {
    use super::{expand, tokenize_gnu};
    use std::ffi::OsString;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    /// `@r` holding `@r @r` doubled the work at each level (a hang); LLVM
    /// 22 reports the recursion, naming the file by the path first used.
    #[test]
    fn self_inclusion_is_reported_not_expanded_forever() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path().join("r.rsp");
        std::fs::write(&r, format!("@{0} @{0}", r.display())).unwrap();
        let e = expand(args(&["tool", &format!("@{}", r.display())]), false).unwrap_err();
        assert_eq!(e, format!("recursive expansion of: '{}'", r.display()));
    }

    #[test]
    fn recursion_through_other_files_and_links() {
        let d = tempfile::tempdir().unwrap();
        let (a, b, link) = (d.path().join("a"), d.path().join("b"), d.path().join("l"));
        std::fs::write(&a, format!("-x @{}", b.display())).unwrap();
        std::fs::write(&b, format!("-y @{}", link.display())).unwrap();
        std::os::unix::fs::symlink(&a, &link).unwrap();
        let e = expand(args(&["tool", &format!("@{}", a.display())]), false).unwrap_err();
        assert_eq!(e, format!("recursive expansion of: '{}'", a.display()));
        // LLVM 14 keeps the repeated reference as a plain argument.
        let v = expand(args(&["tool", &format!("@{}", a.display())]), true).unwrap();
        assert_eq!(
            v,
            args(&["tool", "-x", "-y", &format!("@{}", link.display())])
        );
    }

    #[test]
    fn a_file_used_twice_side_by_side_is_not_recursion() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        std::fs::write(&b, "-z").unwrap();
        std::fs::write(&a, format!("@{0} @{0}", b.display())).unwrap();
        let v = expand(
            args(&["tool", &format!("@{}", a.display()), "@/no/such"]),
            false,
        );
        assert_eq!(v.unwrap(), args(&["tool", "-z", "-z", "@/no/such"]));
    }

    fn toks(s: &str) -> Vec<String> {
        tokenize_gnu(s.as_bytes())
            .into_iter()
            .map(|t| String::from_utf8(t).unwrap())
            .collect()
    }

    #[test]
    fn gnu_rules() {
        assert_eq!(toks("a \"\" b"), ["a", "b"]);
        assert_eq!(
            toks("'x y' \"p\\q\" c\\ d # e\n"),
            ["x y", "pq", "c d", "#", "e"]
        );
        assert_eq!(toks("a'b c'd"), ["ab cd"]);
        assert_eq!(toks("  \t\r\n"), Vec::<String>::new());
        assert_eq!(toks("'unterminated"), ["unterminated"]);
        assert_eq!(toks("end\\"), ["end\\"]);
    }
}
