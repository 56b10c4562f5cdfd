//! A minimal JSON reader: enough to read `offload ls --json` back in the
//! tool's tests (included there by path) and in `cargo xtask e2e
//! realworld`, without a dependency. Panics on malformed input, which in
//! both places is a failure of the check.
#![allow(dead_code)]

/// A JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum V {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<V>),
    Obj(Vec<(String, V)>),
}

impl V {
    pub fn get(&self, k: &str) -> &V {
        match self {
            V::Obj(m) => m
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v)
                .unwrap_or(&V::Null),
            _ => &V::Null,
        }
    }
    pub fn arr(&self) -> &[V] {
        match self {
            V::Arr(a) => a,
            _ => &[],
        }
    }
    pub fn str(&self) -> Option<&str> {
        match self {
            V::Str(s) => Some(s),
            _ => None,
        }
    }
    pub fn num(&self) -> Option<u64> {
        match self {
            V::Num(n) => Some(*n as u64),
            _ => None,
        }
    }
}

/// Every node of an `offload ls --json` listing (each file, and below it
/// each container and child file), depth first: the one walk of the tree
/// the checks share.
pub fn nodes(doc: &V) -> Vec<&V> {
    fn walk<'a>(n: &'a V, out: &mut Vec<&'a V>) {
        out.push(n);
        for c in n.get("children").arr() {
            walk(c, out);
        }
    }
    let mut out = Vec::new();
    for f in doc.get("files").arr() {
        walk(f, &mut out);
    }
    out
}

/// Parses a whole document.
pub fn parse(s: &str) -> V {
    let b = s.as_bytes();
    let mut i = 0;
    let v = value(b, &mut i);
    ws(b, &mut i);
    assert_eq!(i, b.len(), "trailing bytes in JSON");
    v
}

fn ws(b: &[u8], i: &mut usize) {
    while *i < b.len() && b[*i].is_ascii_whitespace() {
        *i += 1;
    }
}

fn value(b: &[u8], i: &mut usize) -> V {
    ws(b, i);
    match b[*i] {
        b'{' => {
            *i += 1;
            let mut m = Vec::new();
            ws(b, i);
            if b[*i] == b'}' {
                *i += 1;
                return V::Obj(m);
            }
            loop {
                ws(b, i);
                let V::Str(k) = value(b, i) else {
                    panic!("key")
                };
                ws(b, i);
                assert_eq!(b[*i], b':');
                *i += 1;
                m.push((k, value(b, i)));
                ws(b, i);
                *i += 1;
                if b[*i - 1] == b'}' {
                    return V::Obj(m);
                }
            }
        }
        b'[' => {
            *i += 1;
            let mut a = Vec::new();
            ws(b, i);
            if b[*i] == b']' {
                *i += 1;
                return V::Arr(a);
            }
            loop {
                a.push(value(b, i));
                ws(b, i);
                *i += 1;
                if b[*i - 1] == b']' {
                    return V::Arr(a);
                }
            }
        }
        b'"' => {
            *i += 1;
            let mut s = String::new();
            while b[*i] != b'"' {
                if b[*i] == b'\\' {
                    *i += 1;
                    match b[*i] {
                        b'n' => s.push('\n'),
                        b't' => s.push('\t'),
                        b'r' => s.push('\r'),
                        b'u' => {
                            let h = std::str::from_utf8(&b[*i + 1..*i + 5]).unwrap();
                            s.push(char::from_u32(u32::from_str_radix(h, 16).unwrap()).unwrap());
                            *i += 4;
                        }
                        c => s.push(c as char),
                    }
                    *i += 1;
                } else {
                    let start = *i;
                    while b[*i] != b'"' && b[*i] != b'\\' {
                        *i += 1;
                    }
                    s.push_str(std::str::from_utf8(&b[start..*i]).unwrap());
                }
            }
            *i += 1;
            V::Str(s)
        }
        b't' => {
            *i += 4;
            V::Bool(true)
        }
        b'f' => {
            *i += 5;
            V::Bool(false)
        }
        b'n' => {
            *i += 4;
            V::Null
        }
        _ => {
            let start = *i;
            while *i < b.len() && (b[*i] == b'-' || b[*i] == b'.' || b[*i].is_ascii_digit()) {
                *i += 1;
            }
            V::Num(std::str::from_utf8(&b[start..*i]).unwrap().parse().unwrap())
        }
    }
}
