//! The three ways `offload ls` prints what it found.

use offload_format::nvidia::{Codec, Variant};
use std::fmt::Write as _;

use crate::model::{Entry, Location, Node, NvEntry, Source};

/// The JSON schema version (docs/tools/offload-json.md). Raised when a
/// field changes meaning or goes away; new fields may appear without it.
pub const SCHEMA_VERSION: u32 = 2;

/// `file://PATH#offset=N&size=M`, the ROCm code object URI.
pub fn uri(file: &Source, offset: u64, size: u64) -> String {
    format!("file://{file}#offset={offset}&size={size}")
}

/// The entry's URI: of its own bytes when contiguous in the file, else of
/// the compressed bundle that holds it; `None` when it has no file range.
pub fn entry_uri(file: &Source, e: &Entry) -> Option<String> {
    match e.location {
        Location::File { offset, size } => Some(uri(file, offset, size)),
        Location::Ccob {
            ccob_offset,
            ccob_size,
            ..
        } => Some(uri(file, ccob_offset, ccob_size)),
        Location::Derived => None,
    }
}

/// `ID<TAB>URI` lines: `llvm-readobj --offloading`'s layout, with the
/// offsets and sizes of the file.
pub fn llvm_lines(root: &Node, out: &mut String) {
    root.visit(&mut Vec::new(), &mut |path| {
        let node = path[path.len() - 1];
        for e in &node.entries {
            if let Some(u) = entry_uri(&node.file, e) {
                let _ = writeln!(out, "{}\t{}", e.id, u);
            }
        }
    });
}

fn human(n: u64) -> String {
    if n < 10 * 1024 {
        format!("{n} B")
    } else if n < 10 * 1024 * 1024 {
        format!("{:.1} KiB", n as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", n as f64 / (1024.0 * 1024.0))
    }
}

fn node_line(n: &Node) -> String {
    let mut s = String::new();
    match n.kind {
        crate::model::NodeKind::File => s.push_str(&n.name),
        crate::model::NodeKind::Member => {
            let _ = write!(s, "member {}", n.name);
        }
        crate::model::NodeKind::Section => {
            let _ = write!(s, "{}", n.name);
        }
        _ => s.push_str(&n.name),
    }
    if let Some(o) = n.offset {
        let _ = write!(s, " @ {o:#x}");
    }
    if let Some(z) = n.size {
        let _ = write!(s, ", {}", human(z));
    }
    if let Some(d) = &n.detail {
        let _ = write!(s, " ({d})");
    }
    s
}

fn entry_lines(file: &Source, e: &Entry) -> Vec<String> {
    let mut first = e.id.clone();
    let what = match (&e.payload, e.payload.as_ref().and_then(|p| p.target())) {
        (Some(p), Some(t)) => format!("{} {t}", p.name()),
        (Some(p), None) => p.name().to_owned(),
        (None, _) => match e.nvidia {
            Some(n) if n.kind.is_opaque() => "NVVM IR".to_owned(),
            Some(NvEntry { codec: Some(c), .. }) => format!("stored compressed ({c})"),
            _ => "in compressed bundle".to_owned(),
        },
    };
    let _ = write!(first, "  [{what}, {}]", human(e.size));
    let mut lines = vec![first];
    match &e.location {
        Location::File { offset, size } => lines.push(uri(file, *offset, *size)),
        Location::Ccob {
            ccob_offset,
            ccob_size,
            offset,
            size,
        } => lines.push(format!(
            "in {} at offset {offset}, size {size} of the decompressed bundle",
            uri(file, *ccob_offset, *ccob_size)
        )),
        Location::Derived => {
            lines.push("not contiguous in the file (decoded from its container)".to_owned())
        }
    }
    if let Some(s) = &e.standardised {
        lines.push(format!("LLVM 22 spelling: {s}"));
    }
    if let Some(nv) = &e.nvidia {
        if let (Some(codec), Some(n)) = (nv.codec, nv.uncompressed_size) {
            lines.push(format!(
                "stored compressed ({codec}), {n} bytes uncompressed"
            ));
        }
    }
    if let Some(n) = &e.note {
        lines.push(format!("note: {n}"));
    }
    if e.payload_matches == Some(false) {
        lines.push(format!(
            "MISMATCH: the payload says {}, the entry says {}",
            e.payload
                .as_ref()
                .and_then(|p| p.target())
                .unwrap_or_else(|| "?".to_owned()),
            e.target_text().unwrap_or("?".into())
        ));
    }
    lines
}

/// The readable tree.
pub fn tree(root: &Node, out: &mut String) {
    let _ = writeln!(out, "{}", node_line(root));
    tree_children(root, "", out);
    let (containers, entries, damage) = root.counts();
    let _ = writeln!(
        out,
        "  = {containers} container{}, {entries} entr{}{}",
        if containers == 1 { "" } else { "s" },
        if entries == 1 { "y" } else { "ies" },
        if damage > 0 {
            format!(
                ", {damage} damaged place{}",
                if damage == 1 { "" } else { "s" }
            )
        } else {
            String::new()
        }
    );
}

fn tree_children(n: &Node, indent: &str, out: &mut String) {
    let total = n.damage.len() + n.entries.len() + n.children.len();
    let mut i = 0;
    let mut branch = |out: &mut String, lines: &[String]| {
        i += 1;
        let last = i == total;
        let (head, cont) = if last {
            ("└─ ", "   ")
        } else {
            ("├─ ", "│  ")
        };
        for (k, l) in lines.iter().enumerate() {
            let _ = writeln!(out, "{indent}{}{l}", if k == 0 { head } else { cont });
        }
        format!("{indent}{cont}")
    };
    for d in &n.damage {
        let at = d
            .offset
            .map(|o| format!(" at offset {o}"))
            .unwrap_or_default();
        branch(out, &[format!("DAMAGE{at}: {}", d.message)]);
    }
    for e in &n.entries {
        let lines: Vec<String> = entry_lines(&n.file, e)
            .into_iter()
            .enumerate()
            .map(|(k, l)| if k == 0 { l } else { format!("  {l}") })
            .collect();
        branch(out, &lines);
    }
    for c in &n.children {
        let next = branch(out, &[node_line(c)]);
        tree_children(c, &next, out);
    }
}

/// JSON string literal.
pub(crate) fn js(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    // Runs that need no escape are copied whole (names of C++ kernels run
    // to thousands of bytes); every byte escaped is ASCII, so the runs
    // between them are whole characters.
    let mut run = 0;
    for (i, b) in s.bytes().enumerate() {
        let escaped = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            b if b < 0x20 => "",
            _ => continue,
        };
        out.push_str(&s[run..i]);
        if escaped.is_empty() {
            let _ = write!(out, "\\u{:04x}", b);
        } else {
            out.push_str(escaped);
        }
        run = i + 1;
    }
    out.push_str(&s[run..]);
    out.push('"');
    out
}

fn opt_str(s: Option<&str>) -> String {
    s.map_or_else(|| "null".to_owned(), js)
}

fn opt_num(n: Option<u64>) -> String {
    n.map_or_else(|| "null".to_owned(), |n| n.to_string())
}

/// The `cuda` object of an NVIDIA entry.
fn cuda_json(n: &NvEntry) -> String {
    format!(
        "{{\"kind\":{},\"arch\":{},\"number\":{},\"variant\":{},\"cuobjdump_name\":{},\"index\":{},\"listed_by_cuobjdump\":{}}}",
        js(n.kind.extension()),
        js(&n.arch.to_string()),
        n.arch.number(),
        js(match n.arch.variant() {
            Variant::Plain => "plain",
            Variant::Specific => "a",
            Variant::Family => "f",
        }),
        js(&n.suffix()),
        n.number,
        !n.unlisted_in
    )
}

fn entry_json(file: &Source, e: &Entry, nesting: &[String], out: &mut String) {
    let location = match &e.location {
        Location::File { offset, size } => format!(
            "{{\"type\":\"file\",\"file\":{},\"offset\":{offset},\"size\":{size},\"uri\":{}}}",
            js(&file.to_string()),
            js(&uri(file, *offset, *size))
        ),
        Location::Ccob {
            ccob_offset,
            ccob_size,
            offset,
            size,
        } => format!(
            "{{\"type\":\"compressed-bundle\",\"file\":{},\"bundle_offset\":{ccob_offset},\"bundle_size\":{ccob_size},\"offset_in_bundle\":{offset},\"size\":{size},\"uri\":{}}}",
            js(&file.to_string()),
            js(&uri(file, *ccob_offset, *ccob_size))
        ),
        Location::Derived => "{\"type\":\"derived\"}".to_owned(),
    };
    let nesting: Vec<String> = nesting.iter().map(|s| js(s)).collect();
    let _ = write!(
        out,
        "{{\"id\":{},\"kind\":{},\"triple\":{},\"target_id\":{},\"standardised_id\":{},\"note\":{},\"payload\":{{\"type\":{},\"target\":{},\"matches_entry\":{}}},\"size\":{},\"compression\":{},\"uncompressed_size\":{},\"cuda\":{},\"location\":{location},\"nesting\":[{}]}}",
        js(&e.id),
        opt_str(e.kind.as_ref().map(|k| k.name())),
        opt_str(e.triple.as_ref().map(|t| t.as_str())),
        opt_str(e.target_text().as_deref()),
        opt_str(e.standardised.as_deref()),
        opt_str(e.note.as_deref()),
        opt_str(e.payload.as_ref().map(|p| p.name())),
        opt_str(e.payload.as_ref().and_then(|p| p.target()).as_deref()),
        e.payload_matches.map_or("null".to_owned(), |b| b.to_string()),
        e.size,
        opt_str(e.nvidia.and_then(|n| n.codec).map(Codec::name)),
        opt_num(e.nvidia.and_then(|n| n.uncompressed_size)),
        e.nvidia.map_or_else(|| "null".to_owned(), |n| cuda_json(&n)),
        nesting.join(",")
    );
}

fn node_json(n: &Node, nesting: &mut Vec<String>, out: &mut String) {
    nesting.push(n.name.clone());
    let _ = write!(
        out,
        "{{\"type\":{},\"name\":{},\"file\":{},\"offset\":{},\"size\":{},\"detail\":{},\"index\":{},\"damage\":[",
        js(n.kind.name()),
        js(&n.name),
        js(&n.file.to_string()),
        opt_num(n.offset),
        opt_num(n.size),
        opt_str(n.detail.as_deref()),
        opt_num(n.index.map(|i| i as u64)),
    );
    for (i, d) in n.damage.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            "{{\"offset\":{},\"message\":{}}}",
            opt_num(d.offset),
            js(&d.message)
        );
    }
    out.push_str("],\"entries\":[");
    for (i, e) in n.entries.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        entry_json(&n.file, e, nesting, out);
    }
    out.push_str("],\"children\":[");
    for (i, c) in n.children.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        node_json(c, nesting, out);
    }
    out.push_str("]}");
    nesting.pop();
}

/// The JSON document for all inputs.
pub fn json(roots: &[Node], out: &mut String) {
    let _ = write!(out, "{{\"schema_version\":{SCHEMA_VERSION},\"files\":[");
    for (i, r) in roots.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        node_json(r, &mut Vec::new(), out);
    }
    out.push_str("]}\n");
}

#[cfg(test)]
mod tests {
    use super::js;

    /// Every control character, both characters JSON escapes, and
    /// multi-byte UTF-8 on either side of them, against the escaping of
    /// one character at a time.
    #[test]
    fn json_strings_escape_what_json_needs() {
        let mut s = String::new();
        for c in (0u32..0x80).chain([0xe9, 0x4e2d, 0x1f600]) {
            s.push(char::from_u32(c).unwrap());
            s.push_str("é中");
        }
        let mut want = String::from("\"");
        for c in s.chars() {
            match c {
                '"' => want.push_str("\\\""),
                '\\' => want.push_str("\\\\"),
                '\n' => want.push_str("\\n"),
                '\r' => want.push_str("\\r"),
                '\t' => want.push_str("\\t"),
                c if (c as u32) < 0x20 => want.push_str(&format!("\\u{:04x}", c as u32)),
                c => want.push(c),
            }
        }
        want.push('"');
        assert_eq!(js(&s), want);
        assert_eq!(js(""), "\"\"");
        assert_eq!(js("plain"), "\"plain\"");
        assert_eq!(js("a\"b\\"), "\"a\\\"b\\\\\"");
    }
}
