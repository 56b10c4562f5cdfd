//! Checks the triple, target-ID and entry-ID code against reference tables
//! produced by LLVM 22 (`tests/fixtures/entry_id/gen.sh`): the real
//! clang-offload-bundler-22 for entry IDs, and LLVM 22's own libraries for
//! the triple and target-ID tables. Every row is checked; a failure lists
//! the rows that differ.

use std::path::PathBuf;

use offload_format::entry_id::{
    validate_targets, EntryId, TargetMode, TargetsError, INVALID_ID_IN_BUNDLE,
};
use offload_format::target_id::{
    amdgcn_processor, is_offload_arch, r600_processor, TargetId, AMDGCN_PROCESSORS, OFFLOAD_ARCHS,
};
use offload_format::triple::{normalize, CanonicalForm, SubArch, Triple};

fn fixture(area: &str, name: &str) -> Vec<Vec<String>> {
    let path: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "..",
        "..",
        "tests",
        "fixtures",
        area,
        name,
    ]
    .iter()
    .collect();
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.starts_with("# "))
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect()
}

/// Collects mismatches and fails with all of them (up to a limit).
struct Mismatches {
    table: &'static str,
    rows: usize,
    found: Vec<String>,
}

impl Mismatches {
    fn new(table: &'static str) -> Self {
        Mismatches {
            table,
            rows: 0,
            found: Vec::new(),
        }
    }

    fn check(&mut self, what: impl std::fmt::Display, expected: &str, actual: &str) {
        self.rows += 1;
        if expected != actual {
            self.found.push(format!(
                "{what}\n    LLVM 22: {expected:?}\n    ours:    {actual:?}"
            ));
        }
    }

    fn finish(self, minimum_rows: usize) {
        assert!(
            self.rows >= minimum_rows,
            "{}: only {} rows checked",
            self.table,
            self.rows
        );
        if !self.found.is_empty() {
            let shown: Vec<&String> = self.found.iter().take(40).collect();
            panic!(
                "{}: {} of {} rows differ:\n{}",
                self.table,
                self.found.len(),
                self.rows,
                shown
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
    }
}

fn four_pieces(text: &str) -> Triple {
    let mut p = text.split('-');
    let mut next = || p.next().unwrap_or("");
    let (a, v, o, e) = (next(), next(), next(), next());
    Triple::from_parts(a, v, o, e)
}

#[test]
fn triple_normalize_matches_llvm22() {
    let mut m = Mismatches::new("triple/normalize.tsv");
    let forms = [
        CanonicalForm::Any,
        CanonicalForm::ThreeIdent,
        CanonicalForm::FourIdent,
        CanonicalForm::FiveIdent,
    ];
    for row in fixture("triple", "normalize.tsv") {
        let input = &row[0];
        if row[1] == "!fatal" {
            let actual = match normalize(input, CanonicalForm::Any) {
                Ok(s) => format!("ok {s}"),
                Err(e) => e.to_string(),
            };
            m.check(format_args!("{input:?} (fatal)"), &row[2], &actual);
            continue;
        }
        for (form, expected) in forms.iter().zip(&row[1..5]) {
            let actual = normalize(input, *form).unwrap_or_else(|e| format!("error: {e}"));
            m.check(format_args!("{input:?} {form:?}"), expected, &actual);
        }
    }
    m.finish(8000);
}

#[test]
fn triple_parse_matches_llvm22() {
    let mut m = Mismatches::new("triple/parse.tsv");
    for row in fixture("triple", "parse.tsv") {
        let t = match row[0].as_str() {
            "string" => Triple::new(&row[1]),
            _ => four_pieces(&row[1]),
        };
        let sub = SubArch::ALL
            .iter()
            .position(|&s| s == t.sub_arch())
            .unwrap();
        let actual = format!(
            "{}\t{}\t{}\t{}\t{}\t{}",
            t.arch(),
            sub,
            t.vendor(),
            t.os(),
            t.environment(),
            t.object_format()
        );
        m.check(
            format_args!("{} {:?}", row[0], row[1]),
            &row[2..].join("\t"),
            &actual,
        );
    }
    m.finish(1500);
}

#[test]
fn triple_compatibility_matches_llvm22() {
    let mut m = Mismatches::new("triple/compat.tsv");
    for row in fixture("triple", "compat.tsv") {
        let a = four_pieces(&row[0]);
        let b = four_pieces(&row[1]);
        let actual = if a.is_compatible_with(&b) {
            "yes"
        } else {
            "no"
        };
        m.check(format_args!("{} vs {}", row[0], row[1]), &row[2], actual);
    }
    m.finish(1500);
}

#[test]
fn amdgpu_processor_table_matches_llvm22() {
    let mut m = Mismatches::new("target_id/amdgpu.tsv");
    let rows = fixture("target_id", "amdgpu.tsv");
    for row in &rows {
        let name = &row[0];
        let gcn = amdgcn_processor(name).map_or("-", |p| p.name);
        let r600 = r600_processor(name).map_or("-", |p| p.name);
        m.check(
            format_args!("lookup {name:?}"),
            &format!("{}\t{}", row[1], row[2]),
            &format!("{gcn}\t{r600}"),
        );
        if let Some(p) = amdgcn_processor(name) {
            let bits: u32 = row[3].parse().unwrap();
            let expected = format!("xnack={} sramecc={}", bits & 128 != 0, bits & 256 != 0);
            m.check(
                format_args!("features of {}", p.name),
                &expected,
                &format!("xnack={} sramecc={}", p.xnack, p.sramecc),
            );
        }
    }
    // Our table has exactly LLVM's canonical names.
    let llvm: Vec<&str> = rows
        .iter()
        .filter(|r| r[0] == r[1])
        .map(|r| r[0].as_str())
        .collect();
    let ours: Vec<&str> = AMDGCN_PROCESSORS.iter().map(|p| p.name).collect();
    m.check("canonical amdgcn names", &llvm.join(" "), &ours.join(" "));
    m.finish(100);
}

#[test]
fn offload_arch_names_match_clang22() {
    let mut m = Mismatches::new("target_id/offload_arch.tsv");
    let rows = fixture("target_id", "offload_arch.tsv");
    let mut known = Vec::new();
    for row in &rows {
        // The bundler never asks about an empty name.
        if row[1].is_empty() {
            continue;
        }
        let expected = row[2] == "known";
        if expected {
            known.push(row[1].as_str());
        }
        m.check(
            format_args!("{:?}", row[1]),
            &expected.to_string(),
            &is_offload_arch(&row[1]).to_string(),
        );
    }
    m.check("all names", &known.join(" "), &OFFLOAD_ARCHS.join(" "));
    m.finish(90);
}

#[test]
fn target_id_parse_matches_clang22() {
    let mut m = Mismatches::new("target_id/parse.tsv");
    for row in fixture("target_id", "parse.tsv") {
        let triple = four_pieces(&row[0]);
        let actual = match TargetId::parse(&row[1], &triple) {
            Err(_) => "invalid".to_owned(),
            Ok(id) => {
                let mut features: Vec<String> = id
                    .features()
                    .iter()
                    .map(|(n, on)| format!("{n}{}", if *on { '+' } else { '-' }))
                    .collect();
                features.sort();
                let mut s = id.processor().to_owned();
                for f in features {
                    s.push(':');
                    s.push_str(&f);
                }
                s
            }
        };
        m.check(format_args!("{} {:?}", row[0], row[1]), &row[2], &actual);
    }
    m.finish(2000);
}

/// What the bundler says about a target list, in the fixture's terms.
fn outcome(result: Result<Vec<String>, TargetsError>) -> (String, String) {
    match result {
        Ok(ids) => ("ok".to_owned(), ids.join(",")),
        Err(e @ TargetsError::Fatal { .. }) => ("fatal".to_owned(), e.to_string()),
        Err(e) => ("error".to_owned(), e.to_string()),
    }
}

#[test]
fn entry_id_standardisation_matches_bundler22() {
    let mut m = Mismatches::new("entry_id/standardise.tsv");
    for row in fixture("entry_id", "standardise.tsv") {
        let target = row[0].as_str();
        // gen.py adds a host target when the kind needs one.
        let kind = target.split('-').next().unwrap_or("");
        let mut list = vec![target];
        if !["hip", "hipv4", "host"].contains(&kind) {
            list.push("host-x86_64-unknown-linux-gnu");
        }
        let result =
            validate_targets(&list, TargetMode::Bundle).map(|t| vec![t.standardised[0].clone()]);
        let (status, value) = outcome(result);
        m.check(
            format_args!("{target:?}"),
            &format!("{}\t{}", row[1], row[2]),
            &format!("{status}\t{value}"),
        );
    }
    m.finish(600);
}

#[test]
fn target_list_validation_matches_bundler22() {
    let mut m = Mismatches::new("entry_id/targets.tsv");
    for row in fixture("entry_id", "targets.tsv") {
        let mode = if row[0] == "bundle" {
            TargetMode::Bundle
        } else {
            TargetMode::Unbundle
        };
        let list: Vec<&str> = row[1].split(',').collect();
        let result = validate_targets(&list, mode).map(|t| match mode {
            TargetMode::Bundle => t.standardised,
            TargetMode::Unbundle => Vec::new(),
        });
        let (status, value) = outcome(result);
        m.check(
            format_args!("{} {:?}", row[0], row[1]),
            &format!("{}\t{}", row[2], row[3]),
            &format!("{status}\t{value}"),
        );
    }
    m.finish(120);
}

#[test]
fn unbundle_matching_matches_bundler22() {
    let mut m = Mismatches::new("entry_id/compat.tsv");
    for row in fixture("entry_id", "compat.tsv") {
        let (entry, target, flag) = (&row[0], &row[1], row[2] == "1");
        let actual = match validate_targets(&[target], TargetMode::Unbundle) {
            Err(e) => format!("error\t{e}"),
            Ok(targets) => {
                let wanted = &targets.standardised[0];
                match EntryId::parse(entry) {
                    Err(_) => format!("error\t{INVALID_ID_IN_BUNDLE}"),
                    Ok(code_object) => {
                        let requested = EntryId::parse(wanted).expect("standardised IDs parse");
                        if code_object.is_compatible_code_object(&requested, flag) {
                            "match\t".to_owned()
                        } else {
                            format!("nomatch\tCan't find bundles for {wanted}")
                        }
                    }
                }
            }
        };
        m.check(
            format_args!("entry {entry:?} target {target:?} hip-openmp={flag}"),
            &format!("{}\t{}", row[3], row[4]),
            &actual,
        );
    }
    m.finish(500);
}
