//! `offload`: list and extract the device code inside executables, shared
//! libraries, objects and archives. See docs/tools/offload.md.

mod cli;
mod extract;
mod model;
mod objects;
mod render;
mod thin;
mod thin_help;
mod walk;

use std::ffi::OsStr;
use std::io::Write;
use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use offload_cli::diag::Diag;

use cli::{Cli, Command, ExtractArgs, Format, LsArgs};
use model::Node;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let diag = Diag::new(OsStr::new("offload"));
    match cli.command {
        Command::Ls(args) => ls(&args, &diag),
        Command::Extract(args) => extract_cmd(&args, &diag),
        Command::Thin(args) => match thin::check_usage(&args) {
            Ok(()) => thin::run(&args, &diag),
            Err(e) => {
                diag.error(e);
                ExitCode::from(2)
            }
        },
        Command::Completions { shell } => {
            let mut cmd = Cli::command();
            clap_complete::generate(shell, &mut cmd, "offload", &mut std::io::stdout());
            ExitCode::SUCCESS
        }
        Command::Man => {
            let mut out = Vec::new();
            if let Err(e) = clap_mangen::Man::new(Cli::command()).render(&mut out) {
                diag.error(format!("man page: {e}"));
                return ExitCode::FAILURE;
            }
            write_stdout(&out, &diag)
        }
    }
}

fn write_stdout(bytes: &[u8], diag: &Diag) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`| head`) is not worth a message.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::FAILURE,
        Err(e) => {
            diag.error(format!(
                "writing standard output: {}",
                offload_cli::diag::os_error_text(&e)
            ));
            ExitCode::FAILURE
        }
    }
}

/// Reports the damage in a tree on stderr; returns how many.
fn report_damage(root: &Node, diag: &Diag) -> usize {
    let mut n = 0;
    root.visit(&mut Vec::new(), &mut |path| {
        let node = path[path.len() - 1];
        for d in &node.damage {
            n += 1;
            let place: Vec<&str> = path.iter().map(|p| p.name.as_str()).collect();
            let at = d
                .offset
                .map(|o| format!(": at offset {o}"))
                .unwrap_or_default();
            diag.error(format!("{}{at}: {}", place.join(": "), d.message));
        }
    });
    n
}

fn walk_all(files: &[std::path::PathBuf], verify: bool, diag: &Diag) -> (Vec<Node>, usize) {
    let mut walker = walk::Walker::default();
    walker.verify = verify;
    let mut damage = 0;
    let roots: Vec<Node> = files.iter().map(|f| walker.file(f)).collect();
    for r in &roots {
        damage += report_damage(r, diag);
    }
    (roots, damage)
}

fn ls(args: &LsArgs, diag: &Diag) -> ExitCode {
    let (roots, damage) = walk_all(&args.files, args.verify, diag);
    let mut out = String::new();
    if args.json {
        render::json(&roots, &mut out);
    } else {
        for r in &roots {
            match args.format {
                Format::Tree => render::tree(r, &mut out),
                Format::Llvm => render::llvm_lines(r, &mut out),
            }
        }
    }
    let status = write_stdout(out.as_bytes(), diag);
    if damage > 0 {
        ExitCode::FAILURE
    } else {
        status
    }
}

fn extract_cmd(args: &ExtractArgs, diag: &Diag) -> ExitCode {
    let (roots, damage) = walk_all(&args.files, false, diag);
    let jobs = extract::jobs(&roots, args);
    let hints = extract::unmatched_hints(&roots, args);
    if jobs.is_empty() {
        diag.error("no entry matches the selection (offload ls lists them)");
        for h in &hints {
            diag.note(h);
        }
        return ExitCode::FAILURE;
    }
    // Other requests matched: what one of them missed is worth a warning.
    for h in &hints {
        diag.warning(h);
    }
    if args.output.is_some() && jobs.len() > 1 {
        let names: Vec<&str> = jobs.iter().map(|j| j.entry.id.as_str()).collect();
        diag.error(format!(
            "-o writes one entry, but {} are selected: {}; narrow the selection with --target or --kind",
            jobs.len(),
            names.join(", ")
        ));
        return ExitCode::FAILURE;
    }
    let made = match (&args.output, &args.output_dir) {
        (None, Some(dir)) => match make_dirs(dir) {
            Ok(made) => made,
            Err(e) => {
                diag.error(format!(
                    "{}: {}",
                    dir.display(),
                    offload_cli::diag::os_error_text(&e)
                ));
                return ExitCode::FAILURE;
            }
        },
        _ => Vec::new(),
    };
    match extract::write(&jobs, args) {
        Ok(written) => {
            if args.output.as_deref() != Some(std::path::Path::new("-")) {
                let mut text = String::new();
                for w in written {
                    text.push_str(&w.display().to_string());
                    text.push('\n');
                }
                let status = write_stdout(text.as_bytes(), diag);
                if status != ExitCode::SUCCESS {
                    return status;
                }
            }
            if damage > 0 {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            // All or nothing: directories made for the outputs go too.
            for dir in made.iter().rev() {
                let _ = std::fs::remove_dir(dir);
            }
            diag.fail(&e);
            ExitCode::FAILURE
        }
    }
}

/// Creates `dir` and any missing parents; returns those it made, outermost
/// first.
fn make_dirs(dir: &std::path::Path) -> std::io::Result<Vec<std::path::PathBuf>> {
    let mut missing = Vec::new();
    let mut at = Some(dir);
    while let Some(d) = at.filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
        missing.push(d.to_path_buf());
        at = d.parent();
    }
    missing.reverse();
    let mut made = Vec::new();
    for d in missing {
        match std::fs::create_dir(&d) {
            Ok(()) => made.push(d),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && d.is_dir() => {}
            Err(e) => {
                for m in made.iter().rev() {
                    let _ = std::fs::remove_dir(m);
                }
                return Err(e);
            }
        }
    }
    Ok(made)
}
