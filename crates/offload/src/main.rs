//! `offload`: list and extract the device code inside executables, shared
//! libraries, objects and archives. See docs/tools/offload.md.

mod cli;
mod error;
mod extract;
mod man;
mod model;
mod objects;
mod present;
mod profile;
mod profile_help;
mod render;
mod select;
mod summary;
mod thin;
mod thin_help;
mod walk;
mod zipped;

use std::ffi::OsStr;
use std::io::Write;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};
use offload_cli::diag::Diag;

use cli::{Cli, Command, ExtractArgs, Format, LsArgs};
use model::Node;

fn main() -> ExitCode {
    let diag = Diag::new(OsStr::new("offload"));
    let cli = match parse_args() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    match cli.command {
        Command::Ls(args) => ls(&args, &diag),
        Command::Size(args) => size_cmd(&args, &diag),
        Command::Extract(args) => extract_cmd(&args, &diag),
        Command::Thin(args) => match thin::check_usage(&args) {
            Ok(()) => thin::run(&args, &diag),
            Err(e) => {
                diag.error(e);
                ExitCode::from(2)
            }
        },
        Command::Completions { shell } => {
            // Made whole, then written: a closed pipe ends the output.
            let mut cmd = Cli::command();
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut cmd, "offload", &mut out);
            write_stdout(&out, &diag)
        }
        Command::Man { page, dir } => man_cmd(page.as_deref(), dir.as_deref(), &diag),
    }
}

/// Reads the command line. `--version` adds the build's identification
/// only with `OFFLOAD_TOOLS_VERSION` set, as the drop-ins' does (`-V`:
/// never). Usage errors are printed as every other error is
/// (`offload: error: ...`) and end with status 2; `--help` and
/// `--version` print to standard output.
fn parse_args() -> Result<Cli, ExitCode> {
    let mut cmd = Cli::command();
    if !offload_cli::ident::requested() {
        cmd = cmd.long_version(env!("CARGO_PKG_VERSION"));
    }
    let result = cmd
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m));
    match result {
        Ok(cli) => Ok(cli),
        Err(e) => {
            use clap::error::ErrorKind;
            let text = e.render().to_string();
            match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    let diag = Diag::new(OsStr::new("offload"));
                    Err(write_stdout(text.as_bytes(), &diag))
                }
                ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                    offload_cli::diag::write_stderr(text.as_bytes());
                    Err(ExitCode::from(2))
                }
                _ => {
                    let text = text.strip_prefix("error: ").unwrap_or(&text);
                    offload_cli::diag::write_stderr(format!("offload: error: {text}").as_bytes());
                    Err(ExitCode::from(2))
                }
            }
        }
    }
}

fn man_cmd(page: Option<&str>, dir: Option<&std::path::Path>, diag: &Diag) -> ExitCode {
    let Some(dir) = dir else {
        return match man::page(page) {
            Ok(out) => write_stdout(&out, diag),
            Err(e) => {
                diag.error(format!("man page: {e}"));
                ExitCode::FAILURE
            }
        };
    };
    let pages = match man::pages() {
        Ok(p) => p,
        Err(e) => {
            diag.error(format!("man page: {e}"));
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = std::fs::create_dir_all(dir) {
        diag.error(format!(
            "{}: {}",
            dir.display(),
            offload_cli::diag::os_error_text(&e)
        ));
        return ExitCode::FAILURE;
    }
    let mut outputs = offload_cli::fsio::Outputs::new();
    let mut names = String::new();
    for (name, bytes) in &pages {
        let path = dir.join(name);
        if let Err(e) = outputs.write(path.as_os_str(), false, bytes) {
            diag.error(format!(
                "{}: {}",
                path.display(),
                offload_cli::diag::os_error_text(&e)
            ));
            return ExitCode::FAILURE;
        }
        names.push_str(&format!("{}\n", path.display()));
    }
    if let Err(e) = outputs.commit() {
        diag.error(format!(
            "writing the man pages: {}",
            offload_cli::diag::os_error_text(&e)
        ));
        return ExitCode::FAILURE;
    }
    write_stdout(names.as_bytes(), diag)
}

fn write_stdout(bytes: &[u8], diag: &Diag) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`| head`) is the end of the output, not an error:
        // no message, and the status is what it would have been.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
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

/// Walks the files; returns the trees of those that could be read, how
/// much damage was reported (a file that cannot be read counts, and is
/// reported as the operating system says: `a.so: No such file or
/// directory`), and (with `keep`) the inputs read, for a command that
/// reads their bytes again (`extract`: the same bytes, and `-` read once).
fn walk_all(
    files: &[std::path::PathBuf],
    verify: bool,
    headers_only: bool,
    keep: bool,
    diag: &Diag,
) -> (Vec<Node>, usize, extract::Opened) {
    let mut walker = walk::Walker::default().headers_only(headers_only && !verify);
    walker.verify = verify;
    let mut damage = 0;
    let mut opened = extract::Opened::new();
    let mut roots = Vec::with_capacity(files.len());
    for f in files {
        let input = match walk::open(f) {
            Ok(i) => i,
            Err(e) => {
                damage += 1;
                diag.error(format!(
                    "{}: cannot read: {}",
                    f.display(),
                    offload_cli::diag::os_error_text(&e)
                ));
                continue;
            }
        };
        if keep {
            opened.insert(model::Source::File(f.clone()), input.clone());
        }
        roots.push(walker.input(f, Ok(input)));
    }
    for r in &roots {
        damage += report_damage(r, diag);
    }
    (roots, damage, opened)
}

/// Whether a tree holds device code (an entry, or a container).
fn has_code(root: &Node) -> bool {
    let (containers, entries, _) = root.counts();
    containers + entries > 0
}

/// The inputs named on the command line, each directory replaced by the
/// regular files under it ([`offload_cli::fsio::files_under`]: symbolic
/// links not followed, hard links once).
pub(crate) fn expand_inputs(paths: &[std::path::PathBuf], diag: &Diag) -> Inputs {
    let mut out = Inputs::default();
    for p in paths {
        if p.is_dir() {
            out.tree = true;
            let found = offload_cli::fsio::files_under(p);
            out.files.extend(found.files);
            out.links.extend(found.links);
            for (dir, e) in found.errors {
                out.unreadable += 1;
                diag.error(format!(
                    "{}: cannot read: {}",
                    dir.display(),
                    offload_cli::diag::os_error_text(&e)
                ));
            }
        } else {
            out.files.push(p.clone());
        }
    }
    out
}

/// The inputs of a command, directories expanded ([`expand_inputs`]).
#[derive(Default)]
pub(crate) struct Inputs {
    /// The files.
    pub files: Vec<std::path::PathBuf>,
    /// Whether a directory was given.
    pub tree: bool,
    /// Other names (hard links) of files, in the trees.
    pub links: Vec<(std::path::PathBuf, std::path::PathBuf)>,
    /// Directories that could not be read (reported).
    pub unreadable: usize,
}

fn ls(args: &LsArgs, diag: &Diag) -> ExitCode {
    let inputs = expand_inputs(&args.files, diag);
    let (mut roots, damage, _) = walk_all(&inputs.files, args.verify, args.summary, false, diag);
    let damage = damage + inputs.unreadable;
    let walked = roots.len();
    if inputs.tree {
        // In a tree, files without device code are left out.
        roots.retain(|r| r.is_interesting());
    }
    let mut out = String::new();
    // What has no device code is said so, plainly.
    let nothing = |out: &mut String, roots: &[Node]| {
        if inputs.tree && roots.is_empty() && damage == 0 {
            let dirs: Vec<std::path::PathBuf> =
                args.files.iter().filter(|f| f.is_dir()).cloned().collect();
            out.push_str(&format!(
                "{}: no device code found in {walked} file{}\n",
                present::file_list(&dirs),
                if walked == 1 { "" } else { "s" }
            ));
        }
    };
    if args.summary {
        let s = summary::summarize(&roots, &mut |gpus| thin::frees(&roots, gpus));
        if args.json {
            summary::json(&s, &mut out);
        } else {
            summary::text(&s, &mut out);
        }
    } else if args.json {
        render::json(&roots, &mut out);
    } else {
        for r in &roots {
            match args.format {
                Format::Tree if !has_code(r) && r.damage.is_empty() && !r.is_interesting() => {
                    out.push_str(&format!("{}: no device code found\n", r.name));
                }
                Format::Tree => render::tree(r, &mut out),
                Format::Llvm => render::llvm_lines(r, &mut out),
            }
        }
        if args.format == Format::Tree {
            nothing(&mut out, &roots);
        }
    }
    let status = write_stdout(out.as_bytes(), diag);
    if damage > 0 {
        ExitCode::FAILURE
    } else {
        status
    }
}

/// `offload size`: the walk of `ls`, then every byte attributed
/// ([`profile`]).
fn size_cmd(args: &cli::SizeArgs, diag: &Diag) -> ExitCode {
    let filter = match args.filter.as_deref().map(regex::Regex::new).transpose() {
        Ok(f) => f,
        Err(e) => {
            diag.error(format!("--filter: {e}"));
            return ExitCode::from(2);
        }
    };
    let arch = match select::read_values("--arch", &args.arch, select::ArchFilter::parse) {
        Ok(a) => a,
        Err(refused) => return refused_value(diag, refused),
    };
    let inputs = expand_inputs(&args.files, diag);
    let (mut roots, damage, _) = walk_all(&inputs.files, false, false, false, diag);
    if inputs.tree {
        roots.retain(|r| r.is_interesting());
    }
    let profiled = profile::profile(&roots);
    let mut more_damage = 0;
    for f in &profiled.files {
        for d in &f.damage {
            diag.error(format!("{}: {d}", f.path));
            more_damage += 1;
        }
    }
    for img in &profiled.images {
        for d in &img.profile.damage {
            diag.error(format!(
                "{}: {}: {d}",
                profiled.files[img.file].path, img.entry
            ));
            more_damage += 1;
        }
    }
    let opts = profile::Options {
        top: args.top,
        filter,
        arch,
    };
    let mut out = String::new();
    if args.json {
        profile::json(&profiled, &opts, &mut out);
    } else {
        profile::text(&profiled, &opts, &mut out);
    }
    let status = write_stdout(out.as_bytes(), diag);
    if damage + inputs.unreadable + more_damage > 0 {
        ExitCode::FAILURE
    } else {
        status
    }
}

/// A refused value of a selection option (`select::read_values`): a
/// usage error naming the option, the value and why.
fn refused_value(diag: &Diag, (option, why): (String, select::SelectorError)) -> ExitCode {
    diag.error(format!("{option} {why}"));
    ExitCode::from(2)
}

/// The selection options as given, for messages.
fn selection_text(args: &ExtractArgs) -> String {
    let mut parts: Vec<String> = Vec::new();
    parts.extend(args.target.iter().map(|t| format!("--target {t}")));
    if let Some(k) = &args.kind {
        parts.push(format!("--kind {k}"));
    }
    parts.extend(args.bundle.iter().map(|b| format!("--bundle {b}")));
    if args.hip_openmp_compatible {
        parts.push("--hip-openmp-compatible".to_owned());
    }
    if parts.is_empty() {
        "all entries".to_owned()
    } else {
        parts.join(" ")
    }
}

/// Checks that each selection value selects something in some input;
/// reports those that do not.
fn check_selection(
    roots: &[Node],
    args: &ExtractArgs,
    requests: &[select::Selector],
    diag: &Diag,
) -> bool {
    let mut ok = true;
    let entries = present::all_entries(roots);
    for (text, request) in args.target.iter().zip(requests) {
        if entries
            .iter()
            .any(|e| request.matches(e, args.hip_openmp_compatible))
        {
            continue;
        }
        ok = false;
        let (err, notes) = extract::unmatched_value("--target", text, roots, &args.files);
        diag.error(err);
        for n in notes {
            diag.note(n);
        }
    }
    if !args.bundle.is_empty() {
        let mut indices: Vec<usize> = Vec::new();
        for root in roots {
            root.visit(&mut Vec::new(), &mut |path| {
                if let Some(k) = path[path.len() - 1].index {
                    if !indices.contains(&k) {
                        indices.push(k);
                    }
                }
            });
        }
        indices.sort_unstable();
        for k in &args.bundle {
            if indices.contains(k) {
                continue;
            }
            ok = false;
            let have = match indices.as_slice() {
                [] => "no containers".to_owned(),
                [one] => format!("container #{one} only"),
                [first, .., last] => format!("containers #{first} to #{last}"),
            };
            diag.error(format!(
                "--bundle {k}: {} has {have} (the #k of `offload ls`)",
                present::file_list(&args.files)
            ));
        }
    }
    ok
}

fn extract_cmd(args: &ExtractArgs, diag: &Diag) -> ExitCode {
    let uris: Vec<Option<Result<extract::Uri, String>>> = args
        .files
        .iter()
        .map(|f| f.to_str().and_then(extract::Uri::parse))
        .collect();
    if uris.iter().any(Option::is_some) {
        return extract_uris(args, uris, diag);
    }
    let requests = match select::read_values("--target", &args.target, select::Selector::parse) {
        Ok(r) => r,
        Err(refused) => return refused_value(diag, refused),
    };
    if let Some(dir) = args.files.iter().find(|f| f.is_dir()) {
        diag.error(format!(
            "{}: a directory; extract reads files (`offload ls {}` lists those with device code)",
            dir.display(),
            dir.display()
        ));
        return ExitCode::FAILURE;
    }
    if let Some(out) = args.output.as_deref().filter(|o| o.as_os_str() != "-") {
        if let Some(input) = args.files.iter().find(|f| same_file(f, out)) {
            diag.error(format!(
                "-o {}: that is the input {}; extract writes entries to a new file",
                out.display(),
                input.display()
            ));
            return ExitCode::FAILURE;
        }
    }
    let (roots, damage, opened) = walk_all(&args.files, false, false, true, diag);
    // All or nothing: an input that cannot be read completely means no
    // output at all.
    if damage > 0 {
        let bad: Vec<std::path::PathBuf> = args
            .files
            .iter()
            .filter(|f| {
                roots
                    .iter()
                    .find(|r| r.file == model::Source::File((*f).clone()))
                    .is_none_or(|r| r.counts().2 > 0)
            })
            .cloned()
            .collect();
        diag.error(format!(
            "nothing extracted: {} could not be read completely (outputs are written for all inputs or none)",
            present::file_list(&bad)
        ));
        return ExitCode::FAILURE;
    }
    if !check_selection(&roots, args, &requests, diag) {
        return ExitCode::FAILURE;
    }
    if !roots.iter().any(has_code) {
        diag.error(format!(
            "no device code found in {}",
            present::file_list(&args.files)
        ));
        return ExitCode::FAILURE;
    }
    let jobs = extract::jobs(&roots, args, &requests);
    if jobs.is_empty() {
        diag.error(format!(
            "no entry of {} matches the selection ({}); `offload ls` lists them",
            present::file_list(&args.files),
            selection_text(args)
        ));
        return ExitCode::FAILURE;
    }
    if args.output.is_some() && jobs.len() > 1 {
        let names: Vec<String> = jobs
            .iter()
            .map(|j| match j.container {
                Some(k) => format!("{} #{k} {}", j.input.display(), j.entry.id),
                None => format!("{} {}", j.input.display(), j.entry.id),
            })
            .collect();
        let mut containers: Vec<usize> = jobs.iter().filter_map(|j| j.container).collect();
        containers.sort_unstable();
        containers.dedup();
        let how = if containers.len() > 1 {
            let list: Vec<String> = containers.iter().map(|k| format!("--bundle {k}")).collect();
            format!(
                "pick one translation unit with {} (the #k of `offload ls`), or narrow with --target or --kind",
                list.join(" or ")
            )
        } else {
            "narrow the selection with --target or --kind".to_owned()
        };
        diag.error(format!(
            "-o writes one entry, but {} are selected: {}; {how}",
            jobs.len(),
            names.join(", ")
        ));
        return ExitCode::FAILURE;
    }
    write_outputs(args, diag, |outputs| {
        extract::write(&jobs, args, opened, outputs)
    })
}

/// Makes the `-d` directory if missing, writes the outputs with `write`
/// (all or none), and prints their names (or, with `-o -`, the bytes);
/// on failure the directories it made go too. A `-d` directory made here
/// is staged whole and appears, with every output in it, at the commit
/// ([`offload_cli::fsio::Outputs::durable_in_new_dir`]); its missing
/// parents are made at once.
fn write_outputs(
    args: &ExtractArgs,
    diag: &Diag,
    write: impl FnOnce(
        offload_cli::fsio::Outputs,
    ) -> Result<extract::Written, offload_cli::error::Error>,
) -> ExitCode {
    let failed = |dir: &std::path::Path, e: &std::io::Error| {
        diag.error(format!(
            "{}: {}",
            dir.display(),
            offload_cli::diag::os_error_text(e)
        ));
        ExitCode::FAILURE
    };
    let (made, outputs) = match (&args.output, &args.output_dir) {
        // A new directory with a name of its own (not `..`; nothing there,
        // not even a dangling link): its parents now, itself at the commit.
        (None, Some(dir))
            if std::fs::symlink_metadata(dir).is_err() && dir.file_name().is_some() =>
        {
            let made = match dir.parent().map_or(Ok(Vec::new()), make_dirs) {
                Ok(made) => made,
                Err(e) => return failed(dir, &e),
            };
            match offload_cli::fsio::Outputs::durable_in_new_dir(dir) {
                Ok(outputs) => (made, outputs),
                Err(e) => {
                    remove_made(&made);
                    return failed(dir, &e);
                }
            }
        }
        (None, Some(dir)) => match make_dirs(dir) {
            Ok(made) => (made, offload_cli::fsio::Outputs::durable()),
            Err(e) => return failed(dir, &e),
        },
        _ => (Vec::new(), offload_cli::fsio::Outputs::durable()),
    };
    match write(outputs) {
        Ok(written) => {
            if let Some(bytes) = written.stdout {
                return write_stdout(&bytes, diag);
            }
            let mut text = String::new();
            for w in written.files {
                text.push_str(&w.display().to_string());
                text.push('\n');
            }
            write_stdout(text.as_bytes(), diag)
        }
        Err(e) => {
            // All or nothing: directories made for the outputs go too.
            remove_made(&made);
            diag.fail(&e);
            ExitCode::FAILURE
        }
    }
}

/// `offload extract URI...`: the URIs `ls` prints, each naming one entry's
/// bytes.
fn extract_uris(
    args: &ExtractArgs,
    uris: Vec<Option<Result<extract::Uri, String>>>,
    diag: &Diag,
) -> ExitCode {
    if !args.target.is_empty() || args.kind.is_some() || !args.bundle.is_empty() {
        diag.error("a URI names one entry: --target, --kind and --bundle do not apply to it");
        return ExitCode::from(2);
    }
    let mut read = Vec::new();
    for (u, f) in uris.into_iter().zip(&args.files) {
        match u {
            Some(Ok(u)) => read.push(u),
            Some(Err(e)) => {
                diag.error(e);
                return ExitCode::from(2);
            }
            None => {
                diag.error(format!(
                    "{}: give URIs or files, not both (extract the files on their own)",
                    f.display()
                ));
                return ExitCode::from(2);
            }
        }
    }
    if args.output.is_some() && read.len() > 1 {
        diag.error(format!(
            "-o writes one entry, but {} URIs are given",
            read.len()
        ));
        return ExitCode::FAILURE;
    }
    if let Some(out) = args.output.as_deref().filter(|o| o.as_os_str() != "-") {
        if let Some(u) = read.iter().find(|u| same_file(&u.path, out)) {
            diag.error(format!(
                "-o {}: that is the input {}; extract writes entries to a new file",
                out.display(),
                u.path.display()
            ));
            return ExitCode::FAILURE;
        }
    }
    write_outputs(args, diag, |outputs| {
        extract::write_uris(&read, args, outputs)
    })
}

/// Whether two paths name one file (the same device and inode).
fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// Creates `dir` and any missing parents; returns those it made, outermost
/// first, each removed if a signal ends the command before they are
/// dropped ([`offload_cli::fsio::MadeDir`]).
fn make_dirs(
    dir: &std::path::Path,
) -> std::io::Result<Vec<(std::path::PathBuf, offload_cli::fsio::MadeDir)>> {
    let mut missing = Vec::new();
    let mut at = Some(dir);
    while let Some(d) = at.filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
        missing.push(d.to_path_buf());
        at = d.parent();
    }
    missing.reverse();
    let mut made = Vec::new();
    for d in missing {
        match offload_cli::fsio::MadeDir::create(&d) {
            Ok(record) => made.push((d, record)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && d.is_dir() => {}
            Err(e) => {
                remove_made(&made);
                return Err(e);
            }
        }
    }
    Ok(made)
}

/// Removes the directories [`make_dirs`] made, innermost first (those
/// still empty).
fn remove_made(made: &[(std::path::PathBuf, offload_cli::fsio::MadeDir)]) {
    for (dir, _) in made.iter().rev() {
        let _ = std::fs::remove_dir(dir);
    }
}
