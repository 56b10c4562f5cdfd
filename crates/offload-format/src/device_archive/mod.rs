//! Heterogeneous device archives: cutting a static library of bundled
//! objects into one device archive per offload target, as
//! `clang-offload-bundler -unbundle -type=a` (LLVM 22) does.
//!
//! A HIP or OpenMP static device library is an ordinary `ar` archive whose
//! members are offload bundles: host objects carrying device code objects
//! in `__CLANG_OFFLOAD_BUNDLE__<id>` sections, binary bundles, or either of
//! them compressed (`CCOB`). At link time clang asks for one archive per
//! target; every code object compatible with the target (by kind, triple
//! and AMDGPU target ID, see
//! [`EntryId::is_compatible_code_object`]) goes into it, named
//! `<stem>-<entry id><stem><ext>` ([`naming`]).
//!
//! The work happens in two passes over the input (a byte slice, which the
//! command-line tool maps from the file), so that memory does not grow
//! with the members' data:
//!
//! 1. [`Unbundled::read`] walks the members and finds the compatible
//!    entries; with [`Unbundled::finish`] it builds for each output archive
//!    what precedes its members: the symbol table and the long-name table
//!    ([`ArchiveLayout`]). The two also run `-check-input-archive` and
//!    decide every error and warning LLVM 22 would report, in LLVM 22's
//!    order, before anything is written.
//! 2. [`Unbundled::write`] walks the members again and streams the output
//!    archives (GNU format with LLVM's symbol table, byte-identical to 22),
//!    each code object as one slice of the input.
//!
//! What is kept between the passes is the archives' heads (about the
//! length of each output member's name, plus 4 bytes and the name of each
//! archive symbol: LLVM's layout puts both tables before the first member,
//! so they must be complete before a member is written), one bit per
//! input member, and one entry per distinct entry ID.
//!
//! ```no_run
//! use offload_format::device_archive::{Input, Options, Target, Unbundled};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let bytes = std::fs::read("libdev.a")?; // or a mapping of the file
//! let mut input = Input::from_bytes(bytes, "libdev.a".as_ref())?;
//! let targets = [Target::new("hip-amdgcn-amd-amdhsa--gfx90a:xnack+")?];
//! let options = Options { allow_missing_bundles: true, ..Options::default() };
//! let mut notes = |note| println!("{note:?}");
//! let plan = Unbundled::read(&mut input, &targets, &options, "libdev.a", &mut notes)?
//!     .finish(&mut notes)?;
//! let mut out = Vec::new();
//! plan.write(&mut input, &mut [&mut out as &mut dyn std::io::Write])?;
//! # Ok(()) }
//! ```
//!
//! Where LLVM 22 writes some archives and then fails, or succeeds after
//! silently skipping part of a damaged archive, the caller gets an error
//! before any output exists; see `docs/compat.md#heterogeneous-device-archives-clang-offload-bundler--unbundle--typea`.

mod entries;
mod gather;
pub mod naming;
mod source;

#[cfg(test)]
mod tests;

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::io::{self, Write};
use std::path::PathBuf;

use crate::archive::{
    member_symbols_and_module_asm, ArchiveError, ArchiveHead, ArchiveLayout, HeaderCursor,
    MemberSymbols, MemberWarning, WriteOptions, HEADER_SIZE,
};
use crate::ccob::{self, CcobError, Detection};
use crate::entry_id::{self, EntryId, PieceCountError};
use crate::object_bundle;

pub(crate) use entries::ids_for_check;
pub use entries::{entries, EntriesError, Entry, EntryData};
use gather::Gather;
use source::MemberBytes;
pub use source::{cut_member_error, first_cut_member_error, Input};

/// A requested target: a standardised entry ID such as
/// `hip-amdgcn-amd-amdhsa--gfx90a:xnack+`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    id: EntryId,
}

impl Target {
    /// A target from its standardised spelling (what the bundler makes of a
    /// `-targets` value, see [`EntryId::standardised`]). Only the piece
    /// count is checked.
    pub fn new(standardised: &str) -> Result<Target, PieceCountError> {
        Ok(Target {
            id: EntryId::parse(standardised)?,
        })
    }

    /// The standardised ID.
    pub fn as_str(&self) -> &str {
        self.id.as_str()
    }

    /// The parsed ID.
    pub fn entry_id(&self) -> &EntryId {
        &self.id
    }
}

/// The command-line switches that change the outcome.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// `-hip-openmp-compatible`: HIP code objects serve OpenMP targets and
    /// the reverse.
    pub hip_openmp_compatible: bool,
    /// `-allow-missing-bundles`: a target without code objects gets an
    /// empty archive instead of an error.
    pub allow_missing_bundles: bool,
    /// `-check-input-archive`: fail if a member holds entries whose target
    /// IDs conflict (LLVM 22's asymmetric rule, on whole entry IDs).
    pub check_input_archive: bool,
    /// Host objects are not extracted: they come out empty, and
    /// [`Note::HostObjectSkipped`] marks each (LLVM 22 does this when it
    /// only lists the `llvm-objcopy` commands it would run).
    pub skip_host_objects: bool,
    /// Archive writing options (the 64-bit symbol table threshold).
    pub write: WriteOptions,
}

/// Something met while unbundling that the caller may tell the user
/// about: the front-end decides what to print (LLVM 22 prints the
/// decompression reports under `-verbose`, every warning, and a command
/// line for each skipped host object).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Note {
    /// A member that is not compressed (LLVM's `Uncompressed bundle.`).
    Uncompressed,
    /// A member that was decompressed: the figures of
    /// [`ccob::report::format_decompress_report`].
    Decompressed(ccob::DecompressReport),
    /// A bitcode code object whose symbols cannot be read; printed as
    /// `warning: '<member>': <reason>` (no program name, as in LLVM).
    Warning(MemberWarning),
    /// A host object left empty ([`Options::skip_host_objects`]), where
    /// LLVM 22 would run `llvm-objcopy` to extract it.
    HostObjectSkipped,
}

/// Why unbundling failed. `Display` gives the message that follows
/// `<tool>: error: ` (LLVM 22's text wherever 22 reports the problem).
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The input file cannot be read.
    Input {
        /// The path.
        path: PathBuf,
        /// The OS error.
        error: io::Error,
    },
    /// The input is not an archive, or is damaged, where LLVM 22 reports
    /// it (LLVM's texts, which name no file).
    Archive(ArchiveError),
    /// Damage found walking the members, which LLVM 22 does not report
    /// (unless asked to check the archive first): it stops reading there
    /// silently, or reads past its buffer. `Display` names the archive.
    Damaged {
        /// Archive as given.
        archive: String,
        /// What is wrong (LLVM's words for the damage).
        error: ArchiveError,
    },
    /// A compressed member cannot be decompressed.
    Decompress {
        /// Member name.
        member: Vec<u8>,
        /// Archive as given.
        archive: String,
        /// Why; messages of our own checks ([`CcobError::is_own_check`])
        /// name the member, LLVM 22's do not.
        error: CcobError,
    },
    /// A member's entries cannot be listed.
    Entries {
        /// Member name.
        member: Vec<u8>,
        /// Archive as given.
        archive: String,
        /// What is wrong.
        error: Box<EntriesError>,
    },
    /// An entry ID without 5 or 6 `-`-separated pieces.
    InvalidBundleId,
    /// A wanted entry's section contents cannot be read (LLVM's text).
    EntryContents(String),
    /// A host object cannot be extracted from a member.
    HostObject {
        /// Member name.
        member: Vec<u8>,
        /// Archive as given.
        archive: String,
        /// Why.
        error: Box<object_bundle::Error>,
    },
    /// `-check-input-archive` found a member with conflicting target IDs.
    Conflict {
        /// The entry ID seen first (in byte order).
        first: String,
        /// The entry ID that conflicts with it.
        second: String,
        /// The member name.
        member: Vec<u8>,
        /// Archive as given.
        archive: String,
    },
    /// A target without code objects (and no `-allow-missing-bundles`).
    NoCompatible {
        /// The standardised target.
        target: String,
        /// Archive as given.
        archive: String,
    },
    /// An output member is a broken object file, so its archive symbols
    /// cannot be listed (LLVM's archive writer fails the same way).
    MemberSymbols {
        /// Output member name.
        name: Vec<u8>,
        /// Why (`Display`: LLVM 22's text).
        reason: crate::objfile::Error,
    },
    /// An output member is bitcode with module-level inline assembly, on
    /// which LLVM 22's bundler crashes.
    ModuleAsm {
        /// Output member name.
        name: Vec<u8>,
    },
    /// A member is larger than an archive member header can record.
    TooLarge {
        /// Output member name.
        name: Vec<u8>,
    },
    /// The input changed between the two passes.
    Changed {
        /// Archive as given.
        archive: String,
    },
    /// Writing an output failed.
    Output(io::Error),
}

fn lossy(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

impl Error {
    /// The message as bytes. Member names (and the archive error's quoted
    /// header bytes) are given as stored, as LLVM prints them; `Display`
    /// is this text with bytes that are not UTF-8 as U+FFFD.
    pub fn to_bytes(&self) -> Vec<u8> {
        // `'<archive>(<member>)': <what>`
        let in_archive = |archive: &str, member: &[u8], what: &str| {
            [
                b"'",
                archive.as_bytes(),
                b"(",
                member,
                b")': ",
                what.as_bytes(),
            ]
            .concat()
        };
        match self {
            Error::Input { path, error } => format!(
                "'{}': {}",
                path.display(),
                crate::llvm::os_error_text(error)
            )
            .into_bytes(),
            Error::Archive(e) => e.to_bytes(),
            Error::Damaged { archive, error } => {
                [b"'", archive.as_bytes(), b"': ", &error.to_bytes()].concat()
            }
            Error::Decompress {
                member,
                archive,
                error,
            } if error.is_own_check() => in_archive(
                archive,
                member,
                &format!("Failed to decompress code object: {error}"),
            ),
            Error::Decompress { error, .. } => {
                format!("Failed to decompress code object: {error}").into_bytes()
            }
            Error::Entries {
                member,
                archive,
                error,
            } => match error.as_ref() {
                // LLVM's own wording, which names no file.
                EntriesError::Object(
                    e @ (object_bundle::Error::Elf(_) | object_bundle::Error::Coff(_)),
                ) => e.to_string().into_bytes(),
                other => in_archive(archive, member, &other.to_string()),
            },
            Error::InvalidBundleId => entry_id::INVALID_ID_IN_CODE_OBJECT.as_bytes().to_vec(),
            Error::EntryContents(text) => text.as_bytes().to_vec(),
            Error::HostObject {
                member,
                archive,
                error,
            } => in_archive(
                archive,
                member,
                &format!("cannot extract the host object: {error}"),
            ),
            Error::Conflict {
                first,
                second,
                member,
                archive,
            } => [
                format!("conflicting TargetIDs [{first}, {second}] found in ").as_bytes(),
                member,
                format!(" of {archive}").as_bytes(),
            ]
            .concat(),
            Error::NoCompatible { target, archive } => format!(
                "no compatible code object found for the target '{target}' in heterogeneous archive library: {archive}"
            )
            .into_bytes(),
            Error::MemberSymbols { name, reason } => {
                [b"'", name.as_slice(), b"': ", reason.to_string().as_bytes()].concat()
            }
            Error::ModuleAsm { name } => [
                b"'",
                name.as_slice(),
                b"': bitcode with module-level inline assembly cannot be put in a device \
                  archive (LLVM 22's bundler crashes on it)",
            ]
            .concat(),
            Error::TooLarge { name } => {
                [b"File ", name.as_slice(), b" exceeds size limit"].concat()
            }
            Error::Changed { archive } => {
                format!("'{archive}': the archive changed while it was being read").into_bytes()
            }
            Error::Output(e) => crate::llvm::os_error_text(e).into_bytes(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.to_bytes()))
    }
}

impl std::error::Error for Error {}

/// How the entries with one ID are handled.
#[derive(Debug)]
struct Selection {
    /// The targets whose archives take them.
    targets: Vec<usize>,
    /// The target ID of the entry ID, for output member names.
    target_id: String,
}

/// The entry IDs seen so far and what to do with each. Members of a
/// library repeat the same few IDs in the same order, so the slot after
/// the last one found is tried before the hash table.
#[derive(Debug, Default)]
struct Selections {
    ids: Vec<(Vec<u8>, Selection)>,
    index: HashMap<Vec<u8>, usize>,
    next: std::cell::Cell<usize>,
}

impl Selections {
    fn find(&self, id: &[u8]) -> Option<&Selection> {
        let hint = self.next.get();
        let at = match self.ids.get(hint) {
            Some((known, _)) if known == id => hint,
            _ => *self.index.get(id)?,
        };
        self.next.set(at + 1);
        Some(&self.ids[at].1)
    }

    fn add(&mut self, id: &[u8], selection: Selection) -> &Selection {
        self.index.insert(id.to_vec(), self.ids.len());
        self.ids.push((id.to_vec(), selection));
        self.next.set(self.ids.len());
        &self.ids[self.ids.len() - 1].1
    }
}

/// One output archive while the first pass runs, then its head.
#[derive(Debug)]
struct TargetArchive {
    /// Code objects planned for it.
    count: u64,
    /// `None` once finished.
    layout: Option<ArchiveLayout>,
    head: Option<ArchiveHead>,
    /// Bitcode members whose symbols cannot be read, up to the first error.
    warnings: Vec<MemberWarning>,
    /// The first member that makes writing this archive fail.
    error: Option<Error>,
    /// The first member too large for a member header.
    too_large: Option<Vec<u8>>,
}

impl TargetArchive {
    fn new(options: &WriteOptions) -> TargetArchive {
        TargetArchive {
            count: 0,
            layout: Some(ArchiveLayout::new(options)),
            head: None,
            warnings: Vec::new(),
            error: None,
            too_large: None,
        }
    }

    /// Plans the next member, with the checks LLVM 22 makes when it
    /// writes the archive, in its order: for each member in turn, a broken
    /// object or module-level assembly is an error and unreadable bitcode
    /// a warning; then a member too large is an error.
    fn add(
        &mut self,
        name: &[u8],
        size: u64,
        symbols: &Result<MemberSymbols, crate::objfile::Error>,
        module_asm: bool,
    ) {
        self.count += 1;
        if self.error.is_some() {
            return;
        }
        let symbols = match symbols {
            Ok(s) => s,
            Err(reason) => {
                self.error = Some(Error::MemberSymbols {
                    name: name.to_vec(),
                    reason: reason.clone(),
                });
                return;
            }
        };
        if module_asm {
            self.error = Some(Error::ModuleAsm {
                name: name.to_vec(),
            });
            return;
        }
        if let MemberSymbols::Unreadable(message) = symbols {
            self.warnings.push(MemberWarning {
                member: name.to_vec(),
                message: message.to_string(),
            });
        }
        if self.too_large.is_some() {
            return;
        }
        if let Some(layout) = &mut self.layout {
            if layout.push(name, size, symbols).is_err() {
                self.too_large = Some(name.to_vec());
            }
        }
    }
}

/// The outcome of the first pass: what every output archive will hold.
/// It keeps, per output archive, what precedes the members in it (symbol
/// table, long-name table), and per input member one bit (whether
/// anything is taken from it); everything else is found again while
/// writing.
#[derive(Debug)]
pub struct Unbundled {
    selections: Selections,
    /// Bit `i`: input member `i` has a code object to copy.
    wanted: Vec<u64>,
    /// Number of input members.
    members: usize,
    archives: Vec<TargetArchive>,
    /// How many targets are finished.
    finished: usize,
    /// The standardised targets.
    targets: Vec<String>,
    options: Options,
    archive_name: String,
}

/// The second pass's member headers, and what was written to each output
/// (members, bytes) to check against the plan at the end.
struct Headers<'p> {
    heads: Vec<&'p ArchiveHead>,
    cursors: Vec<HeaderCursor>,
    written: Vec<(u64, u64)>,
}

/// A code object to write: a slice of the input member, or bytes made
/// from it (a host object).
#[derive(Clone, Copy)]
enum Piece<'d, 'm> {
    Input(&'d [u8]),
    Made(&'m [u8]),
}

impl Piece<'_, '_> {
    fn bytes(&self) -> &[u8] {
        match *self {
            Piece::Input(b) | Piece::Made(b) => b,
        }
    }
}

/// Where the second pass hands each code object: the target, its member
/// header, its bytes.
type Emit<'e, 'd> =
    dyn for<'m> FnMut(usize, [u8; HEADER_SIZE], Piece<'d, 'm>) -> Result<(), Error> + 'e;

fn is_wanted(bits: &[u64], index: usize) -> bool {
    bits.get(index / 64)
        .is_some_and(|w| w >> (index % 64) & 1 == 1)
}

fn set_wanted(bits: &mut Vec<u64>, index: usize) {
    if bits.len() <= index / 64 {
        bits.resize(index / 64 + 1, 0);
    }
    bits[index / 64] |= 1 << (index % 64);
}

/// The member bytes as the handlers see them: decompressed if compressed.
enum Member<'a> {
    Plain(&'a [u8]),
    Decompressed(Vec<u8>),
}

impl Member<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Member::Plain(b) => b,
            Member::Decompressed(v) => v,
        }
    }
}

/// LLVM 22's "decompress if necessary" step for an archive member, with
/// the project's stricter checks (verified hash and sizes, see
/// `docs/compat.md#compressed-bundles-ccob`).
fn decompress<'a>(data: &'a [u8], notes: &mut dyn FnMut(Note)) -> Result<Member<'a>, CcobError> {
    match ccob::detect(data) {
        Detection::TooShort => Ok(Member::Plain(data)),
        Detection::Uncompressed => {
            notes(Note::Uncompressed);
            Ok(Member::Plain(data))
        }
        Detection::Compressed => {
            let out = ccob::decompress_unverified(data)?;
            notes(Note::Decompressed(out.report()));
            out.verify()?;
            if out.ccob_len != data.len() && out.header.method == ccob::Method::Zstd {
                // 22 hands zstd everything after the header; bytes after
                // the frame make it fail with this message. (zlib stops at
                // the end of its stream and ignores them.)
                return Err(CcobError::Codec {
                    method: ccob::Method::Zstd,
                    message: "Src size is incorrect".to_string(),
                });
            }
            Ok(Member::Decompressed(out.data))
        }
    }
}

fn decompress_error(member: &[u8], archive: &str, error: CcobError) -> Error {
    Error::Decompress {
        member: member.to_vec(),
        archive: archive.to_string(),
        error,
    }
}

/// Decides the targets for an entry ID (once per distinct ID).
fn select(id: &[u8], targets: &[Target], hip_openmp_compatible: bool) -> Result<Selection, Error> {
    let id_text = lossy(id);
    if !entry_id::has_valid_piece_count(&id_text) {
        return Err(Error::InvalidBundleId);
    }
    let id = EntryId::parse(&id_text).map_err(|_| Error::InvalidBundleId)?;
    Ok(Selection {
        targets: targets
            .iter()
            .enumerate()
            .filter(|(_, t)| id.is_compatible_code_object(&t.id, hip_openmp_compatible))
            .map(|(i, _)| i)
            .collect(),
        target_id: id.target_id().to_string(),
    })
}

impl Unbundled {
    /// The first pass: reads every member of `input`, decides the content
    /// of each output archive (one per target, in order), and reports
    /// through `notes` what it meets on the way (compression of each
    /// member, warnings, skipped host objects). Every target must then be finished
    /// ([`Unbundled::finish_target`]) before [`Unbundled::write`]; see
    /// [`Unbundled::finish`] for all of them at once. Every error LLVM 22 would
    /// report comes from these, so writing can only fail on I/O.
    ///
    /// `archive_name` is the input as given on the command line, for
    /// messages.
    pub fn read(
        input: &mut Input<'_>,
        targets: &[Target],
        options: &Options,
        archive_name: &str,
        notes: &mut dyn FnMut(Note),
    ) -> Result<Unbundled, Error> {
        if options.check_input_archive {
            check_input_archive(input, archive_name)?;
        }
        let mut plan = Unbundled {
            selections: Selections::default(),
            wanted: Vec::new(),
            members: 0,
            archives: targets
                .iter()
                .map(|_| TargetArchive::new(&options.write))
                .collect(),
            finished: 0,
            targets: targets.iter().map(|t| t.as_str().to_string()).collect(),
            options: *options,
            archive_name: archive_name.to_string(),
        };
        let mut index = 0;
        let mut out_name = Vec::new();
        let walk = input.for_each_member(|name, data| {
            let member = decompress(data.bytes(), notes)
                .map_err(|e| decompress_error(name, archive_name, e))?;
            let bytes = member.bytes();
            for entry in entries(bytes, false) {
                let entry = entry.map_err(|error| Error::Entries {
                    member: name.to_vec(),
                    archive: archive_name.to_string(),
                    error: Box::new(error),
                })?;
                // Libraries repeat the same few IDs in every member: decide
                // each distinct ID once.
                let selection = match plan.selections.find(entry.id) {
                    Some(s) => s,
                    None => {
                        let s = select(entry.id, targets, options.hip_openmp_compatible)?;
                        plan.selections.add(entry.id, s)
                    }
                };
                if selection.targets.is_empty() {
                    continue;
                }
                let host;
                let content: &[u8] = match entry.data {
                    EntryData::Bytes(b) => b,
                    EntryData::Unreadable(text) => return Err(Error::EntryContents(text)),
                    EntryData::HostObject if options.skip_host_objects => {
                        notes(Note::HostObjectSkipped);
                        &[]
                    }
                    EntryData::HostObject => {
                        host = object_bundle::strip_bundle_sections(bytes).map_err(|error| {
                            Error::HostObject {
                                member: name.to_vec(),
                                archive: archive_name.to_string(),
                                error: Box::new(error),
                            }
                        })?;
                        &host
                    }
                };
                let (symbols, module_asm) = member_symbols_and_module_asm(content);
                naming::output_member_name_into(
                    &mut out_name,
                    name,
                    entry.id,
                    &selection.target_id,
                );
                for &t in &selection.targets {
                    plan.archives[t].add(&out_name, content.len() as u64, &symbols, module_asm);
                }
                set_wanted(&mut plan.wanted, index);
            }
            index += 1;
            Ok(())
        });
        // Without `-check-input-archive` (which found any damage above,
        // with LLVM's text) 22 never reports damage met stepping from one
        // member to the next; it does report what it meets asking for a
        // member's name or a thin member's file, in its own words.
        walk.map_err(|e| match e {
            Error::Archive(error)
                if !matches!(
                    error,
                    ArchiveError::ThinMember { .. } | ArchiveError::MalformedName(_)
                ) =>
            {
                Error::Damaged {
                    archive: archive_name.to_string(),
                    error,
                }
            }
            other => other,
        })?;
        plan.members = index;
        Ok(plan)
    }

    /// Every target's [`Unbundled::finish_target`]: after
    /// [`Unbundled::read`], all of LLVM 22's checks, in its order, before
    /// anything is written.
    pub fn finish(mut self, notes: &mut dyn FnMut(Note)) -> Result<Unbundled, Error> {
        while self.finish_target(notes)? {}
        Ok(self)
    }

    /// Lays out the next output archive, in target order, with the checks
    /// LLVM 22 makes when it writes that archive: a target without code
    /// objects is an error unless missing bundles are allowed, a broken
    /// object member is an error, and unreadable bitcode gives a warning.
    /// Returns `false` once every target is done.
    ///
    /// A front-end that must report a problem with an output file at the
    /// point LLVM 22 would (when that archive's turn comes) calls this once
    /// per target, opening the target's output in between.
    pub fn finish_target(&mut self, notes: &mut dyn FnMut(Note)) -> Result<bool, Error> {
        let t = self.finished;
        let Some(archive) = self.archives.get_mut(t) else {
            return Ok(false);
        };
        for w in std::mem::take(&mut archive.warnings) {
            notes(Note::Warning(w));
        }
        if let Some(e) = archive.error.take() {
            return Err(e);
        }
        if archive.count == 0 && !self.options.allow_missing_bundles {
            return Err(Error::NoCompatible {
                target: self.targets[t].clone(),
                archive: self.archive_name.clone(),
            });
        }
        if let Some(name) = archive.too_large.take() {
            return Err(Error::TooLarge { name });
        }
        let layout = archive
            .layout
            .take()
            .unwrap_or_else(|| ArchiveLayout::new(&self.options.write));
        archive.head = Some(layout.finish());
        self.finished += 1;
        Ok(true)
    }

    /// The number of output archives (one per target).
    pub fn len(&self) -> usize {
        self.targets.len()
    }

    /// Whether there are no targets.
    pub fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }

    /// Whether any code object goes to target `index`.
    pub fn target_has_members(&self, index: usize) -> bool {
        self.archives[index].count > 0
    }

    /// The layout of output archive `index` (its size, its symbol-table
    /// flavour), once that target is finished.
    pub fn archive(&self, index: usize) -> &ArchiveHead {
        self.archives[index]
            .head
            .as_ref()
            .expect("the target is finished")
    }

    /// The second pass: writes output archive `i` to `outputs[i]`, walking
    /// the members of `input` (which must be the input the plan was made
    /// from) again. Everything is streamed: at most one input member is
    /// held in memory, and only if it must be decompressed, read from a
    /// separate file (thin archives) or have its bundle sections removed.
    /// A code object is handed to its outputs as one slice of the input.
    pub fn write(
        &self,
        input: &mut Input<'_>,
        outputs: &mut [&mut dyn Write],
    ) -> Result<(), Error> {
        assert_eq!(outputs.len(), self.targets.len(), "one output per target");
        assert_eq!(
            self.finished,
            self.targets.len(),
            "every target must be finished before writing"
        );
        let heads: Vec<&ArchiveHead> = (0..self.targets.len()).map(|t| self.archive(t)).collect();
        for (head, out) in heads.iter().zip(outputs.iter_mut()) {
            head.write_head(out).map_err(Error::Output)?;
        }
        let mut headers = Headers {
            cursors: vec![HeaderCursor::default(); heads.len()],
            written: heads.iter().map(|h| (0, h.head_size())).collect(),
            heads,
        };
        let mut gathers: Vec<Gather<'_>> = outputs.iter().map(|_| Gather::default()).collect();
        let mut ignore = |_: Note| {};
        let archive_name = self.archive_name.as_str();
        let mut index = 0;
        let mut out_name = Vec::new();
        input.for_each_member(|name, data| {
            let i = index;
            index += 1;
            let position = data.bytes().as_ptr() as usize;
            for (g, out) in gathers.iter_mut().zip(outputs.iter_mut()) {
                g.flush_behind(position, *out).map_err(Error::Output)?;
            }
            if !is_wanted(&self.wanted, i) {
                return Ok(());
            }
            // Code objects lying in the input are gathered; anything made
            // here (decompressed, read from a thin member's file, a host
            // object) is written at once.
            let mut direct = |t: usize, header: [u8; HEADER_SIZE], contents: &[u8]| {
                gathers[t]
                    .flush(outputs[t])
                    .and_then(|()| gather::write_member(outputs[t], &header, contents))
                    .map_err(Error::Output)
            };
            match data {
                MemberBytes::Archive(bytes) => match decompress(bytes, &mut ignore)
                    .map_err(|e| decompress_error(name, archive_name, e))?
                {
                    Member::Plain(bytes) => self.copy_entries(
                        name,
                        bytes,
                        &mut out_name,
                        &mut headers,
                        &mut |t, header, piece| match piece {
                            Piece::Input(contents) => gathers[t]
                                .add(header, contents, outputs[t])
                                .map_err(Error::Output),
                            Piece::Made(contents) => gathers[t]
                                .flush(outputs[t])
                                .and_then(|()| gather::write_member(outputs[t], &header, contents))
                                .map_err(Error::Output),
                        },
                    )?,
                    Member::Decompressed(bytes) => self.copy_entries(
                        name,
                        &bytes,
                        &mut out_name,
                        &mut headers,
                        &mut |t, header, piece| direct(t, header, piece.bytes()),
                    )?,
                },
                MemberBytes::Loaded(bytes) => {
                    let member = decompress(bytes, &mut ignore)
                        .map_err(|e| decompress_error(name, archive_name, e))?;
                    self.copy_entries(
                        name,
                        member.bytes(),
                        &mut out_name,
                        &mut headers,
                        &mut |t, header, piece| direct(t, header, piece.bytes()),
                    )?
                }
            }
            Ok(())
        })?;
        for (g, out) in gathers.iter_mut().zip(outputs.iter_mut()) {
            g.flush(*out).map_err(Error::Output)?;
        }
        let Headers { heads, written, .. } = headers;
        if index != self.members {
            return Err(self.changed());
        }
        for (w, head) in written.iter().zip(&heads) {
            if *w != (head.len(), head.total_size()) {
                return Err(self.changed());
            }
        }
        for out in outputs.iter_mut() {
            out.flush().map_err(Error::Output)?;
        }
        Ok(())
    }

    /// The second pass's work on one wanted member: finds its entries
    /// again and hands each code object, with its member header, to `emit`
    /// for every target that takes it.
    fn changed(&self) -> Error {
        Error::Changed {
            archive: self.archive_name.clone(),
        }
    }

    fn copy_entries<'d>(
        &self,
        name: &[u8],
        bytes: &'d [u8],
        out_name: &mut Vec<u8>,
        headers: &mut Headers<'_>,
        emit: &mut Emit<'_, 'd>,
    ) -> Result<(), Error> {
        let mut host: Option<Vec<u8>> = None;
        for entry in entries(bytes, false) {
            let entry = entry.map_err(|_| self.changed())?;
            let selection = self
                .selections
                .find(entry.id)
                .ok_or_else(|| self.changed())?;
            if selection.targets.is_empty() {
                continue;
            }
            let piece = match entry.data {
                EntryData::Bytes(b) => Piece::Input(b),
                EntryData::Unreadable(_) => return Err(self.changed()),
                EntryData::HostObject if self.options.skip_host_objects => Piece::Input(&[]),
                EntryData::HostObject => {
                    if host.is_none() {
                        host = Some(
                            object_bundle::strip_bundle_sections(bytes)
                                .map_err(|_| self.changed())?,
                        );
                    }
                    Piece::Made(host.as_deref().unwrap_or_default())
                }
            };
            let size = piece.bytes().len() as u64;
            naming::output_member_name_into(out_name, name, entry.id, &selection.target_id);
            for &t in &selection.targets {
                let header = headers.heads[t]
                    .next_member_header(&mut headers.cursors[t], out_name, size)
                    .ok_or_else(|| self.changed())?;
                headers.written[t].0 += 1;
                headers.written[t].1 += HEADER_SIZE as u64 + size + size % 2;
                emit(t, header, piece)?;
            }
        }
        Ok(())
    }

    /// The second pass ([`Unbundled::write`]), with every output archive
    /// returned as bytes.
    pub fn to_vecs(&self, input: &mut Input<'_>) -> Result<Vec<Vec<u8>>, Error> {
        let mut bufs: Vec<Vec<u8>> = (0..self.len())
            .map(|t| Vec::with_capacity(usize::try_from(self.archive(t).total_size()).unwrap_or(0)))
            .collect();
        {
            let mut outs: Vec<&mut dyn Write> =
                bufs.iter_mut().map(|b| b as &mut dyn Write).collect();
            self.write(input, &mut outs)?;
        }
        Ok(bufs)
    }
}

/// `-check-input-archive`: for each raw member (not decompressed), the
/// set of its entry IDs must pass LLVM 22's asymmetric conflict rule
/// ([`crate::target_id::find_conflict`]) applied to whole entry IDs.
fn check_input_archive(input: &mut Input<'_>, archive_name: &str) -> Result<(), Error> {
    input.for_each_member(|name, data| {
        let ids = ids_for_check(data.bytes()).map_err(|error| Error::Entries {
            member: name.to_vec(),
            archive: archive_name.to_string(),
            error: Box::new(error),
        })?;
        // LLVM keeps the IDs in a set ordered by bytes.
        let set: BTreeSet<&[u8]> = ids.into_iter().collect();
        let texts: Vec<String> = set.iter().map(|id| lossy(id).into_owned()).collect();
        if let Some((first, second)) =
            crate::target_id::find_conflict(texts.iter().map(String::as_str))
        {
            return Err(Error::Conflict {
                first: first.to_string(),
                second: second.to_string(),
                member: name.to_vec(),
                archive: archive_name.to_string(),
            });
        }
        Ok(())
    })
}
