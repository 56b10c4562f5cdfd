//! `-unbundle -type=a`: heterogeneous device archives, on top of
//! `offload_format::device_archive`.
//!
//! The library decides everything (contents, order, errors and warnings in
//! LLVM 22's order); this file wires it to the command line, stderr and
//! the output files. Outputs are committed all together or not at all,
//! where LLVM 22 leaves the archives of earlier targets behind.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use offload_cli::diag::{os_error_text, write_stderr, Diag};
use offload_cli::env;
use offload_cli::fsio::{read_input, read_member_file, Outputs};
use offload_format::archive::WriteOptions;
use offload_format::ccob;
use offload_format::device_archive::{
    Error as DeviceArchiveError, Input, Note, Options, Target, Unbundled,
};

use crate::command::{self, objcopy_path, print_command, temp_name};
use crate::job::{Fail, Job};

/// Unbundles the archive `job.inputs[0]` into one archive per target.
pub fn unbundle(job: &Job) -> Result<(), Fail> {
    // Warnings carry no program name, but are coloured like LLVM's.
    let diag = Diag::new(env::get().argv0());
    let targets = job
        .targets
        .iter()
        .map(|t| Target::new(&t.id).map_err(|e| Fail::msg(e.to_string())))
        .collect::<Result<Vec<_>, _>>()?;
    let options = Options {
        hip_openmp_compatible: job.hip_openmp_compatible,
        allow_missing_bundles: job.allow_missing,
        check_input_archive: job.check_input_archive,
        // Under `-###` LLVM 22 runs no llvm-objcopy: host objects come
        // out empty and the command is printed instead.
        skip_host_objects: job.print_commands,
        write: WriteOptions::default().with_sym64_env(env::get().var_str("SYM64_THRESHOLD")),
    };
    let input_name = &job.inputs[0];
    let shown = input_name.to_string_lossy();
    // Mapped: only the headers and tables looked at are read, and code
    // objects go from the input file to the outputs in the kernel.
    let data = read_input(input_name).map_err(|e| Fail::file_io(input_name.as_bytes(), &e))?;
    let mut input = Input::from_bytes(&data[..], Path::new(input_name))
        .map_err(|e| Fail::bytes(e.to_bytes()))?
        .with_release(|range| data.release(range))
        .with_thin_members(read_member_file);

    let objcopy = objcopy_path();
    let verbose = job.verbose;
    let mut notes = |note: Note| match note {
        Note::Uncompressed if verbose => write_stderr(b"Uncompressed bundle.\n"),
        Note::Decompressed(report) if verbose => {
            write_stderr(ccob::report::format_decompress_report(&report).as_bytes())
        }
        Note::Uncompressed | Note::Decompressed(_) => {}
        Note::Warning(w) => diag.bare_warning(w.to_bytes()),
        Note::HostObjectSkipped => print_command(&command::unbundle_host_command_line(
            &objcopy,
            &temp_name(),
            &temp_name(),
        )),
    };
    // Member names and header bytes quoted as stored, as LLVM prints them.
    // A host object llvm-objcopy refuses: LLVM 22 hands it the member as a
    // temporary file, to write another.
    let fail = |e: offload_format::device_archive::Error| match &e {
        DeviceArchiveError::HostObject {
            member,
            archive,
            error,
        } => {
            let shown = [archive.as_bytes(), b"(", member, b")"].concat();
            crate::objcopy::refusal(error, &temp_name(), &temp_name(), &shown)
                .unwrap_or_else(|| Fail::bytes(e.to_bytes()))
        }
        _ => Fail::bytes(e.to_bytes()),
    };
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
    // Our own check (docs/compat.md): after everything LLVM 22 reports
    // while reading, before anything is written.
    if let Some(text) = &job.alike_targets {
        return Err(Fail::msg(text.clone()));
    }
    {
        let mut writers: Vec<&mut dyn Write> = outs
            .files_mut()
            .iter_mut()
            .map(|f| f as &mut dyn Write)
            .collect();
        plan.write(&mut input, &mut writers).map_err(fail)?;
    }
    outs.commit().map_err(|e| Fail::io(&e))
}
