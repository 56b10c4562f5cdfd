//! `--help`, `--help-hidden`, `--help-list` and `--help-list-hidden`, laid
//! out from the tool's table as LLVM's `cl` prints them.

use super::table::{Action, Category, Dialect, HelpKind, Kind, Opt, Shown, Tool};

/// Whether help text `kind` lists `o`.
pub(crate) fn lists(o: &Opt, kind: HelpKind) -> bool {
    let hidden = matches!(kind, HelpKind::HelpHidden | HelpKind::HelpListHidden);
    match o.shown {
        Shown::Always => true,
        // The categorized help shows --help-list so that the flat list can
        // be found.
        Shown::Hidden => {
            hidden || (kind == HelpKind::Help && o.action == Action::Help(HelpKind::HelpList))
        }
        Shown::Never => false,
    }
}

/// The option as the help shows it: `--name`, `--name=<value>`, and for
/// one-letter options in LLVM 22 `-n <value>`.
pub(crate) fn synopsis(o: &Opt, dialect: Dialect) -> String {
    let dashes = if o.name.len() == 1 { "-" } else { "--" };
    if o.value_name.is_empty() {
        return format!("{dashes}{}", o.name);
    }
    let sep = if o.name.len() == 1 && dialect == Dialect::Llvm22 {
        " "
    } else {
        "="
    };
    format!("{dashes}{}{sep}<{}>", o.name, o.value_name)
}

/// Width of the option column an option needs.
fn width(o: &Opt, dialect: Dialect) -> usize {
    let own = synopsis(o, dialect).len();
    match o.kind {
        // Value lines are `    =<name>` under a column two wider.
        Kind::Choice(values) => values
            .iter()
            .map(|(v, _)| v.len() + 3)
            .fold(own, usize::max),
        _ => own,
    }
}

fn push_option(s: &mut String, o: &Opt, dialect: Dialect, w: usize) {
    let mut lines = o.help.split('\n');
    let first = lines.next().unwrap_or_default();
    s.push_str(&format!("  {:<w$} - {first}\n", synopsis(o, dialect)));
    for l in lines {
        s.push_str(&format!("{:indent$}{l}\n", "", indent = w + 5));
    }
    if let Kind::Choice(values) = o.kind {
        for (v, h) in values {
            s.push_str(&format!(
                "    ={v:<pad$} -   {h}\n",
                pad = w.saturating_sub(3)
            ));
        }
    }
}

/// The text printed for `kind`; `prog` is `argv[0]`'s file name.
pub fn render(tool: &Tool, kind: HelpKind, prog: &str) -> String {
    let mut shown: Vec<&Opt> = tool.options.iter().filter(|o| lists(o, kind)).collect();
    shown.sort_by(|a, b| a.name.cmp(b.name));
    let w = shown
        .iter()
        .map(|o| width(o, tool.build.dialect))
        .max()
        .unwrap_or(0);
    let mut s = format!("OVERVIEW: {}\n\nUSAGE: {prog} [options]", tool.overview);
    if let Some(p) = &tool.positional {
        s.push(' ');
        s.push_str(p.help);
    }
    s.push_str("\n\nOPTIONS:\n");
    match kind {
        HelpKind::HelpList | HelpKind::HelpListHidden => {
            for o in &shown {
                push_option(&mut s, o, tool.build.dialect, w);
            }
        }
        HelpKind::Help | HelpKind::HelpHidden => {
            let own = format!("{} options", tool.name);
            let mut categories: Vec<(&str, &str, Vec<&Opt>)> = vec![
                ("Generic Options", "", pick(&shown, Category::Generic)),
                (&own, "", pick(&shown, Category::Tool)),
            ];
            if kind == HelpKind::HelpHidden {
                categories.extend(
                    tool.build
                        .empty_categories
                        .iter()
                        .map(|(n, d)| (*n, *d, Vec::new())),
                );
            }
            categories.sort_by(|a, b| a.0.cmp(b.0));
            for (name, description, opts) in categories {
                s.push_str(&format!("\n{name}:\n"));
                if !description.is_empty() {
                    s.push_str(description);
                    s.push('\n');
                }
                s.push('\n');
                if opts.is_empty() {
                    s.push_str("  This option category has no options.\n");
                }
                for o in opts {
                    push_option(&mut s, o, tool.build.dialect, w);
                }
            }
        }
    }
    s
}

fn pick<'a>(shown: &[&'a Opt], category: Category) -> Vec<&'a Opt> {
    shown
        .iter()
        .copied()
        .filter(|o| o.category == category)
        .collect()
}
