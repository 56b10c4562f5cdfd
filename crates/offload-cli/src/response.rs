//! `@file` response-file expansion with the GNU tokenizer, as LLVM's tools
//! do it before option parsing.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// Expands every `@file` argument (after argv[0]) in place, recursively.
/// A file that cannot be read leaves the argument as it is: LLVM treats it as
/// an ordinary argument, which later fails as an unknown option or input.
pub fn expand(args: Vec<OsString>) -> Vec<OsString> {
    let mut out = Vec::with_capacity(args.len());
    let mut iter = args.into_iter();
    if let Some(argv0) = iter.next() {
        out.push(argv0);
    }
    // A stack of pending arguments keeps nested expansion iterative; the
    // depth counter stops a file that includes itself.
    let mut pending: Vec<(OsString, usize)> = iter.rev().map(|a| (a, 0)).collect();
    while let Some((arg, depth)) = pending.pop() {
        let bytes = arg.as_bytes();
        if bytes.first() == Some(&b'@') && depth < 64 {
            let path = std::path::Path::new(std::ffi::OsStr::from_bytes(&bytes[1..]));
            if let Ok(content) = std::fs::read(path) {
                if std::fs::metadata(path)
                    .map(|m| m.is_file())
                    .unwrap_or(false)
                {
                    for tok in tokenize_gnu(&strip_bom(&content)).into_iter().rev() {
                        pending.push((OsString::from_vec(tok), depth + 1));
                    }
                    continue;
                }
            }
        }
        out.push(arg);
    }
    out
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
    use super::tokenize_gnu;

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
