//! A man page (roff, section 1) rendered from a tool's option table, so it
//! lists the options `--help` lists, with the same help lines.

use super::help::{lists, synopsis};
use super::table::{HelpKind, Kind, Opt, Shown, Tool};

/// Escapes text for roff: backslashes, minus signs, and a leading `.` or
/// `'` that would start a request. (Also used by `offload`'s own pages.)
pub fn escape(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        push_escaped(&mut s, c);
    }
    guard_request(s)
}

fn push_escaped(s: &mut String, c: char) {
    match c {
        '\\' => s.push_str("\\e"),
        '-' => s.push_str("\\-"),
        _ => s.push(c),
    }
}

/// A line may not start with `.` or `'`: roff would read a request.
fn guard_request(mut s: String) -> String {
    if s.starts_with('.') || s.starts_with('\'') {
        s.insert_str(0, "\\&");
    }
    s
}

/// Turns the Markdown code spans of roff text (`` `x` ``) into bold
/// (`\fBx\fR`), as man pages show literal text: the help texts write
/// commands and values in backticks. The text inside is kept as it is
/// (already escaped). An unpaired backtick stays.
pub fn code_spans(roff: &str) -> String {
    let mut out = String::with_capacity(roff.len());
    let mut rest = roff;
    while let Some(open) = rest.find('`') {
        let Some(len) = rest[open + 1..].find('`') else {
            break;
        };
        out.push_str(&rest[..open]);
        out.push_str("\\fB");
        out.push_str(&rest[open + 1..open + 1 + len]);
        out.push_str("\\fR");
        rest = &rest[open + 2 + len..];
    }
    out.push_str(rest);
    out
}

/// Prose for a man page, escaped, with man's fonts: literal text in
/// backticks and option names (`-o`, `--image`) bold, value placeholders
/// (`<file>`) italic without their brackets.
pub fn inline(text: &str) -> String {
    let mut s = String::with_capacity(text.len() + 16);
    let mut in_code = false;
    let mut prev: Option<char> = None;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let word_start = prev.is_none_or(|p| p.is_whitespace() || "([,;".contains(p));
        if c == '`' {
            in_code = !in_code;
        } else if !in_code && c == '<' {
            if let Some(end) = rest.find('>') {
                let name = &rest[1..end];
                if !name.is_empty()
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || " _-".contains(c))
                {
                    s.push_str("\\fI");
                    name.chars().for_each(|c| push_escaped(&mut s, c));
                    s.push_str("\\fR");
                    prev = Some('>');
                    rest = &rest[end + 1..];
                    continue;
                }
            }
        } else if !in_code && c == '-' && word_start {
            let len = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
                .unwrap_or(rest.len());
            let word = &rest[..len];
            let name = word.trim_start_matches('-');
            if word.len() - name.len() <= 2 && name.starts_with(|c: char| c.is_ascii_alphabetic()) {
                s.push_str("\\fB");
                word.chars().for_each(|c| push_escaped(&mut s, c));
                s.push_str("\\fR");
                prev = word.chars().last();
                rest = &rest[len..];
                continue;
            }
        }
        push_escaped(&mut s, c);
        prev = Some(c);
        rest = &rest[c.len_utf8()..];
    }
    guard_request(code_spans(&s))
}

/// The value a positional argument stands for, from its help line: the
/// placeholder it names (`Extract from <file>.` is `file`), else the line.
fn positional_value(help: &str) -> &str {
    help.split_once('<')
        .and_then(|(_, v)| v.split_once('>'))
        .map_or(help, |(v, _)| v)
}

/// The option's tag line: bold name, italic value placeholder.
fn tag(o: &Opt, tool: &Tool) -> String {
    let shown = synopsis(o, tool.build.dialect);
    match shown.find('<') {
        Some(at) => {
            let (name, value) = shown.split_at(at);
            let sep = if name.ends_with(' ') { " " } else { "=" };
            let name = name.trim_end_matches([' ', '=']);
            // The placeholder without its brackets: `<file>` is shown as
            // file, `<<key>=<value>,...>` as <key>=<value>,...
            let value = value
                .strip_prefix('<')
                .and_then(|v| v.strip_suffix('>'))
                .unwrap_or(value);
            format!("\\fB{}\\fR{sep}\\fI{}\\fR", escape(name), escape(value))
        }
        None => format!("\\fB{}\\fR", escape(&shown)),
    }
}

fn push_option(s: &mut String, o: &Opt, tool: &Tool) {
    s.push_str(".TP\n");
    s.push_str(&tag(o, tool));
    s.push('\n');
    let mut lines = o.help.split('\n');
    s.push_str(&inline(lines.next().unwrap_or_default()));
    s.push('\n');
    let rest: Vec<&str> = lines.collect();
    if !rest.is_empty() {
        s.push_str(".nf\n");
        for l in rest {
            s.push_str(&inline(l));
            s.push('\n');
        }
        s.push_str(".fi\n");
    }
    if let Kind::Choice(values) = o.kind {
        for (v, h) in values {
            s.push_str(&format!(
                ".RS\n.IP \"\\fB{}\\fR\" 10\n{}\n.RE\n",
                escape(v),
                inline(h)
            ));
        }
    }
    let mut notes = Vec::new();
    if o.required {
        notes.push("Required.");
    }
    if o.comma {
        notes.push("Takes a comma-separated list; may be given more than once.");
    } else if o.multi {
        notes.push("May be given more than once.");
    }
    if !notes.is_empty() {
        s.push_str(".IP\n");
        s.push_str(&notes.join(" "));
        s.push('\n');
    }
}

/// The man page of `tool`, installed under the name `name` (a tool may be
/// installed under several names).
pub fn render(tool: &Tool, name: &str) -> String {
    let m = &tool.manual;
    let mut s = String::new();
    s.push_str(&format!(
        ".TH {} 1 \"\" \"offload-tools {}\" \"User Commands\"\n",
        escape(&name.to_uppercase()),
        env!("CARGO_PKG_VERSION")
    ));
    s.push_str(".SH NAME\n");
    s.push_str(&format!("{} \\- {}\n", escape(name), escape(m.summary)));
    s.push_str(".SH SYNOPSIS\n");
    s.push_str(&format!(".B {}\n[\\fIoptions\\fR]", escape(name)));
    if let Some(p) = &tool.positional {
        s.push_str(&format!(" \\fI{}\\fR", escape(positional_value(p.help))));
    }
    s.push('\n');
    s.push_str(".SH DESCRIPTION\n");
    for (i, para) in m.description.split("\n\n").enumerate() {
        if i > 0 {
            s.push_str(".PP\n");
        }
        for line in para.lines() {
            s.push_str(&inline(line));
            s.push('\n');
        }
    }
    s.push_str(".SH OPTIONS\n");
    s.push_str(
        "Options start with one or two dashes; a value follows \\fB=\\fR or comes \
         as the next argument. \\fB@\\fR\\fIfile\\fR reads more arguments from \\fIfile\\fR.\n",
    );
    let mut opts: Vec<&Opt> = tool.options.iter().collect();
    opts.sort_by(|a, b| a.name.cmp(b.name));
    for o in opts.iter().filter(|o| lists(o, HelpKind::Help)) {
        push_option(&mut s, o, tool);
    }
    let other: Vec<&&Opt> = opts
        .iter()
        .filter(|o| !lists(o, HelpKind::Help) && o.shown != Shown::Never || extension(o))
        .collect();
    if !other.is_empty() {
        s.push_str(".SH OTHER OPTIONS\n");
        s.push_str("Accepted, but not listed by \\fB\\-\\-help\\fR.\n");
        for o in other {
            push_option(&mut s, o, tool);
        }
    }
    s.push_str(".SH EXIT STATUS\n");
    s.push_str(
        "0 on success, including \\fB\\-\\-help\\fR and \\fB\\-\\-version\\fR; \
         1 after an error, which is reported on standard error.\n",
    );
    s.push_str(".SH ENVIRONMENT\n");
    let common: [(&str, &str); 3] = [
        (
            crate::explain::VAR,
            "Set (to anything but empty or 0): after LLVM's messages, add note: and \
             warning: lines that explain them (what a bundle holds when a target is not \
             found, the file an OS error is about). Unset, the output is LLVM's.",
        ),
        (
            crate::ident::VERSION_VAR,
            "Set (to anything but empty or 0): --version adds the project, its version \
             and commit, and the compression libraries linked.",
        ),
        (
            crate::staging::NAMED_STAGING_ENV,
            "Set: outputs are staged in named temporary files beside their target, as \
             on a file system without O_TMPFILE (for testing that path).",
        ),
    ];
    for (name, what) in m.environment.iter().chain(common.iter()) {
        s.push_str(&format!(
            ".TP\n\\fB{}\\fR\n{}\n",
            escape(name),
            inline(what)
        ));
    }
    if !m.see_also.is_empty() {
        s.push_str(".SH SEE ALSO\n");
        let refs: Vec<String> = m
            .see_also
            .iter()
            .map(|r| match r.split_once('(') {
                Some((n, sec)) => format!("\\fB{}\\fR({sec}", escape(n)),
                None => format!("\\fB{}\\fR", escape(r)),
            })
            .collect();
        s.push_str(&refs.join(",\n"));
        s.push('\n');
    }
    s
}

/// Options LLVM hides completely that a user may still want to know about
/// (those with a help line of their own).
fn extension(o: &Opt) -> bool {
    o.shown == Shown::Never && !o.help.is_empty()
}

/// The option names (as `--help` shows them, without value placeholders)
/// the OPTIONS section of a rendered man page lists, in order.
pub fn listed_options(page: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut in_options = false;
    let mut lines = page.lines();
    while let Some(l) = lines.next() {
        if let Some(section) = l.strip_prefix(".SH ") {
            in_options = section == "OPTIONS";
        } else if in_options && l == ".TP" {
            if let Some(tag) = lines.next() {
                let name = tag
                    .trim_start_matches("\\fB")
                    .split("\\fR")
                    .next()
                    .unwrap_or_default()
                    .replace("\\-", "-");
                names.push(name);
            }
        }
    }
    names
}
