//! The option table a tool declares: every fact about an option (name,
//! kind, occurrences, comma splitting, required-ness, visibility, value
//! name, help line, category, suggestion rank) in one row, read by the
//! parser ([`super::parse`]), the help printer ([`super::help`]) and the man
//! page renderer ([`super::man`]).
//!
//! Rows are built with the `const fn` constructors ([`flag`], [`string`],
//! [`uint`], [`int`], [`choice`]) and refined with the builder methods, so a
//! tool's table reads as a list:
//!
//! ```
//! use offload_cli::cl::table::{flag, string, Opt};
//! const OPTS: &[Opt] = &[
//!     string("o", "file", "Write output to <file>.").rank(3),
//!     flag("archive", "Write extracted files to a static archive").rank(5),
//! ];
//! assert_eq!(OPTS[0].value_name, "file");
//! ```

/// Which help text is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HelpKind {
    /// `--help`
    Help,
    /// `--help-hidden`
    HelpHidden,
    /// `--help-list`
    HelpList,
    /// `--help-list-hidden`
    HelpListHidden,
}

/// What an option's value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// LLVM `bool`: `-x`, or `-x=true|false|1|0` (no separate value).
    Flag,
    /// A string: `-x=v` or `-x v`.
    Str,
    /// LLVM `uint`: a number in any radix that fits 32 bits.
    Uint,
    /// LLVM `int`: an optionally negative number in any radix.
    Int,
    /// One of the listed values, each `(name, help line)` (LLVM's
    /// `cl::values`).
    Choice(&'static [(&'static str, &'static str)]),
}

/// Where an option shows (LLVM's hidden flag).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// In `--help` and `--help-list`.
    Always,
    /// Only in `--help-hidden` and `--help-list-hidden`.
    Hidden,
    /// Nowhere, and never proposed by "Did you mean" (LLVM's
    /// `ReallyHidden`, which is also what options outside the tool's
    /// category get).
    Never,
}

/// The help section an option is listed under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    /// "Generic Options": help, version and the other options every LLVM
    /// tool has.
    Generic,
    /// "`<tool>` options".
    Tool,
}

/// What parsing an option does beyond recording its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Record the value for the tool.
    Store,
    /// Print this help text and stop (exit 0).
    Help(HelpKind),
    /// Print the version and stop (exit 0).
    Version,
    /// Accept a boolean and ignore it.
    Ignore,
}

/// One row of a tool's option table.
#[derive(Debug, Clone, Copy)]
pub struct Opt {
    /// The name without dashes (`-x` and `--x` both name it).
    pub name: &'static str,
    /// The value's kind.
    pub kind: Kind,
    /// May occur any number of times, values appended (LLVM's `cl::list`
    /// or `ZeroOrMore`); otherwise LLVM 22 keeps the last value and LLVM
    /// 14 refuses a second occurrence.
    pub multi: bool,
    /// Each value is split at commas, empty items kept
    /// (`cl::CommaSeparated`).
    pub comma: bool,
    /// Reported missing when absent (`cl::Required`).
    pub required: bool,
    /// Help visibility.
    pub shown: Shown,
    /// The placeholder in help (`--name=<value_name>`); empty for flags.
    pub value_name: &'static str,
    /// The help text; lines after the first are indented under it.
    pub help: &'static str,
    /// The help section.
    pub category: Category,
    /// Position in LLVM's option map, whose order decides ties in "Did you
    /// mean" and the order of "must be specified" errors: lower first.
    pub rank: u16,
    /// What parsing it does.
    pub action: Action,
}

const fn base(name: &'static str, kind: Kind, value_name: &'static str, help: &'static str) -> Opt {
    Opt {
        name,
        kind,
        multi: false,
        comma: false,
        required: false,
        shown: Shown::Always,
        value_name,
        help,
        category: Category::Tool,
        rank: u16::MAX,
        action: Action::Store,
    }
}

/// A boolean option.
pub const fn flag(name: &'static str, help: &'static str) -> Opt {
    base(name, Kind::Flag, "", help)
}

/// A string-valued option shown as `--name=<value_name>`.
pub const fn string(name: &'static str, value_name: &'static str, help: &'static str) -> Opt {
    base(name, Kind::Str, value_name, help)
}

/// An LLVM `uint` option.
pub const fn uint(name: &'static str, value_name: &'static str, help: &'static str) -> Opt {
    base(name, Kind::Uint, value_name, help)
}

/// An LLVM `int` option.
pub const fn int(name: &'static str, value_name: &'static str, help: &'static str) -> Opt {
    base(name, Kind::Int, value_name, help)
}

/// An option taking one of `values` (shown as `--name=<value>`).
pub const fn choice(
    name: &'static str,
    values: &'static [(&'static str, &'static str)],
    help: &'static str,
) -> Opt {
    base(name, Kind::Choice(values), "value", help)
}

impl Opt {
    /// May repeat; values accumulate.
    pub const fn multi(mut self) -> Opt {
        self.multi = true;
        self
    }
    /// Values split at commas (implies [`Opt::multi`]).
    pub const fn comma(mut self) -> Opt {
        self.comma = true;
        self.multi = true;
        self
    }
    /// Must be given.
    pub const fn required(mut self) -> Opt {
        self.required = true;
        self
    }
    /// Shown only by the hidden help variants.
    pub const fn hidden(mut self) -> Opt {
        self.shown = Shown::Hidden;
        self
    }
    /// Accepted but never shown nor suggested.
    pub const fn never_shown(mut self) -> Opt {
        self.shown = Shown::Never;
        self
    }
    /// Its place in LLVM's option map.
    pub const fn rank(mut self, rank: u16) -> Opt {
        self.rank = rank;
        self
    }

    /// Whether `--name=value` is compared by its name alone when looking
    /// for the nearest option (LLVM's `ValueDisallowed` options compare the
    /// whole argument).
    pub(crate) fn permits_value(&self) -> bool {
        !matches!(self.action, Action::Help(_) | Action::Version)
    }

    /// Whether the option consumes the next argument when given without
    /// `=value`.
    pub(crate) fn needs_value(&self) -> bool {
        self.kind != Kind::Flag
    }
}

const fn generic(name: &'static str, action: Action, shown: Shown, help: &'static str) -> Opt {
    let mut o = base(name, Kind::Flag, "", help);
    o.category = Category::Generic;
    o.action = action;
    o.shown = shown;
    o
}

/// `--help`.
pub const HELP: Opt = generic(
    "help",
    Action::Help(HelpKind::Help),
    Shown::Always,
    "Display available options (--help-hidden for more)",
);
/// `--help-hidden`.
pub const HELP_HIDDEN: Opt = generic(
    "help-hidden",
    Action::Help(HelpKind::HelpHidden),
    Shown::Hidden,
    "Display all available options",
);
/// `--help-list`: hidden, except in the categorized `--help`, which shows
/// it so that the flat list can be found.
pub const HELP_LIST: Opt = generic(
    "help-list",
    Action::Help(HelpKind::HelpList),
    Shown::Hidden,
    "Display list of available options (--help-list-hidden for more)",
);
/// `--help-list-hidden`.
pub const HELP_LIST_HIDDEN: Opt = generic(
    "help-list-hidden",
    Action::Help(HelpKind::HelpListHidden),
    Shown::Hidden,
    "Display list of all available options",
);
/// `--version`.
pub const VERSION: Opt = generic(
    "version",
    Action::Version,
    Shown::Always,
    "Display the version of this program",
);
/// `--print-options` (accepted and ignored).
pub const PRINT_OPTIONS: Opt = generic(
    "print-options",
    Action::Ignore,
    Shown::Hidden,
    "Print non-default options after command line parsing",
);
/// `--print-all-options` (accepted and ignored).
pub const PRINT_ALL_OPTIONS: Opt = generic(
    "print-all-options",
    Action::Ignore,
    Shown::Hidden,
    "Print all option values after command line parsing",
);

/// The positional arguments a tool takes.
#[derive(Debug, Clone, Copy)]
pub struct Positional {
    /// Its description, printed after `[options]` in the usage line.
    pub help: &'static str,
    /// How many must be given.
    pub min: usize,
    /// How many may be given; `None` for any number.
    pub max: Option<usize>,
}

/// Which LLVM's `cl` rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// LLVM 22: repeated single options keep the last value, one-letter
    /// options show their value as `-o <file>`.
    Llvm22,
    /// LLVM 14: repeated single options are errors, a recursive response
    /// file is kept as an argument, values show as `-o=<file>`.
    Llvm14,
}

/// What a tool takes from the LLVM build it stands in for.
#[derive(Debug, Clone, Copy)]
pub struct Build {
    /// The whole `--version` output.
    pub version: &'static str,
    /// The `cl` rules.
    pub dialect: Dialect,
    /// Option categories of the LLVM libraries that hold no option of the
    /// tool, `(name, description)`: LLVM 14's `--help-hidden` lists them.
    pub empty_categories: &'static [(&'static str, &'static str)],
}

/// What a man page says besides the options.
#[derive(Debug, Clone, Copy)]
pub struct Manual {
    /// The NAME line's summary.
    pub summary: &'static str,
    /// The DESCRIPTION paragraphs (blank-line separated).
    pub description: &'static str,
    /// SEE ALSO entries, `name(section)`.
    pub see_also: &'static [&'static str],
    /// The environment variables of LLVM's tool that this one honours too
    /// (name, what it does), listed under ENVIRONMENT before the
    /// variables every tool of the project honours.
    pub environment: &'static [(&'static str, &'static str)],
}

/// A tool's whole command line.
#[derive(Debug, Clone, Copy)]
pub struct Tool {
    /// The tool's name (its help category is "`<name>` options").
    pub name: &'static str,
    /// The `OVERVIEW:` text of the help.
    pub overview: &'static str,
    /// Positional arguments; `None` when the tool takes none.
    pub positional: Option<Positional>,
    /// Every option, the generic ones included.
    pub options: &'static [Opt],
    /// Its version text, `cl` rules and library option categories.
    pub build: Build,
    /// The man page's prose.
    pub manual: Manual,
}

impl Tool {
    /// The row named `name`.
    pub fn find(&self, name: &[u8]) -> Option<usize> {
        self.options.iter().position(|o| o.name.as_bytes() == name)
    }
}
