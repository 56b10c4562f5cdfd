//! The `llvm-objcopy` command lines LLVM 22's bundler runs for object
//! bundles (`-type=o`, and host objects of device archives, `-type=a`),
//! which it prints instead of running them under `-###`; the temporary
//! files it names in them; and where it finds `llvm-objcopy`.
//!
//! Everything is bytes: paths on Unix need not be UTF-8, and the bundler
//! prints them unescaped.
//!
//! How LLVM 22 prints a command: the program path in double quotes, then
//! for each argument a space and the argument in double quotes, with no
//! escaping of embedded quotes or spaces; one line per command on stderr,
//! terminated by `\n`.
//!
//! Temporary files: for the host entry when bundling, and for the extracted
//! host object when unbundling, LLVM creates
//! `<tmpdir>/clang-offload-bundler-XXXXXX.tmp`, where `XXXXXX` is six random
//! lowercase hexadecimal digits and `<tmpdir>` is the value of the first of
//! `TMPDIR`, `TMP`, `TEMP`, `TEMPDIR` that is set (even if empty), else
//! `/tmp`. The file really is created (and later deleted) even under `-###`;
//! if that fails the bundler reports `'<path>': <OS error>`.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;

use offload_cli::diag::write_stderr;
use offload_cli::tools::{find_llvm_tool, Beside};
use offload_cli::{env, temp};
use offload_format::object_bundle::{HOST_PLACEHOLDER, SECTION_PREFIX};

use crate::job::Fail;

/// Prefix of the bundler's temporary files.
const TEMP_FILE_PREFIX: &str = "clang-offload-bundler-";

/// Suffix of the bundler's temporary files.
const TEMP_FILE_SUFFIX: &str = ".tmp";

/// Joins a temporary directory and a random part into the temporary file
/// path LLVM would use: `dir` empty gives a relative name; a separator is
/// inserted only if `dir` does not already end with `/`.
fn temp_file_path(dir: &[u8], random: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(dir.len() + 32);
    p.extend_from_slice(dir);
    if !dir.is_empty() && !dir.ends_with(b"/") {
        p.push(b'/');
    }
    p.extend_from_slice(TEMP_FILE_PREFIX.as_bytes());
    p.extend_from_slice(random);
    p.extend_from_slice(TEMP_FILE_SUFFIX.as_bytes());
    p
}

/// A temporary file name of LLVM's shape, not created (device archives:
/// only printed, as `docs/compat.md` says).
pub fn temp_name() -> Vec<u8> {
    let dir = env::get().temp_dir();
    temp_file_path(dir.as_bytes(), temp::random_hex(6).as_bytes())
}

/// Creates (and at once deletes) the placeholder temporary file LLVM 22
/// makes for `llvm-objcopy`, so that `-###` reports the same path shape and
/// fails the same way when the temporary directory is unusable.
pub fn make_temp_file() -> Result<Vec<u8>, Fail> {
    let dir = env::get().temp_dir();
    let made = temp::create_unique(6, 0o600, |random| {
        std::ffi::OsStr::from_bytes(&temp_file_path(dir.as_bytes(), random.as_bytes())).into()
    });
    match made {
        Ok((mut f, path)) => {
            let _ = f.write_all(HOST_PLACEHOLDER);
            drop(f);
            let _ = std::fs::remove_file(&path);
            Ok(path.into_os_string().into_encoded_bytes())
        }
        Err((path, e)) => Err(Fail::file_io(path.as_os_str().as_bytes(), &e)),
    }
}

/// The `llvm-objcopy` path LLVM 22 would run, for `-###`: next to the
/// bundler (`argv[0]` if that names an existing file, else the running
/// executable), else on `PATH`. We never run it; when there is none we
/// print the bare name.
pub fn objcopy_path() -> Vec<u8> {
    const NAME: &str = "llvm-objcopy";
    find_llvm_tool(NAME, Beside::Invoked).map_or_else(
        || NAME.as_bytes().to_vec(),
        |p| p.into_os_string().into_encoded_bytes(),
    )
}

/// Prints one `-###` command line on stderr.
pub fn print_command(line: &[u8]) {
    let mut l = line.to_vec();
    l.push(b'\n');
    write_stderr(&l);
}

fn section(id: &[u8]) -> Vec<u8> {
    let mut s = SECTION_PREFIX.as_bytes().to_vec();
    s.extend_from_slice(id);
    s
}

/// Arguments (after the program name) of the bundling command:
/// for each entry `--add-section=__CLANG_OFFLOAD_BUNDLE__<id>=<file>` and
/// `--set-section-flags=__CLANG_OFFLOAD_BUNDLE__<id>=readonly,exclude`, then
/// `--`, the host input path and the output path.
///
/// `entries` are (entry ID, file) in `-targets` order; the host entry's file
/// is the temporary placeholder file, device files are the `-input` paths as
/// given.
fn bundle_objcopy_args<I: AsRef<[u8]>, F: AsRef<[u8]>>(
    entries: &[(I, F)],
    host_input: &[u8],
    output: &[u8],
) -> Vec<Vec<u8>> {
    let mut args = Vec::with_capacity(entries.len() * 2 + 3);
    for (id, file) in entries {
        let name = section(id.as_ref());
        let mut add = b"--add-section=".to_vec();
        add.extend_from_slice(&name);
        add.push(b'=');
        add.extend_from_slice(file.as_ref());
        args.push(add);
        let mut flags = b"--set-section-flags=".to_vec();
        flags.extend_from_slice(&name);
        flags.extend_from_slice(b"=readonly,exclude");
        args.push(flags);
    }
    args.push(b"--".to_vec());
    args.push(host_input.to_vec());
    args.push(output.to_vec());
    args
}

/// Arguments of the host-extraction command:
/// `--regex --remove-section=__CLANG_OFFLOAD_BUNDLE__.* -- <input> <temp file>`.
fn unbundle_objcopy_args(input: &[u8], temp_file: &[u8]) -> Vec<Vec<u8>> {
    let mut remove = b"--remove-section=".to_vec();
    remove.extend_from_slice(SECTION_PREFIX.as_bytes());
    remove.extend_from_slice(b".*");
    vec![
        b"--regex".to_vec(),
        remove,
        b"--".to_vec(),
        input.to_vec(),
        temp_file.to_vec(),
    ]
}

/// Renders a command the way `-###` prints it, without the final newline:
/// `"<program>" "<arg1>" "<arg2>" ...`.
fn render_command_line<A: AsRef<[u8]>>(program: &[u8], args: &[A]) -> Vec<u8> {
    let len = program.len() + 2 + args.iter().map(|a| a.as_ref().len() + 3).sum::<usize>();
    let mut line = Vec::with_capacity(len);
    line.push(b'"');
    line.extend_from_slice(program);
    line.push(b'"');
    for a in args {
        line.extend_from_slice(b" \"");
        line.extend_from_slice(a.as_ref());
        line.push(b'"');
    }
    line
}

/// The bundling command line as `-###` prints it (without the newline).
/// `objcopy` is the path the bundler found (next to its own executable,
/// else on `PATH`).
pub fn bundle_command_line<I: AsRef<[u8]>, F: AsRef<[u8]>>(
    objcopy: &[u8],
    entries: &[(I, F)],
    host_input: &[u8],
    output: &[u8],
) -> Vec<u8> {
    render_command_line(objcopy, &bundle_objcopy_args(entries, host_input, output))
}

/// The host-extraction command line as `-###` prints it (without the
/// newline).
pub fn unbundle_host_command_line(objcopy: &[u8], input: &[u8], temp_file: &[u8]) -> Vec<u8> {
    render_command_line(objcopy, &unbundle_objcopy_args(input, temp_file))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Vec<u8> {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/object_bundle/"
        );
        std::fs::read(format!("{dir}{name}")).unwrap()
    }

    #[test]
    fn command_lines_match_llvm_22_output() {
        let objcopy = b"/usr/lib/llvm-22/bin/llvm-objcopy";
        let tmp = temp_file_path(b"/tmp", b"XXXXXX");
        let mut line = bundle_command_line(
            objcopy,
            &[
                ("host-x86_64-unknown-linux-gnu-", tmp.as_slice()),
                ("hip-amdgcn-amd-amdhsa--gfx906", b"dev-gfx906.o".as_slice()),
            ],
            b"host-x86_64-unknown-linux-gnu.o",
            b"unused.o",
        );
        line.push(b'\n');
        assert_eq!(
            String::from_utf8(line).unwrap(),
            String::from_utf8(fixture("bundle.###.txt")).unwrap()
        );
        let mut line = unbundle_host_command_line(objcopy, b"fat-x86_64-unknown-linux-gnu.o", &tmp);
        line.push(b'\n');
        assert_eq!(
            String::from_utf8(line).unwrap(),
            String::from_utf8(fixture("unbundle.###.txt")).unwrap()
        );
    }

    #[test]
    fn bundle_line_matches_llvm_22() {
        // Printed by clang-offload-bundler 22 for
        // -targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906
        // -input=x64.o -input=d1 -output=fat.o -###
        let line = bundle_command_line(
            b"/usr/lib/llvm-22/bin/llvm-objcopy",
            &[
                (
                    "host-x86_64-unknown-linux-gnu-",
                    "/tmp/clang-offload-bundler-4d9606.tmp",
                ),
                ("hip-amdgcn-amd-amdhsa--gfx906", "d1"),
            ],
            b"x64.o",
            b"fat.o",
        );
        assert_eq!(
            String::from_utf8(line).unwrap(),
            "\"/usr/lib/llvm-22/bin/llvm-objcopy\" \
             \"--add-section=__CLANG_OFFLOAD_BUNDLE__host-x86_64-unknown-linux-gnu-=/tmp/clang-offload-bundler-4d9606.tmp\" \
             \"--set-section-flags=__CLANG_OFFLOAD_BUNDLE__host-x86_64-unknown-linux-gnu-=readonly,exclude\" \
             \"--add-section=__CLANG_OFFLOAD_BUNDLE__hip-amdgcn-amd-amdhsa--gfx906=d1\" \
             \"--set-section-flags=__CLANG_OFFLOAD_BUNDLE__hip-amdgcn-amd-amdhsa--gfx906=readonly,exclude\" \
             \"--\" \"x64.o\" \"fat.o\""
        );
    }

    #[test]
    fn unbundle_line_matches_llvm_22() {
        let line = unbundle_host_command_line(
            b"/usr/lib/llvm-22/bin/llvm-objcopy",
            b"fat.o",
            b"/tmp/clang-offload-bundler-359f90.tmp",
        );
        assert_eq!(
            String::from_utf8(line).unwrap(),
            "\"/usr/lib/llvm-22/bin/llvm-objcopy\" \"--regex\" \
             \"--remove-section=__CLANG_OFFLOAD_BUNDLE__.*\" \"--\" \"fat.o\" \
             \"/tmp/clang-offload-bundler-359f90.tmp\""
        );
    }

    #[test]
    fn quotes_and_spaces_are_not_escaped() {
        let line = render_command_line(b"/a b/objcopy", &[b"x\"y".as_slice(), b""]);
        assert_eq!(line, b"\"/a b/objcopy\" \"x\"y\" \"\"");
    }

    #[test]
    fn temp_paths_join_like_llvm() {
        // Observed with TMPDIR set to these values.
        for (dir, id, path) in [
            ("/tmp", "0d387f", "/tmp/clang-offload-bundler-0d387f.tmp"),
            ("/x/", "abcdef", "/x/clang-offload-bundler-abcdef.tmp"),
            ("//", "abcdef", "//clang-offload-bundler-abcdef.tmp"),
            ("", "9d5df9", "clang-offload-bundler-9d5df9.tmp"),
            ("rel", "054f23", "rel/clang-offload-bundler-054f23.tmp"),
        ] {
            assert_eq!(
                temp_file_path(dir.as_bytes(), id.as_bytes()),
                path.as_bytes()
            );
        }
    }
}
