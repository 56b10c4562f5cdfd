//! `offload ls --summary`: bytes of device code per vendor and GPU
//! architecture over files and trees, and what keeping only one GPU's code
//! would free: the table a container or package builder needs before
//! choosing what to `thin`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use offload_format::nvidia::fatbin::EntryKind;

use crate::model::{Entry, Node, Vendor};
use crate::present::natural;

/// One row: the entries of one vendor, architecture and kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// Whose code.
    pub vendor: Vendor,
    /// `sm_90a`, `gfx90a`, a triple.
    pub arch: String,
    /// `cubin`, `ptx`, `code object`...
    pub kind: String,
    /// How many.
    pub entries: u64,
    /// Bytes as stored in the files ([`Entry::stored`]: inside a
    /// compressed bundle, an entry's share of its compressed bytes).
    pub stored: u64,
    /// Bytes once decoded.
    pub decoded: u64,
}

/// The whole summary.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Files with device code.
    pub files: usize,
    /// Rows, by vendor, architecture, kind.
    pub rows: Vec<Row>,
    /// For each GPU present, what `offload thin --dry-run --keep GPU`
    /// frees over the same inputs.
    pub keep: Vec<(String, Freed)>,
    /// The size of the files with device code (a wheel's members
    /// unpacked), as `thin` reads them.
    pub files_len: u64,
}

/// What `offload thin --dry-run --keep GPU` does for each of some GPUs,
/// and the size of the files it reads.
pub type FreesFn<'a> = dyn FnMut(&[String]) -> (Vec<Freed>, u64) + 'a;

/// What thinning to one GPU does to the inputs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Freed {
    /// Device code bytes freed.
    pub freed: u64,
    /// What the files' sizes go down by (shrunk; files kept in their
    /// layout free their bytes as zeros and keep their size).
    pub smaller: u64,
}

/// The vendor, architecture and kind an entry is counted under; `None` for
/// host entries.
fn key(e: &Entry) -> Option<(Vendor, String, String)> {
    if e.is_host() {
        return None;
    }
    if let Some(nv) = &e.nvidia {
        let kind = match nv.kind {
            EntryKind::Elf => "cubin".to_owned(),
            EntryKind::Ptx => "ptx".to_owned(),
            other => other.name().into_owned(),
        };
        return Some((Vendor::Nvidia, nv.arch.to_string(), kind));
    }
    if let Some(t) = e.amd_target() {
        return Some((
            Vendor::Amd,
            t.processor().to_owned(),
            "code object".to_owned(),
        ));
    }
    let arch = match e.target_text() {
        Some(t) if !t.is_empty() => t.into_owned(),
        _ => e.triple.as_ref().map_or("", |t| t.as_str()).to_owned(),
    };
    let kind = e.payload.as_ref().map_or("unknown", |p| p.name());
    Some((e.vendor, arch, kind.to_owned()))
}

/// The GPU whose `--keep` an entry suggests: the capability of an NVIDIA
/// cubin (`sm_90` for an `sm_90a` or `sm_90` cubin: a GPU that runs it),
/// an AMD processor.
fn gpu(e: &Entry) -> Option<String> {
    match (&e.nvidia, e.amd_target()) {
        (Some(nv), _) if nv.kind == EntryKind::Elf => Some(format!("sm_{}", nv.arch.number())),
        (None, Some(t)) => Some(t.processor().to_owned()),
        _ => None,
    }
}

/// Adds up the entries of `roots`; `frees` says what `offload thin
/// --dry-run --keep GPU` frees over them for each GPU (the summary's promises are
/// thin's own figures).
pub fn summarize(roots: &[Node], frees: &mut FreesFn<'_>) -> Summary {
    let mut rows: BTreeMap<(Vendor, String, String), Row> = BTreeMap::new();
    let mut files = 0;
    let mut all: Vec<&Entry> = Vec::new();
    for root in roots {
        // A zip archive (a wheel) counts as the files it would unpack to.
        let units: Vec<&Node> = if root.children.iter().any(|c| c.file.is_zip_member()) {
            root.children.iter().collect()
        } else {
            vec![root]
        };
        for unit in units {
            let before = all.len();
            unit.visit(&mut Vec::new(), &mut |path| {
                all.extend(path[path.len() - 1].entries.iter());
            });
            if all.len() > before {
                files += 1;
            }
        }
    }
    let mut gpus: Vec<String> = Vec::new();
    for e in &all {
        let Some(k) = key(e) else { continue };
        let row = rows.entry(k.clone()).or_insert_with(|| Row {
            vendor: k.0,
            arch: k.1.clone(),
            kind: k.2.clone(),
            entries: 0,
            stored: 0,
            decoded: 0,
        });
        row.entries += 1;
        row.stored += e.stored;
        row.decoded += e.decoded();
        if let Some(g) = gpu(e) {
            if !gpus.contains(&g) {
                gpus.push(g);
            }
        }
    }
    gpus.sort_by(|a, b| natural(a).cmp(&natural(b)));
    let (freed, files_len) = if gpus.is_empty() {
        (Vec::new(), 0)
    } else {
        frees(&gpus)
    };
    let keep = gpus.into_iter().zip(freed).collect();
    // Architectures in numeric order (`sm_75` before `sm_100`, `gfx90a`
    // before `gfx1030`), as people read them.
    let mut rows: Vec<Row> = rows.into_values().collect();
    rows.sort_by(|a, b| {
        (a.vendor, natural(&a.arch), &a.kind).cmp(&(b.vendor, natural(&b.arch), &b.kind))
    });
    Summary {
        files,
        rows,
        keep,
        files_len,
    }
}

/// The unit of a whole table, chosen by its largest figure: one unit
/// throughout, so that its columns compare at a glance.
fn unit(largest: u64) -> (u32, &'static str) {
    match largest {
        n if n >= 1 << 30 => (30, "GiB"),
        n if n >= 1 << 20 => (20, "MiB"),
        n if n >= 1 << 10 => (10, "KiB"),
        _ => (0, "B"),
    }
}

/// A size in the table's unit.
fn human(n: u64, (shift, name): (u32, &'static str)) -> String {
    if shift == 0 {
        return format!("{n} B");
    }
    format!("{:.1} {name}", n as f64 / (1u64 << shift) as f64)
}

/// The summary as a table.
pub fn text(s: &Summary, out: &mut String) {
    let _ = writeln!(
        out,
        "{:<7} {:<28} {:<12} {:>8} {:>12} {:>12}",
        "vendor", "architecture", "kind", "entries", "stored", "decoded"
    );
    let largest = s.rows.iter().map(|r| r.stored.max(r.decoded)).sum::<u64>();
    let u = unit(largest);
    let (mut entries, mut stored, mut decoded) = (0, 0, 0);
    for r in &s.rows {
        let _ = writeln!(
            out,
            "{:<7} {:<28} {:<12} {:>8} {:>12} {:>12}",
            r.vendor.name(),
            r.arch,
            r.kind,
            r.entries,
            human(r.stored, u),
            human(r.decoded, u)
        );
        entries += r.entries;
        stored += r.stored;
        decoded += r.decoded;
    }
    let _ = writeln!(
        out,
        "{:<7} {:<28} {:<12} {:>8} {:>12} {:>12}",
        "total",
        format!("{} file{}", s.files, if s.files == 1 { "" } else { "s" }),
        "",
        entries,
        human(stored, u),
        human(decoded, u)
    );
    if !s.keep.is_empty() {
        let _ = writeln!(
            out,
            "\n{:<40} {:>12} {:>20} {:>12}",
            "offload thin --dry-run --keep GPU", "frees", "of the device code", "files after"
        );
        for (gpu, f) in &s.keep {
            let _ = writeln!(
                out,
                "{:<40} {:>12} {:>20} {:>12}",
                format!("  --keep {gpu}"),
                human(f.freed, u),
                percent(f.freed, stored),
                human(s.files_len.saturating_sub(f.smaller), u),
            );
        }
        let _ = writeln!(
            out,
            "(files: {} now; shrinking takes the freed bytes out of the files it can)",
            human(s.files_len, u)
        );
    }
}

/// The summary as JSON (docs/tools/offload-json.md, "SUMMARY").
pub fn json(s: &Summary, out: &mut String) {
    let js = crate::render::js;
    let _ = write!(
        out,
        "{{\"schema_version\":{},\"summary\":{{\"files\":{},\"rows\":[",
        crate::render::SCHEMA_VERSION,
        s.files
    );
    for (i, r) in s.rows.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            "{{\"vendor\":{},\"arch\":{},\"kind\":{},\"entries\":{},\"stored_bytes\":{},\"decoded_bytes\":{}}}",
            js(r.vendor.name()),
            js(&r.arch),
            js(&r.kind),
            r.entries,
            r.stored,
            r.decoded
        );
    }
    out.push_str("],\"keep\":[");
    for (i, (gpu, f)) in s.keep.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            "{{\"gpu\":{},\"frees_bytes\":{},\"files_bytes_after\":{}}}",
            js(gpu),
            f.freed,
            s.files_len.saturating_sub(f.smaller)
        );
    }
    let _ = writeln!(out, "],\"files_bytes\":{}}}}}", s.files_len);
}

/// `part` as a share of `whole`, with two decimals, rounded down (100%
/// only when every byte would go; `0.91%`, not `0%`).
fn percent(part: u64, whole: u64) -> String {
    let hundredths = (u128::from(part) * 10_000)
        .checked_div(u128::from(whole))
        .unwrap_or(0);
    format!("{}.{:02}%", hundredths / 100, hundredths % 100)
}

#[cfg(test)]
mod tests {
    use super::{human, percent, unit};
    use crate::present::natural;

    #[test]
    fn architectures_sort_by_number() {
        let mut v = vec![
            "sm_120", "sm_90a", "sm_100f", "sm_75", "sm_90", "sm_100", "gfx1030", "gfx90a",
            "gfx906", "gfx1010", "gfx908", "sm_70",
        ];
        v.sort_by_key(|s| natural(s));
        assert_eq!(
            v,
            [
                "gfx906", "gfx908", "gfx90a", "gfx1010", "gfx1030", "sm_70", "sm_75", "sm_90",
                "sm_90a", "sm_100", "sm_100f", "sm_120"
            ]
        );
    }

    #[test]
    fn percentages_keep_two_decimals() {
        assert_eq!(percent(5595, 10_000), "55.95%");
        assert_eq!(percent(91, 10_000), "0.91%");
        assert_eq!(percent(1, 3), "33.33%");
        assert_eq!(percent(10, 10), "100.00%");
        assert_eq!(percent(9999, 10_000), "99.99%");
        assert_eq!(percent(0, 0), "0.00%");
    }

    #[test]
    fn one_unit_per_table() {
        let u = unit(3 << 20);
        assert_eq!(human(0, u), "0.0 MiB");
        assert_eq!(human(512 * 1024, u), "0.5 MiB");
        assert_eq!(human(14 << 20, u), "14.0 MiB");
        assert_eq!(human(700, unit(900)), "700 B");
        assert_eq!(human(1536, unit(4096)), "1.5 KiB");
    }
}
