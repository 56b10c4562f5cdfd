//! LLVM `cl`-compatible command lines, driven by one option table per tool.
//!
//! LLVM's tools accept `-opt` and `--opt`, `-opt=v` and `-opt v`, booleans
//! with `=true|false|1|0`, numbers in any radix, comma lists that keep empty
//! items, grouped one-letter flags, response files, and report mistakes
//! with their own wording and a "Did you mean" guess. A tool declares its
//! options once, as a [`table::Tool`]; [`parse`] walks argv once with
//! LLVM's rules and messages, [`help::render`] prints the four help texts
//! and [`man::render`] the man page, all from that table.

pub mod help;
pub mod man;
pub mod table;
pub mod tools;

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::process::ExitCode;

use crate::diag::write_stderr;
use crate::response;
pub use table::HelpKind;
use table::{Action, Dialect, Kind, Shown, Tool};

/// One parsed value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Value {
    Bool(bool),
    Uint(u32),
    Int(i32),
    Str(OsString),
}

/// What was given for one option.
#[derive(Debug, Clone, Default)]
struct Slot {
    /// Occurrences, counted before the value is checked (as LLVM does).
    count: usize,
    values: Vec<Value>,
}

/// A parsed command line: the values of the tool's options, in the table's
/// terms.
#[derive(Debug)]
pub struct Parsed {
    tool: &'static Tool,
    slots: Vec<Slot>,
    /// The positional arguments, in order.
    pub positionals: Vec<OsString>,
    /// `argv[0]` exactly as invoked (after response-file expansion).
    pub argv0: OsString,
}

impl Parsed {
    fn slot(&self, name: &str) -> &Slot {
        let i = self
            .tool
            .find(name.as_bytes())
            .unwrap_or_else(|| panic!("option '{name}' is not in {}'s table", self.tool.name));
        &self.slots[i]
    }

    fn last(&self, name: &str) -> Option<&Value> {
        self.slot(name).values.last()
    }

    /// A boolean option's last value; `None` when not given.
    pub fn bool(&self, name: &str) -> Option<bool> {
        match self.last(name) {
            Some(Value::Bool(b)) => Some(*b),
            _ => None,
        }
    }

    /// A boolean option: given and last set to true.
    pub fn flag(&self, name: &str) -> bool {
        self.bool(name) == Some(true)
    }

    /// A single-valued option's last value.
    pub fn value(&self, name: &str) -> Option<&OsStr> {
        match self.last(name) {
            Some(Value::Str(s)) => Some(s),
            _ => None,
        }
    }

    /// Every value of a repeatable option, comma items split.
    pub fn values(&self, name: &str) -> Vec<OsString> {
        self.slot(name)
            .values
            .iter()
            .filter_map(|v| match v {
                Value::Str(s) => Some(s.clone()),
                _ => None,
            })
            .collect()
    }

    /// An LLVM `uint` option's last value.
    pub fn uint(&self, name: &str) -> Option<u32> {
        match self.last(name) {
            Some(Value::Uint(n)) => Some(*n),
            _ => None,
        }
    }

    /// An LLVM `int` option's last value.
    pub fn int(&self, name: &str) -> Option<i32> {
        match self.last(name) {
            Some(Value::Int(n)) => Some(*n),
            _ => None,
        }
    }

    /// Prints `--help-list` (what the tools' hidden `-h` shows) and returns
    /// the exit code that goes with it.
    pub fn print_help_list(&self) -> ExitCode {
        let text = help::render(self.tool, HelpKind::HelpList, &program_name(&self.argv0));
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        ExitCode::SUCCESS
    }
}

/// Parses `args` (`argv[0]` first) for `tool`. On `--help`/`--version`, or
/// after reporting errors LLVM's way, returns the exit code the process
/// should end with.
pub fn parse(tool: &'static Tool, args: Vec<OsString>) -> Result<Parsed, ExitCode> {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let r = parse_to(tool, args, &mut out, &mut err);
    write_stderr(&err);
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(&out);
    let _ = stdout.flush();
    r
}

/// [`parse`], with what it would print to stdout and stderr appended to
/// `out` and `err` instead (for tests).
pub fn parse_to(
    tool: &'static Tool,
    args: Vec<OsString>,
    out: &mut Vec<u8>,
    err: &mut Vec<u8>,
) -> Result<Parsed, ExitCode> {
    let argv = match response::expand(args, tool.build.dialect == Dialect::Llvm14) {
        Ok(argv) => argv,
        Err(message) => {
            // LLVM 22 prints this and then runs the tool with no options
            // at all, which ends in a tool-specific error (or, for
            // llvm-offload-binary, a crash); stopping here is the
            // dependable part of that.
            err.extend_from_slice(message.as_bytes());
            err.push(b'\n');
            return Err(ExitCode::FAILURE);
        }
    };
    let argv0 = argv.first().cloned().unwrap_or_default();
    let prog = Path::new(&argv0)
        .file_name()
        .map(|s| s.to_os_string())
        .unwrap_or_default();
    let mut p = Parser {
        tool,
        prog,
        argv0: argv0.clone(),
        slots: vec![Slot::default(); tool.options.len()],
        errors: false,
        err,
        out,
    };
    let mut positionals: Vec<OsString> = Vec::new();
    let mut dashdash = false;
    let mut i = 1;
    while i < argv.len() {
        let arg = argv[i].as_bytes();
        if dashdash || arg.first() != Some(&b'-') || arg == b"-" {
            if tool.positional.is_some() {
                positionals.push(argv[i].clone());
            } else {
                p.unknown(arg, None);
            }
            i += 1;
            continue;
        }
        if arg == b"--" {
            dashdash = true;
            i += 1;
            continue;
        }
        let mut body = &arg[1..];
        if body.first() == Some(&b'-') {
            body = &body[1..];
        }
        let (name, value) = match body.iter().position(|&c| c == b'=') {
            Some(eq) => (&body[..eq], Some(&body[eq + 1..])),
            None => (body, None),
        };
        let (idx, value) = match tool.find(name) {
            Some(idx) => {
                if let Some(code) = p.act(idx, value) {
                    return Err(code);
                }
                (idx, value)
            }
            None => match p.grouped(body) {
                // The group ended in an option that takes a value.
                Ok(Some(idx)) => (idx, None),
                Ok(None) => {
                    i += 1;
                    continue;
                }
                Err(rest) => {
                    p.unknown(arg, Some(&rest));
                    i += 1;
                    continue;
                }
            },
        };
        // A value-taking option without `=value` takes the next argument.
        let value = match value {
            Some(v) => Some(v.to_vec()),
            None if tool.options[idx].needs_value() => match argv.get(i + 1) {
                Some(next) => {
                    i += 1;
                    Some(next.as_bytes().to_vec())
                }
                None => {
                    p.option_error(tool.options[idx].name, "requires a value!");
                    i += 1;
                    continue;
                }
            },
            None => None,
        };
        p.provide(idx, value);
        i += 1;
    }

    if let Some(pos) = &tool.positional {
        let (min, max) = (pos.min, pos.max);
        if positionals.len() < min {
            let mut msg = p.prog_prefix();
            msg.extend_from_slice(b"Not enough positional command line arguments specified!\n");
            msg.extend_from_slice(
                format!(
                    "Must specify at least {min} positional argument{}: See: ",
                    if min > 1 { "s" } else { "" }
                )
                .as_bytes(),
            );
            msg.extend_from_slice(argv0.as_bytes());
            msg.extend_from_slice(b" --help\n");
            p.err.extend_from_slice(&msg);
            p.errors = true;
        } else if let Some(max) = max.filter(|&m| positionals.len() > m) {
            let mut msg = p.prog_prefix();
            msg.extend_from_slice(b"Too many positional arguments specified!\n");
            msg.extend_from_slice(
                format!("Can specify at most {max} positional arguments: See: ").as_bytes(),
            );
            msg.extend_from_slice(argv0.as_bytes());
            msg.extend_from_slice(b" --help\n");
            p.err.extend_from_slice(&msg);
            p.errors = true;
        }
    }
    // Missing required options, in the order of LLVM's option map.
    let mut missing: Vec<&table::Opt> = tool
        .options
        .iter()
        .zip(&p.slots)
        .filter(|(o, s)| o.required && s.count == 0)
        .map(|(o, _)| o)
        .collect();
    missing.sort_by_key(|o| o.rank);
    for o in missing {
        p.option_error(o.name, "must be specified at least once!");
    }
    if p.errors {
        return Err(ExitCode::FAILURE);
    }
    Ok(Parsed {
        tool,
        slots: p.slots,
        positionals,
        argv0,
    })
}

struct Parser<'a> {
    tool: &'static Tool,
    err: &'a mut Vec<u8>,
    out: &'a mut Vec<u8>,
    prog: OsString,
    argv0: OsString,
    slots: Vec<Slot>,
    errors: bool,
}

impl Parser<'_> {
    fn prog_prefix(&self) -> Vec<u8> {
        let mut v = self.prog.as_bytes().to_vec();
        v.extend_from_slice(b": ");
        v
    }

    /// `<prog>: for the --name option: <msg>` (one dash for one letter).
    fn option_error(&mut self, name: &str, msg: &str) {
        let mut v = self.prog_prefix();
        v.extend_from_slice(format!("for the {} option: {msg}\n", dashed(name)).as_bytes());
        self.err.extend_from_slice(&v);
        self.errors = true;
    }

    /// Runs the generic options' actions; returns an exit code when the
    /// program must stop now (help and version print the moment they are
    /// parsed).
    fn act(&mut self, idx: usize, value: Option<&[u8]>) -> Option<ExitCode> {
        let o = &self.tool.options[idx];
        match o.action {
            Action::Help(_) | Action::Version if value.is_some() => {
                let v = String::from_utf8_lossy(value.unwrap_or_default()).into_owned();
                self.option_error(o.name, &format!("does not allow a value! '{v}' specified."));
                None
            }
            Action::Help(kind) => {
                let text = help::render(self.tool, kind, &self.prog.to_string_lossy());
                self.out.extend_from_slice(text.as_bytes());
                Some(ExitCode::SUCCESS)
            }
            Action::Version => {
                self.out
                    .extend_from_slice(self.tool.build.version.as_bytes());
                if crate::ident::requested() {
                    let text = crate::ident::identification(&self.prog.to_string_lossy());
                    self.out.extend_from_slice(text.as_bytes());
                }
                Some(ExitCode::SUCCESS)
            }
            Action::Ignore | Action::Store => None,
        }
    }

    /// Records one occurrence of option `idx` with its value, if any.
    fn provide(&mut self, idx: usize, value: Option<Vec<u8>>) {
        let o = self.tool.options[idx];
        if matches!(o.action, Action::Help(_) | Action::Version) {
            // Only reachable with a value, already reported.
            return;
        }
        if o.kind == Kind::Flag {
            let b = match value {
                None => true,
                Some(v) => match parse_bool(&v) {
                    Some(b) => b,
                    None => {
                        if self.count_only(idx) {
                            let v = String::from_utf8_lossy(&v).into_owned();
                            self.option_error(
                                o.name,
                                &format!("'{v}' is invalid value for boolean argument! Try 0 or 1"),
                            );
                        }
                        return;
                    }
                },
            };
            self.occur(idx, Value::Bool(b));
            return;
        }
        let value = value.unwrap_or_default();
        let pieces: Vec<Vec<u8>> = if o.comma {
            value.split(|&c| c == b',').map(|s| s.to_vec()).collect()
        } else {
            vec![value]
        };
        for piece in pieces {
            let checked = match o.kind {
                Kind::Uint => parse_uint(&piece).map(Value::Uint),
                Kind::Int => parse_int(&piece).map(Value::Int),
                Kind::Choice(choices) => {
                    if choices.iter().any(|(c, _)| c.as_bytes() == piece) {
                        Some(Value::Str(OsString::from_vec(piece.clone())))
                    } else {
                        if self.count_only(idx) {
                            let shown = String::from_utf8_lossy(&piece).into_owned();
                            self.option_error(
                                o.name,
                                &format!("Cannot find option named '{shown}'!"),
                            );
                        }
                        continue;
                    }
                }
                Kind::Str | Kind::Flag => Some(Value::Str(OsString::from_vec(piece.clone()))),
            };
            let Some(v) = checked else {
                if !self.count_only(idx) {
                    continue;
                }
                let kind = if o.kind == Kind::Uint {
                    "uint"
                } else {
                    "integer"
                };
                let shown = String::from_utf8_lossy(&piece).into_owned();
                self.option_error(
                    o.name,
                    &format!("'{shown}' value invalid for {kind} argument!"),
                );
                continue;
            };
            self.occur(idx, v);
        }
    }

    /// Counts an occurrence whose value turned out invalid: LLVM counts an
    /// option as given before it parses the value, so a bad value does not
    /// also report the option as missing. Returns false when the count
    /// itself was an error (LLVM 14 repeats), which LLVM reports instead of
    /// the value.
    fn count_only(&mut self, idx: usize) -> bool {
        self.slots[idx].count += 1;
        !self.repeat_error(idx)
    }

    fn occur(&mut self, idx: usize, v: Value) {
        self.slots[idx].count += 1;
        self.slots[idx].values.push(v);
        self.repeat_error(idx);
    }

    /// LLVM 14 refuses a second occurrence of a single option.
    fn repeat_error(&mut self, idx: usize) -> bool {
        let o = self.tool.options[idx];
        if self.tool.build.dialect == Dialect::Llvm14 && !o.multi && self.slots[idx].count > 1 {
            let msg = if o.required {
                "must occur exactly one time!"
            } else {
                "may only occur zero or one times!"
            };
            self.option_error(o.name, msg);
            return true;
        }
        false
    }

    /// LLVM treats one-letter options as groupable: `-ab` is the flag `a`
    /// then the flag `b`, and `-ofile` is `o` followed by more letters. A
    /// value-taking one-letter option can't sit inside a group, but may end
    /// one (`-ho file`: `Ok(Some(o))`, its value still to take) or take
    /// `=value`. Returns `Ok(None)` when the whole argument was consumed,
    /// else the text LLVM then looks for a near option name with: the whole
    /// name when no group starts it, the offending option's name when a
    /// value-taking option sits inside a group, or what is left after the
    /// boolean options taken so far (those stay set, as in LLVM).
    fn grouped(&mut self, body: &[u8]) -> Result<Option<usize>, Vec<u8>> {
        let mut rest = body;
        loop {
            if rest.len() < 2 && rest.len() == body.len() {
                return Err(rest.to_vec());
            }
            let Some(idx) = self.single_letter(rest) else {
                return Err(rest.to_vec());
            };
            let o = self.tool.options[idx];
            let after = &rest[1..];
            if after.is_empty() {
                if o.needs_value() {
                    return Ok(Some(idx));
                }
                self.provide(idx, None);
                return Ok(None);
            }
            if after[0] == b'=' {
                self.provide(idx, Some(after[1..].to_vec()));
                return Ok(None);
            }
            if o.needs_value() {
                self.option_error(o.name, "may not occur within a group!");
                return Err(o.name.as_bytes().to_vec());
            }
            self.provide(idx, None);
            rest = after;
        }
    }

    /// The tool's one-letter option that `s` starts with, if any.
    fn single_letter(&self, s: &[u8]) -> Option<usize> {
        let first = *s.first()?;
        self.tool.options.iter().position(|o| {
            o.action == Action::Store && o.name.len() == 1 && o.name.as_bytes()[0] == first
        })
    }

    /// `Unknown command line argument` plus, for options, the option
    /// nearest to `near_to`.
    fn unknown(&mut self, arg: &[u8], near_to: Option<&[u8]>) {
        let mut v = self.prog_prefix();
        v.extend_from_slice(b"Unknown command line argument '");
        v.extend_from_slice(arg);
        v.extend_from_slice(b"'.  Try: '");
        v.extend_from_slice(self.argv0.as_bytes());
        v.extend_from_slice(b" --help'\n");
        if let Some(body) = near_to {
            if let Some(near) = nearest(self.tool, body) {
                v.extend_from_slice(&self.prog_prefix());
                v.extend_from_slice(b"Did you mean '");
                v.extend_from_slice(&near);
                v.extend_from_slice(b"'?\n");
            }
        }
        self.err.extend_from_slice(&v);
        self.errors = true;
    }
}

/// LLVM's nearest-option search: edit distance against the name of every
/// option that can be shown, in option-map order (the first of equally
/// near names wins), comparing only the part before `=` for options that
/// take a value and carrying the value into the suggestion.
fn nearest(tool: &Tool, arg: &[u8]) -> Option<Vec<u8>> {
    if arg.is_empty() {
        return None;
    }
    let (lhs, rhs) = match arg.iter().position(|&c| c == b'=') {
        Some(eq) => (&arg[..eq], &arg[eq + 1..]),
        None => (arg, &b""[..]),
    };
    let mut candidates: Vec<&table::Opt> = tool
        .options
        .iter()
        .filter(|o| o.shown != Shown::Never)
        .collect();
    candidates.sort_by_key(|o| o.rank);
    let mut best: Option<(usize, Vec<u8>)> = None;
    for o in candidates {
        let permit_value = o.permits_value();
        let flag = if permit_value { lhs } else { arg };
        let d = edit_distance(o.name.as_bytes(), flag);
        if best.as_ref().is_none_or(|(bd, _)| d < *bd) {
            let mut s = o.name.as_bytes().to_vec();
            if permit_value && !rhs.is_empty() {
                s.push(b'=');
                s.extend_from_slice(rhs);
            }
            best = Some((d, s));
        }
    }
    // LLVM picks the dash count from the length of the whole suggestion,
    // value included.
    best.map(|(_, s)| {
        let mut v = if s.len() == 1 {
            b"-".to_vec()
        } else {
            b"--".to_vec()
        };
        v.extend_from_slice(&s);
        v
    })
}

fn dashed(name: &str) -> String {
    if name.len() == 1 {
        format!("-{name}")
    } else {
        format!("--{name}")
    }
}

/// LLVM's boolean values; an empty value (`-flag=`) is true.
fn parse_bool(v: &[u8]) -> Option<bool> {
    match v {
        b"" | b"true" | b"TRUE" | b"True" | b"1" => Some(true),
        b"false" | b"FALSE" | b"False" | b"0" => Some(false),
        _ => None,
    }
}

/// LLVM's radix-sensing unsigned parse: `0x`/`0X` hex, `0b`/`0B` binary,
/// `0o` or a leading `0` octal, else decimal; the whole text must be used.
fn parse_u64(s: &[u8]) -> Option<u64> {
    let (radix, digits) = if let Some(r) = s.strip_prefix(b"0x").or(s.strip_prefix(b"0X")) {
        (16, r)
    } else if let Some(r) = s.strip_prefix(b"0b").or(s.strip_prefix(b"0B")) {
        (2, r)
    } else if let Some(r) = s.strip_prefix(b"0o") {
        (8, r)
    } else if s.len() > 1 && s[0] == b'0' && s[1].is_ascii_digit() {
        (8, &s[1..])
    } else {
        (10, s)
    };
    if digits.is_empty() {
        return None;
    }
    let mut n: u64 = 0;
    for &c in digits {
        let d = (c as char).to_digit(36)? as u64;
        if d >= radix {
            return None;
        }
        n = n.checked_mul(radix)?.checked_add(d)?;
    }
    Some(n)
}

fn parse_uint(s: &[u8]) -> Option<u32> {
    parse_u64(s).and_then(|n| u32::try_from(n).ok())
}

fn parse_int(s: &[u8]) -> Option<i32> {
    match s.strip_prefix(b"-") {
        Some(rest) => {
            let n = parse_u64(rest)?;
            if n > i64::MAX as u64 {
                return None;
            }
            i32::try_from(-(n as i64)).ok()
        }
        None => parse_u64(s).and_then(|n| i32::try_from(n).ok()),
    }
}

/// Levenshtein distance with replacements, as LLVM's `edit_distance`.
fn edit_distance(a: &[u8], b: &[u8]) -> usize {
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut prev_diag = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let old = row[j + 1];
            row[j + 1] = if ca == cb {
                prev_diag
            } else {
                1 + prev_diag.min(row[j]).min(row[j + 1])
            };
            prev_diag = old;
        }
    }
    row[b.len()]
}

/// Argument list of the current process as raw bytes.
pub fn os_args() -> Vec<OsString> {
    std::env::args_os().collect()
}

/// `argv[0]`'s file name, as LLVM's `cl` prints it before its own errors.
pub fn program_name(argv0: &OsStr) -> String {
    Path::new(argv0)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn radix_rules() {
        assert_eq!(parse_uint(b"0x10"), Some(16));
        assert_eq!(parse_uint(b"010"), Some(8));
        assert_eq!(parse_uint(b"0b100"), Some(4));
        assert_eq!(parse_uint(b"0"), Some(0));
        assert_eq!(parse_uint(b"4294967295"), Some(u32::MAX));
        assert_eq!(parse_uint(b"4294967296"), None);
        assert_eq!(parse_uint(b"-1"), None);
        assert_eq!(parse_uint(b""), None);
        assert_eq!(parse_uint(b"abc"), None);
        assert_eq!(parse_uint(b"09"), None);
        assert_eq!(parse_int(b"-5"), Some(-5));
        assert_eq!(parse_int(b"-0x10"), Some(-16));
        assert_eq!(parse_int(b"2147483648"), None);
    }

    #[test]
    fn distances() {
        assert_eq!(edit_distance(b"type", b"typ"), 1);
        assert_eq!(edit_distance(b"", b"abc"), 3);
        assert_eq!(edit_distance(b"kitten", b"sitting"), 3);
    }
}
