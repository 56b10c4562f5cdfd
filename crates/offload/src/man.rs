//! The man pages: `offload(1)` and one per subcommand (`offload-ls(1)`,
//! ...), rendered by clap_mangen from the clap definitions that make
//! `--help`, with the examples of `--help` kept as written (`.nf`/`.fi`)
//! and an EXIT STATUS section.

use clap::CommandFactory;
use offload_cli::cl::man::escape;

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
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut out)?;
    }
    if cmd.has_subcommands() {
        man.render_subcommands_section(&mut out)?;
    }
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
    if !notes.is_empty() {
        text.push_str(".SH NOTES\n");
        for (i, n) in notes.iter().enumerate() {
            if i > 0 {
                text.push_str(".PP\n");
            }
            text.push_str(&escape(n));
            text.push('\n');
        }
    }
    text.push_str(".SH \"EXIT STATUS\"\n");
    text.push_str(&escape(exit_status.as_deref().unwrap_or(EXIT_STATUS)));
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
