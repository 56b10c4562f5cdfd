//! The man pages: `offload(1)` and one per subcommand (`offload-ls(1)`,
//! ...), rendered by clap_mangen from the clap definitions that make
//! `--help`, with the examples of `--help` kept as written (`.nf`/`.fi`)
//! and an EXIT STATUS section. Help texts write literal text in Markdown
//! backticks; the pages show it bold (`offload_cli::cl::man::code_spans`),
//! and the synopsis names each option's value.

use clap::CommandFactory;
use offload_cli::cl::man::{code_spans, escape};

use crate::cli::{Cli, SUBCOMMANDS};

/// The exit status, for the pages whose help does not say it.
const EXIT_STATUS: &str = "\
0 when every input was read completely and the output written; 1 when an \
input could not be read or holds damage (reported on standard error; ls \
still lists everything else, extract and thin write nothing), or when a \
selection value (--target, --keep, --drop, --bundle) matches nothing; 2 for \
usage errors (an unknown option or --kind value, a missing argument). A \
closed standard output (| head) ends the output quietly and does not \
change the status.";

/// Every page: (file name, roff).
pub fn pages() -> std::io::Result<Vec<(String, Vec<u8>)>> {
    let mut pages = vec![("offload.1".to_owned(), page(None)?)];
    for sub in SUBCOMMANDS {
        pages.push((format!("offload-{sub}.1"), page(Some(sub))?));
    }
    Ok(pages)
}

/// The page of the tool (`None`) or of one subcommand.
pub fn page(sub: Option<&str>) -> std::io::Result<Vec<u8>> {
    let mut top = Cli::command().disable_help_subcommand(true);
    top.build();
    let cmd = match sub {
        None => top.clone(),
        Some(name) => top
            .find_subcommand(name)
            .cloned()
            .ok_or_else(|| std::io::Error::other(format!("no subcommand {name}")))?,
    };
    let title = match sub {
        None => "offload".to_owned(),
        Some(name) => format!("offload-{name}"),
    };
    let man = clap_mangen::Man::new(cmd.clone())
        .title(title.to_uppercase())
        .source(format!("offload-tools {}", env!("CARGO_PKG_VERSION")))
        .manual("User Commands");
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    out.extend_from_slice(synopsis(&cmd, sub).as_bytes());
    man.render_description_section(&mut out)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut out)?;
    }
    if cmd.has_subcommands() {
        man.render_subcommands_section(&mut out)?;
    }
    let mut out = code_spans(&String::from_utf8_lossy(&out)).into_bytes();
    let mut text = String::new();
    let after = cmd
        .get_after_help()
        .map(ToString::to_string)
        .unwrap_or_default();
    let mut exit_status = None;
    let mut notes = Vec::new();
    for block in after.split("\n\n").filter(|b| !b.trim().is_empty()) {
        if let Some(examples) = block.strip_prefix("Examples:\n") {
            // As written: the columns of the examples are their meaning.
            text.push_str(".SH EXAMPLES\n.nf\n");
            for line in examples.lines() {
                text.push_str(&escape(line));
                text.push('\n');
            }
            text.push_str(".fi\n");
        } else if let Some(status) = block.strip_prefix("Exit status: ") {
            exit_status = Some(status.replace('\n', " "));
        } else {
            notes.push(block.replace('\n', " "));
        }
    }
    let notes: Vec<String> = notes.iter().map(|n| code_spans(&escape(n))).collect();
    if !notes.is_empty() {
        text.push_str(".SH NOTES\n");
        for (i, n) in notes.iter().enumerate() {
            if i > 0 {
                text.push_str(".PP\n");
            }
            text.push_str(n);
            text.push('\n');
        }
    }
    text.push_str(".SH \"EXIT STATUS\"\n");
    text.push_str(&code_spans(&escape(
        exit_status.as_deref().unwrap_or(EXIT_STATUS),
    )));
    text.push('\n');
    text.push_str(".SH \"SEE ALSO\"\n");
    let mut refs: Vec<String> = Vec::new();
    if sub.is_some() {
        refs.push("\\fBoffload\\fR(1)".to_owned());
    }
    for other in SUBCOMMANDS.iter().filter(|s| Some(**s) != sub) {
        refs.push(format!("\\fBoffload\\-{other}\\fR(1)"));
    }
    refs.push("\\fBclang\\-offload\\-bundler\\fR(1)".to_owned());
    refs.push("\\fBllvm\\-offload\\-binary\\fR(1)".to_owned());
    text.push_str(&refs.join(",\n"));
    text.push('\n');
    text.push_str(&format!(
        ".SH VERSION\nv{}\n",
        escape(env!("CARGO_PKG_VERSION"))
    ));
    out.extend_from_slice(text.as_bytes());
    Ok(out)
}

/// The SYNOPSIS section: the command, each option that is shown with its
/// value placeholder (`[\fB-t\fR|\fB--target\fR \fIT\fR]`), the
/// positional arguments, and the subcommands.
fn synopsis(cmd: &clap::Command, sub: Option<&str>) -> String {
    let name = match sub {
        None => "offload".to_owned(),
        Some(s) => format!("offload {s}"),
    };
    let mut s = format!(".SH SYNOPSIS\n\\fB{}\\fR", escape(&name));
    for a in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        let values: Vec<String> = a
            .get_value_names()
            .unwrap_or_default()
            .iter()
            .map(|v| format!(" \\fI{}\\fR", escape(v)))
            .collect();
        if a.is_positional() {
            let dots = if matches!(a.get_num_args(), Some(r) if r.max_values() > 1) {
                "..."
            } else {
                ""
            };
            let v = values.concat();
            let v = v.trim_start();
            if a.is_required_set() {
                s.push_str(&format!(" {v}{dots}"));
            } else {
                s.push_str(&format!(" [{v}{dots}]"));
            }
            continue;
        }
        let mut names = Vec::new();
        if let Some(c) = a.get_short() {
            names.push(format!("\\fB\\-{}\\fR", escape(&c.to_string())));
        }
        if let Some(l) = a.get_long() {
            names.push(format!("\\fB\\-\\-{}\\fR", escape(l)));
        }
        let takes_value = a.get_action().takes_values();
        let value = if takes_value {
            values.concat()
        } else {
            String::new()
        };
        s.push_str(&format!(" [{}{}]", names.join("|"), value));
    }
    if cmd.has_subcommands() {
        s.push_str(" \\fICOMMAND\\fR");
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(sub: Option<&str>) -> String {
        String::from_utf8(page(sub).unwrap()).unwrap()
    }

    /// The help texts' Markdown code spans are bold on the page, and no
    /// backtick is left on any page.
    #[test]
    fn pages_show_fonts_not_markdown() {
        for (name, bytes) in pages().unwrap() {
            let page = String::from_utf8(bytes).unwrap();
            assert!(!page.contains('`'), "{name}");
        }
        let extract = text(Some("extract"));
        assert!(
            extract.contains("(\\fBhost\\fR, \\fBhip\\fR, \\fBhipv4\\fR"),
            "{extract}"
        );
    }

    /// The synopsis names each option's value, as `--help` does.
    #[test]
    fn synopses_name_the_values() {
        let extract = text(Some("extract"));
        let synopsis = extract
            .split(".SH SYNOPSIS\n")
            .nth(1)
            .and_then(|s| s.lines().next())
            .unwrap();
        for want in [
            "\\fBoffload extract\\fR",
            "[\\fB\\-t\\fR|\\fB\\-\\-target\\fR \\fIT\\fR]",
            "[\\fB\\-o\\fR|\\fB\\-\\-output\\fR \\fIFILE\\fR]",
            "[\\fB\\-\\-raw\\fR]",
            " \\fIFILE\\fR...",
        ] {
            assert!(synopsis.contains(want), "{want} in {synopsis}");
        }
        let thin = text(Some("thin"));
        assert!(
            thin.contains("[\\fB\\-\\-compression\\-level\\fR \\fIN\\fR]"),
            "{thin}"
        );
        assert!(text(None).contains("\\fBoffload\\fR [\\fB\\-h\\fR|\\fB\\-\\-help\\fR]"));
    }
}
