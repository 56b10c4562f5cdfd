//! The help and version texts, as LLVM 22's `cl` prints them for this tool.

use offload_cli::cl::HelpKind;

const OVERVIEW: &str = "OVERVIEW: A utility for bundling several object files into a single binary.
The output binary can then be embedded into the host section table
to create a fatbinary containing offloading code.

";

const ARCHIVE: &str = "  --archive                   - Write extracted files to a static archive\n";
const HELP: &str =
    "  --help                      - Display available options (--help-hidden for more)\n";
const HELP_HIDDEN: &str = "  --help-hidden               - Display all available options\n";
const HELP_LIST: &str = "  --help-list                 - Display list of available options (--help-list-hidden for more)\n";
const HELP_LIST_HIDDEN: &str =
    "  --help-list-hidden          - Display list of all available options\n";
const IMAGE: &str = "  --image=<<key>=<value>,...> - List of key and value arguments. Required keywords are 'file' and 'triple'.\n";
const O: &str = "  -o <file>                   - Write output to <file>.\n";
const PRINT_ALL: &str =
    "  --print-all-options         - Print all option values after command line parsing\n";
const PRINT: &str =
    "  --print-options             - Print non-default options after command line parsing\n";
const VERSION: &str = "  --version                   - Display the version of this program\n";

/// The help text of `kind`; `prog` is `argv[0]`'s file name.
pub fn help(kind: HelpKind, prog: &str) -> String {
    let mut s = String::from(OVERVIEW);
    s.push_str(&format!(
        "USAGE: {prog} [options] Extract from <file>.\n\nOPTIONS:\n"
    ));
    let own = [ARCHIVE, IMAGE, O].concat();
    match kind {
        HelpKind::Help => {
            s.push_str("\nGeneric Options:\n\n");
            s.push_str(&[HELP, HELP_LIST, VERSION].concat());
            s.push_str("\nllvm-offload-binary options:\n\n");
            s.push_str(&own);
        }
        HelpKind::HelpHidden => {
            s.push_str("\nGeneric Options:\n\n");
            s.push_str(
                &[
                    HELP,
                    HELP_HIDDEN,
                    HELP_LIST,
                    HELP_LIST_HIDDEN,
                    PRINT_ALL,
                    PRINT,
                    VERSION,
                ]
                .concat(),
            );
            s.push_str("\nllvm-offload-binary options:\n\n");
            s.push_str(&own);
        }
        HelpKind::HelpList => {
            s.push_str(&[ARCHIVE, HELP, IMAGE, O, VERSION].concat());
        }
        HelpKind::HelpListHidden => {
            s.push_str(
                &[
                    ARCHIVE,
                    HELP,
                    HELP_HIDDEN,
                    HELP_LIST,
                    HELP_LIST_HIDDEN,
                    IMAGE,
                    O,
                    PRINT_ALL,
                    PRINT,
                    VERSION,
                ]
                .concat(),
            );
        }
    }
    s
}

/// The `--version` output of the Debian LLVM 22.1.8 build.
pub fn version() -> String {
    "Debian LLVM version 22.1.8\n  Optimized build.\n".to_string()
}
