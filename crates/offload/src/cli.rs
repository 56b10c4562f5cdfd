//! The command line, as clap definitions: `--help`, the shell completions
//! and the man page are all generated from these.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Offload kinds a `--target` may start with: LLVM 22's, and those other
/// toolchains write (`cuda`, DPC++'s `sycl`).
pub(crate) const KNOWN_KINDS: [&str; 6] = ["host", "openmp", "hip", "hipv4", "cuda", "sycl"];

/// The subcommands with a man page of their own.
pub const SUBCOMMANDS: [&str; 6] = ["ls", "size", "extract", "thin", "completions", "man"];

const AFTER_HELP: &str = "\
Inputs: executables, shared libraries, objects, archives, bundles, offload
binaries, fat binaries; Python wheels (read without unpacking); directory
trees (ls and thin). `-` is standard input for ls and extract.

Examples:
  offload ls libamdhip_app.so              what device code is in a library
  offload ls --json lib.a | jq .           the same, for scripts
  offload ls --summary site-packages/      bytes per GPU in a tree, and what thin would free
  offload ls --format=llvm app             llvm-readobj --offloading's lines, corrected
  offload extract --target gfx90a app      the gfx90a code objects, into the current directory
  offload extract -o k.co --bundle 1 --target gfx906 --kind hipv4 lib.so
  offload thin --keep gfx90a -o lib-gfx90a.so lib.so
  offload thin --keep sm_90 -o torch-sm_90.whl torch.whl

Exit status: 0 when every input was read completely; 1 when an input could
not be read, holds damage or holds no device code (reported on stderr; ls
still lists everything else, extract and thin write nothing), or when a
selection value (--target, --keep, --drop, --bundle) matches nothing; 2
for usage errors (an unknown option, --kind value or GPU, a missing
argument, options that conflict). A closed standard output
(`| head`) ends the output quietly and does not change the status.";

/// `--help`'s first line: the package description, written out here because
/// the Python wheel builds this file as a binary of another crate
/// (crates/offload-tools), whose description clap's bare `about` would take.
const ABOUT: &str = "List and extract the device code inside executables, shared libraries, \
objects and archives (offload bundles, CCOBs, offload binaries, NVIDIA fat binaries)";

/// What `--help` adds to [`ABOUT`]: the third subcommand and the inputs
/// beyond files.
const LONG_ABOUT_MORE: &str = "\n\nThin them to the GPUs wanted (offload thin), in files, \
directory trees and Python wheels.";

/// [`ABOUT`] and [`LONG_ABOUT_MORE`].
fn const_format_about() -> String {
    format!("{ABOUT}{LONG_ABOUT_MORE}")
}

/// List and extract the device code inside executables, shared libraries,
/// objects and archives.
///
/// `-V` and `--version` print the version; with `OFFLOAD_TOOLS_VERSION=1`
/// set, `--version` adds the commit, the build (the Python wheel's says
/// so) and the compression libraries linked, as the drop-ins' does.
#[derive(Debug, Parser)]
#[command(
    name = "offload",
    version,
    long_version = offload_cli::ident::long_version(),
    about = ABOUT,
    long_about = const_format_about(),
    after_help = AFTER_HELP
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List everything offload-related in each file, at any depth.
    #[command(after_help = "\
Examples:
  offload ls librocsparse.so.0                 a tree of sections, bundles and entries
  offload ls --json lib.a                      versioned JSON (docs/tools/offload-json.md)
  offload ls --format=llvm app                 ID<TAB>URI lines, as llvm-readobj --offloading")]
    Ls(LsArgs),
    /// Where each file's bytes go: host, containers, and per architecture
    /// the device images, down to each kernel.
    #[command(after_help = crate::profile_help::AFTER_HELP)]
    Size(SizeArgs),
    /// Write the selected entries (all by default) to files.
    #[command(after_help = "\
Examples:
  offload extract app                          every entry, into the current directory
  offload extract --target gfx90a -d out app   gfx90a code objects (any xnack/sramecc) into out/
  offload extract --target gfx90a:xnack- app   those that run with xnack off (xnack-, or no setting)
  offload extract --target hipv4-amdgcn-amd-amdhsa--gfx906 -o k.co app.o
  offload extract --bundle 1 --target hipv4-amdgcn-amd-amdhsa--gfx90a -o k.co lib.so
                                               one translation unit's entry (#1 of ls)
  offload extract --kind host lib.a            the host entries
  offload extract --target sm_90 app           what a 9.0 GPU can use: cubins it runs, PTX it compiles
  offload extract --target sm_90.cubin --bundle 0 -o - app > k.cubin
  offload extract -o k.co 'file://lib.so#offset=16384&size=3408'
                                               the entry at a URI that ls prints

Files are named <input>.<n>.<entry>, as llvm-objdump --offloading names
them: the input's file name, the index of the bundle (or offload binary,
fat binary container) in listing order, and the entry ID with characters
outside [A-Za-z0-9._+:-] replaced by '_'. NVIDIA entries are written and
named as cuobjdump -xelf all -xptx all writes them (<input>.<k>.sm_90a.cubin,
.ptx); --raw keeps them as stored.

--target values are read as docs/tools/offload.md, \"Selecting entries\",
says, as thin reads --keep. A --target or --bundle that selects nothing
in any input is an error, and so is a selection that selects nothing. Outputs are written together or
not at all: an input that cannot be read completely means no output, and
-o - writes nothing to standard output unless everything succeeded.")]
    Extract(ExtractArgs),
    /// Rewrite files, trees and wheels without the device code of unwanted
    /// GPUs, smaller (to -o FILE, --in-place, or a --dry-run report).
    #[command(after_help = crate::thin_help::AFTER_HELP)]
    Thin(ThinArgs),
    /// Print a shell completion script.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print a man page (roff): offload(1), or a subcommand's.
    #[command(after_help = "\
Examples:
  offload man | man -l -                       read offload(1)
  offload man thin > offload-thin.1            a subcommand's page
  offload man --dir share/man/man1             write every page")]
    Man {
        /// The subcommand whose page to print (offload-PAGE(1)); none:
        /// offload(1).
        #[arg(value_parser = SUBCOMMANDS, conflicts_with = "dir")]
        page: Option<String>,
        /// Write every page (offload.1, offload-ls.1, ...) into DIR
        /// (created if missing) and print their names.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// The text layouts of `ls`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A readable tree.
    Tree,
    /// `ID<TAB>URI` lines, as `llvm-readobj --offloading` prints them.
    Llvm,
}

/// `offload ls`.
#[derive(Debug, Args)]
pub struct LsArgs {
    /// Print JSON (schema in docs/tools/offload-json.md).
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Text layout.
    #[arg(long, value_enum, default_value_t = Format::Tree)]
    pub format: Format,
    /// Decompress every compressed bundle completely and check its hash,
    /// and decode every compressed NVIDIA entry to its end and check its
    /// size (by default each is decoded only as far as its entries' first
    /// bytes: enough to read its entries and name their payloads).
    #[arg(long)]
    pub verify: bool,
    /// Print, instead of the listing, the bytes of device code per vendor
    /// and GPU architecture over all inputs, and what `offload thin --keep
    /// GPU` would free for each GPU present.
    #[arg(long, conflicts_with_all = ["format", "verify"])]
    pub summary: bool,
    /// Files to inspect: executables, shared libraries, objects, archives,
    /// bundles, compressed bundles, offload binaries, fat binaries,
    /// bitcode, zip archives (Python wheels: their members read without
    /// unpacking); or directories, read recursively (symbolic links not
    /// followed; files without device code left out).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

/// `offload size`.
#[derive(Debug, Args)]
pub struct SizeArgs {
    /// Print JSON (schema in docs/tools/offload-json.md).
    #[arg(long)]
    pub json: bool,
    /// List the N largest functions and duplicates (text default: 20;
    /// JSON: all).
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    /// Only functions whose name (demangled, or as stored) matches this
    /// regular expression.
    #[arg(long, value_name = "REGEX")]
    pub filter: Option<String>,
    /// Only functions of this architecture (`sm_90`: its cubins and PTX;
    /// `compute_90`: its PTX; `gfx90a`: every setting of its features;
    /// `gfx90a:xnack-`: exactly those). Repeat it or give a
    /// comma-separated list.
    #[arg(long, value_name = "ARCH", value_delimiter = ',')]
    pub arch: Vec<String>,
    /// Files, directories (read recursively) or wheels.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

/// `offload extract`.
#[derive(Debug, Args)]
pub struct ExtractArgs {
    /// Keep entries for this target: a processor (`gfx90a`: any
    /// xnack/sramecc), a target ID (`gfx90a:xnack-`: what runs with xnack
    /// off, built with xnack- or without a setting), an NVIDIA `sm_NN`
    /// (what that GPU can use: cubins it runs, PTX it compiles),
    /// `compute_NN` (that PTX), an entry ID, or a triple. One value per
    /// occurrence: repeat it (or give a comma-separated list) to take
    /// several. A value that matches no entry of any input is an error;
    /// a GPU that does not exist (`sm_95`, `gfx999`) is refused.
    #[arg(long, short = 't', value_name = "T", value_delimiter = ',')]
    pub target: Vec<String>,
    /// Keep entries of this offload kind (`host`, `hip`, `hipv4`, `openmp`,
    /// `cuda`, `sycl`; `hip` and `hipv4` match each other).
    #[arg(long, short = 'k', value_name = "K", value_parser = clap::builder::PossibleValuesParser::new(KNOWN_KINDS))]
    pub kind: Option<String>,
    /// Keep the entries of this container only: the `#K` of the `ls` tree
    /// (bundle, offload binary or fat binary container, counted from 0 in
    /// each input). Picks one translation unit of a library. Repeat it (or
    /// give a comma-separated list) to take several.
    #[arg(long, short = 'b', value_name = "K", value_delimiter = ',')]
    pub bundle: Vec<usize>,
    /// Also let `hip` entries serve `openmp` requests and the reverse, as
    /// the bundler's `-hip-openmp-compatible`.
    #[arg(long)]
    pub hip_openmp_compatible: bool,
    /// Directory for the outputs (default: the current directory). One
    /// that does not exist is made whole under a staging name beside it
    /// and renamed into place at the end: it appears with every output or
    /// not at all.
    #[arg(long, short = 'd', value_name = "DIR", conflicts_with = "output")]
    pub output_dir: Option<PathBuf>,
    /// Write the one selected entry here (`-` for standard output); more
    /// than one selected entry is an error.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Write NVIDIA entries as their container stores them (compressed ones
    /// still compressed, named with `.zst` or `.nvlz` added) instead of
    /// decoded as cuobjdump writes them.
    #[arg(long)]
    pub raw: bool,
    /// Inputs.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

/// `offload thin`.
#[derive(Debug, Args)]
pub struct ThinArgs {
    /// Keep the device code for this target, as `extract --target` selects
    /// it: a processor (`gfx90a`: every entry for it, any xnack/sramecc),
    /// a target ID (`gfx90a:xnack-`: what runs with xnack off), an NVIDIA
    /// `sm_NN` (cubins that GPU runs, PTX it compiles), an entry ID or a
    /// triple. Entries for other GPUs of the same vendor are dropped. One value per
    /// occurrence: repeat it (or give a comma-separated list) to keep
    /// several. A value that matches nothing in an input is an error.
    #[arg(long, value_name = "TARGET", value_delimiter = ',')]
    pub keep: Vec<String>,
    /// Drop the device code for this target (same forms as --keep). Repeat
    /// it, or give a comma-separated list. A value that matches nothing in
    /// any input is an error.
    #[arg(long, value_name = "TARGET", value_delimiter = ',')]
    pub drop: Vec<String>,
    /// Write the thinned file here (one input only).
    #[arg(long, short = 'o', value_name = "OUT", conflicts_with = "in_place")]
    pub output: Option<PathBuf>,
    /// Replace each input with its thinned form (written beside it, then
    /// renamed over it).
    #[arg(long)]
    pub in_place: bool,
    /// Print what would be dropped; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Rewrite each container in the space it had, the freed bytes left
    /// as zeros (holes), every other byte where it was. Without it, a
    /// shared library is shrunk: the freed bytes are taken out of the file
    /// where every reference to the moved bytes is accounted for (else it
    /// is rewritten in place, and the report says why).
    #[arg(long)]
    pub keep_layout: bool,
    /// NVIDIA: also drop a container's PTX where, for every GPU a --keep
    /// names, a kept cubin runs (without it, PTX those GPUs can compile is
    /// kept, for GPUs yet to come).
    #[arg(long)]
    pub drop_ptx: bool,
    /// Compression level for compressed bundles, 1 to 22 for zstd, 1 to
    /// 9 for zlib (default: the level LLVM 22's bundler uses for the
    /// method found: zstd 3, zlib 6).
    #[arg(long, value_name = "N", allow_negative_numbers = true,
          value_parser = clap::value_parser!(i32).range(1..=22))]
    pub compression_level: Option<i32>,
    /// Inputs: executables, shared libraries, objects, archives, bundles,
    /// Python wheels (written as a new wheel, RECORD updated); or
    /// directories, thinned file by file (with --in-place or --dry-run).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

#[cfg(test)]
mod tests {
    /// The help's first line is the package description (see [`super::ABOUT`]).
    #[test]
    fn about_is_the_package_description() {
        assert_eq!(super::ABOUT, env!("CARGO_PKG_DESCRIPTION"));
    }
}
