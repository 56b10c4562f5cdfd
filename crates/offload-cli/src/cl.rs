//! LLVM `cl`-compatible command lines in front of clap.
//!
//! LLVM's tools accept `-opt` and `--opt`, `-opt=v` and `-opt v`, booleans
//! with `=true|false|1|0`, numbers in any radix, comma lists that keep empty
//! items, response files, and report mistakes with their own wording. clap
//! alone cannot reproduce that, so [`parse`] reads the tool's clap definition
//! (names, which options take values, value types, required-ness,
//! positionals), walks the arguments with LLVM's rules and messages, and then
//! hands clap a clean `--name=value` argument list to build the typed struct.
//!
//! Conventions for the tool's clap struct:
//! - the option's `long` name is its LLVM name (single letters included:
//!   `#[arg(long = "o")]`);
//! - `ArgAction::SetTrue` flags and `Option<bool>` values are LLVM boolean
//!   options (use `Option<bool>` when "given as false" must be told apart
//!   from "not given");
//! - `u32` values are LLVM `uint`, `i32` values LLVM `int`, anything else a
//!   string; `value_delimiter(',')` marks LLVM's comma-separated lists,
//!   which this module splits itself (keeping empty items);
//! - `ArgAction::Append` options may repeat; other options keep their last
//!   value (LLVM 22) or reject repeats ([`Spec::llvm14`]);
//! - `required = true` options are reported missing with LLVM's text;
//! - the command must disable clap's own help and version flags.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::process::ExitCode;

use clap::{ArgAction, CommandFactory, FromArgMatches};

use crate::diag::write_stderr;
use crate::response;

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

/// What a tool tells the parser beyond its clap definition.
pub struct Spec {
    /// The help text of each kind; the argument is `argv[0]`'s file name.
    pub help: fn(HelpKind, &str) -> String,
    /// The whole `--version` output.
    pub version: fn() -> String,
    /// Option names (without dashes) that "Did you mean" may propose, in
    /// the iteration order of LLVM's option map: on equal edit distance the
    /// earlier one wins. Include the generic options the tool has.
    pub suggest: &'static [&'static str],
    /// LLVM 14 rules: a single-valued option given twice is an error.
    pub llvm14: bool,
}

/// The result of parsing: the tool's arguments plus facts clap can't hold.
#[derive(Debug)]
pub struct Parsed<T> {
    pub args: T,
    /// `argv[0]` exactly as invoked (after response-file expansion).
    pub argv0: OsString,
}

/// LLVM generic options every tool has.
const GENERIC: &[(&str, Generic)] = &[
    ("help", Generic::Help(HelpKind::Help)),
    ("help-hidden", Generic::Help(HelpKind::HelpHidden)),
    ("help-list", Generic::Help(HelpKind::HelpList)),
    ("help-list-hidden", Generic::Help(HelpKind::HelpListHidden)),
    ("version", Generic::Version),
    ("print-options", Generic::Flag),
    ("print-all-options", Generic::Flag),
];

#[derive(Clone, Copy)]
enum Generic {
    Help(HelpKind),
    Version,
    /// Accepted and ignored.
    Flag,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ValueType {
    /// A boolean: optional `=value`.
    Bool,
    /// Needs a value: from `=value` or the next argument.
    Str,
    Uint,
    Int,
}

#[derive(Debug)]
struct Opt {
    name: String,
    ty: ValueType,
    /// clap stores the flag with SetTrue (no value on clap's side).
    clap_flag: bool,
    comma: bool,
    multi: bool,
    required: bool,
    choices: Vec<String>,
    values: Vec<OsString>,
    count: usize,
}

/// Parses `args` (`argv[0]` first) for the tool described by `T` and `spec`.
/// On `--help`/`--version`, or after reporting errors LLVM's way, returns the
/// exit code the process should end with.
pub fn parse<T: CommandFactory + FromArgMatches>(
    spec: &Spec,
    args: Vec<OsString>,
) -> Result<Parsed<T>, ExitCode> {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let r = parse_to(spec, args, &mut out, &mut err);
    write_stderr(&err);
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(&out);
    let _ = stdout.flush();
    r
}

/// [`parse`], with what it would print to stdout and stderr appended to
/// `out` and `err` instead (for tests).
pub fn parse_to<T: CommandFactory + FromArgMatches>(
    spec: &Spec,
    args: Vec<OsString>,
    out: &mut Vec<u8>,
    err: &mut Vec<u8>,
) -> Result<Parsed<T>, ExitCode> {
    let argv = match response::expand(args, spec.llvm14) {
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
    let cmd = T::command();
    let mut opts: Vec<Opt> = Vec::new();
    let mut positional: Option<(usize, Option<usize>)> = None;
    for a in cmd.get_arguments() {
        if a.is_positional() {
            let range = a.get_num_args().unwrap_or_default();
            let min = if a.is_required_set() {
                range.min_values().max(1)
            } else {
                0
            };
            let max = range.max_values();
            let max = (max != usize::MAX).then_some(max);
            positional = Some((min, max));
            continue;
        }
        let Some(long) = a.get_long() else { continue };
        let parser = a.get_value_parser();
        let tid = parser.type_id();
        let action = a.get_action();
        let clap_flag = matches!(action, ArgAction::SetTrue);
        let ty = if clap_flag || tid == std::any::TypeId::of::<bool>() {
            ValueType::Bool
        } else if tid == std::any::TypeId::of::<u32>() {
            ValueType::Uint
        } else if tid == std::any::TypeId::of::<i32>() {
            ValueType::Int
        } else {
            ValueType::Str
        };
        opts.push(Opt {
            name: long.to_string(),
            ty,
            clap_flag,
            comma: a.get_value_delimiter() == Some(','),
            multi: matches!(action, ArgAction::Append),
            required: a.is_required_set(),
            choices: a
                .get_possible_values()
                .iter()
                .map(|p| p.get_name().to_string())
                .collect(),
            values: Vec::new(),
            count: 0,
        });
    }

    let mut p = Parser {
        spec,
        prog: prog.clone(),
        argv0: argv0.clone(),
        opts,
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
            if positional.is_some() {
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
        if let Some(code) = p.generic(name, value) {
            return Err(code);
        }
        if GENERIC.iter().any(|(g, _)| g.as_bytes() == name) {
            i += 1;
            continue;
        }
        if let Some(idx) = p.find(name) {
            let value = match value {
                Some(v) => Some(v.to_vec()),
                None if p.opts[idx].needs_value() => {
                    if i + 1 < argv.len() {
                        i += 1;
                        Some(argv[i].as_bytes().to_vec())
                    } else {
                        p.option_error(&p.opts[idx].name.clone(), "requires a value!");
                        i += 1;
                        continue;
                    }
                }
                None => None,
            };
            p.provide(idx, value);
        } else if let Err(rest) = p.grouped(body) {
            p.unknown(arg, Some(&rest));
        }
        i += 1;
    }

    if let Some((min, max)) = positional {
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
    // Missing required options, in the order LLVM's map would list them.
    let mut missing: Vec<String> = p
        .opts
        .iter()
        .filter(|o| o.required && o.count == 0)
        .map(|o| o.name.clone())
        .collect();
    missing.sort_by_key(|n| {
        spec.suggest
            .iter()
            .position(|s| s == n)
            .unwrap_or(usize::MAX)
    });
    for name in missing {
        p.option_error(&name, "must be specified at least once!");
    }
    if p.errors {
        return Err(ExitCode::FAILURE);
    }

    // Hand clap a clean argument list.
    let mut clean: Vec<OsString> = vec![argv0.clone()];
    for o in &p.opts {
        if o.count == 0 {
            continue;
        }
        let dashed = format!("--{}", o.name);
        if o.ty == ValueType::Bool {
            let on = o.values.last().map(|v| v == "true").unwrap_or(false);
            if o.clap_flag {
                if on {
                    clean.push(dashed.into());
                }
            } else {
                clean.push(format!("{dashed}={on}").into());
            }
            continue;
        }
        let values: &[OsString] = if o.multi {
            &o.values
        } else {
            &o.values[o.values.len() - 1..]
        };
        for v in values {
            let mut a = OsString::from(format!("{dashed}="));
            a.push(v);
            clean.push(a);
        }
    }
    if !positionals.is_empty() {
        clean.push("--".into());
        clean.extend(positionals);
    }
    let matches = cmd.try_get_matches_from(clean).map_err(|e| {
        // Only a mismatch between the tool's clap struct and this module
        // can get here; say so plainly rather than print clap's text.
        let mut msg = p.prog_prefix();
        msg.extend_from_slice(format!("internal command-line error: {e}").as_bytes());
        p.err.extend_from_slice(&msg);
        ExitCode::FAILURE
    })?;
    let args = T::from_arg_matches(&matches).map_err(|_| ExitCode::FAILURE)?;
    Ok(Parsed { args, argv0 })
}

impl Opt {
    fn needs_value(&self) -> bool {
        self.ty != ValueType::Bool
    }
}

struct Parser<'a> {
    spec: &'a Spec,
    err: &'a mut Vec<u8>,
    out: &'a mut Vec<u8>,
    prog: OsString,
    argv0: OsString,
    opts: Vec<Opt>,
    errors: bool,
}

impl Parser<'_> {
    fn prog_prefix(&self) -> Vec<u8> {
        let mut v = self.prog.as_bytes().to_vec();
        v.extend_from_slice(b": ");
        v
    }

    fn find(&self, name: &[u8]) -> Option<usize> {
        self.opts.iter().position(|o| o.name.as_bytes() == name)
    }

    /// `<prog>: for the --name option: <msg>` (one dash for one letter).
    fn option_error(&mut self, name: &str, msg: &str) {
        let mut v = self.prog_prefix();
        v.extend_from_slice(format!("for the {} option: {msg}\n", dashed(name)).as_bytes());
        self.err.extend_from_slice(&v);
        self.errors = true;
    }

    /// Handles the generic options; returns an exit code when the program
    /// must stop now (help and version print the moment they are parsed).
    fn generic(&mut self, name: &[u8], value: Option<&[u8]>) -> Option<ExitCode> {
        let (gname, g) = GENERIC.iter().find(|(g, _)| g.as_bytes() == name)?;
        match g {
            Generic::Help(_) | Generic::Version if value.is_some() => {
                let v = String::from_utf8_lossy(value.unwrap_or_default()).into_owned();
                self.option_error(gname, &format!("does not allow a value! '{v}' specified."));
                None
            }
            Generic::Help(kind) => {
                let text = (self.spec.help)(*kind, &self.prog.to_string_lossy());
                self.out.extend_from_slice(text.as_bytes());
                Some(ExitCode::SUCCESS)
            }
            Generic::Version => {
                self.out.extend_from_slice((self.spec.version)().as_bytes());
                if crate::ident::requested() {
                    let tool = self.prog.to_string_lossy();
                    let text = crate::ident::identification(&tool);
                    self.out.extend_from_slice(text.as_bytes());
                }
                Some(ExitCode::SUCCESS)
            }
            Generic::Flag => {
                if let Some(v) = value {
                    if parse_bool(v).is_none() {
                        let v = String::from_utf8_lossy(v).into_owned();
                        self.option_error(
                            gname,
                            &format!("'{v}' is invalid value for boolean argument! Try 0 or 1"),
                        );
                    }
                }
                None
            }
        }
    }

    /// Records one occurrence of option `idx` with its value, if any.
    fn provide(&mut self, idx: usize, value: Option<Vec<u8>>) {
        let name = self.opts[idx].name.clone();
        let ty = self.opts[idx].ty;
        if ty == ValueType::Bool {
            let b = match value {
                None => true,
                Some(v) => match parse_bool(&v) {
                    Some(b) => b,
                    None => {
                        if self.count_only(idx) {
                            let v = String::from_utf8_lossy(&v).into_owned();
                            self.option_error(
                                &name,
                                &format!("'{v}' is invalid value for boolean argument! Try 0 or 1"),
                            );
                        }
                        return;
                    }
                },
            };
            self.occur(idx, OsString::from(if b { "true" } else { "false" }));
            return;
        }
        let value = value.unwrap_or_default();
        let pieces: Vec<Vec<u8>> = if self.opts[idx].comma {
            value.split(|&c| c == b',').map(|s| s.to_vec()).collect()
        } else {
            vec![value]
        };
        for piece in pieces {
            let checked = match ty {
                ValueType::Uint => parse_uint(&piece).map(|n| n.to_string().into_bytes()),
                ValueType::Int => parse_int(&piece).map(|n| n.to_string().into_bytes()),
                _ => Some(piece.clone()),
            };
            let Some(v) = checked else {
                if !self.count_only(idx) {
                    continue;
                }
                let kind = if ty == ValueType::Uint {
                    "uint"
                } else {
                    "integer"
                };
                let shown = String::from_utf8_lossy(&piece).into_owned();
                self.option_error(
                    &name,
                    &format!("'{shown}' value invalid for {kind} argument!"),
                );
                continue;
            };
            let choices = &self.opts[idx].choices;
            if !choices.is_empty() && !choices.iter().any(|c| c.as_bytes() == v) {
                if !self.count_only(idx) {
                    continue;
                }
                let shown = String::from_utf8_lossy(&v).into_owned();
                self.option_error(&name, &format!("Cannot find option named '{shown}'!"));
                continue;
            }
            self.occur(idx, OsString::from_vec(v));
        }
    }

    /// Counts an occurrence whose value turned out invalid: LLVM counts an
    /// option as given before it parses the value, so a bad value does not
    /// also report the option as missing. Returns false when the count
    /// itself was an error (LLVM 14 repeats), which LLVM reports instead of
    /// the value.
    fn count_only(&mut self, idx: usize) -> bool {
        let o = &mut self.opts[idx];
        o.count += 1;
        if self.spec.llvm14 && !o.multi && o.count > 1 {
            let (name, msg) = if o.required {
                (o.name.clone(), "must occur exactly one time!")
            } else {
                (o.name.clone(), "may only occur zero or one times!")
            };
            self.option_error(&name, msg);
            return false;
        }
        true
    }

    fn occur(&mut self, idx: usize, v: OsString) {
        let o = &mut self.opts[idx];
        o.count += 1;
        o.values.push(v);
        if self.spec.llvm14 && !o.multi && o.count > 1 {
            let (name, msg) = if o.required {
                (o.name.clone(), "must occur exactly one time!")
            } else {
                (o.name.clone(), "may only occur zero or one times!")
            };
            self.option_error(&name, msg);
        }
    }

    /// LLVM treats one-letter options as groupable: `-ofile` is the option
    /// `o` followed by more letters. A value-taking one-letter option can't
    /// be grouped; boolean ones are taken one letter at a time. Returns
    /// `Ok` when the whole argument was consumed as a group, else the text
    /// LLVM then looks for a near option name with: the whole name when no
    /// group starts it, the offending option's name when a value-taking
    /// option sits inside a group, or what is left after the boolean
    /// options taken so far (those stay set, as in LLVM).
    fn grouped(&mut self, body: &[u8]) -> Result<(), Vec<u8>> {
        let mut rest = body;
        loop {
            if rest.len() < 2 && rest.len() == body.len() {
                return Err(rest.to_vec());
            }
            let Some(idx) = self.longest_single(rest) else {
                return Err(rest.to_vec());
            };
            let after = &rest[1..];
            if after.is_empty() {
                self.provide(idx, None);
                return Ok(());
            }
            if after[0] == b'=' {
                self.provide(idx, Some(after[1..].to_vec()));
                return Ok(());
            }
            if self.opts[idx].needs_value() {
                let name = self.opts[idx].name.clone();
                self.option_error(&name, "may not occur within a group!");
                return Err(name.into_bytes());
            }
            self.provide(idx, None);
            rest = after;
        }
    }

    /// The one-letter option that `s` starts with, if any.
    fn longest_single(&self, s: &[u8]) -> Option<usize> {
        let first = *s.first()?;
        self.opts
            .iter()
            .position(|o| o.name.len() == 1 && o.name.as_bytes()[0] == first)
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
            if let Some(near) = self.nearest(body) {
                v.extend_from_slice(&self.prog_prefix());
                v.extend_from_slice(b"Did you mean '");
                v.extend_from_slice(&near);
                v.extend_from_slice(b"'?\n");
            }
        }
        self.err.extend_from_slice(&v);
        self.errors = true;
    }

    /// LLVM's nearest-option search: edit distance against each candidate
    /// name, comparing only the part before `=` for options that take a
    /// value and carrying the value into the suggestion.
    fn nearest(&self, arg: &[u8]) -> Option<Vec<u8>> {
        if arg.is_empty() {
            return None;
        }
        let (lhs, rhs) = match arg.iter().position(|&c| c == b'=') {
            Some(eq) => (&arg[..eq], &arg[eq + 1..]),
            None => (arg, &b""[..]),
        };
        let mut best: Option<(usize, Vec<u8>)> = None;
        for name in self.spec.suggest {
            let permit_value = match GENERIC.iter().find(|(g, _)| g == name) {
                Some((_, Generic::Help(_) | Generic::Version)) => false,
                Some(_) => true,
                None => self.find(name.as_bytes()).is_some(),
            };
            let flag = if permit_value { lhs } else { arg };
            let d = edit_distance(name.as_bytes(), flag);
            if best.as_ref().is_none_or(|(bd, _)| d < *bd) {
                let mut s = name.as_bytes().to_vec();
                if permit_value && !rhs.is_empty() {
                    s.push(b'=');
                    s.extend_from_slice(rhs);
                }
                best = Some((d, s));
            }
        }
        // LLVM picks the dash count from the length of the whole
        // suggestion, value included.
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
}

fn dashed(name: &str) -> String {
    if name.len() == 1 {
        format!("-{name}")
    } else {
        format!("--{name}")
    }
}

fn parse_bool(v: &[u8]) -> Option<bool> {
    match v {
        b"true" | b"TRUE" | b"True" | b"1" => Some(true),
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
