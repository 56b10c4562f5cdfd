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

    /// Only four modules may use `unsafe`: the shared CLI crate's `mapped`
    /// (to map inputs), `splice` (pipe copies at unaligned offsets) and
    /// `staging` (unnamed outputs, removing staging files on signals), and
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
        let staging = root.join("crates/offload-cli/src/staging.rs");
        for f in files
            .iter()
            .filter(|f| ![&mapping, &zstd_raw, &splice, &staging].contains(f))
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
        // Every unsafe block in raw.rs, splice.rs and staging.rs says why
        // it is sound.
        for module in [&zstd_raw, &splice, &staging] {
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

    /// A module's path in its crate (`["ccob", "codec"]`) from its file
    /// under `src` (`ccob/codec.rs`; `mod.rs`, `lib.rs` and `main.rs` name
    /// their directory).
    fn module_of(src: &Path, file: &Path) -> Vec<String> {
        let rel = file.strip_prefix(src).unwrap().with_extension("");
        let mut path: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if path
            .last()
            .is_some_and(|l| ["lib", "main", "mod"].contains(&l.as_str()))
        {
            path.pop();
        }
        path
    }

    /// The paths a module's code names through `crate::`, `super::` and
    /// `self::` (use groups expanded), made absolute. Comments are skipped,
    /// and so is the end of the file from its `#[cfg(test)]` module on.
    fn named_paths(module: &[String], text: &str) -> Vec<Vec<String>> {
        let mut code = String::new();
        for line in text.lines() {
            if line.starts_with("#[cfg(") && line.contains("test") {
                break;
            }
            code.push_str(line.split("//").next().unwrap_or(""));
            code.push('\n');
        }
        // Tokens: identifiers, `::`, and single punctuation.
        let mut tokens: Vec<&str> = Vec::new();
        let mut rest = code.as_str();
        while let Some(c) = rest.chars().next() {
            let len = if c.is_alphanumeric() || c == '_' {
                rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len())
            } else if rest.starts_with("::") {
                2
            } else {
                c.len_utf8()
            };
            if !c.is_whitespace() {
                tokens.push(&rest[..len]);
            }
            rest = &rest[len..];
        }
        // A path tree from `at`: segments, then `{ tree, ... }` or not.
        fn tree(
            tokens: &[&str],
            mut at: usize,
            prefix: Vec<String>,
            out: &mut Vec<Vec<String>>,
        ) -> usize {
            let mut path = prefix;
            loop {
                match tokens.get(at) {
                    Some(&"{") => {
                        at += 1;
                        while tokens.get(at).is_some_and(|t| *t != "}") {
                            if tokens[at] == "," {
                                at += 1;
                                continue;
                            }
                            let before = at;
                            at = tree(tokens, at, path.clone(), out);
                            if at == before {
                                at += 1;
                            }
                        }
                        return at + 1;
                    }
                    Some(t) if t.chars().all(|c| c.is_alphanumeric() || c == '_') => {
                        if *t != "self" {
                            path.push(t.to_string());
                        }
                        at += 1;
                        if tokens.get(at) == Some(&"::") {
                            at += 1;
                            continue;
                        }
                        out.push(path);
                        return at;
                    }
                    _ => {
                        out.push(path);
                        return at;
                    }
                }
            }
        }
        let mut relative = Vec::new();
        let mut at = 0;
        while at < tokens.len() {
            let starts = ["crate", "super", "self"].contains(&tokens[at])
                && tokens.get(at + 1) == Some(&"::")
                && (at == 0 || tokens[at - 1] != "::");
            if starts {
                at = tree(&tokens, at, Vec::new(), &mut relative);
            } else {
                at += 1;
            }
        }
        relative
            .into_iter()
            .filter_map(|p| {
                let mut segments = p.into_iter();
                let mut abs: Vec<String> = match segments.next()?.as_str() {
                    "crate" => Vec::new(),
                    "super" => module[..module.len().checked_sub(1)?].to_vec(),
                    _ => module.to_vec(),
                };
                let mut segments = segments.peekable();
                while segments.peek().is_some_and(|s| s == "super") {
                    abs.pop()?;
                    segments.next();
                }
                abs.extend(segments);
                Some(abs)
            })
            .collect()
    }

    /// The cycles among sibling modules of the crate whose sources are
    /// under `src`: each as the modules around it.
    fn module_cycles(src: &Path) -> Vec<Vec<String>> {
        use std::collections::{BTreeMap, BTreeSet};
        let mut files = Vec::new();
        rust_files(src, &mut files);
        // `src/bin/*.rs` are crates of their own; `tests.rs` are test modules.
        files.retain(|f| !f.starts_with(src.join("bin")) && !f.ends_with("tests.rs"));
        let modules: BTreeMap<Vec<String>, &Path> = files
            .iter()
            .map(|f| (module_of(src, f), f.as_path()))
            .collect();
        let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
        for (module, file) in &modules {
            let text = std::fs::read_to_string(file).unwrap();
            for named in named_paths(module, &text) {
                // The module the path names: its longest prefix that is one.
                let Some(target) = (0..=named.len())
                    .rev()
                    .map(|n| &named[..n])
                    .find(|p| modules.contains_key(*p))
                else {
                    continue;
                };
                // A module may use its ancestors' items and its
                // descendants': they are one unit. Between two subtrees the
                // use counts as one between the siblings that hold them.
                let common = module
                    .iter()
                    .zip(target)
                    .take_while(|(a, b)| a == b)
                    .count();
                if common == module.len() || common == target.len() {
                    continue;
                }
                edges
                    .entry(module[..=common].to_vec())
                    .or_default()
                    .insert(target[..=common].to_vec());
            }
        }
        // Depth-first search; a back edge closes a cycle.
        fn visit(
            node: &Vec<String>,
            edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
            done: &mut BTreeSet<Vec<String>>,
            stack: &mut Vec<Vec<String>>,
            cycles: &mut Vec<Vec<String>>,
        ) {
            if let Some(at) = stack.iter().position(|n| n == node) {
                cycles.push(stack[at..].iter().map(|m| m.join("::")).collect());
                return;
            }
            if !done.insert(node.clone()) {
                return;
            }
            stack.push(node.clone());
            for next in edges.get(node).into_iter().flatten() {
                visit(next, edges, done, stack, cycles);
            }
            stack.pop();
        }
        let mut cycles = Vec::new();
        let mut done = BTreeSet::new();
        for node in edges.keys() {
            visit(node, &edges, &mut done, &mut Vec::new(), &mut cycles);
        }
        cycles
    }

    /// The modules of each crate are layered: no two modules use each
    /// other, directly or around a cycle. A module's uses of its parent
    /// and children do not count (they are one unit); a use between
    /// subtrees counts between the siblings that hold them. Checked on the
    /// source text: `crate::`, `super::` and `self::` paths, outside
    /// comments and test modules.
    #[test]
    fn no_module_cycles() {
        let root = workspace_root();
        let mut dirs: Vec<std::path::PathBuf> = std::fs::read_dir(root.join("crates"))
            .unwrap()
            .flatten()
            .map(|e| e.path().join("src"))
            .filter(|p| p.is_dir())
            .collect();
        dirs.push(root.join("xtask/src"));
        assert!(dirs.len() > 5, "found the crates");
        let mut found = Vec::new();
        for src in &dirs {
            for cycle in module_cycles(src) {
                found.push(format!(
                    "{}: {}",
                    src.strip_prefix(&root).unwrap_or(src).display(),
                    cycle.join(" -> ")
                ));
            }
        }
        assert!(found.is_empty(), "module cycles:\n{}", found.join("\n"));
    }

    /// One decoder per codec: every zlib or raw deflate stream the tools
    /// read is inflated by `offload-format`'s `inflate_bounded`, the one
    /// place that makes a deflate decoder (as `zstd_bounded` is for zstd).
    /// Encoders (writing compressed bytes) may live anywhere.
    #[test]
    fn one_inflate() {
        const DECODERS: &[&str] = &[
            "Decompress::new",
            "ZlibDecoder",
            "DeflateDecoder",
            "GzDecoder",
            "MultiGzDecoder",
        ];
        let root = workspace_root();
        let mut files = Vec::new();
        for e in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
            rust_files(&e.path().join("src"), &mut files);
        }
        assert!(files.len() > 20, "found the sources");
        let home = root.join("crates/offload-format/src/inflate_bounded.rs");
        assert!(files.contains(&home), "the helper is where this test says");
        let mut offenders = Vec::new();
        for f in files.iter().filter(|f| **f != home) {
            let text = std::fs::read_to_string(f).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for d in DECODERS.iter().filter(|d| code.contains(**d)) {
                    offenders.push(format!("{}:{}: {d}", f.display(), n + 1));
                }
            }
        }
        assert!(
            offenders.is_empty(),
            "deflate decoders outside inflate_bounded:\n{}",
            offenders.join("\n")
        );
    }

    /// The cycle checker finds a cycle between siblings, and lets a module
    /// use its parent.
    #[test]
    fn module_cycles_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path();
        let write = |name: &str, text: &str| {
            let path = src.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write("lib.rs", "mod a;\nmod b;\nmod c;\n");
        write(
            "a/mod.rs",
            "mod x;\nuse crate::b::f;\npub(crate) fn g() { x::h() }\n",
        );
        write("a/x.rs", "use super::g; // the parent\n");
        write("b.rs", "use crate::{c::{self, k}, d};\n");
        write(
            "c.rs",
            "// use crate::b;\nfn z() { crate::a::x::h() }\n#[cfg(test)]\nmod tests { use crate::b; }\n",
        );
        assert_eq!(module_cycles(src), [["a", "b", "c"]]);
        assert_eq!(
            named_paths(&["m".into()], "use super::{a::{self, b}, c};"),
            [vec!["a"], vec!["a", "b"], vec!["c"]]
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

    /// The Markdown files whose links are checked: README.md and docs/.
    fn markdown_files(root: &Path) -> Vec<std::path::PathBuf> {
        fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
            for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else if p.extension().is_some_and(|x| x == "md") {
                    out.push(p);
                }
            }
        }
        let mut out = vec![root.join("README.md")];
        walk(&root.join("docs"), &mut out);
        out.sort();
        out
    }

    /// The lines of `text` outside fenced code blocks.
    fn prose_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
        let mut fence: Option<&str> = None;
        text.lines().enumerate().filter(move |(_, line)| {
            let t = line.trim_start();
            let marker = ["```", "~~~"].into_iter().find(|m| t.starts_with(m));
            match (fence, marker) {
                (None, Some(m)) => {
                    fence = Some(m);
                    false
                }
                (Some(open), Some(m)) if m == open => {
                    fence = None;
                    false
                }
                (None, None) => true,
                _ => false,
            }
        })
    }

    /// GitHub's anchor for a heading: the rendered text (code spans, link
    /// targets and emphasis marks dropped) lower-cased, every character
    /// but letters, digits, spaces, `-` and `_` removed, spaces made `-`.
    fn slug(heading: &str) -> String {
        let mut text = String::new();
        let mut rest = heading;
        // `[text](target)` renders as `text`.
        while let Some(open) = rest.find("](") {
            let close = rest[open..].find(')').map_or(rest.len(), |c| open + c + 1);
            text.push_str(&rest[..open]);
            rest = &rest[close..];
        }
        text.push_str(rest);
        text.trim()
            .chars()
            .flat_map(char::to_lowercase)
            .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect()
    }

    /// The anchors a Markdown file defines: its headings' slugs (a repeated
    /// slug gets `-1`, `-2`, ... as on GitHub) and explicit `id`/`name`s.
    fn anchors(text: &str) -> std::collections::BTreeSet<String> {
        let mut seen = std::collections::BTreeMap::<String, usize>::new();
        let mut out = std::collections::BTreeSet::new();
        for (_, line) in prose_lines(text) {
            let hashes = line.bytes().take_while(|&b| b == b'#').count();
            if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
                let base = slug(line[hashes..].trim().trim_end_matches('#'));
                let n = seen.entry(base.clone()).or_insert(0);
                out.insert(if *n == 0 {
                    base.clone()
                } else {
                    format!("{base}-{n}")
                });
                *n += 1;
            }
            for attr in ["id=\"", "name=\""] {
                let mut rest = line;
                while let Some(at) = rest.find(attr) {
                    rest = &rest[at + attr.len()..];
                    let end = rest.find('"').unwrap_or(rest.len());
                    out.insert(rest[..end].to_string());
                }
            }
        }
        out
    }

    /// The `(target#anchor)` links of a Markdown line to another Markdown
    /// file or to the same one (`target` empty).
    fn anchor_links(line: &str) -> Vec<(&str, &str)> {
        let mut out = Vec::new();
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let end = rest.find(')').unwrap_or(rest.len());
            let link = &rest[..end];
            rest = &rest[end..];
            let Some((target, anchor)) = link.split_once('#') else {
                continue;
            };
            if target.is_empty() || (target.ends_with(".md") && !target.contains("://")) {
                out.push((target, anchor));
            }
        }
        out
    }

    /// Every `[...](file.md#anchor)` and `[...](#anchor)` link in README.md
    /// and docs/, and every `docs/<file>.md#anchor` the sources mention,
    /// names a heading (or an explicit anchor) of its target.
    #[test]
    fn markdown_anchor_links_resolve() {
        let root = workspace_root();
        let files = markdown_files(&root);
        assert!(files.len() > 10, "found the documents");
        let mut broken = Vec::new();
        for file in &files {
            let text = std::fs::read_to_string(file).unwrap();
            for (n, line) in prose_lines(&text) {
                for (target, anchor) in anchor_links(line) {
                    let path = if target.is_empty() {
                        file.clone()
                    } else {
                        file.parent().unwrap().join(target)
                    };
                    let found =
                        std::fs::read_to_string(&path).is_ok_and(|t| anchors(&t).contains(anchor));
                    if !found {
                        broken.push(format!(
                            "{}:{}: {target}#{anchor}",
                            file.strip_prefix(&root).unwrap().display(),
                            n + 1
                        ));
                    }
                }
            }
        }
        // The sources name sections as `docs/<file>.md#<anchor>` too.
        let mut sources = Vec::new();
        for dir in ["crates", "xtask", "fuzz"] {
            rust_files(&root.join(dir), &mut sources);
        }
        for file in &sources {
            let text = std::fs::read_to_string(file).unwrap();
            for (n, line) in text.lines().enumerate() {
                let mut rest = line;
                while let Some(at) = rest.find("docs/") {
                    rest = &rest[at..];
                    let end = rest
                        .find(|c: char| !(c.is_alphanumeric() || "/._-#".contains(c)))
                        .unwrap_or(rest.len());
                    let reference = rest[..end].trim_end_matches('.');
                    rest = &rest[end..];
                    let Some((target, anchor)) = reference.split_once('#') else {
                        continue;
                    };
                    let found = std::fs::read_to_string(root.join(target))
                        .is_ok_and(|t| anchors(&t).contains(anchor));
                    if !found {
                        broken.push(format!(
                            "{}:{}: {reference}",
                            file.strip_prefix(&root).unwrap().display(),
                            n + 1
                        ));
                    }
                }
            }
        }
        assert!(
            broken.is_empty(),
            "links to anchors that do not exist:\n{}",
            broken.join("\n")
        );
    }

    /// The checker itself: GitHub's slugs, and which links it reads.
    #[test]
    fn anchors_are_github_slugs() {
        assert_eq!(
            slug("Explanations (`OFFLOAD_TOOLS_EXPLAIN=1`)"),
            "explanations-offload_tools_explain1"
        );
        assert_eq!(
            slug("llvm-offload-binary / clang-offload-packager"),
            "llvm-offload-binary--clang-offload-packager"
        );
        assert_eq!(
            slug("Compressed bytes: when they can differ"),
            "compressed-bytes-when-they-can-differ"
        );
        assert_eq!(slug("See [the spec](spec.md) too"), "see-the-spec-too");
        let doc = "# A\n```\n# not a heading\n```\n## A\n<a id=\"x\"></a>\n";
        let found: Vec<String> = anchors(doc).into_iter().collect();
        assert_eq!(found, ["a", "a-1", "x"]);
        assert_eq!(
            anchor_links("[a](b.md#c), [d](#e), [f](https://x/g.md#h), [i](j.md)"),
            [("b.md", "c"), ("", "e")]
        );
    }
}
