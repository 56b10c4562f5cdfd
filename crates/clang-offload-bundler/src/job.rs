//! Turning the parsed command line and environment into a job, with LLVM
//! 22's checks in LLVM 22's order and wording.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;

use offload_cli::diag::{write_stderr, Diag};

use crate::args::Args;
use offload_format::entry_id::{validate_targets, TargetMode, TargetsError};
use offload_format::llvm::{decimal_i64, decimal_u64};

/// A fatal error: the tools' one error type (the message printed after
/// `<argv0>: error: `, or, for LLVM's own fatal errors, after
/// `LLVM ERROR: ` with no tool name).
pub use offload_cli::Error as Fail;

/// What the program was asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Bundle,
    Unbundle,
    List,
}

/// One `-targets` value.
#[derive(Debug, Clone)]
pub struct Target {
    /// The standardised entry ID (written to bundles, matched when
    /// unbundling, shown in messages).
    pub id: String,
    /// Its offload kind.
    pub kind: String,
}

/// Settings read from the `OFFLOAD_BUNDLER_*` environment variables.
#[derive(Debug, Clone, Default)]
pub struct Env {
    pub verbose: bool,
    pub compress: bool,
    pub compression_level: Option<i32>,
    pub format_version: u16,
}

impl Env {
    /// Reads the variables the way LLVM 22 does (including its warnings,
    /// printed at once).
    pub fn read() -> Env {
        let mut env = Env {
            format_version: 3,
            ..Env::default()
        };
        let get = |k: &str| offload_cli::env::get().var_bytes(k).map(<[u8]>::to_vec);
        if get("OFFLOAD_BUNDLER_IGNORE_ENV_VAR").as_deref() == Some(b"1") {
            return env;
        }
        if let Some(v) = get("OFFLOAD_BUNDLER_VERBOSE") {
            env.verbose = v == b"1";
        }
        if let Some(v) = get("OFFLOAD_BUNDLER_COMPRESS") {
            env.compress = v == b"1";
        }
        if let Some(v) = get("OFFLOAD_BUNDLER_COMPRESSION_LEVEL") {
            match decimal_i64(&v).and_then(|n| i32::try_from(n).ok()) {
                Some(n) => env.compression_level = Some(n),
                None => {
                    let mut m =
                        b"Warning: Invalid value for OFFLOAD_BUNDLER_COMPRESSION_LEVEL: ".to_vec();
                    m.extend_from_slice(&v);
                    m.extend_from_slice(b". Ignoring it.\n");
                    write_stderr(&m);
                }
            }
        }
        if let Some(v) = get("COMPRESSED_BUNDLE_FORMAT_VERSION") {
            let mut m = b"Warning: Invalid value for COMPRESSED_BUNDLE_FORMAT_VERSION: ".to_vec();
            m.extend_from_slice(&v);
            match decimal_u64(&v).and_then(|n| u16::try_from(n).ok()) {
                Some(n @ 2..=3) => env.format_version = n,
                Some(_) => {
                    m.extend_from_slice(b". Valid values are 2 or 3. Using default version 3.\n");
                    write_stderr(&m);
                }
                None => {
                    m.extend_from_slice(b". Using default version 3.\n");
                    write_stderr(&m);
                }
            }
        }
        env
    }
}

/// Everything a mode needs, validated.
#[derive(Debug)]
pub struct Job {
    pub mode: Mode,
    pub file_type: String,
    pub targets: Vec<Target>,
    pub inputs: Vec<OsString>,
    pub outputs: Vec<OsString>,
    pub align: u32,
    pub allow_missing: bool,
    pub hip_openmp_compatible: bool,
    // Read by the archive, object and compression paths once integrated.
    #[allow(dead_code)]
    pub check_input_archive: bool,
    pub print_commands: bool,
    pub verbose: bool,
    pub compress: bool,
    pub compression_level: Option<i32>,
    pub format_version: u16,
    /// Index of the host target/input (bundling with a host).
    pub host_index: Option<usize>,
    /// Every target is hip or hipv4 (bundling without a host is allowed).
    pub hip_only: bool,
    /// `-type=a`: two targets that select one entry, reported once the
    /// archive has been read (LLVM 22's reading errors come first there;
    /// it then silently writes one of the two archives).
    pub alike_targets: Option<String>,
}

/// Applies LLVM 22's checks in order; the first failure is returned.
/// Warnings (deprecated options) are printed as they are met.
pub fn validate(a: &Args, env: &Env, diag: &Diag) -> Result<Job, Fail> {
    // LLVM first looks for llvm-objcopy here and fails without it; we never
    // run it (docs/compat.md#clang-offload-bundler), so there is nothing to check.
    if !a.input.is_empty() && !a.inputs.is_empty() {
        return Err(Fail::msg(
            "-inputs and -input cannot be used together, use only -input instead",
        ));
    }
    let mut inputs = a.input.clone();
    if !a.inputs.is_empty() {
        diag.warning("-inputs is deprecated, use -input instead");
        inputs.extend(a.inputs.iter().cloned());
    }
    if !a.output.is_empty() && !a.outputs.is_empty() {
        return Err(Fail::msg(
            "-outputs and -output cannot be used together, use only -output instead",
        ));
    }
    let mut outputs = a.output.clone();
    if !a.outputs.is_empty() {
        diag.warning("-outputs is deprecated, use -output instead");
        outputs.extend(a.outputs.iter().cloned());
    }
    let mut job = Job {
        mode: if a.list {
            Mode::List
        } else if a.unbundle {
            Mode::Unbundle
        } else {
            Mode::Bundle
        },
        file_type: a.file_type.clone(),
        targets: Vec::new(),
        inputs,
        outputs,
        align: a.bundle_align,
        allow_missing: a.allow_missing_bundles,
        hip_openmp_compatible: a.hip_openmp_compatible,
        check_input_archive: a.check_input_archive,
        print_commands: a.print_commands,
        verbose: a.verbose.unwrap_or(env.verbose),
        compress: a.compress.unwrap_or(env.compress),
        compression_level: a.compression_level.or(env.compression_level),
        format_version: env.format_version,
        host_index: None,
        hip_only: true,
        alike_targets: None,
    };
    if a.list {
        if a.unbundle {
            return Err(Fail::msg("-unbundle and -list cannot be used together"));
        }
        if job.inputs.len() != 1 {
            return Err(Fail::msg("only one input file supported for -list"));
        }
        if !job.outputs.is_empty() {
            return Err(Fail::msg("-outputs option is invalid for -list"));
        }
        if !a.targets.is_empty() {
            return Err(Fail::msg("-targets option is invalid for -list"));
        }
        return Ok(job);
    }
    if a.check_input_archive {
        if !a.unbundle {
            return Err(Fail::msg(
                "-check-input-archive cannot be used while bundling",
            ));
        }
        if a.file_type != "a" {
            return Err(Fail::msg(
                "-check-input-archive can only be used for unbundling archives (-type=a)",
            ));
        }
    }
    if job.outputs.is_empty() {
        return Err(Fail::msg("no output file specified!"));
    }
    if a.targets.is_empty() {
        return Err(Fail::msg(
            "for the --targets option: must be specified at least once!",
        ));
    }
    if a.unbundle {
        if job.inputs.len() != 1 {
            return Err(Fail::msg(
                "only one input file supported in unbundling mode",
            ));
        }
        if job.outputs.len() != a.targets.len() {
            return Err(Fail::msg(
                "number of output files and targets should match in unbundling mode",
            ));
        }
    } else {
        if a.file_type == "a" {
            return Err(Fail::msg("Archive files are only supported for unbundling"));
        }
        if job.outputs.len() != 1 {
            return Err(Fail::msg("only one output file supported in bundling mode"));
        }
        if job.inputs.len() != a.targets.len() {
            return Err(Fail::msg(
                "number of input files and targets should match in bundling mode",
            ));
        }
    }

    let mode = if a.unbundle {
        TargetMode::Unbundle
    } else {
        TargetMode::Bundle
    };
    let targets = validate_targets(&a.targets, mode).map_err(|e| match e {
        // LLVM stops with its fatal-error report, without the tool's name.
        TargetsError::Fatal { .. } => Fail::fatal(e.to_string()),
        _ => Fail::msg(e.to_string()),
    })?;
    // Our own check, after all of LLVM's: two targets that stand for the
    // same entry make LLVM write a corrupt bundle or drop an output.
    if let Err(e) = targets.check_standardised_unique() {
        let text = match e {
            TargetsError::SameStandardisedId {
                first,
                second,
                standardised,
            } if a.unbundle => format!(
                "targets '{first}' and '{second}' both select the bundle entry \
                 '{standardised}': one entry cannot be unbundled into two outputs"
            ),
            e => e.to_string(),
        };
        if a.unbundle && a.file_type == "a" {
            job.alike_targets = Some(text);
        } else {
            return Err(Fail::msg(text));
        }
    }
    for (given, stored) in a.targets.iter().zip(&targets.standardised) {
        if let Some(w) = lost_gpu_name(given, stored) {
            diag.explain_warning(w);
        }
    }
    job.host_index = targets.host_index;
    job.hip_only = targets.hip_only;
    job.targets = a
        .targets
        .iter()
        .zip(targets.standardised)
        .zip(&targets.entries)
        .map(|((_, id), e)| Target {
            id,
            kind: e.kind().to_string(),
        })
        .collect();
    Ok(job)
}

/// The explanation for a target whose last piece standardisation drops:
/// `hipv4-amdgcn-amd-amdhsa-gfx906` has five pieces, so `gfx906` is read
/// as the triple's environment, which LLVM drops, and the entry is stored
/// as `hipv4-amdgcn-amd-amdhsa--`, for no GPU in particular.
pub(crate) fn lost_gpu_name(given: &str, stored: &str) -> Option<String> {
    let last = given.rsplit('-').next()?;
    if last.is_empty() || !stored.ends_with('-') || stored.split('-').any(|p| p == last) {
        return None;
    }
    Some(format!(
        "target '{given}' is stored as '{stored}': '{last}' was read as the triple's \
         environment and dropped, so the entry names no GPU; for a GPU, write \
         '{stored}{last}' (kind-arch-vendor-os-environment-gpu, the environment empty)"
    ))
}

/// `'<path>': <OS error text>`, LLVM's file error form.
pub(crate) fn file_fail(path: &OsStr, e: &io::Error) -> Fail {
    Fail::file_io(path.as_bytes(), e)
}

/// `'<path>': <what>`: the same form for our own messages about a file.
pub(crate) fn named_fail(path: &OsStr, what: &str) -> Fail {
    Fail::file(path.as_bytes(), what)
}
