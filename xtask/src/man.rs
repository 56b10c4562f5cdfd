//! `cargo xtask man --out DIR`: writes the man page of every installed
//! program name (section 1), rendered from the tools' option tables.

use std::path::PathBuf;

use offload_cli::cl::man;
use offload_cli::cl::tools;

pub fn run(args: &[String]) -> Result<(), String> {
    let mut out: Option<PathBuf> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--out" => out = Some(it.next().ok_or("--out needs a directory")?.into()),
            s => return Err(format!("unknown argument {s}")),
        }
    }
    let out = out.ok_or("usage: cargo xtask man --out DIR")?;
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    for (name, tool) in tools::ALL {
        let path = out.join(format!("{name}.1"));
        std::fs::write(&path, man::render(tool, name))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        println!("{}", path.display());
    }
    Ok(())
}
