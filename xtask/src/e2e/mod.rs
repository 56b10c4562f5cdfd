//! End-to-end builds with real clang-22 pipelines that call our tools via `-B`.

mod docs;
mod hda;
mod hip;
mod openmp;
mod realworld;
mod wrapper;

type Area = (&'static str, fn() -> Result<(), String>);

const AREAS: &[Area] = &[
    ("hip", hip::run),
    ("openmp", openmp::openmp),
    ("wrapper", wrapper::run),
    ("hda", hda::run),
    ("docs", docs::run),
    ("realworld", realworld::run),
];

/// Areas that need the network (package downloads): run only when named.
const ON_REQUEST: &[&str] = &["realworld"];

pub fn run(args: &[String]) -> Result<(), String> {
    let wanted: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let mut failures = Vec::new();
    for (name, f) in AREAS {
        if !wanted.is_empty() && !wanted.iter().any(|w| w == name) {
            continue;
        }
        if wanted.is_empty() && ON_REQUEST.contains(name) {
            continue;
        }
        eprintln!("e2e {name}: running");
        match f() {
            Ok(()) => eprintln!("e2e {name}: ok"),
            Err(e) => {
                eprintln!("e2e {name}: FAILED: {e}");
                failures.push(*name);
            }
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("failed: {}", failures.join(", ")))
    }
}
