//! cuobjdump's `--list-elf --list-ptx` lines, as `offload ls --json` gives
//! the facts behind them: shared by the recorded-fixture tests of the
//! `offload` crate (`crates/offload/tests/nvidia.rs`, which includes this
//! file) and `cargo xtask e2e realworld`.

use crate::json::V;

/// The entries of a JSON listing, depth first.
pub fn entries(doc: &V) -> Vec<&V> {
    crate::json::nodes(doc)
        .into_iter()
        .flat_map(|n| n.get("entries").arr())
        .collect()
}

/// The lines `cuobjdump --list-elf --list-ptx FILE` prints for the entries
/// it lists (`ELF file    3: libk.3.sm_90a.cubin`), from our listing of
/// `file` (its name as given to cuobjdump); an archive's `member ...:`
/// lines are cuobjdump's own and not made.
pub fn list_lines(file: &str, entries: &[&V]) -> Vec<String> {
    let base = file.rsplit('/').next().unwrap_or(file);
    let stem = match base.rfind('.') {
        Some(dot) if dot > 0 => &base[..dot],
        _ => base,
    };
    let stem = stem.replace(' ', "-");
    entries
        .iter()
        .filter(|e| e.get("cuda").get("listed_by_cuobjdump") == &V::Bool(true))
        .map(|e| {
            let cuda = e.get("cuda");
            let kind = if cuda.get("kind").str() == Some("ptx") {
                "PTX"
            } else {
                "ELF"
            };
            let k = cuda.get("index").num().unwrap_or(0);
            let name = cuda.get("cuobjdump_name").str().unwrap_or("?");
            format!("{kind} file {k:>4}: {stem}.{k}.{name}")
        })
        .collect()
}

/// The `ELF file` / `PTX file` lines of a recorded listing.
pub fn recorded_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.starts_with("ELF file") || l.starts_with("PTX file"))
        .collect()
}
