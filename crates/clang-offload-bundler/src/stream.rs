//! Listing and unbundling a compressed bundle while it is decompressed.
//!
//! The buffered path (`unbundle::decompress`) holds the whole decompressed
//! bundle, as LLVM does: memory equal to the bundle, on inputs that reach
//! gigabytes. A binary bundle's header comes first, though, so once the
//! first few hundred bytes are out of the decoder we know which byte ranges
//! go to which output, and every later piece can be written and dropped.
//! Then only zstd's window is held.
//!
//! Anything unusual sends the job back to the buffered path, which starts
//! again from the input and reports exactly as it always does: a text
//! bundle, no bundle magic, a header it cannot plan on, an input that is
//! not a single zstd CCOB, a decoding error, a short or long frame, a write
//! that fails, a `-` output, or the one case that needs the bundle itself
//! (no entry matched and the host output receives the whole input). Nothing
//! is printed and no output committed before the stream has ended; after
//! that the order is the buffered path's: the `-verbose` report, the hash
//! check, then the outputs or listing.

use std::io::Write;

use offload_cli::fsio::{self, Input, Outputs};
use offload_format::ccob::{self, Detection};
use offload_format::{bundle, text_bundle};

use crate::handler::{self, Handler};
use crate::job::{Fail, Job};
use crate::unbundle::{claim, finish_unbundle, report_and_verify, work_list};

/// A header taking more than this is left to the buffered path.
const PREFIX_MAX: usize = 16 << 20;

/// Unbundles `raw` as it is decompressed; `None` means the buffered path
/// must do the job.
pub(crate) fn unbundle(job: &Job, raw: &Input) -> Option<Result<(), Fail>> {
    if job.outputs.iter().any(|o| o == "-") {
        return None;
    }
    let (mut worklist, requested) = work_list(job).ok()?;
    let mut router = Router::new(job, raw)?;
    let streamed = router.run(raw, &mut |entries| {
        let mut wanted = Vec::new();
        for e in entries {
            if worklist.is_empty() {
                break;
            }
            // The buffered path's choice; its errors are its to report.
            let Some(k) = claim(job, &mut worklist, &requested, e.id).ok()? else {
                continue;
            };
            wanted.push((k, e.offset, e.end()));
        }
        // With nothing found the host output gets the whole bundle.
        let nothing_found = worklist.len() == job.targets.len();
        if nothing_found && job.targets.iter().any(|t| t.kind == "host") {
            return None;
        }
        Some(wanted)
    })?;
    let outs = std::mem::take(&mut router.outs);
    Some(finish(job, &streamed).and_then(|()| finish_unbundle(job, &[], worklist, outs, None)))
}

/// Lists the IDs of `raw` as it is decompressed; `None` means the buffered
/// path must do the job.
pub(crate) fn list(job: &Job, raw: &Input) -> Option<Result<Vec<u8>, Fail>> {
    let mut router = Router::new(job, raw)?;
    let mut listing = Vec::new();
    let streamed = router.run(raw, &mut |entries| {
        for e in entries {
            listing.extend_from_slice(e.id);
            listing.push(b'\n');
        }
        Some(Vec::new())
    })?;
    Some(finish(job, &streamed).map(|()| listing))
}

/// The verbose report and the hash check, as the buffered path does them.
fn finish(job: &Job, streamed: &ccob::Streamed) -> Result<(), Fail> {
    report_and_verify(
        job.verbose,
        &job.inputs[0],
        &streamed.report(),
        streamed.verify(),
    )
}

/// What a plan asks for: entry data `start..end` to the output of target
/// `k`, in the order the outputs are created.
type Wanted = Vec<(usize, u64, u64)>;

/// Bytes `start..end` of the bundle go to output `file`.
struct Route {
    start: u64,
    end: u64,
    file: usize,
}

/// Takes the decompressed bundle piece by piece: collects the header,
/// plans, then hands each route its bytes as they pass.
struct Router<'j> {
    job: &'j Job,
    /// The bundle's size, from the CCOB header.
    total: u64,
    /// The bundle's first bytes, until a plan is made.
    prefix: Option<Vec<u8>>,
    routes: Vec<Route>,
    /// The outputs, created when the plan is made.
    outs: Outputs,
    /// Bytes of the bundle seen so far (once planned).
    pos: u64,
}

impl<'j> Router<'j> {
    /// A router for `raw` if it is one zstd CCOB and nothing else.
    fn new(job: &'j Job, raw: &[u8]) -> Option<Router<'j>> {
        if ccob::detect(raw) != Detection::Compressed
            || text_bundle::comment_for_type(&job.file_type).is_some()
        {
            return None;
        }
        let header = ccob::Header::parse(raw).ok()?;
        if header.method != ccob::Method::Zstd || header.ccob_len(raw.len()).ok()? != raw.len() {
            return None;
        }
        Some(Router {
            job,
            total: header.uncompressed_size,
            prefix: Some(Vec::new()),
            routes: Vec::new(),
            outs: Outputs::new(),
            pos: 0,
        })
    }

    /// Decompresses `raw`, planning with `plan` once the header's entries
    /// are in, in LLVM's visiting order (`None` from it gives up).
    fn run(
        &mut self,
        raw: &Input,
        plan: &mut dyn FnMut(Vec<bundle::EntryRange<'_>>) -> Option<Wanted>,
    ) -> Option<ccob::Streamed> {
        let streamed = ccob::decompress_streaming(raw, Some(&mut fsio::read_into), &mut |bytes| {
            self.take(bytes, plan)
        })?;
        // A bundle too short to plan on ends with the prefix still held.
        (self.prefix.is_none()).then_some(streamed)
    }

    fn take(
        &mut self,
        bytes: &[u8],
        plan: &mut dyn FnMut(Vec<bundle::EntryRange<'_>>) -> Option<Wanted>,
    ) -> bool {
        let Some(prefix) = &mut self.prefix else {
            return self.route(bytes);
        };
        prefix.extend_from_slice(bytes);
        let entries = match self.entries() {
            Decision::Wait => return true,
            Decision::GiveUp => return false,
            Decision::Plan(entries) => entries,
        };
        let Some(wanted) = plan(entries) else {
            return false;
        };
        for (k, start, end) in wanted {
            let Ok(file) = self.outs.create(&self.job.outputs[k], true) else {
                return false;
            };
            self.routes.push(Route { start, end, file });
        }
        let prefix = self.prefix.take().unwrap_or_default();
        self.route(&prefix)
    }

    /// The header's entries once the prefix holds them all.
    fn entries(&self) -> Decision<'_> {
        let Some(prefix) = &self.prefix else {
            return Decision::GiveUp;
        };
        let more_coming = (prefix.len() as u64) < self.total;
        if prefix.len() < bundle::MAGIC.len() && more_coming {
            return Decision::Wait;
        }
        // Only a binary bundle can be planned on; the handler choice is the
        // buffered path's (`-type=o` looks at the data).
        let binary = matches!(
            handler::select(&self.job.file_type, prefix),
            Ok(Handler::Binary)
        );
        if !bundle::has_magic(prefix) || !binary {
            return Decision::GiveUp;
        }
        match bundle::parse_prefix(prefix, self.total) {
            Ok(Some(entries)) => Decision::Plan(entries),
            Ok(None) if prefix.len() < PREFIX_MAX => Decision::Wait,
            _ => Decision::GiveUp,
        }
    }

    /// Writes the part of `bytes` (the next piece of the bundle) that each
    /// route covers.
    fn route(&mut self, bytes: &[u8]) -> bool {
        let start = self.pos;
        let end = start.saturating_add(bytes.len() as u64);
        for r in &self.routes {
            let from = r.start.max(start);
            let to = r.end.min(end);
            if from < to {
                // Both lie within `start..end`, so they index `bytes`.
                let piece = &bytes[(from - start) as usize..(to - start) as usize];
                if self.outs.file(r.file).write_all(piece).is_err() {
                    return false;
                }
            }
        }
        self.pos = end;
        true
    }
}

enum Decision<'a> {
    Wait,
    GiveUp,
    Plan(Vec<bundle::EntryRange<'a>>),
}

#[cfg(test)]
mod tests {
    use super::*;
    use offload_cli::diag::Diag;
    use offload_cli::fsio::read_input;
    use std::ffi::OsString;
    use std::path::Path;

    const TARGETS: &str = "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906";

    fn job(dir: &Path, extra: &[&str]) -> Job {
        let mut argv: Vec<OsString> = vec!["clang-offload-bundler".into()];
        argv.extend(extra.iter().map(OsString::from));
        argv.push(format!("-input={}", dir.join("in").display()).into());
        let parsed = offload_cli::cl::parse(&offload_cli::cl::tools::BUNDLER, argv).unwrap();
        let env = crate::job::Env {
            format_version: 3,
            ..crate::job::Env::default()
        };
        crate::job::validate(
            &crate::args::Args::new(&parsed),
            &env,
            &Diag::new(&parsed.argv0),
        )
        .map_err(|e| String::from_utf8_lossy(&e.message).into_owned())
        .unwrap()
    }

    fn outputs(dir: &Path) -> [String; 2] {
        ["host", "dev"].map(|n| format!("-output={}", dir.join(n).display()))
    }

    /// A two-entry bundle (host "h", device 300 KB) and its CCOB.
    fn bundle() -> (Vec<u8>, Vec<u8>) {
        let dev: Vec<u8> = (0..300_000u32).map(|i| (i * 7 / 13) as u8).collect();
        let entries: [(&[u8], &[u8]); 2] = [
            (b"host-x86_64-unknown-linux-gnu-", b"h"),
            (b"hip-amdgcn-amd-amdhsa--gfx906", &dev),
        ];
        let mut plain = Vec::new();
        bundle::write(&mut plain, &entries, 1).unwrap();
        let c = ccob::compress(&plain, &ccob::CompressOptions::default()).unwrap();
        (plain, c.bytes)
    }

    fn unbundle_with(input: &[u8], extra: &[&str]) -> (Option<bool>, tempfile::TempDir) {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("in"), input).unwrap();
        let outs = outputs(d.path());
        let mut args = vec!["-type=bc", "-unbundle", TARGETS, &outs[0], &outs[1]];
        args.extend(extra);
        let j = job(d.path(), &args);
        let raw = read_input(j.inputs[0].as_os_str()).unwrap();
        let r = unbundle(&j, &raw).map(|r| r.is_ok());
        (r, d)
    }

    /// The ordinary case streams, and its outputs hold the entries.
    #[test]
    fn a_zstd_binary_bundle_streams() {
        let (plain, c) = bundle();
        let (r, d) = unbundle_with(&c, &[]);
        assert_eq!(r, Some(true));
        assert_eq!(std::fs::read(d.path().join("host")).unwrap(), b"h");
        let dev = std::fs::read(d.path().join("dev")).unwrap();
        assert_eq!(dev.len(), 300_000);
        assert!(plain.ends_with(&dev));
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("in"), &c).unwrap();
        let j = job(d.path(), &["-type=bc", "-list"]);
        let raw = read_input(j.inputs[0].as_os_str()).unwrap();
        let listing = list(&j, &raw).expect("streamed").unwrap();
        assert_eq!(
            listing,
            b"hip-amdgcn-amd-amdhsa--gfx906\nhost-x86_64-unknown-linux-gnu-\n"
        );
    }

    /// What the stream does not handle is left to the buffered path, with
    /// no output made.
    #[test]
    fn other_inputs_are_left_to_the_buffered_path() {
        let (plain, c) = bundle();
        let zlib = ccob::compress(
            &plain,
            &ccob::CompressOptions {
                method: ccob::Method::Zlib,
                ..ccob::CompressOptions::default()
            },
        )
        .unwrap()
        .bytes;
        let twice = [&c[..], &c].concat();
        let unplanned = ccob::compress(b"plain text, no bundle", &Default::default())
            .unwrap()
            .bytes;
        for (name, input) in [
            ("uncompressed", &plain),
            ("zlib", &zlib),
            ("two CCOBs", &twice),
            ("no bundle magic", &unplanned),
        ] {
            let (r, d) = unbundle_with(input, &[]);
            assert_eq!(r, None, "{name}");
            assert!(!d.path().join("dev").exists(), "{name}");
        }
        // A text type, and stdout as an output.
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("in"), &c).unwrap();
        let outs = outputs(d.path());
        for args in [
            ["-type=ll", "-unbundle", TARGETS, &outs[0], &outs[1]],
            ["-type=bc", "-unbundle", TARGETS, &outs[0], "-output=-"],
        ] {
            let j = job(d.path(), &args);
            let raw = read_input(j.inputs[0].as_os_str()).unwrap();
            assert!(unbundle(&j, &raw).is_none(), "{args:?}");
        }
    }
}
