//! What every tool must do with its outputs, whatever happens to the
//! process or the file system: each tool crate's `tests/output_safety.rs`
//! describes its tool with a [`Tool`] and runs the three tests of
//! [`output_safety_tests!`](crate::output_safety_tests).
//!
//! - Signals mid-write (SIGINT, SIGTERM, SIGHUP, SIGKILL), with unnamed
//!   staging files and with named ones (`OFFLOAD_TOOLS_NAMED_STAGING`):
//!   the process ends by the signal (128 + N in a shell), the directory
//!   holds what it held before (SIGKILL of named staging excepted: nothing
//!   can remove a file then), the old target is untouched.
//! - Concurrent writers of one path: the result is one whole output.
//! - Output errors (a directory, a missing directory, a read-only file
//!   system, a full one, `/dev/full`, stdout on `/dev/full`, a failing
//!   second output): LLVM's message where LLVM's tool exits cleanly,
//!   exit 1, nothing left, old files untouched.

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// One tool under test.
pub struct Tool {
    /// Our binary.
    pub exe: &'static str,
    /// LLVM's tool, whose messages are the reference (tests that compare
    /// are skipped where it is not installed).
    pub llvm: &'static str,
    /// Writes the inputs into a directory: `variant` picks different
    /// contents (for concurrent writers), `size` about how many bytes.
    pub prepare: fn(tool: &Tool, dir: &Path, variant: u8, size: usize),
    /// The command line writing `outs` (one output, or as many as
    /// `outputs`).
    pub args: fn(tool: &Tool, outs: &[&str], variant: u8) -> Vec<String>,
    /// The options of a tool that writes one image: [`image_args`] puts
    /// them before the input.
    pub flags: &'static [&'static str],
    /// How many outputs one command line can write (1, or 2 for a test of
    /// several outputs).
    pub outputs: usize,
    /// Whether `-` is stdout.
    pub dash_is_stdout: bool,
}

impl Tool {
    /// A tool that makes one output from one input file `img`
    /// ([`image_file`], [`image_args`]) with `flags` before it; `-` is a
    /// file name.
    pub const fn one_image(exe: &'static str, llvm: &'static str) -> Tool {
        Tool {
            exe,
            llvm,
            prepare: image_file,
            args: image_args,
            flags: &[],
            outputs: 1,
            dash_is_stdout: false,
        }
    }

    /// A tool whose `args` can write two outputs and for which `-` is
    /// stdout.
    pub const fn two_outputs(
        exe: &'static str,
        llvm: &'static str,
        prepare: fn(&Tool, &Path, u8, usize),
        args: fn(&Tool, &[&str], u8) -> Vec<String>,
    ) -> Tool {
        Tool {
            prepare,
            args,
            outputs: 2,
            dash_is_stdout: true,
            ..Tool::one_image(exe, llvm)
        }
    }

    /// Runs the tool in `dir` to make an input of the test (a bundle to
    /// unbundle, a binary to extract); it must succeed.
    pub fn make_input(&self, dir: &Path, args: &[String]) {
        let o = self.run(dir, args);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// Writes the input `img` of [`Tool::one_image`].
pub fn image_file(_: &Tool, dir: &Path, variant: u8, size: usize) {
    fs::write(dir.join("img"), pattern(variant, size)).unwrap();
}

/// `FLAGS img -o OUT`, the command line of [`Tool::one_image`].
pub fn image_args(tool: &Tool, outs: &[&str], _variant: u8) -> Vec<String> {
    let mut v: Vec<String> = tool.flags.iter().map(|f| f.to_string()).collect();
    v.extend(["img".to_string(), "-o".to_string(), outs[0].to_string()]);
    v
}

/// Bytes of `size` that depend on `variant`, never all zero (zeros may be
/// stored as nothing in bitcode).
pub fn pattern(variant: u8, size: usize) -> Vec<u8> {
    let mut x = 0x9e37_79b9u32 ^ u32::from(variant).wrapping_mul(0x0100_0193);
    (0..size)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 24) as u8 | 1
        })
        .collect()
}

impl Tool {
    fn command(&self, dir: &Path, args: &[String], named: bool) -> Command {
        let mut c = Command::new(self.exe);
        c.current_dir(dir).args(args);
        if named {
            c.env("OFFLOAD_TOOLS_NAMED_STAGING", "1");
        } else {
            c.env_remove("OFFLOAD_TOOLS_NAMED_STAGING");
        }
        c
    }

    fn run(&self, dir: &Path, args: &[String]) -> Output {
        self.command(dir, args, false).output().unwrap()
    }

    /// Our stderr with our program name replaced by LLVM's, and without
    /// the deprecation note that our `clang-offload-packager` prints
    /// under that name only.
    fn our_text(&self, o: &Output) -> String {
        let text = String::from_utf8_lossy(&o.stderr).replace(self.exe, self.llvm);
        text.lines()
            .filter(|l| !l.starts_with("warning: 'clang-offload-packager' is deprecated"))
            .map(|l| format!("{l}\n"))
            .collect()
    }
}

fn listing(dir: &Path) -> BTreeSet<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// A staging file of `pid` in `dir`, seen through its descriptors: an
/// unnamed one (`/dir/#inode (deleted)`) or a hidden `.offload-tmp-PID-X`.
fn staging_fd(pid: u32, dir: &Path) -> bool {
    let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    let prefix = format!("{}/", dir.display());
    fds.flatten().any(|fd| {
        fs::read_link(fd.path()).is_ok_and(|l| {
            let l = l.to_string_lossy();
            l.strip_prefix(&prefix)
                .is_some_and(|rest| rest.starts_with('#') || rest.starts_with(".offload-tmp-"))
        })
    })
}

fn kill(sig: &str, pid: u32) {
    let ok = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{sig} {pid}");
}

/// Whether process `pid` is stopped (state `T` in `/proc/PID/stat`).
fn stopped(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| rest.starts_with('T')))
        .unwrap_or(false)
}

/// Waits until `child` has a staging file open in `dir`, then stops it
/// there; false if it got past writing first (it is then left to finish).
fn stop_mid_write(
    child: &mut Child,
    dir: &Path,
    unnamed_before: Option<&BTreeSet<String>>,
) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        if staging_fd(child.id(), dir) {
            kill("STOP", child.id());
            while !stopped(child.id()) {
                if child.try_wait().unwrap().is_some() {
                    return false;
                }
            }
            // Still writing once stopped: the file open, the old target,
            // and (unnamed staging) no name linked yet: a stop between the
            // commit's link and its rename is not mid-write.
            let unlinked = unnamed_before.is_none_or(|before| listing(dir) == *before);
            if staging_fd(child.id(), dir)
                && fs::read(dir.join("out")).is_ok_and(|b| b == b"old")
                && unlinked
            {
                return true;
            }
            kill("CONT", child.id());
            return false;
        }
        if child.try_wait().unwrap().is_some() {
            return false;
        }
    }
    panic!("no staging file after 10 s");
}

const SIGNALS: [(&str, i32); 4] = [("INT", 2), ("TERM", 15), ("HUP", 1), ("KILL", 9)];

/// Whether this process ignores signal `number` (`nohup` ignores SIGHUP),
/// as Linux reports it; children inherit that, and the tools keep an
/// ignored signal ignored.
fn ignored(number: i32) -> bool {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask >> (number - 1) & 1 == 1)
}

/// Each signal, sent while the tool is writing a large output, with
/// unnamed and with named staging files.
pub fn signals_leave_nothing(tool: &Tool) {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().canonicalize().unwrap();
    let mut size = 16 << 20;
    (tool.prepare)(tool, &dir, 0, size);
    fs::write(dir.join("out"), b"old").unwrap();
    let before = listing(&dir);
    let args = (tool.args)(tool, &["out"], 0);
    for named in [false, true] {
        for (name, number) in SIGNALS {
            let mut tries = 0;
            let mut child = loop {
                let mut child = tool
                    .command(&dir, &args, named)
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap();
                if stop_mid_write(&mut child, &dir, (!named).then_some(&before)) {
                    break child;
                }
                let o = child.wait_with_output().unwrap();
                assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
                // Finished before it could be caught: a larger input.
                tries += 1;
                assert!(tries < 4, "{}: too fast to interrupt", tool.exe);
                size *= 2;
                (tool.prepare)(tool, &dir, 0, size);
                fs::write(dir.join("out"), b"old").unwrap();
            };
            let during = listing(&dir);
            if named {
                assert_eq!(during.len(), before.len() + 1, "a named staging file");
            } else {
                assert_eq!(during, before, "unnamed staging: no new name");
            }
            kill(name, child.id());
            kill("CONT", child.id());
            let status = child.wait().unwrap();
            let what = format!("{} SIG{name} (named staging: {named})", tool.exe);
            if ignored(number) {
                // Inherited as ignored (under nohup): the tool goes on and
                // finishes, and nothing but the output is left.
                assert!(status.success(), "{what}: ignored, yet {status:?}");
                assert_eq!(listing(&dir), before, "{what}: left behind");
                fs::write(dir.join("out"), b"old").unwrap();
                continue;
            }
            assert_eq!(status.signal(), Some(number), "{what}: {status:?}");
            assert!(
                fs::read(dir.join("out")).unwrap() == b"old",
                "{what}: target changed"
            );
            let after = listing(&dir);
            if named && name == "KILL" {
                // Nothing can run on SIGKILL: the named file stays. Remove it.
                for f in after.difference(&before) {
                    assert!(f.starts_with(".offload-tmp-"), "{f}");
                    fs::remove_file(dir.join(f)).unwrap();
                }
            } else {
                assert_eq!(after, before, "{what}: left behind");
            }
        }
    }
}

/// Several processes writing the same path at once end with one whole
/// output, byte-equal to what one of them writes alone.
pub fn concurrent_writers_leave_one_output(tool: &Tool) {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let mut expected = Vec::new();
    for v in 0..4u8 {
        let sub = dir.join(format!("v{v}"));
        fs::create_dir(&sub).unwrap();
        (tool.prepare)(tool, &sub, v, 2 << 20);
        let o = tool.run(&sub, &(tool.args)(tool, &["../alone"], v));
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        expected.push(fs::read(dir.join("alone")).unwrap());
    }
    fs::remove_file(dir.join("alone")).unwrap();
    assert!(
        expected.windows(2).all(|w| w[0] != w[1]),
        "distinct outputs"
    );
    for named in [false, true] {
        for round in 0..3 {
            let children: Vec<Child> = (0..4u8)
                .map(|v| {
                    tool.command(
                        &dir.join(format!("v{v}")),
                        &(tool.args)(tool, &["../out"], v),
                        named,
                    )
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
                })
                .collect();
            for c in children {
                let o = c.wait_with_output().unwrap();
                assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            }
            let got = fs::read(dir.join("out")).unwrap();
            assert!(
                expected.contains(&got),
                "{} round {round} (named: {named}): a mixture of {} bytes",
                tool.exe,
                got.len()
            );
            let names = listing(dir);
            assert_eq!(names.len(), 5, "{names:?}");
        }
    }
}

/// A tmpfs mounted at `at` for the test's lifetime, when this process may
/// mount (root, outside a sandbox that forbids it).
struct Mount(PathBuf);

impl Mount {
    fn tmpfs(at: &Path, size: &str) -> Option<Mount> {
        fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Mount(at.to_path_buf()))
    }

    fn read_only(&self) -> bool {
        Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(&self.0)
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Checks a failing run: exit 1, LLVM's message where LLVM's tool exits
/// cleanly (else `fallback` must appear in ours), and the directory as it
/// was.
fn check_failure(
    tool: &Tool,
    dir: &Path,
    args: &[String],
    fallback: &str,
    stdout: Option<&Path>,
    what: &str,
) {
    let before = listing(dir);
    let old: Vec<Option<Vec<u8>>> = before.iter().map(|f| fs::read(dir.join(f)).ok()).collect();
    let with_stdout = |mut c: Command| -> Output {
        if let Some(p) = stdout {
            c.stdout(fs::OpenOptions::new().write(true).open(p).unwrap());
        }
        c.output().unwrap()
    };
    let ours = with_stdout(tool.command(dir, args, false));
    let ours_text = tool.our_text(&ours);
    assert_eq!(ours.status.code(), Some(1), "{what}: {ours_text}");
    assert_eq!(listing(dir), before, "{what}: left behind");
    let now: Vec<Option<Vec<u8>>> = before.iter().map(|f| fs::read(dir.join(f)).ok()).collect();
    assert!(old == now, "{what}: an old file changed");
    let mut c = Command::new(tool.llvm);
    c.current_dir(dir).args(args);
    match Command::new(tool.llvm).arg("--version").output() {
        Ok(_) => {
            let theirs = with_stdout(c);
            if theirs.status.code() == Some(1) {
                let theirs_text = String::from_utf8_lossy(&theirs.stderr);
                assert_eq!(ours_text, theirs_text, "{what}: LLVM's message");
            } else {
                assert!(ours_text.contains(fallback), "{what}: {ours_text}");
            }
        }
        Err(_) => {
            eprintln!("{what}: {} not installed, message not compared", tool.llvm);
            assert!(ours_text.contains(fallback), "{what}: {ours_text}");
        }
    }
}

/// Output errors of every kind for one tool.
pub fn output_errors(tool: &Tool) {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    (tool.prepare)(tool, dir, 0, 1 << 20);
    fs::create_dir(dir.join("adir")).unwrap();
    fs::write(dir.join("old"), b"old").unwrap();
    let args = |outs: &[&str]| (tool.args)(tool, outs, 0);

    check_failure(
        tool,
        dir,
        &args(&["adir"]),
        "Is a directory",
        None,
        "a directory",
    );
    check_failure(
        tool,
        dir,
        &args(&["nodir/out"]),
        "No such file or directory",
        None,
        "a missing directory",
    );
    check_failure(
        tool,
        dir,
        &args(&["old/out"]),
        "Not a directory",
        None,
        "through a file",
    );
    check_failure(
        tool,
        dir,
        &args(&["/dev/full"]),
        "No space left on device",
        None,
        "/dev/full",
    );
    if tool.dash_is_stdout {
        check_failure(
            tool,
            dir,
            &args(&["-"]),
            "No space left on device",
            Some(Path::new("/dev/full")),
            "stdout on /dev/full",
        );
    }
    if tool.outputs > 1 {
        check_failure(
            tool,
            dir,
            &args(&["old", "nodir/out"]),
            "No such file or directory",
            None,
            "a second output in a missing directory",
        );
        check_failure(
            tool,
            dir,
            &args(&["old", "adir"]),
            "Is a directory",
            None,
            "a second output that is a directory",
        );
    }

    // A full file system: a tiny tmpfs holding an old target.
    match Mount::tmpfs(&dir.join("fullfs"), "256k") {
        Some(_m) => {
            fs::write(dir.join("fullfs/old"), b"old").unwrap();
            check_failure(
                tool,
                dir,
                &args(&["fullfs/old"]),
                "No space left on device",
                None,
                "a full file system",
            );
            if tool.outputs > 1 {
                check_failure(
                    tool,
                    dir,
                    &args(&["fullfs/old", "old"]),
                    "No space left on device",
                    None,
                    "one of several outputs on a full file system",
                );
            }
        }
        None => {
            eprintln!("full file system: skipped (cannot mount a tmpfs here); /dev/full stands in")
        }
    }
    // A read-only file system.
    match Mount::tmpfs(&dir.join("rofs"), "1m") {
        Some(m) => {
            fs::write(dir.join("rofs/old"), b"old").unwrap();
            if m.read_only() {
                check_failure(
                    tool,
                    dir,
                    &args(&["rofs/old"]),
                    "Read-only file system",
                    None,
                    "a read-only file system",
                );
            } else {
                eprintln!("read-only directory: skipped (cannot remount read-only)");
            }
        }
        None => eprintln!(
            "read-only directory: skipped (cannot mount here, and as root permissions do not stop writes)"
        ),
    }
}

/// The three tests each tool crate runs, for the [`Tool`] that describes
/// its tool.
#[macro_export]
macro_rules! output_safety_tests {
    ($tool:expr) => {
        #[test]
        fn signals_leave_nothing() {
            $crate::output_safety::signals_leave_nothing(&$tool);
        }

        #[test]
        fn concurrent_writers_leave_one_output() {
            $crate::output_safety::concurrent_writers_leave_one_output(&$tool);
        }

        #[test]
        fn output_errors() {
            $crate::output_safety::output_errors(&$tool);
        }
    };
}
