//! Python wheels (PEP 427): which member is the `RECORD`, and a `RECORD`
//! with the hash and size of changed members replaced.
//!
//! `RECORD` is a CSV file with one `path,sha256=<digest>,<size>` line per
//! member (the digest in URL-safe base64 without padding; `RECORD` itself,
//! and its signatures, with empty fields). Only the lines of changed
//! members are rewritten: their path is kept byte for byte, quoting
//! included, and every other line is left as it was.

use base64::Engine;

/// Whether `name` is a wheel's `RECORD`: `<name>-<version>.dist-info/RECORD`
/// at the top of the archive.
pub fn is_record(name: &[u8]) -> bool {
    let Some(dir) = name.strip_suffix(b"/RECORD") else {
        return false;
    };
    dir.ends_with(b".dist-info") && !dir.contains(&b'/')
}

/// Whether `name` is a signature of a wheel's `RECORD` (`RECORD.jws`,
/// `RECORD.p7s`), which a change to any member invalidates.
pub fn is_record_signature(name: &[u8]) -> bool {
    [b"/RECORD.jws".as_slice(), b"/RECORD.p7s"]
        .iter()
        .any(|s| name.ends_with(s))
}

/// The `hash` field for a member with this SHA-256 digest.
pub fn hash_field(sha256: &[u8; 32]) -> String {
    format!(
        "sha256={}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha256)
    )
}

/// A new member line's hash and size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change<'a> {
    /// The member's name in the archive.
    pub name: &'a [u8],
    /// SHA-256 of its new contents.
    pub sha256: [u8; 32],
    /// Its new size.
    pub size: u64,
}

/// Why a `RECORD` could not be updated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordError {
    /// A changed member has no line.
    Missing(String),
    /// A line's quoting is not closed.
    BadLine(usize),
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordError::Missing(name) => write!(f, "RECORD has no line for {name}"),
            RecordError::BadLine(n) => write!(f, "RECORD line {n}: a quoted field is not closed"),
        }
    }
}

impl std::error::Error for RecordError {}

/// The first field of a CSV line (unquoted), and where it ends in `line`.
fn first_field(line: &[u8]) -> Option<(Vec<u8>, usize)> {
    if line.first() != Some(&b'"') {
        let end = line.iter().position(|&c| c == b',').unwrap_or(line.len());
        return Some((line[..end].to_vec(), end));
    }
    let mut out = Vec::new();
    let mut i = 1;
    while i < line.len() {
        match line[i] {
            b'"' if line.get(i + 1) == Some(&b'"') => {
                out.push(b'"');
                i += 2;
            }
            b'"' => return Some((out, i + 1)),
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    None
}

/// `record` with the lines of `changes` carrying their new hash and size.
/// Lines keep their own ending (`\n` or `\r\n`).
pub fn update_record(record: &[u8], changes: &[Change<'_>]) -> Result<Vec<u8>, RecordError> {
    let mut done = vec![false; changes.len()];
    let mut out = Vec::with_capacity(record.len() + changes.len() * 8);
    for (n, raw) in record.split_inclusive(|&c| c == b'\n').enumerate() {
        let body_len = raw.len()
            - if raw.ends_with(b"\r\n") {
                2
            } else if raw.ends_with(b"\n") {
                1
            } else {
                0
            };
        let (body, ending) = raw.split_at(body_len);
        let (path, end) = first_field(body).ok_or(RecordError::BadLine(n + 1))?;
        match changes.iter().position(|c| c.name == path.as_slice()) {
            Some(i) => {
                done[i] = true;
                out.extend_from_slice(&body[..end]);
                let c = &changes[i];
                out.extend_from_slice(format!(",{},{}", hash_field(&c.sha256), c.size).as_bytes());
                out.extend_from_slice(ending);
            }
            None => out.extend_from_slice(raw),
        }
    }
    if let Some(i) = done.iter().position(|d| !d) {
        return Err(RecordError::Missing(
            String::from_utf8_lossy(changes[i].name).into_owned(),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_names() {
        assert!(is_record(b"torch-2.11.0.dist-info/RECORD"));
        assert!(!is_record(b"torch/x.dist-info/RECORD"));
        assert!(!is_record(b"torch-2.11.0.dist-info/RECORD.jws"));
        assert!(is_record_signature(b"a-1.dist-info/RECORD.jws"));
    }

    #[test]
    fn changed_lines_only_are_rewritten() {
        let record =
            b"a/lib.so,sha256=old,10\r\n\"b/we,ird.so\",sha256=x,3\nc-1.dist-info/RECORD,,\n";
        let d = [7u8; 32];
        let out = update_record(
            record,
            &[
                Change {
                    name: b"a/lib.so",
                    sha256: d,
                    size: 4,
                },
                Change {
                    name: b"b/we,ird.so",
                    sha256: d,
                    size: 5,
                },
            ],
        )
        .unwrap();
        let h = hash_field(&d);
        let want = format!("a/lib.so,{h},4\r\n\"b/we,ird.so\",{h},5\nc-1.dist-info/RECORD,,\n");
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }

    #[test]
    fn hash_is_urlsafe_base64_without_padding() {
        // SHA-256 of the empty string, as pip writes it.
        let d: [u8; 32] = [
            0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f,
            0xb9, 0x24, 0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b,
            0x78, 0x52, 0xb8, 0x55,
        ];
        assert_eq!(
            hash_field(&d),
            "sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"
        );
    }

    #[test]
    fn a_missing_line_is_an_error() {
        let e = update_record(
            b"x,,\n",
            &[Change {
                name: b"y",
                sha256: [0; 32],
                size: 1,
            }],
        )
        .unwrap_err();
        assert_eq!(e, RecordError::Missing("y".into()));
    }
}
