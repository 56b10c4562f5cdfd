//! Each tool's man page lists exactly the options its `--help` lists, with
//! the same help lines, so the two cannot drift apart.

use offload_cli::cl::help;
use offload_cli::cl::man;
use offload_cli::cl::tools;
use offload_cli::cl::HelpKind;

/// The option names `--help` shows (`--name`, `-o`), in order.
fn help_options(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with("  -"))
        .map(|l| {
            l.trim_start()
                .split([' ', '='])
                .next()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

/// `page` without its font changes, and placeholders given their brackets
/// back, as `--help` writes them.
fn plain(page: &str) -> String {
    let mut out = String::new();
    let mut rest = page;
    while let Some(at) = rest.find("\\fI") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 3..];
        let end = after.find("\\fR").unwrap_or(after.len());
        let value = &after[..end];
        if value.starts_with('<') {
            out.push_str(value);
        } else {
            out.push('<');
            out.push_str(value);
            out.push('>');
        }
        rest = after.get(end + 3..).unwrap_or_default();
    }
    out.push_str(rest);
    out.replace("\\fB", "").replace("\\fR", "")
}

#[test]
fn man_pages_list_what_help_lists() {
    for (name, tool) in tools::ALL {
        let page = man::render(tool, name);
        let mut from_help = help_options(&help::render(tool, HelpKind::Help, name));
        let mut from_man = man::listed_options(&page);
        from_help.sort();
        from_man.sort();
        assert!(!from_help.is_empty(), "{name}");
        assert_eq!(from_man, from_help, "{name}");
        // Each option's first help line is in the page (roff-escaped).
        for o in tool.options {
            if help_options(&help::render(tool, HelpKind::Help, name))
                .iter()
                .any(|h| h.trim_start_matches('-') == o.name)
            {
                let first = o.help.lines().next().unwrap_or_default();
                assert!(
                    plain(&page).contains(&first.replace('\\', "\\e").replace('-', "\\-")),
                    "{name}: {first}"
                );
            }
        }
    }
}

#[test]
fn man_page_sections() {
    for (name, tool) in tools::ALL {
        let page = man::render(tool, name);
        let sections: Vec<&str> = page
            .lines()
            .filter_map(|l| l.strip_prefix(".SH "))
            .collect();
        for want in [
            "NAME",
            "SYNOPSIS",
            "DESCRIPTION",
            "OPTIONS",
            "EXIT STATUS",
            "SEE ALSO",
        ] {
            assert!(sections.contains(&want), "{name} lacks {want}");
        }
        assert!(page.starts_with(&format!(
            ".TH {} 1 ",
            name.to_uppercase().replace('-', "\\-")
        )));
        assert!(page.contains(&format!("\n{} \\- ", name.replace('-', "\\-"))));
        // No line may start a roff request by accident.
        for l in page.lines() {
            if let Some(request) = l.strip_prefix('.') {
                let req = request.split(' ').next().unwrap_or_default();
                assert!(
                    ["TH", "SH", "TP", "IP", "PP", "RS", "RE", "nf", "fi", "B"].contains(&req),
                    "{name}: {l}"
                );
            }
        }
    }
    // The packager's old name gets a page of its own.
    let page = man::render(&tools::OFFLOAD_BINARY, "clang-offload-packager");
    assert!(page.contains("clang\\-offload\\-packager \\- "));
}

/// Value placeholders keep their shape (`--image=<key>=<value>,...`), and
/// every page lists the `OFFLOAD_*` variables the tool honours.
#[test]
fn man_page_values_and_environment() {
    let page = man::render(&tools::OFFLOAD_BINARY, "llvm-offload-binary");
    assert!(
        page.contains("\\fB\\-\\-image\\fR=\\fI<key>=<value>,...\\fR"),
        "{page}"
    );
    for (name, tool) in tools::ALL {
        let page = man::render(tool, name);
        assert!(!page.contains("\\fIkey>"), "{name}");
        let env = page
            .split(".SH ENVIRONMENT\n")
            .nth(1)
            .unwrap_or_else(|| panic!("{name} lacks ENVIRONMENT"));
        let env = env.split(".SH ").next().unwrap_or_default();
        let mut want = vec![
            "OFFLOAD_TOOLS_EXPLAIN",
            "OFFLOAD_TOOLS_VERSION",
            "OFFLOAD_TOOLS_NAMED_STAGING",
        ];
        if *name == "clang-offload-bundler" {
            want.extend([
                "OFFLOAD_BUNDLER_VERBOSE",
                "OFFLOAD_BUNDLER_COMPRESS",
                "OFFLOAD_BUNDLER_COMPRESSION_LEVEL",
                "OFFLOAD_BUNDLER_IGNORE_ENV_VAR",
            ]);
        }
        for v in want {
            assert!(env.contains(&format!("\\fB{v}\\fR")), "{name}: {v}");
        }
    }
}

/// Prose is rendered as roff, not shown as Markdown: option names and
/// literal text bold, value placeholders italic, no backticks anywhere;
/// the synopsis names the positional argument's value.
#[test]
fn man_pages_render_fonts_not_markdown() {
    assert_eq!(
        man::inline("With -o, packs each --image into <file> (`a-b`), 2-byte"),
        "With \\fB\\-o\\fR, packs each \\fB\\-\\-image\\fR into \\fIfile\\fR \
         (\\fBa\\-b\\fR), 2\\-byte"
    );
    assert_eq!(man::inline("-type=o or -1"), "\\fB\\-type\\fR=o or \\-1");
    assert_eq!(man::inline(".hidden"), "\\&.hidden");
    assert_eq!(man::code_spans("a `b` `c"), "a \\fBb\\fR `c");
    for (name, tool) in tools::ALL {
        let page = man::render(tool, name);
        assert!(!page.contains('`'), "{name}: {page}");
    }
    let page = man::render(&tools::OFFLOAD_BINARY, "llvm-offload-binary");
    assert!(
        page.contains(".B llvm\\-offload\\-binary\n[\\fIoptions\\fR] \\fIfile\\fR\n"),
        "{page}"
    );
    assert!(
        page.contains("With \\fB\\-o\\fR, packs each \\fB\\-\\-image\\fR"),
        "{page}"
    );
    assert!(
        page.contains("\\fIinput\\fR\\-\\fItriple\\fR\\-\\fIarch\\fR.\\fIn\\fR.\\fIext\\fR"),
        "{page}"
    );
}
