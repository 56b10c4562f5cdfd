//! The Python wheel of offload-tools (`pip install offload-tools`): no code
//! of its own. With the `wheel` feature this crate's binaries are the tools,
//! each built from its own crate's `main.rs` (through `tools/<crate>`,
//! symbolic links to the tool crates' `src/`; see Cargo.toml), so that
//! maturin's `bindings = "bin"` (pyproject.toml at the repository root)
//! puts all six in one wheel; `cargo xtask wheel` builds it.
//!
//! The test here keeps the crate's dependencies the union of the tools'.

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::Path;

    /// The `[dependencies]` of a Cargo.toml: each name, with the features
    /// it names (`features = [...]`, on one line or several).
    fn dependencies(toml: &str) -> Vec<(String, BTreeSet<String>)> {
        let section = toml
            .split("\n[dependencies]\n")
            .nth(1)
            .expect("a [dependencies] table");
        let section = section.split("\n[").next().unwrap();
        // One entry per `name = ...` line at the start of a line; the lines
        // after it (until the next) belong to it.
        let mut deps: Vec<(String, String)> = Vec::new();
        for line in section.lines() {
            let code = line.split('#').next().unwrap();
            if code.trim().is_empty() {
                continue;
            }
            match code.split_once('=') {
                Some((name, rest))
                    if !line.starts_with(' ') && !name.trim().contains(['"', '[', ' ']) =>
                {
                    deps.push((name.trim().to_string(), rest.to_string()))
                }
                _ => deps.last_mut().unwrap().1.push_str(code),
            }
        }
        deps.into_iter()
            .map(|(name, spec)| {
                let name = name.strip_suffix(".workspace").unwrap_or(&name).to_string();
                let features = spec
                    .split("features")
                    .nth(1)
                    .and_then(|f| f.split('[').nth(1))
                    .and_then(|f| f.split(']').next())
                    .map(|f| {
                        f.split(',')
                            .map(|x| x.trim().trim_matches('"').to_string())
                            .filter(|x| !x.is_empty())
                            .collect()
                    })
                    .unwrap_or_default();
                (name, features)
            })
            .collect()
    }

    /// Every dependency of each tool crate is one here, with every feature
    /// the tool names (the binaries here are built from the tools' sources);
    /// `llvm-offload-binary`'s `main` calls its own library, a dependency here.
    #[test]
    fn dependencies_are_the_union_of_the_tools() {
        let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let ours = dependencies(
            &std::fs::read_to_string(crates.join("offload-tools/Cargo.toml")).unwrap(),
        );
        let mut missing = Vec::new();
        for tool in [
            "offload",
            "clang-offload-bundler",
            "llvm-offload-binary",
            "llvm-offload-wrapper",
            "clang-offload-wrapper",
        ] {
            let toml = std::fs::read_to_string(crates.join(tool).join("Cargo.toml")).unwrap();
            let theirs = dependencies(&toml);
            assert!(!theirs.is_empty(), "{tool}: no dependencies read");
            for (name, features) in theirs {
                match ours.iter().find(|(n, _)| *n == name) {
                    None => missing.push(format!("{tool}'s dependency {name}")),
                    Some((_, have)) => {
                        for f in features.difference(have) {
                            missing.push(format!("{tool}'s feature {f} of {name}"));
                        }
                    }
                }
            }
        }
        assert!(ours.iter().any(|(n, _)| n == "llvm-offload-binary"));
        assert!(
            missing.is_empty(),
            "crates/offload-tools/Cargo.toml lacks: {}",
            missing.join(", ")
        );
    }
}
