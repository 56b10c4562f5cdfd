//! The image description given on the command line: `key=value,key=value`.
//!
//! The description is split on every comma (no quoting or escaping) and each
//! piece at its first `=` (a piece without `=` has an empty value). Pieces go
//! into a [`StringDenseMap`] in order; a repeated key keeps its first slot
//! and its value becomes `old,new`. The map's bucket order is the order in
//! which LLVM 22 writes the string entries, so it is kept here exactly.

use crate::hash::dense_map::StringDenseMap;

use super::OffloadKind;

/// A parsed `--image` value.
#[derive(Debug, Clone)]
pub struct ImageArgs<'a> {
    map: StringDenseMap<&'a [u8], Vec<u8>>,
}

impl<'a> ImageArgs<'a> {
    /// Parses one description.
    pub fn parse(arg: &'a [u8]) -> ImageArgs<'a> {
        let mut map = StringDenseMap::new();
        for piece in arg.split(|&c| c == b',') {
            let (key, value) = match piece.iter().position(|&c| c == b'=') {
                Some(p) => (&piece[..p], &piece[p + 1..]),
                None => (piece, &b""[..]),
            };
            let (slot, inserted) = map.try_insert(key, value.to_vec());
            if !inserted {
                slot.push(b',');
                slot.extend_from_slice(value);
            }
        }
        ImageArgs { map }
    }

    /// The (possibly comma-joined) value of `key`.
    pub fn get(&self, key: &[u8]) -> Option<&[u8]> {
        self.map.get(key).map(Vec::as_slice)
    }

    /// True when `key` was given.
    pub fn contains(&self, key: &[u8]) -> bool {
        self.map.contains_key(key)
    }

    /// All keys and values in LLVM's iteration order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a [u8], &[u8])> + '_ {
        self.map.iter().map(|(k, v)| (*k, v.as_slice()))
    }

    /// The files named by `file=`, split on commas (each becomes its own
    /// binary), or `None` without a `file` key.
    pub fn files(&self) -> Option<Vec<&[u8]>> {
        self.get(b"file").map(|v| v.split(|&c| c == b',').collect())
    }

    /// The offload kind named by `kind=` ([`OffloadKind::NONE`] when absent
    /// or unknown).
    pub fn offload_kind(&self) -> OffloadKind {
        self.get(b"kind")
            .map_or(OffloadKind::NONE, OffloadKind::from_name)
    }

    /// The string entries a packaged binary carries: every key except `file`
    /// and `kind`, in LLVM's order.
    pub fn strings(&self) -> Vec<(&'a [u8], &[u8])> {
        self.iter()
            .filter(|(k, _)| *k != b"file" && *k != b"kind")
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[(&[u8], &[u8])]) -> Vec<(String, String)> {
        v.iter()
            .map(|(k, v)| {
                (
                    String::from_utf8_lossy(k).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                )
            })
            .collect()
    }

    #[test]
    fn clang_shape() {
        let a = ImageArgs::parse(
            b"file=/tmp/a.o,triple=amdgcn-amd-amdhsa,arch=gfx90a:xnack+,kind=openmp,feature=-sramecc,feature=+xnack",
        );
        assert_eq!(
            s(&a.strings()),
            [
                ("feature".into(), "-sramecc,+xnack".into()),
                ("arch".into(), "gfx90a:xnack+".into()),
                ("triple".into(), "amdgcn-amd-amdhsa".into()),
            ]
        );
        assert_eq!(a.offload_kind(), OffloadKind::OPENMP);
        assert_eq!(a.files().unwrap(), [&b"/tmp/a.o"[..]]);
    }

    #[test]
    fn pieces() {
        let a = ImageArgs::parse(b"k=a=b,,noeq,file=x,file=y,kind=openmp,kind=hip");
        assert_eq!(a.get(b"k"), Some(&b"a=b"[..]));
        assert_eq!(a.get(b""), Some(&b""[..]));
        assert_eq!(a.get(b"noeq"), Some(&b""[..]));
        assert_eq!(a.files().unwrap(), [&b"x"[..], b"y"]);
        assert_eq!(a.offload_kind(), OffloadKind::NONE);
        assert!(!a.contains(b"triple"));
        let empty = ImageArgs::parse(b"");
        assert_eq!(empty.get(b""), Some(&b""[..]));
        assert!(empty.files().is_none());
    }
}
