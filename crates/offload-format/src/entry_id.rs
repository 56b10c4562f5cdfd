//! Offload-bundle entry IDs: `<kind>-<arch>-<vendor>-<os>-<env>[-<target id>]`,
//! as clang-offload-bundler 22 parses, validates, standardises and matches
//! them.
//!
//! * [`EntryId::parse`] splits an ID into its pieces (the piece-count rule is
//!   the only thing that can fail).
//! * [`EntryId::standardised`] is the spelling 22 writes into bundles and
//!   uses in messages (`hip-amdgcn-amd-amdhsa--gfx906`,
//!   `host-x86_64-unknown-linux-gnu-`).
//! * [`validate_targets`] runs the checks 22 applies to `-targets`, in 22's
//!   order, with 22's messages.
//! * [`EntryId::is_compatible_code_object`] decides whether an entry read
//!   from a bundle satisfies a requested target when unbundling.
//!
//! ```
//! use offload_format::entry_id::{validate_targets, EntryId, TargetMode};
//!
//! let id = EntryId::parse("hip-amdgcn-amd-amdhsa-unknown-gfx90a:xnack+").unwrap();
//! assert_eq!(id.kind(), "hip");
//! assert_eq!(id.target_id(), "gfx90a:xnack+");
//! assert_eq!(id.standardised().unwrap(), "hip-amdgcn-amd-amdhsa--gfx90a:xnack+");
//!
//! // A file entry without xnack serves a request for xnack+.
//! let entry = EntryId::parse("hip-amdgcn-amd-amdhsa--gfx90a").unwrap();
//! assert!(entry.is_compatible_code_object(&id, false));
//!
//! let targets = validate_targets(
//!     &["host-x86_64-unknown-linux-gnu", "hipv4-amdgcn-amd-amdhsa--gfx906"],
//!     TargetMode::Bundle,
//! )
//! .unwrap();
//! assert_eq!(targets.standardised[0], "host-x86_64-unknown-linux-gnu-");
//! assert_eq!(targets.host_index, Some(0));
//! ```

use crate::target_id::{find_conflict, is_offload_arch, TargetId};
use crate::triple::{normalize, Arch, CanonicalForm, NormalizeError, Os, Triple};

/// The offload kinds clang-offload-bundler 22 accepts in `-targets`
/// (case-sensitive). Entries read from files may carry any kind.
pub(crate) const VALID_KINDS: [&str; 4] = ["host", "openmp", "hip", "hipv4"];

/// The message 22 gives when an entry read from a bundle does not have 5 or
/// 6 pieces.
pub const INVALID_ID_IN_BUNDLE: &str = "invalid bundle id read from the bundle";

/// The message 22 gives when an entry of an archive member does not have 5
/// or 6 pieces.
#[cfg(feature = "device-archive")]
pub(crate) const INVALID_ID_IN_CODE_OBJECT: &str = "Invalid bundle id read from code object";

const TARGET_FORMAT_MESSAGE: &str = "Targets need to follow the format '<offload kind>-<target triple>', where '<target triple>' follows the format '<kind>-<arch>-<vendor>-<os>-<env>[-<target id>[:target features]]'.";

/// A bundle entry ID split into its parts.
///
/// The triple is built from pieces 2–5 at their own positions
/// ([`Triple::from_parts`]); nothing is normalised. The target ID is the
/// sixth piece, kept only if the text before its first `:` is one of
/// clang's offload architectures ([`is_offload_arch`]); otherwise it is
/// silently empty, features and all, exactly as in 22.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryId {
    text: String,
    kind: String,
    triple: Triple,
    target_id: String,
    raw_target_id: Option<String>,
}

/// An entry ID that does not split into 5 or 6 `-`-separated pieces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PieceCountError {
    /// How many pieces the ID has (1 to 4: a sixth piece keeps any further
    /// dashes, so there are never too many).
    pub pieces: usize,
}

impl std::fmt::Display for PieceCountError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "bundle entry ID has {} '-'-separated piece(s); 5 or 6 are needed",
            self.pieces
        )
    }
}

impl std::error::Error for PieceCountError {}

impl EntryId {
    /// Splits an entry ID at the first five `-` (so the sixth piece may
    /// contain dashes, as in `gfx9-4-generic`). Exactly 5 or 6 pieces are
    /// required; empty pieces are fine (`hip-amdgcn-amd-amdhsa--gfx906` has
    /// an empty environment). With 5 pieces there is no target ID, so in
    /// `hip-amdgcn-amd-amdhsa-gfx906` the `gfx906` is the environment.
    pub fn parse(text: &str) -> Result<EntryId, PieceCountError> {
        let pieces: Vec<&str> = text.splitn(6, '-').collect();
        let [kind, arch, vendor, os, env, rest @ ..] = pieces.as_slice() else {
            return Err(PieceCountError {
                pieces: pieces.len(),
            });
        };
        let raw_target_id = rest.first().map(|s| (*s).to_owned());
        let target_id = match rest.first() {
            Some(tid) => {
                let processor = tid.split(':').next().unwrap_or("");
                if !processor.is_empty() && is_offload_arch(processor) {
                    (*tid).to_owned()
                } else {
                    String::new()
                }
            }
            None => String::new(),
        };
        Ok(EntryId {
            text: text.to_owned(),
            kind: (*kind).to_owned(),
            triple: Triple::from_parts(arch, vendor, os, env),
            target_id,
            raw_target_id,
        })
    }

    /// The ID as given.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The offload kind (first piece), as written.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The triple of pieces 2–5, parsed positionally; its text is those
    /// pieces joined with `-` (the "raw triple" 22 prints in messages).
    pub fn triple(&self) -> &Triple {
        &self.triple
    }

    /// The target ID that 22 keeps (sixth piece with a known offload
    /// architecture), or `""`.
    pub fn target_id(&self) -> &str {
        &self.target_id
    }

    /// The sixth piece as written, if there is one, whether kept or not.
    pub fn raw_target_id(&self) -> Option<&str> {
        self.raw_target_id.as_deref()
    }

    /// The kind is `host`.
    pub(crate) fn has_host_kind(&self) -> bool {
        self.kind == "host"
    }

    /// The kind is one of `VALID_KINDS`.
    pub fn is_kind_valid(&self) -> bool {
        VALID_KINDS.contains(&self.kind.as_str())
    }

    /// The architecture piece is one LLVM knows (case-sensitive). Vendor,
    /// OS and environment are never rejected.
    pub fn is_triple_valid(&self) -> bool {
        self.triple.arch() != Arch::Unknown
    }

    /// The spelling 22 writes to bundles (binary headers, text markers,
    /// section names) and uses in messages:
    /// `<kind>-<triple>-<target id>`, where the triple is normalised to four
    /// components, except that when the OS piece parses as `amdhsa` it is
    /// normalised to three and followed by an empty environment
    /// (`amdgcn-amd-amdhsa-`). The `-` before the target ID is always
    /// written, so an ID without one ends in `-`.
    ///
    /// Fails only where LLVM itself stops with a fatal error.
    pub fn standardised(&self) -> Result<String, NormalizeError> {
        let triple = if self.triple.os() == Os::AmdHsa {
            let mut t = normalize(self.triple.as_str(), CanonicalForm::ThreeIdent)?;
            t.push('-');
            t
        } else {
            normalize(self.triple.as_str(), CanonicalForm::FourIdent)?
        };
        Ok(format!("{}-{}-{}", self.kind, triple, self.target_id))
    }

    /// 22's notion of two entry IDs being the same: equal kind strings,
    /// compatible triples ([`Triple::is_compatible_with`], from `self`'s
    /// side) and equal kept target IDs.
    pub fn same_as(&self, other: &EntryId) -> bool {
        self.kind == other.kind
            && self.triple.is_compatible_with(&other.triple)
            && self.target_id == other.target_id
    }

    /// Whether the bundle entry `self` (as read from the file) satisfies
    /// the requested target `target` (parsed from its standardised form)
    /// when unbundling.
    ///
    /// An entry that is [`EntryId::same_as`] the target matches. Otherwise
    /// the kinds must be compatible ([`kinds_compatible`]) and the triples
    /// compatible, then both target IDs must parse for their triples
    /// ([`TargetId::parse`]; an empty target ID does not), name the same
    /// processor, and agree as in [`TargetId::is_compatible_code_object`].
    pub fn is_compatible_code_object(&self, target: &EntryId, hip_openmp_compatible: bool) -> bool {
        if self.same_as(target) {
            return true;
        }
        if !kinds_compatible(&self.kind, &target.kind, hip_openmp_compatible)
            || !self.triple.is_compatible_with(&target.triple)
        {
            return false;
        }
        match (
            TargetId::parse(&self.target_id, &self.triple),
            TargetId::parse(&target.target_id, &target.triple),
        ) {
            (Ok(code_object), Ok(requested)) => code_object.is_compatible_code_object(&requested),
            _ => false,
        }
    }
}

/// An entry ID read for inspection rather than for unbundling: IDs that
/// LLVM 22 refuses are still named, with what was wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LenientId {
    /// The parsed ID (for a three-part triple, with the empty environment
    /// added), or `None` when it cannot be split at all.
    pub id: Option<EntryId>,
    /// The spelling LLVM 22 writes today ([`EntryId::standardised`]).
    pub standardised: Option<String>,
    /// What is old or odd about the stored spelling, if anything.
    pub note: Option<&'static str>,
    /// How many empty triple components were added to parse a short triple
    /// (0 for a complete one); [`LenientId::stored_triple`] takes them off.
    pub padded: usize,
}

impl LenientId {
    /// The triple as the bundle stores it, without the components added
    /// to parse it.
    pub fn stored_triple(&self) -> Option<&str> {
        let t = self.id.as_ref()?.triple().as_str();
        Some(t.get(..t.len().saturating_sub(self.padded)).unwrap_or(t))
    }
}

/// Reads an entry ID as stored in a bundle, accepting old spellings LLVM
/// 22 refuses: ROCm 5's three-part host triple
/// (`host-x86_64-unknown-linux`, read as having an empty environment).
/// and the architecture-only triples of DPC++'s SYCL bundles
/// (`sycl-spir64`, `sycl-spir64_gen`), read with empty components added.
/// `hip`/`hipv4` kinds and empty target IDs
/// (`hipv4-amdgcn-amd-amdhsa--gfx906`) parse as they are.
pub fn parse_lenient(text: &str) -> LenientId {
    let padded_parse = |missing: usize| {
        let padded = format!("{text}{}", "-".repeat(missing));
        EntryId::parse(&padded).ok()
    };
    let (id, note, padded) = match EntryId::parse(text) {
        Ok(id) => (Some(id), None, 0),
        Err(PieceCountError { pieces: 4 }) => (
            padded_parse(1),
            Some("three-part triple (ROCm 5 spelling)"),
            1,
        ),
        Err(PieceCountError {
            pieces: pieces @ (2 | 3),
        }) if !text.starts_with('-') => (
            padded_parse(5 - pieces),
            Some("triple without OS and environment (DPC++ spelling)"),
            5 - pieces,
        ),
        Err(_) => (
            None,
            Some("not a <kind>-<triple>[-<target id>] entry ID"),
            0,
        ),
    };
    let note = note.or_else(|| {
        let id = id.as_ref()?;
        if !id.is_kind_valid() {
            Some("offload kind unknown to LLVM 22")
        } else if id.raw_target_id().is_some_and(|t| !t.is_empty()) && id.target_id().is_empty() {
            Some("target ID names no known processor")
        } else {
            None
        }
    });
    LenientId {
        standardised: id.as_ref().and_then(|i| i.standardised().ok()),
        id,
        note,
        padded,
    }
}

impl std::fmt::Display for EntryId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// Whether a code object of kind `code_object` may serve a target of kind
/// `target`: equal kinds; `hip` with `hipv4` either way; and, with
/// `-hip-openmp-compatible`, a code-object kind starting with `hip` (any
/// case) for an `openmp` target or an `openmp` code object for a target
/// kind starting with `hip` (any case).
pub fn kinds_compatible(code_object: &str, target: &str, hip_openmp_compatible: bool) -> bool {
    if code_object == target
        || (code_object == "hip" && target == "hipv4")
        || (code_object == "hipv4" && target == "hip")
    {
        return true;
    }
    let starts_with_hip = |s: &str| {
        s.as_bytes()
            .get(..3)
            .is_some_and(|p| p.eq_ignore_ascii_case(b"hip"))
    };
    hip_openmp_compatible
        && ((starts_with_hip(code_object) && target == "openmp")
            || (code_object == "openmp" && starts_with_hip(target)))
}

/// Whether the bundler treats `text` as a well-formed entry ID (5 or 6
/// pieces).
#[cfg(feature = "device-archive")]
pub(crate) fn has_valid_piece_count(text: &str) -> bool {
    EntryId::parse(text).is_ok()
}

/// Bundling or unbundling: the host-count rule differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetMode {
    /// Exactly one `host` target, unless every target is `hip`/`hipv4`.
    Bundle,
    /// At most one `host` target.
    Unbundle,
}

/// The `-targets` list after [`validate_targets`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Targets {
    /// The parsed targets, in `-targets` order.
    pub entries: Vec<EntryId>,
    /// Their standardised spellings, in the same order.
    pub standardised: Vec<String>,
    /// Index of the (last) `host` target, if any.
    pub host_index: Option<usize>,
    /// Number of `host` targets.
    pub host_count: usize,
    /// Every target's kind is `hip` or `hipv4` (bundling then needs no
    /// host; its file handler is chosen from input 0).
    pub hip_only: bool,
}

impl Targets {
    /// The first pair of targets (by position) whose standardised IDs are
    /// equal although their texts differ (`…amdhsa--gfx906` and
    /// `…amdhsa-unknown-gfx906`). 22 accepts such lists and writes a
    /// corrupt bundle; the bundler can use this to refuse them
    /// ([`TargetsError::SameStandardisedId`]).
    pub fn standardised_duplicate(&self) -> Option<(usize, usize)> {
        for (j, b) in self.standardised.iter().enumerate() {
            if let Some(i) = self.standardised[..j].iter().position(|a| a == b) {
                return Some((i, j));
            }
        }
        None
    }

    /// [`Targets::standardised_duplicate`] as an error.
    pub fn check_standardised_unique(&self) -> Result<(), TargetsError> {
        match self.standardised_duplicate() {
            None => Ok(()),
            Some((i, j)) => Err(TargetsError::SameStandardisedId {
                first: self.entries[i].as_str().to_owned(),
                second: self.entries[j].as_str().to_owned(),
                standardised: self.standardised[i].clone(),
            }),
        }
    }
}

/// A `-targets` list that clang-offload-bundler 22 rejects. `Display` gives
/// 22's message text (what follows `<tool>: error: `), except for
/// [`TargetsError::Fatal`], which 22 prints as `LLVM ERROR: <text>` with no
/// tool name, and [`TargetsError::SameStandardisedId`], which is ours.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TargetsError {
    /// The same text was given twice.
    Duplicate {
        /// The repeated target.
        target: String,
    },
    /// A target does not have 5 or 6 pieces.
    BadFormat {
        /// The target.
        target: String,
    },
    /// Unknown offload kind and/or architecture.
    Invalid {
        /// The target.
        target: String,
        /// The kind, when it is not one of `VALID_KINDS`.
        bad_kind: Option<String>,
        /// The raw `arch-vendor-os-env` text, when the architecture is not
        /// known.
        bad_triple: Option<String>,
    },
    /// Normalising the triple hit one of LLVM's fatal errors.
    Fatal {
        /// The target.
        target: String,
        /// The error.
        error: NormalizeError,
    },
    /// Two target IDs of one kind and raw triple conflict
    /// ([`find_conflict`]); both are written `<kind>-<raw triple>-<target id>`.
    Conflict {
        /// The first ID of the pair.
        first: String,
        /// The conflicting later ID.
        second: String,
    },
    /// Wrong number of `host` targets.
    HostCount {
        /// How many there are.
        count: usize,
    },
    /// Two different targets standardise to the same ID (our check, see
    /// [`Targets::check_standardised_unique`]).
    SameStandardisedId {
        /// The earlier target as given.
        first: String,
        /// The later target as given.
        second: String,
        /// The ID both would be written as.
        standardised: String,
    },
}

impl std::fmt::Display for TargetsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TargetsError::Duplicate { .. } => f.write_str("Duplicate targets are not allowed"),
            TargetsError::BadFormat { .. } => f.write_str(TARGET_FORMAT_MESSAGE),
            TargetsError::Invalid {
                target,
                bad_kind,
                bad_triple,
            } => {
                write!(f, "invalid target '{target}'")?;
                if let Some(kind) = bad_kind {
                    write!(f, ", unknown offloading kind '{kind}'")?;
                }
                if let Some(triple) = bad_triple {
                    write!(f, ", unknown target triple '{triple}'")?;
                }
                Ok(())
            }
            TargetsError::Fatal { error, .. } => write!(f, "{error}"),
            TargetsError::Conflict { first, second } => write!(
                f,
                "Cannot bundle inputs with conflicting targets: '{first}' and '{second}'"
            ),
            TargetsError::HostCount { count } => {
                write!(f, "expecting exactly one host target but got {count}")
            }
            TargetsError::SameStandardisedId {
                first,
                second,
                standardised,
            } => write!(
                f,
                "targets '{first}' and '{second}' would both be stored as '{standardised}'"
            ),
        }
    }
}

impl std::error::Error for TargetsError {}

/// Runs clang-offload-bundler 22's checks on a `-targets` list, in its
/// order, and returns the first failure:
///
/// 1. per target, in order: a text seen before → [`TargetsError::Duplicate`];
///    not 5 or 6 pieces → [`TargetsError::BadFormat`]; standardising hits a
///    fatal LLVM error → [`TargetsError::Fatal`]; unknown kind or
///    architecture → [`TargetsError::Invalid`];
/// 2. per group of targets with the same kind and raw triple text (groups
///    in byte order of `<kind>-<raw triple>`), the target-ID conflict check
///    ([`find_conflict`]) → [`TargetsError::Conflict`];
/// 3. the host count → [`TargetsError::HostCount`].
///
/// Targets that standardise to the same ID pass, as in 22; see
/// [`Targets::check_standardised_unique`].
pub fn validate_targets<S: AsRef<str>>(
    targets: &[S],
    mode: TargetMode,
) -> Result<Targets, TargetsError> {
    let mut entries: Vec<EntryId> = Vec::with_capacity(targets.len());
    let mut standardised = Vec::with_capacity(targets.len());
    let mut host_index = None;
    let mut host_count = 0;
    let mut hip_only = true;

    for (index, target) in targets.iter().enumerate() {
        let target = target.as_ref();
        if targets[..index].iter().any(|t| t.as_ref() == target) {
            return Err(TargetsError::Duplicate {
                target: target.to_owned(),
            });
        }
        let entry = EntryId::parse(target).map_err(|_| TargetsError::BadFormat {
            target: target.to_owned(),
        })?;
        let name = entry.standardised().map_err(|error| TargetsError::Fatal {
            target: target.to_owned(),
            error,
        })?;
        let kind_ok = entry.is_kind_valid();
        let triple_ok = entry.is_triple_valid();
        if !kind_ok || !triple_ok {
            return Err(TargetsError::Invalid {
                target: target.to_owned(),
                bad_kind: (!kind_ok).then(|| entry.kind().to_owned()),
                bad_triple: (!triple_ok).then(|| entry.triple().as_str().to_owned()),
            });
        }
        if entry.has_host_kind() {
            host_count += 1;
            host_index = Some(index);
        }
        if entry.kind() != "hip" && entry.kind() != "hipv4" {
            hip_only = false;
        }
        standardised.push(name);
        entries.push(entry);
    }

    let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
    for entry in &entries {
        let key = format!("{}-{}", entry.kind(), entry.triple().as_str());
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, ids)) => ids.push(entry.target_id()),
            None => groups.push((key, vec![entry.target_id()])),
        }
    }
    groups.sort_by(|a, b| a.0.cmp(&b.0));
    for (key, ids) in &groups {
        if let Some((first, second)) = find_conflict(ids.iter().copied()) {
            return Err(TargetsError::Conflict {
                first: format!("{key}-{first}"),
                second: format!("{key}-{second}"),
            });
        }
    }

    let host_count_ok = match mode {
        TargetMode::Unbundle => host_count <= 1,
        TargetMode::Bundle => host_count == 1 || hip_only,
    };
    if !host_count_ok {
        return Err(TargetsError::HostCount { count: host_count });
    }

    Ok(Targets {
        entries,
        standardised,
        host_index,
        host_count,
        hip_only,
    })
}

#[cfg(test)]
mod lenient_tests {
    use super::*;

    #[test]
    fn old_spellings() {
        let l = parse_lenient("host-x86_64-unknown-linux");
        assert_eq!(l.note, Some("three-part triple (ROCm 5 spelling)"));
        let id = l.id.unwrap();
        assert_eq!(id.kind(), "host");
        assert_eq!(id.triple().arch_name(), "x86_64");
        assert_eq!(
            l.standardised.as_deref(),
            Some("host-x86_64-unknown-linux-unknown-")
        );
        let l = parse_lenient("hipv4-amdgcn-amd-amdhsa--gfx906");
        assert_eq!(l.note, None);
        assert_eq!(l.id.unwrap().target_id(), "gfx906");
        assert_eq!(
            l.standardised.as_deref(),
            Some("hipv4-amdgcn-amd-amdhsa--gfx906")
        );
        let l = parse_lenient("hip-amdgcn-amd-amdhsa-");
        assert_eq!(l.standardised.as_deref(), Some("hip-amdgcn-amd-amdhsa--"));
        assert!(parse_lenient("garbage").id.is_none());
        assert!(parse_lenient("-spir64").id.is_none());
        assert_eq!(
            parse_lenient("host-x86_64-unknown-linux").stored_triple(),
            Some("x86_64-unknown-linux")
        );
        // DPC++'s SYCL bundles (Intel GPU libraries) name the architecture
        // only.
        for (text, triple) in [
            ("sycl-spir64_gen", "spir64_gen"),
            ("sycl-spir64", "spir64"),
            ("sycl-spir64-unknown", "spir64-unknown"),
        ] {
            let l = parse_lenient(text);
            assert_eq!(
                l.note,
                Some("triple without OS and environment (DPC++ spelling)")
            );
            assert_eq!(l.stored_triple(), Some(triple), "{text}");
            let id = l.id.unwrap();
            assert_eq!(id.kind(), "sycl");
            assert_eq!(id.target_id(), "");
        }
        assert_eq!(
            parse_lenient("sycl-spir64")
                .id
                .unwrap()
                .triple()
                .arch_name(),
            "spir64"
        );
        assert_eq!(
            parse_lenient("cuda-nvptx64-nvidia-cuda--sm_90").note,
            Some("offload kind unknown to LLVM 22")
        );
    }
}
