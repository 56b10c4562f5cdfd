//! `offload ls --summary`: bytes of device code per vendor and GPU
//! architecture over files and trees, and what keeping only one GPU's code
//! would free: the table a container or package builder needs before
//! choosing what to `thin`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use offload_format::nvidia::fatbin::EntryKind;
use offload_format::nvidia::CudaArch;

use crate::model::{Entry, Node};

/// One row: the entries of one vendor, architecture and kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Row {
    /// `NVIDIA`, `AMD` or `other`.
    pub vendor: &'static str,
    /// `sm_90a`, `gfx90a`, a triple.
    pub arch: String,
    /// `cubin`, `ptx`, `code object`...
    pub kind: String,
    /// How many.
    pub entries: u64,
    /// Bytes as stored in the files.
    pub stored: u64,
    /// Bytes once decoded (compressed NVIDIA entries; the stored size
    /// otherwise).
    pub decoded: u64,
}

/// The whole summary.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Files with device code.
    pub files: usize,
    /// Rows, by vendor, architecture, kind.
    pub rows: Vec<Row>,
    /// For each GPU present, what `offload thin --keep GPU` would free at
    /// most (stored bytes of the entries of its vendor it cannot use).
    pub keep: Vec<(String, u64)>,
}

/// The vendor, architecture and kind an entry is counted under; `None` for
/// host entries.
fn key(e: &Entry) -> Option<(&'static str, String, String)> {
    if e.kind.as_deref() == Some("host") {
        return None;
    }
    if let Some(nv) = &e.nvidia {
        let kind = match nv.kind {
            EntryKind::Elf => "cubin".to_owned(),
            EntryKind::Ptx => "ptx".to_owned(),
            other => other.name().into_owned(),
        };
        return Some(("NVIDIA", nv.arch.to_string(), kind));
    }
    let triple = e.triple.as_deref().unwrap_or("");
    let target = e.target_id.as_deref().unwrap_or("");
    if triple.starts_with("amdgcn") && !target.is_empty() {
        let processor = target.split(':').next().unwrap_or(target).to_owned();
        return Some(("AMD", processor, "code object".to_owned()));
    }
    let arch = if target.is_empty() {
        triple.to_owned()
    } else {
        target.to_owned()
    };
    Some(("other", arch, e.payload.unwrap_or("unknown").to_owned()))
}

/// The bytes an entry takes in its file, and decoded.
fn sizes(e: &Entry) -> (u64, u64) {
    let decoded = e
        .nvidia
        .and_then(|nv| nv.uncompressed_size.filter(|_| nv.member.is_none()))
        .unwrap_or(e.size);
    (e.size, decoded)
}

/// Adds up the entries of `roots`.
pub fn summarize(roots: &[Node]) -> Summary {
    let mut rows: BTreeMap<(&'static str, String, String), Row> = BTreeMap::new();
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
    for e in &all {
        let Some(k) = key(e) else { continue };
        let (stored, decoded) = sizes(e);
        let row = rows.entry(k.clone()).or_insert_with(|| Row {
            vendor: k.0,
            arch: k.1.clone(),
            kind: k.2.clone(),
            ..Row::default()
        });
        row.entries += 1;
        row.stored += stored;
        row.decoded += decoded;
    }
    // The GPUs: NVIDIA capabilities of the cubins present, AMD processors.
    let mut gpus: Vec<(String, Option<CudaArch>)> = Vec::new();
    for r in rows.values() {
        let name = match r.vendor {
            "NVIDIA" if r.kind == "cubin" => CudaArch::parse(&r.arch)
                .ok()
                .map(|(_, a)| format!("sm_{}", a.number())),
            "AMD" => Some(r.arch.clone()),
            _ => None,
        };
        if let Some(n) = name {
            if !gpus.iter().any(|(g, _)| *g == n) {
                let arch = CudaArch::parse(&n).ok().map(|(_, a)| a);
                gpus.push((n, arch));
            }
        }
    }
    gpus.sort_by_key(|(name, cuda)| (cuda.map(CudaArch::number), name.clone()));
    let keep = gpus
        .into_iter()
        .map(|(gpu, cuda)| {
            let freed = all
                .iter()
                .filter(|e| match (cuda, &e.nvidia) {
                    (Some(device), Some(nv)) => match nv.kind {
                        EntryKind::Elf => !nv.arch.cubin_runs_on(device),
                        EntryKind::Ptx => !nv.arch.ptx_runs_on(device),
                        _ => false,
                    },
                    (None, None) => key(e).is_some_and(|(v, arch, _)| v == "AMD" && arch != gpu),
                    _ => false,
                })
                .filter(|e| e.nvidia.is_none_or(|nv| nv.member.is_none()))
                .map(|e| e.size)
                .sum();
            (gpu, freed)
        })
        .collect();
    // Architectures in numeric order (`sm_75` before `sm_100`, `gfx90a`
    // before `gfx1030`), as people read them.
    let mut rows: Vec<Row> = rows.into_values().collect();
    rows.sort_by(|a, b| {
        (a.vendor, natural(&a.arch), &a.kind).cmp(&(b.vendor, natural(&b.arch), &b.kind))
    });
    Summary { files, rows, keep }
}

/// A sort key that orders runs of digits by their value: `sm_90a` <
/// `sm_100`.
fn natural(s: &str) -> Vec<(u64, &str)> {
    let mut out = Vec::new();
    let mut rest = s;
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

fn human(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

/// The summary as a table.
pub fn text(s: &Summary, out: &mut String) {
    let _ = writeln!(
        out,
        "{:<7} {:<28} {:<12} {:>8} {:>12} {:>12}",
        "vendor", "architecture", "kind", "entries", "stored", "decoded"
    );
    let (mut entries, mut stored, mut decoded) = (0, 0, 0);
    for r in &s.rows {
        let _ = writeln!(
            out,
            "{:<7} {:<28} {:<12} {:>8} {:>12} {:>12}",
            r.vendor,
            r.arch,
            r.kind,
            r.entries,
            human(r.stored),
            human(r.decoded)
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
        human(stored),
        human(decoded)
    );
    if !s.keep.is_empty() {
        let _ = writeln!(
            out,
            "\n{:<36} {:>12}",
            "offload thin --keep GPU frees up to", "stored"
        );
        for (gpu, freed) in &s.keep {
            // Rounded down: 100% only when every byte would go.
            let share = (u128::from(*freed) * 100)
                .checked_div(u128::from(stored))
                .unwrap_or(0);
            let _ = writeln!(
                out,
                "{:<36} {:>12}  ({share}% of the device code)",
                format!("  --keep {gpu}"),
                human(*freed)
            );
        }
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
            js(r.vendor),
            js(&r.arch),
            js(&r.kind),
            r.entries,
            r.stored,
            r.decoded
        );
    }
    out.push_str("],\"keep\":[");
    for (i, (gpu, freed)) in s.keep.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{{\"gpu\":{},\"frees_bytes\":{freed}}}", js(gpu));
    }
    out.push_str("]}}\n");
}

#[cfg(test)]
mod tests {
    use super::natural;

    #[test]
    fn architectures_sort_by_number() {
        let mut v = vec![
            "sm_120", "sm_90a", "sm_100f", "sm_75", "sm_90", "sm_100", "gfx1030", "gfx90a",
            "gfx906",
        ];
        v.sort_by_key(|s| natural(s));
        assert_eq!(
            v,
            [
                "gfx90a", "gfx906", "gfx1030", "sm_75", "sm_90", "sm_90a", "sm_100", "sm_100f",
                "sm_120"
            ]
        );
    }
}
