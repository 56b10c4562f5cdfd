//! Thin archives' members are separate files, read by `offload-cli` for the
//! format library (which does no I/O): the refusals of
//! [`read_member_file`], through the device-archive reader.

use offload_cli::fsio::read_member_file;
use offload_format::archive::Archive;
use test_support::ar::{long_names, member_header};

/// A thin archive whose one member is `/dev/zero`.
fn dev_zero_thin_archive() -> Vec<u8> {
    let table = b"/dev/zero/\n";
    let mut data = b"!<thin>\n".to_vec();
    data.extend(long_names(table));
    data.extend(member_header("/0", 100));
    data
}

/// Hostile corpus `archive-thin-dev-zero.a`: a thin archive naming
/// `/dev/zero` made the reader read without end (LLVM 22 runs out of memory
/// and aborts). Only regular files are thin members.
#[test]
fn thin_member_that_is_a_device_is_refused() {
    let data = dev_zero_thin_archive();
    let archive = Archive::parse(&data).unwrap();
    let member = archive.members().next().unwrap().unwrap();
    assert_eq!(member.name, b"/dev/zero");
    let e = archive
        .member_data(
            &member,
            std::path::Path::new("x.a"),
            Some(&mut read_member_file),
        )
        .unwrap_err();
    assert_eq!(e.to_string(), "'/dev/zero': not a regular file");
}

/// The same through the device-archive reader behind `clang-offload-bundler
/// -unbundle -type=a`, which read the member without end until memory ran
/// out (found with the hostile corpus run under a memory limit).
#[test]
fn device_archive_thin_member_that_is_a_device_is_refused() {
    use offload_format::device_archive::{Input, Options, Target, Unbundled};
    let data = dev_zero_thin_archive();
    let mut input = Input::from_bytes(data, std::path::Path::new("x.a"))
        .unwrap()
        .with_thin_members(read_member_file);
    let targets = [Target::new("hip-amdgcn-amd-amdhsa--gfx906").unwrap()];
    let e = Unbundled::read(
        &mut input,
        &targets,
        &Options::default(),
        "x.a",
        &mut |_| {},
    )
    .and_then(|plan| plan.finish(&mut |_| {}))
    .and_then(|plan| plan.to_vecs(&mut input))
    .unwrap_err();
    assert_eq!(e.to_string(), "'/dev/zero': not a regular file");
}
