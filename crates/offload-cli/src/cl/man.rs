//! A man page (roff, section 1) rendered from a tool's option table, so it
//! lists the options `--help` lists, with the same help lines.

use super::help::{lists, synopsis};
use super::table::{HelpKind, Kind, Opt, Shown, Tool};

/// Escapes text for roff: backslashes, minus signs, and a leading `.` or
/// `'` that would start a request. (Also used by `offload`'s own pages.)
pub fn escape(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => s.push_str("\\e"),
            '-' => s.push_str("\\-"),
            _ => s.push(c),
        }
    }
    if s.starts_with('.') || s.starts_with('\'') {
        s.insert_str(0, "\\&");
    }
    s
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
    s.push_str(&escape(lines.next().unwrap_or_default()));
    s.push('\n');
    let rest: Vec<&str> = lines.collect();
    if !rest.is_empty() {
        s.push_str(".nf\n");
        for l in rest {
            s.push_str(&escape(l));
            s.push('\n');
        }
        s.push_str(".fi\n");
    }
    if let Kind::Choice(values) = o.kind {
        for (v, h) in values {
            s.push_str(&format!(
                ".RS\n.IP \"\\fB{}\\fR\" 10\n{}\n.RE\n",
                escape(v),
                escape(h)
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
        s.push_str(&format!(" \\fI{}\\fR", escape(p.help)));
    }
    s.push('\n');
    s.push_str(".SH DESCRIPTION\n");
    for (i, para) in m.description.split("\n\n").enumerate() {
        if i > 0 {
            s.push_str(".PP\n");
        }
        for line in para.lines() {
            s.push_str(&escape(line));
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
            escape(what)
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
