//! Tidy tests: the layering rules the code must keep, checked on the
//! sources as text (as rust-analyzer's and rustc's tidy checks do).

#[cfg(test)]
mod tests {
    use crate::harness::workspace_root;
    use std::path::Path;

    fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n == "target") {
                    continue;
                }
                rust_files(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }

    /// Only three modules may use `unsafe`: the shared CLI crate's `mapped`
    /// (to map inputs) and `splice` (pipe copies at unaligned offsets), and
    /// `zstd-stable-in`'s `raw` (zstd's stable-input mode, which zstd-safe
    /// refuses). The tools, the rest of those crates, the format library and
    /// the fuzz targets are safe Rust; the format library says so with
    /// `#![forbid(unsafe_code)]`, the two crates deny it outside those
    /// modules.
    #[test]
    fn unsafe_only_in_the_mapping_module() {
        let root = workspace_root();
        let mut files = Vec::new();
        rust_files(&root.join("crates"), &mut files);
        rust_files(&root.join("fuzz/fuzz_targets"), &mut files);
        assert!(files.len() > 10, "found the sources");
        let mut offenders = Vec::new();
        let mapping = root.join("crates/offload-cli/src/mapped.rs");
        let zstd_raw = root.join("crates/zstd-stable-in/src/raw.rs");
        let splice = root.join("crates/offload-cli/src/splice.rs");
        for f in files
            .iter()
            .filter(|f| **f != mapping && **f != zstd_raw && **f != splice)
        {
            let text = std::fs::read_to_string(f).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                let uses = code
                    .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .any(|w| w == "unsafe");
                if uses
                    && !code.contains("forbid(unsafe_code)")
                    && !code.contains("deny(unsafe_code)")
                {
                    offenders.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
                }
            }
        }
        assert!(
            offenders.is_empty(),
            "unsafe outside xtask:\n{}",
            offenders.join("\n")
        );
        let lib = std::fs::read_to_string(root.join("crates/offload-format/src/lib.rs")).unwrap();
        assert!(lib.contains("#![forbid(unsafe_code)]"));
        let cli = std::fs::read_to_string(root.join("crates/offload-cli/src/lib.rs")).unwrap();
        assert!(cli.contains("#![deny(unsafe_code)]"));
        let stable =
            std::fs::read_to_string(root.join("crates/zstd-stable-in/src/lib.rs")).unwrap();
        assert!(stable.contains("#![deny(unsafe_code)]"));
        let unsafe_lines = std::fs::read_to_string(&mapping)
            .unwrap()
            .lines()
            .filter(|l| l.trim_start().starts_with("let map = unsafe"))
            .count();
        assert_eq!(unsafe_lines, 1, "one unsafe call in mapped.rs");
        // Every unsafe block in raw.rs and splice.rs says why it is sound.
        for module in [&zstd_raw, &splice] {
            let raw = std::fs::read_to_string(module).unwrap();
            let lines: Vec<&str> = raw.lines().collect();
            for (n, line) in lines.iter().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                if code.contains("unsafe {") {
                    let justified = lines[..n]
                        .iter()
                        .rev()
                        .take_while(|l| l.trim_start().starts_with("//") || !l.contains(';'))
                        .any(|l| l.trim_start().starts_with("// SAFETY:"));
                    assert!(
                        justified,
                        "{}:{}: unsafe without SAFETY",
                        module.display(),
                        n + 1
                    );
                }
            }
        }
    }

    /// Names a tool's command-line option: `-name` or `--name`, the name
    /// starting the literal or following a space, quote, backquote or
    /// parenthesis, and not running on into more of a word.
    fn names_a_flag(code: &str) -> Option<&'static str> {
        // Every option of the tools (LLVM 22's bundler, packager and
        // wrapper, LLVM 14's wrapper) that a message could quote.
        const OPTIONS: &[&str] = &[
            "###",
            "add-omp-offload-notes",
            "allow-missing-bundles",
            "archive",
            "bundle-align",
            "check-input-archive",
            "compress",
            "compression-level",
            "help",
            "hip-openmp-compatible",
            "image",
            "input",
            "inputs",
            "kind",
            "list",
            "offload-arch",
            "output",
            "outputs",
            "save-temps",
            "target",
            "targets",
            "triple",
            "type",
            "unbundle",
            "verbose",
            "version",
        ];
        let bytes = code.as_bytes();
        for (at, _) in code.match_indices('-') {
            let before = if at == 0 { b' ' } else { bytes[at - 1] };
            if !matches!(before, b' ' | b'"' | b'\'' | b'`' | b'(' | b'[' | b'-') {
                continue;
            }
            let rest = code[at..].trim_start_matches('-');
            for &o in OPTIONS {
                if let Some(after) = rest.strip_prefix(o) {
                    let next = after.bytes().next();
                    let word_goes_on =
                        next.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-');
                    if !word_goes_on {
                        return Some(o);
                    }
                }
            }
        }
        None
    }

    /// The string literals of one line of code (escapes are kept as
    /// written; a literal left open runs to the end of the line).
    fn literals(code: &str) -> Vec<&str> {
        let mut out = Vec::new();
        let mut rest = code;
        while let Some(open) = rest.find('"') {
            let body = &rest[open + 1..];
            let mut end = body.len();
            let mut escaped = false;
            for (i, c) in body.char_indices() {
                match c {
                    '\\' if !escaped => escaped = true,
                    '"' if !escaped => {
                        end = i;
                        break;
                    }
                    _ => escaped = false,
                }
            }
            out.push(&body[..end]);
            rest = body.get(end + 1..).unwrap_or("");
        }
        out
    }

    /// The format library describes bytes and nothing else: it reads no
    /// file, environment or process state, prints nothing, and names no
    /// option of the tools (their messages about options belong to the
    /// tools). Test modules (`tests.rs`, and a `#[cfg(test)]` module at the
    /// end of a file) may read fixtures; doc comments may name options.
    #[test]
    fn format_library_does_no_io_and_names_no_flag() {
        const FORBIDDEN: &[&str] = &[
            "std::fs",
            "std::env",
            "std::process",
            "std::io::stdin",
            "std::io::stdout",
            "std::io::stderr",
            "io::stdin",
            "io::stdout",
            "io::stderr",
            "print!",
            "println!",
            "eprint!",
            "eprintln!",
            "dbg!",
            "std::os::unix::fs",
            "fs::",
        ];
        let root = workspace_root();
        let mut files = Vec::new();
        rust_files(&root.join("crates/offload-format/src"), &mut files);
        assert!(files.len() > 20, "found the sources");
        let mut offenders = Vec::new();
        for f in files.iter().filter(|f| !f.ends_with("tests.rs")) {
            let text = std::fs::read_to_string(f).unwrap();
            for (n, line) in text.lines().enumerate() {
                if line.trim_start() == "#[cfg(test)]" {
                    // The unit tests at the end of the file.
                    break;
                }
                let code = line.split("//").next().unwrap_or("");
                let mut found: Vec<String> = FORBIDDEN
                    .iter()
                    .filter(|w| {
                        code.match_indices(**w).any(|(at, _)| {
                            // A whole path, not the tail of a longer name.
                            at == 0
                                || !code.as_bytes()[at - 1].is_ascii_alphanumeric()
                                    && code.as_bytes()[at - 1] != b'_'
                        })
                    })
                    .map(|w| w.to_string())
                    .collect();
                found.extend(
                    literals(code)
                        .into_iter()
                        .filter_map(names_a_flag)
                        .map(|o| format!("option -{o}")),
                );
                if !found.is_empty() {
                    offenders.push(format!(
                        "{}:{}: {} ({})",
                        f.strip_prefix(&root).unwrap_or(f).display(),
                        n + 1,
                        line.trim(),
                        found.join(", ")
                    ));
                }
            }
        }
        assert!(
            offenders.is_empty(),
            "the format library does I/O or names a tool's option:\n{}",
            offenders.join("\n")
        );
    }

    /// The checker itself: what it must catch and what it must let pass.
    #[test]
    fn flag_names_are_found_in_literals() {
        assert_eq!(names_a_flag("use -type=o"), Some("type"));
        assert_eq!(names_a_flag("-###"), Some("###"));
        assert_eq!(names_a_flag("--image"), Some("image"));
        assert_eq!(names_a_flag("'-input'"), Some("input"));
        assert_eq!(names_a_flag("(--offload-arch)"), Some("offload-arch"));
        assert_eq!(names_a_flag("x86_64-unknown-linux-gnu"), None);
        assert_eq!(names_a_flag("hip-amdgcn-amd-amdhsa--gfx906"), None);
        assert_eq!(names_a_flag("--set-section-flags"), None);
        assert_eq!(names_a_flag("-targets-x"), None);
        assert_eq!(
            literals(r#"f("a -b", "c\"d") // "e""#),
            ["a -b", "c\\\"d", "e"]
        );
    }
}
