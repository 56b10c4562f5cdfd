//! Entry-ID questions the bundler asks, answered by
//! `offload_format::entry_id` / `target_id` / `triple`.
//!
//! TEMPORARY: until the `tid` branch (triple normalisation, target IDs,
//! entry IDs) is merged, this module carries a reduced stand-in so the rest
//! of the tool can be exercised. It is replaced by calls into the library.

use std::collections::BTreeSet;

/// What the bundler needs to know about one `-targets` value or file entry.
#[derive(Debug, Clone)]
pub struct TargetInfo {
    /// The offload kind (first piece).
    pub kind: String,
    /// `<arch>-<vendor>-<os>-<env>` exactly as given (for messages and the
    /// conflict check's grouping).
    pub raw_triple: String,
    /// The target ID kept (empty when the processor is not a known offload
    /// arch).
    pub target_id: String,
    /// The standardised entry ID written to bundles.
    pub standardised: String,
    /// The kind is one of host, openmp, hip, hipv4.
    pub kind_valid: bool,
    /// The triple's arch is known.
    pub triple_valid: bool,
}

/// True when `id` splits into 5 or 6 dash-separated pieces (the 6th keeps
/// further dashes).
pub fn has_valid_shape(id: &str) -> bool {
    let n = id.splitn(6, '-').count();
    n == 5 || n == 6
}

fn pieces(id: &str) -> Vec<&str> {
    id.splitn(6, '-').collect()
}

const ARCHES: &[&str] = &[
    "x86_64",
    "i386",
    "i686",
    "amdgcn",
    "nvptx",
    "nvptx64",
    "spirv64",
    "spirv",
    "aarch64",
    "powerpc64le",
    "r600",
    "arm",
];

fn known_offload_arch(p: &str) -> bool {
    p.starts_with("gfx") || p.starts_with("sm_") || p == "amdgcnspirv" || p == "generic"
}

/// Parses a well-shaped ID (see [`has_valid_shape`]).
pub fn target_info(id: &str) -> TargetInfo {
    let p = pieces(id);
    let get = |i: usize| p.get(i).copied().unwrap_or("");
    let kind = get(0).to_string();
    let (arch, vendor, os, env) = (get(1), get(2), get(3), get(4));
    let tid_full = get(5);
    let proc_ = tid_full.split(':').next().unwrap_or("");
    let target_id = if !proc_.is_empty() && known_offload_arch(proc_) {
        tid_full.to_string()
    } else {
        String::new()
    };
    let or_unknown = |s: &str| {
        if s.is_empty() {
            "unknown".to_string()
        } else {
            s.to_string()
        }
    };
    let norm = if os == "amdhsa" {
        format!("{}-{}-{}-", arch, or_unknown(vendor), os)
    } else {
        format!(
            "{}-{}-{}-{}",
            arch,
            or_unknown(vendor),
            or_unknown(os),
            or_unknown(env)
        )
    };
    TargetInfo {
        kind_valid: matches!(kind.as_str(), "host" | "openmp" | "hip" | "hipv4"),
        triple_valid: ARCHES.contains(&arch),
        standardised: format!("{kind}-{norm}-{target_id}"),
        raw_triple: format!("{arch}-{vendor}-{os}-{env}"),
        kind,
        target_id,
    }
}

/// Whether the file entry `code_object` can serve the requested, already
/// standardised `target`.
pub fn compatible(code_object: &str, target: &str, hip_openmp: bool) -> bool {
    let c = target_info(code_object);
    let t = target_info(target);
    let norm_triple = |s: &str| {
        let p = pieces(s);
        let f = |i: usize| match p.get(i).copied().unwrap_or("") {
            "" => "unknown".to_string(),
            x => x.to_string(),
        };
        (f(1), f(2), f(3), f(4))
    };
    let (ct, tt) = (norm_triple(code_object), norm_triple(target));
    let fix = |t: (String, String, String, String)| {
        let env = if t.2 == "amdhsa" {
            "unknown".to_string()
        } else {
            t.3
        };
        (t.0, t.1, t.2, env)
    };
    let (ct, tt) = (fix(ct), fix(tt));
    if ct != tt {
        return false;
    }
    let kinds = c.kind == t.kind
        || (c.kind.starts_with("hip") && t.kind.starts_with("hip"))
        || (hip_openmp
            && ((c.kind.to_lowercase().starts_with("hip") && t.kind == "openmp")
                || (c.kind == "openmp" && t.kind.to_lowercase().starts_with("hip"))));
    if !kinds {
        return false;
    }
    if c.target_id == t.target_id {
        return true;
    }
    let split = |s: &str| -> (String, Vec<String>) {
        let mut it = s.split(':');
        let p = it.next().unwrap_or("").to_string();
        (p, it.map(str::to_string).collect())
    };
    let (cp, cf) = split(&c.target_id);
    let (tp, tf) = split(&t.target_id);
    cp == tp && !cp.is_empty() && cf.iter().all(|f| tf.contains(f))
}

/// LLVM 22's conflict check over the target IDs of one kind-triple group:
/// the first two that cannot be bundled together.
pub fn conflict(ids: &BTreeSet<String>) -> Option<(String, String)> {
    let mut seen: Vec<(String, String, Vec<String>)> = Vec::new();
    for id in ids {
        let mut it = id.split(':');
        let p = it.next().unwrap_or("").to_string();
        let feats: Vec<String> = it
            .map(|f| f.trim_end_matches(['+', '-']).to_string())
            .collect();
        if let Some((first, _, fs)) = seen.iter().find(|(_, sp, _)| *sp == p) {
            if feats.iter().any(|f| !fs.contains(f)) || feats.len() != fs.len() {
                return Some((first.clone(), id.clone()));
            }
        } else {
            seen.push((id.clone(), p, feats));
        }
    }
    None
}
