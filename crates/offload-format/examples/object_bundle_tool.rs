//! Developer tool for differential testing of `object_bundle` against
//! llvm-objcopy / clang-offload-bundler (used by
//! tests/fixtures/object_bundle/sweep.sh).
//!
//! ```text
//! object_bundle_tool add <host.o> <out.o> <id>=<file>...   (file "-host" = placeholder)
//! object_bundle_tool strip <fat.o> <out.o>
//! object_bundle_tool list <fat.o>
//! ```

use offload_format::object_bundle as ob;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("object_bundle_tool: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let read = |p: &str| std::fs::read(p).map_err(|e| format!("'{p}': {e}"));
    match args.get(1).map(String::as_str) {
        Some("add") if args.len() >= 4 => {
            let host = read(&args[2])?;
            let mut owned: Vec<(String, Vec<u8>)> = Vec::new();
            for spec in &args[4..] {
                let (id, file) = spec.split_once('=').ok_or("entry must be <id>=<file>")?;
                let data = if file == "-host" {
                    ob::HOST_PLACEHOLDER.to_vec()
                } else {
                    read(file)?
                };
                owned.push((id.to_string(), data));
            }
            let entries: Vec<(&str, &[u8])> = owned
                .iter()
                .map(|(i, d)| (i.as_str(), d.as_slice()))
                .collect();
            let out = ob::add_bundle_sections(&host, &entries).map_err(|e| e.to_string())?;
            std::fs::write(&args[3], out).map_err(|e| e.to_string())
        }
        Some("strip") if args.len() == 4 => {
            let fat = read(&args[2])?;
            let out = ob::strip_bundle_sections(&fat).map_err(|e| e.to_string())?;
            std::fs::write(&args[3], out).map_err(|e| e.to_string())
        }
        Some("list") if args.len() == 3 => {
            let fat = read(&args[2])?;
            let obj = ob::ObjectFile::parse(&fat).map_err(|e| e.to_string())?;
            for s in obj.bundle_sections() {
                let s = s.map_err(|e| e.to_string())?;
                println!("{}", String::from_utf8_lossy(s.id));
            }
            Ok(())
        }
        _ => Err("usage: object_bundle_tool add|strip|list ...".into()),
    }
}
