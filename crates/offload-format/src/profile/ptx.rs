//! PTX text split at its `.entry` and `.func` definitions.

use super::{Function, ImageKind, ImageProfile, Shared};

/// Whether `data` starts like PTX text: printable ASCII whose first
/// directive is one a PTX module starts with.
pub(super) fn looks_like_ptx(data: &[u8]) -> bool {
    let head = &data[..data.len().min(4096)];
    let text = crate::bytes::until_nul(head);
    text.is_ascii()
        && [&b".version"[..], b".target", b".address_size"]
            .iter()
            .any(|d| text.windows(d.len()).any(|w| w == *d))
}

/// Reads `data` as PTX: every `.entry` or `.func` with a body is a
/// function; the rest (directives, declarations, globals, the NUL and
/// padding after the text) is shared.
pub(super) fn profile(data: &[u8]) -> ImageProfile {
    let len = data.len() as u64;
    let text = crate::bytes::until_nul(data);
    let mut functions = Vec::new();
    let mut owned = 0u64;
    let mut at = 0usize;
    let mut line_start = 0usize;
    let mut depth = 0usize;
    while at < text.len() {
        let b = text[at];
        match b {
            b'\n' => {
                line_start = at + 1;
                at += 1;
            }
            b'/' if past_comment(text, at).is_some() => {
                at = past_comment(text, at).unwrap_or(at + 1);
            }
            b'"' => at = skip_string(text, at),
            b'{' | b'}' => {
                depth = nest(depth, b, b'{');
                at += 1;
            }
            b'.' if depth == 0 => {
                let kernel = if word_at(text, at, b".entry") {
                    true
                } else if word_at(text, at, b".func") {
                    false
                } else {
                    at += 1;
                    continue;
                };
                match definition(text, at) {
                    Some((name, body_end)) => {
                        let end = end_of_line(text, body_end);
                        let bytes = (end - line_start) as u64;
                        owned += bytes;
                        functions.push(Function {
                            name: name.into(),
                            kernel,
                            code: bytes,
                            bytes,
                        });
                        at = end;
                        line_start = end;
                    }
                    None => at += 1,
                }
            }
            _ => at += 1,
        }
    }
    let mut shared = Vec::new();
    let module = text.len() as u64 - owned;
    if module > 0 {
        shared.push(Shared {
            what: "module directives and globals".to_owned(),
            bytes: module,
        });
    }
    let tail = len - text.len() as u64;
    if tail > 0 {
        shared.push(Shared {
            what: "padding".to_owned(),
            bytes: tail,
        });
    }
    // Keep the invariant even if a body count went wrong.
    debug_assert_eq!(
        functions.iter().map(|f: &Function| f.bytes).sum::<u64>() + module + tail,
        len
    );
    ImageProfile {
        kind: ImageKind::Ptx,
        size: len,
        functions,
        shared,
        damage: Vec::new(),
    }
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'%')
}

/// Whether the directive `word` starts at `at`, as a whole word.
fn word_at(text: &[u8], at: usize, word: &[u8]) -> bool {
    text[at..].starts_with(word)
        && text.get(at + word.len()).is_none_or(|&b| !is_ident(b))
        && (at == 0 || !is_ident(text[at - 1]))
}

fn skip_line(text: &[u8], at: usize) -> usize {
    text[at..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(text.len(), |p| at + p)
}

fn skip_block_comment(text: &[u8], at: usize) -> usize {
    text[at + 2..]
        .windows(2)
        .position(|w| w == b"*/")
        .map_or(text.len(), |p| at + 2 + p + 2)
}

fn skip_string(text: &[u8], at: usize) -> usize {
    let mut i = at + 1;
    while i < text.len() && text[i] != b'"' && text[i] != b'\n' {
        i += 1;
    }
    (i + 1).min(text.len())
}

fn end_of_line(text: &[u8], at: usize) -> usize {
    match text[at..].iter().position(|&b| b == b'\n') {
        Some(p) if text[at..at + p].iter().all(|b| b.is_ascii_whitespace()) => at + p + 1,
        _ => at,
    }
}

/// Where a comment starting at `at` ends (`//` at its line's end, `/*`
/// past its `*/`); `None` where no comment starts.
fn past_comment(text: &[u8], at: usize) -> Option<usize> {
    match text.get(at + 1) {
        Some(b'/') if text[at] == b'/' => Some(skip_line(text, at)),
        Some(b'*') if text[at] == b'/' => Some(skip_block_comment(text, at)),
        _ => None,
    }
}

/// The nesting depth after bracket `b`: one deeper for `open`, one
/// shallower (never below zero) for its closing bracket.
fn nest(depth: usize, b: u8, open: u8) -> usize {
    if b == open {
        depth + 1
    } else {
        depth.saturating_sub(1)
    }
}

/// The definition whose directive starts at `at`: its name and where its
/// body's closing brace ends; `None` for a declaration (`;` before `{`).
fn definition(text: &[u8], at: usize) -> Option<(String, usize)> {
    let mut i = at;
    // Past the directive word.
    while i < text.len() && (text[i] == b'.' || is_ident(text[i])) {
        i += 1;
    }
    let mut name: Option<String> = None;
    let mut parens = 0usize;
    while i < text.len() {
        match text[i] {
            b'/' if past_comment(text, i).is_some() => {
                i = past_comment(text, i).unwrap_or(i + 1);
            }
            b @ (b'(' | b')') => {
                parens = nest(parens, b, b'(');
                i += 1;
            }
            b';' if parens == 0 => return None,
            // A directive between the name and the body (`.noreturn`).
            b'.' if parens == 0 => {
                i += 1;
                while i < text.len() && is_ident(text[i]) {
                    i += 1;
                }
            }
            b'{' if parens == 0 => break,
            b if parens == 0 && name.is_none() && is_ident(b) => {
                let start = i;
                while i < text.len() && is_ident(text[i]) {
                    i += 1;
                }
                name = Some(String::from_utf8_lossy(&text[start..i]).into_owned());
            }
            _ => i += 1,
        }
    }
    let name = name?;
    // The body, to its matching brace.
    let mut depth = 0usize;
    while i < text.len() {
        match text[i] {
            b'/' if text.get(i + 1) == Some(&b'/') => i = skip_line(text, i),
            b'/' if text.get(i + 1) == Some(&b'*') => i = skip_block_comment(text, i),
            b'"' => i = skip_string(text, i),
            b'{' => {
                depth += 1;
                i += 1;
            }
            b'}' => {
                depth -= 1;
                i += 1;
                if depth == 0 {
                    return Some((name, i));
                }
            }
            _ => i += 1,
        }
    }
    // An unterminated body runs to the end of the text.
    Some((name, text.len()))
}
