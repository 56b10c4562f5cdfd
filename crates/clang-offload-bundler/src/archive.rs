//! `-unbundle -type=a`: heterogeneous device archives, on top of
//! `offload_format::device_archive`.
//!
//! The library decides everything (contents, order, errors and warnings in
//! LLVM 22's order); this file wires it to the command line, stderr and
//! the output files. Outputs are committed all together or not at all,
//! where LLVM 22 leaves the archives of earlier targets behind.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use offload_cli::diag::{os_error_text, write_stderr, Diag};
use offload_cli::fsio::{read_input, Outputs};
use offload_format::archive::WriteOptions;
use offload_format::device_archive::{Input, Note, Options, Target, Unbundled};
use offload_format::object_bundle;

use crate::job::{Fail, Job};

/// Unbundles the archive `job.inputs[0]` into one archive per target.
pub fn unbundle(job: &Job) -> Result<(), Fail> {
    // Warnings carry no program name, but are coloured like LLVM's.
    let diag = Diag::new(&std::env::args_os().next().unwrap_or_default());
    let targets = job
        .targets
        .iter()
        .map(|t| Target::new(&t.id).map_err(|e| Fail::msg(e.to_string())))
        .collect::<Result<Vec<_>, _>>()?;
    let options = Options {
        hip_openmp_compatible: job.hip_openmp_compatible,
        allow_missing_bundles: job.allow_missing,
        check_input_archive: job.check_input_archive,
        verbose: job.verbose,
        print_commands: job.print_commands,
        write: WriteOptions::default()
            .with_sym64_env(std::env::var("SYM64_THRESHOLD").ok().as_deref()),
    };
    let input_name = &job.inputs[0];
    let shown = input_name.to_string_lossy();
    // Mapped: only the headers and tables looked at are read, and code
    // objects go from the input file to the outputs in the kernel.
    let data = read_input(input_name).map_err(|e| {
        let mut m = b"'".to_vec();
        m.extend_from_slice(input_name.as_bytes());
        m.extend_from_slice(b"': ");
        m.extend_from_slice(os_error_text(&e).as_bytes());
        Fail::bytes(m)
    })?;
    let mut input = Input::from_bytes(&data[..], Path::new(input_name))
        .map_err(|e| Fail::msg(e.to_string()))?
        .with_release(|range| data.release(range));

    let objcopy = find_objcopy();
    let mut notes = |note: Note| match note {
        Note::Verbose(text) => write_stderr(text.as_bytes()),
        Note::Warning(w) => diag.bare_warning(w.to_string()),
        Note::HostCommand => {
            let input_tmp = temp_name();
            let output_tmp = temp_name();
            let mut line =
                object_bundle::unbundle_host_command_line(&objcopy, &input_tmp, &output_tmp);
            line.push(b'\n');
            write_stderr(&line);
        }
    };
    let fail = |e: offload_format::device_archive::Error| Fail::msg(e.to_string());
    let mut plan =
        Unbundled::read(&mut input, &targets, &options, &shown, &mut notes).map_err(fail)?;

    // Target by target, in LLVM 22's order: an archive that will be
    // written gets its file first (LLVM creates its temporary file before
    // reading the members' symbols; a directory in the way is only found
    // when that file is renamed), then the target's checks.
    let mut outs = Outputs::new();
    for (t, path) in job.outputs.iter().enumerate() {
        let mut late = None;
        if plan.target_has_members(t) || options.allow_missing_bundles {
            // `-` names a file here: LLVM's archive writer does not use
            // stdout.
            if let Err(e) = outs.create(path, false) {
                if e.raw_os_error() == Some(21) {
                    late = Some(e);
                } else {
                    return Err(Fail::msg(os_error_text(&e)));
                }
            }
        }
        plan.finish_target(&mut notes).map_err(fail)?;
        if let Some(e) = late {
            return Err(Fail::msg(os_error_text(&e)));
        }
    }
    {
        let mut writers: Vec<&mut dyn Write> = outs
            .files_mut()
            .iter_mut()
            .map(|f| f as &mut dyn Write)
            .collect();
        plan.write(&mut input, &mut writers).map_err(fail)?;
    }
    outs.commit()
        .map_err(|e| match offload_cli::fsio::llvm_write_failure(&e) {
            Some(text) => Fail::fatal(text),
            None => Fail::msg(os_error_text(&e)),
        })
}

/// Where LLVM 22 finds `llvm-objcopy` (beside the bundler, else on PATH),
/// for the `-###` listing; the bare name if there is none.
fn find_objcopy() -> Vec<u8> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join("llvm-objcopy")))
        .filter(|p| p.is_file());
    let on_path = || {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join("llvm-objcopy"))
                .find(|p| p.is_file())
        })
    };
    beside
        .or_else(on_path)
        .map(|p: PathBuf| p.into_os_string())
        .unwrap_or_else(|| OsString::from("llvm-objcopy"))
        .as_bytes()
        .to_vec()
}

/// A temporary file name of LLVM's shape (`<tmp>/clang-offload-bundler-<6
/// hex>.tmp`). Only printed: `-###` runs nothing.
fn temp_name() -> Vec<u8> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = object_bundle::TEMP_DIR_ENV_VARS
        .iter()
        .find_map(std::env::var_os)
        .unwrap_or_else(|| OsString::from("/tmp"));
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0) as u64
        ^ u64::from(std::process::id()).rotate_left(20)
        ^ COUNTER
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let random = format!("{:06x}", seed & 0xff_ffff);
    object_bundle::temp_file_path(dir.as_bytes(), random.as_bytes())
}
