//! What the inputs hold, for messages and listings: the entries of the
//! trees, the spellings present, the nearest one to a value, and the
//! order people read architectures in. Depends on the model only.

use std::path::PathBuf;

use offload_format::nvidia::fatbin::EntryKind;

use crate::model::{Entry, Node};

/// Every entry of the trees, in listing order; of packed fat binary
/// containers ([`crate::model::Packed`]), each distinct one once.
pub fn all_entries(roots: &[Node]) -> Vec<&Entry> {
    let mut out = Vec::new();
    for root in roots {
        root.visit(&mut Vec::new(), &mut |path| {
            let n = path[path.len() - 1];
            out.extend(n.entries.iter());
            if let Some(p) = &n.packed {
                out.extend(p.shapes.iter());
            }
        });
    }
    out
}

/// The input names, for messages: `a.so`, `a.so and b.o`, `a.so, b.o and
/// c.a`.
pub fn file_list(files: &[PathBuf]) -> String {
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    match names.len() {
        0 => String::new(),
        1 => names[0].clone(),
        n => format!("{} and {}", names[..n - 1].join(", "), names[n - 1]),
    }
}

/// Edit distance (Levenshtein), by characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(row[j]).min(row[j + 1])
            };
            prev = cur;
        }
    }
    row[b.len()]
}

/// The spellings of the targets present (target IDs, entry IDs, triples,
/// CUDA architectures), sorted, without repeats.
pub fn spellings_present(entries: &[&Entry]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in entries {
        let mut add = |s: &str| {
            if !s.is_empty() && !out.iter().any(|o| o == s) {
                out.push(s.to_owned());
            }
        };
        add(&e.id);
        if let Some(t) = e.target_text() {
            add(&t);
        }
        if let Some(t) = &e.triple {
            add(t.as_str());
        }
        if let Some(s) = &e.standardised {
            add(s);
        }
        if let Some(nv) = &e.nvidia {
            add(&nv.arch.cuobjdump_name(nv.kind == EntryKind::Ptx));
        }
    }
    out.sort_by(|a, b| natural(a).cmp(&natural(b)));
    out
}

/// A sort key that orders architectures as people read them: runs of
/// digits by their value (`sm_90a` < `sm_100`), and an AMDGPU processor
/// by its version, whose last two characters are the minor version and
/// the stepping, in hexadecimal (`gfx906` < `gfx90a` < `gfx1010`).
pub fn natural(s: &str) -> Vec<(u64, &str)> {
    let mut out = Vec::new();
    let mut rest = s;
    if let Some(v) = s.strip_prefix("gfx") {
        let end = v.find(':').unwrap_or(v.len());
        let version = &v[..end];
        if version.len() >= 3 && version.is_ascii() {
            let (major, tail) = version.split_at(version.len() - 2);
            if let (Ok(major), Ok(tail)) = (major.parse::<u64>(), u64::from_str_radix(tail, 16)) {
                out.push((0, "gfx"));
                out.push((major, ""));
                out.push((tail, ""));
                rest = &v[end..];
            }
        }
    }
    while !rest.is_empty() {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 {
            let (d, r) = rest.split_at(digits);
            out.push((d.parse().unwrap_or(u64::MAX), ""));
            rest = r;
        } else {
            let text = rest.len() - rest.trim_start_matches(|c: char| !c.is_ascii_digit()).len();
            let (t, r) = rest.split_at(text);
            out.push((0, t));
            rest = r;
        }
    }
    out
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count()
}

/// The spelling present nearest to `text`, if near enough to be a typo
/// of it (at most a third of its length away, and at least 1).
pub fn nearest<'a>(text: &str, present: &'a [String]) -> Option<&'a str> {
    let limit = (text.chars().count() / 3).max(1);
    present
        .iter()
        .map(|p| (edit_distance(text, p), p))
        .filter(|(d, _)| *d <= limit)
        // The nearer, then the longer the shared start.
        .min_by_key(|(d, p)| (*d, usize::MAX - common_prefix(text, p)))
        .map(|(_, p)| p.as_str())
}

/// The targets present, for a message: the target IDs (or, where entries
/// have none, their IDs), sorted.
pub fn targets_present(entries: &[&Entry]) -> String {
    let mut out: Vec<String> = entries
        .iter()
        .filter(|e| !e.is_host())
        .map(|e| match e.target_text() {
            Some(t) if !t.is_empty() => t.into_owned(),
            _ => e.id.clone(),
        })
        .collect();
    out.sort_by(|a, b| natural(a).cmp(&natural(b)));
    out.dedup();
    if out.is_empty() {
        "none (no device code)".to_owned()
    } else {
        out.join(", ")
    }
}
