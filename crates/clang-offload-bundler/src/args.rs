//! The parsed command line in the shape the bundler works with. The
//! options themselves are declared in `offload_cli::cl::tools::BUNDLER`.

use std::ffi::OsString;

use offload_cli::cl::Parsed;

/// LLVM 22 clang-offload-bundler's option values.
#[derive(Debug)]
pub struct Args {
    /// `-type=<t>`, required.
    pub file_type: String,
    /// `-targets=a,b,...`: comma list, occurrences append.
    pub targets: Vec<String>,
    /// `-input=<f>`: one file per occurrence.
    pub input: Vec<OsString>,
    /// `-inputs=a,b` (deprecated).
    pub inputs: Vec<OsString>,
    /// `-output=<f>`.
    pub output: Vec<OsString>,
    /// `-outputs=a,b` (deprecated).
    pub outputs: Vec<OsString>,
    pub unbundle: bool,
    pub list: bool,
    /// `-###`
    pub print_commands: bool,
    pub allow_missing_bundles: bool,
    pub bundle_align: u32,
    pub check_input_archive: bool,
    pub hip_openmp_compatible: bool,
    /// `Some` only when given on the command line (it then beats the
    /// environment).
    pub compress: Option<bool>,
    pub compression_level: Option<i32>,
    /// As `compress`.
    pub verbose: Option<bool>,
}

fn text(v: OsString) -> String {
    v.to_string_lossy().into_owned()
}

impl Args {
    /// Reads the values out of a parse with `tools::BUNDLER`.
    pub fn new(p: &Parsed) -> Args {
        Args {
            file_type: p.value("type").map(|v| text(v.into())).unwrap_or_default(),
            targets: p.values("targets").into_iter().map(text).collect(),
            input: p.values("input"),
            inputs: p.values("inputs"),
            output: p.values("output"),
            outputs: p.values("outputs"),
            unbundle: p.flag("unbundle"),
            list: p.flag("list"),
            print_commands: p.flag("###"),
            allow_missing_bundles: p.flag("allow-missing-bundles"),
            bundle_align: p.uint("bundle-align").unwrap_or(1),
            check_input_archive: p.flag("check-input-archive"),
            hip_openmp_compatible: p.flag("hip-openmp-compatible"),
            compress: p.bool("compress"),
            compression_level: p.int("compression-level"),
            verbose: p.bool("verbose"),
        }
    }
}
