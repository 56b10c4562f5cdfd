//! Differential runs against the installed LLVM tools.
//!
//! Each area module generates random cases from a seed and compares our tool
//! with LLVM's on the same command line: exit status, stdout, stderr and every
//! file left in the working directory.

pub(crate) mod packager;

use crate::harness::{self, Suite};

mod wrapper;

/// An area: its name, and a function that runs `cases` cases from `rng`.
type Area = (&'static str, fn(&mut Suite));

mod archive;
mod bundler;
mod bundler_ext;

const AREAS: &[Area] = &[
    ("bundler", bundler::run),
    ("ccob", bundler_ext::run_ccob),
    ("objects", bundler_ext::run_objects),
    ("packager", packager::run_suite),
    ("wrapper", wrapper::run),
    ("archive", archive::run),
];

pub fn run(args: &[String]) -> Result<(), String> {
    let opts = harness::Options::parse(args)?;
    let areas: Vec<&Area> = AREAS
        .iter()
        .filter(|(n, _)| opts.areas.is_empty() || opts.areas.iter().any(|a| a == n))
        .collect();
    if !opts.areas.is_empty() && areas.len() != opts.areas.len() {
        return Err(format!("unknown area in {:?}", opts.areas));
    }
    let mut failed = 0;
    for (name, f) in areas {
        let mut suite = Suite::new(name, &opts)?;
        f(&mut suite);
        failed += suite.finish();
    }
    if failed == 0 {
        Ok(())
    } else {
        Err(format!("{failed} differences"))
    }
}
