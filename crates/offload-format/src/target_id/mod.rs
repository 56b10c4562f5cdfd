//! Target IDs: a processor name with optional `:feature+` / `:feature-`
//! settings (`gfx90a:sramecc-:xnack+`), as clang 22 and the offload bundler
//! read them.
//!
//! * [`TargetId::parse_syntax`] checks the shape only (clang's format check).
//! * [`TargetId::parse`] also resolves the processor for a triple (AMDGPU
//!   alternative names become canonical: `fiji` → `gfx803`) and checks that
//!   every feature is one the processor supports (clang's `parseTargetID`).
//! * [`TargetId::is_compatible_code_object`] is the bundler's rule for
//!   "a code object built for C can serve a request for T".
//! * [`find_conflict`] is the bundling-time check that a feature is given
//!   either in every target ID of a processor or in none (the asymmetric
//!   LLVM 22 variant).
//!
//! ```
//! use offload_format::target_id::TargetId;
//! use offload_format::triple::Triple;
//!
//! let amdgcn = Triple::from_parts("amdgcn", "amd", "amdhsa", "");
//! let id = TargetId::parse("fiji:xnack-", &amdgcn);
//! // gfx803 has no xnack setting.
//! assert!(id.is_err());
//!
//! let c = TargetId::parse("gfx90a:xnack+", &amdgcn).unwrap();
//! let t = TargetId::parse("gfx90a:xnack+:sramecc-", &amdgcn).unwrap();
//! assert_eq!(t.canonical(), "gfx90a:sramecc-:xnack+");
//! // A feature the code object leaves unset means "either".
//! assert!(c.is_compatible_code_object(&t));
//! assert!(!t.is_compatible_code_object(&c));
//! ```

mod processors;

pub use processors::{
    amdgcn_processor, is_offload_arch, r600_processor, AmdgpuProcessor, AMDGCN_PROCESSORS,
    OFFLOAD_ARCHS,
};

use crate::triple::Triple;

/// A parsed target ID: a processor and its feature settings, in the order
/// they were written.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TargetId {
    processor: String,
    features: Vec<(String, bool)>,
}

/// Why a target ID was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TargetIdError {
    /// The target ID is the empty string.
    Empty,
    /// Nothing before the first `:`.
    EmptyProcessor,
    /// A feature does not end in `+` or `-` (this includes an empty field,
    /// as in `gfx906::xnack+`).
    MissingSign {
        /// The offending field as written.
        field: String,
    },
    /// The same feature name appears twice.
    RepeatedFeature {
        /// The feature name.
        feature: String,
    },
    /// The processor is not known for the triple's architecture.
    UnknownProcessor {
        /// The processor as written.
        processor: String,
    },
    /// The processor does not take this feature.
    UnsupportedFeature {
        /// The canonical processor name.
        processor: String,
        /// The feature name.
        feature: String,
    },
}

impl std::fmt::Display for TargetIdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TargetIdError::Empty => f.write_str("empty target ID"),
            TargetIdError::EmptyProcessor => f.write_str("target ID has no processor name"),
            TargetIdError::MissingSign { field } => {
                write!(f, "target ID feature '{field}' does not end in '+' or '-'")
            }
            TargetIdError::RepeatedFeature { feature } => {
                write!(f, "target ID feature '{feature}' is given more than once")
            }
            TargetIdError::UnknownProcessor { processor } => {
                write!(f, "unknown processor '{processor}'")
            }
            TargetIdError::UnsupportedFeature { processor, feature } => {
                write!(
                    f,
                    "processor '{processor}' does not support target ID feature '{feature}'"
                )
            }
        }
    }
}

impl std::error::Error for TargetIdError {}

/// The feature fields after the processor: the features read before any
/// error, and the error (if any). The partial list matters for
/// [`find_conflict`], which reproduces what LLVM 22 does with it.
fn scan_features(text: &str) -> (Vec<(&str, bool)>, Option<TargetIdError>) {
    let mut features: Vec<(&str, bool)> = Vec::new();
    let mut rest = text;
    // LLVM stops at the end of the text, so a trailing ':' is harmless.
    while !rest.is_empty() {
        let (field, tail) = rest.split_once(':').unwrap_or((rest, ""));
        rest = tail;
        let (name, on) = match field.as_bytes().last() {
            Some(b'+') => (&field[..field.len() - 1], true),
            Some(b'-') => (&field[..field.len() - 1], false),
            _ => {
                let error = TargetIdError::MissingSign {
                    field: field.to_owned(),
                };
                return (features, Some(error));
            }
        };
        if features.iter().any(|&(n, _)| n == name) {
            let error = TargetIdError::RepeatedFeature {
                feature: name.to_owned(),
            };
            return (features, Some(error));
        }
        features.push((name, on));
    }
    (features, None)
}

impl TargetId {
    /// Checks the shape of a target ID without knowing the target: a
    /// non-empty processor, then `:`-separated fields each ending in `+` or
    /// `-`, no feature twice. Neither the processor nor the feature names
    /// are checked, and an empty feature name (`gfx906:+`) passes.
    pub fn parse_syntax(text: &str) -> Result<TargetId, TargetIdError> {
        if text.is_empty() {
            return Err(TargetIdError::Empty);
        }
        let (processor, features_text) = text.split_once(':').unwrap_or((text, ""));
        if processor.is_empty() {
            return Err(TargetIdError::EmptyProcessor);
        }
        let (features, error) = scan_features(features_text);
        if let Some(error) = error {
            return Err(error);
        }
        Ok(TargetId {
            processor: processor.to_owned(),
            features: features
                .into_iter()
                .map(|(name, on)| (name.to_owned(), on))
                .collect(),
        })
    }

    /// Parses a target ID for a triple, as clang's `parseTargetID`: the
    /// shape must be valid; for AMDGPU triples the processor must be in the
    /// `amdgcn` (or `r600`) table and is replaced by its canonical name, and
    /// each feature must be one the processor supports. Other triples keep
    /// the processor as written and accept no feature at all.
    pub fn parse(text: &str, triple: &Triple) -> Result<TargetId, TargetIdError> {
        let mut id = TargetId::parse_syntax(text)?;
        if triple.is_amdgpu() {
            let found = if triple.is_amdgcn() {
                amdgcn_processor(&id.processor)
            } else {
                r600_processor(&id.processor)
            };
            let Some(processor) = found else {
                return Err(TargetIdError::UnknownProcessor {
                    processor: id.processor,
                });
            };
            id.processor = processor.name.to_owned();
            for (name, _) in &id.features {
                if !processor.target_id_features().any(|f| f == name) {
                    return Err(TargetIdError::UnsupportedFeature {
                        processor: id.processor.clone(),
                        feature: name.clone(),
                    });
                }
            }
        } else if let Some((name, _)) = id.features.first() {
            return Err(TargetIdError::UnsupportedFeature {
                processor: id.processor.clone(),
                feature: name.clone(),
            });
        }
        Ok(id)
    }

    /// The processor (canonical if this came from [`TargetId::parse`] with
    /// an AMDGPU triple).
    pub fn processor(&self) -> &str {
        &self.processor
    }

    /// The feature settings in the order written: `(name, enabled)`.
    pub fn features(&self) -> &[(String, bool)] {
        &self.features
    }

    /// The setting of one feature: `Some(true)` for `+`, `Some(false)` for
    /// `-`, `None` when not given (meaning "either").
    pub fn feature(&self, name: &str) -> Option<bool> {
        self.features
            .iter()
            .find(|(n, _)| n == name)
            .map(|&(_, on)| on)
    }

    /// The canonical spelling: processor, then the features sorted by name
    /// (`gfx908:sramecc+:xnack-`), as the clang driver writes target IDs.
    pub fn canonical(&self) -> String {
        let mut features: Vec<&(String, bool)> = self.features.iter().collect();
        features.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out = self.processor.clone();
        for (name, on) in features {
            out.push(':');
            out.push_str(name);
            out.push(if *on { '+' } else { '-' });
        }
        out
    }

    /// Whether a code object built for `self` may be used where `requested`
    /// is asked for: same processor; `self` sets no more features than
    /// `requested`; and every feature `self` sets, `requested` sets the same
    /// way. A feature `self` leaves unset matches either setting. Both sides
    /// should come from [`TargetId::parse`] with their own triples.
    pub fn is_compatible_code_object(&self, requested: &TargetId) -> bool {
        self.processor == requested.processor
            && self.features.len() <= requested.features.len()
            && self
                .features
                .iter()
                .all(|(name, on)| requested.feature(name) == Some(*on))
    }
}

impl std::fmt::Display for TargetId {
    /// The target ID as parsed: processor, then features in written order.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.processor)?;
        for (name, on) in &self.features {
            write!(f, ":{name}{}", if *on { '+' } else { '-' })?;
        }
        Ok(())
    }
}

/// The bundling-time conflict check of LLVM 22 (`getConflictTargetIDCombination`):
/// for one processor, a feature must be given in all target IDs or in none.
///
/// The IDs are taken as a set in byte order (duplicates count once). The
/// first ID of each processor (the text before the first `:`) records its
/// features; a later ID of the same processor conflicts when it gives a
/// feature the first one does not. The result is that pair, first one
/// first. The check is asymmetric, as in LLVM 22: `{gfx906, gfx906:xnack+}`
/// conflicts, `{gfx90a:sramecc+:xnack+, gfx90a:xnack+}` does not.
///
/// Only the shape of the IDs is read. For an ID whose shape is invalid
/// (`gfx906:xnack`, `gfx906::xnack+`) LLVM 22 uses an empty optional's
/// stale contents; what it then does is reproduced here because it is
/// deterministic: the ID counts under the processor of the most recent
/// well-formed ID before it (under a processor of its own when there is
/// none), with the features read before the bad field.
///
/// ```
/// use offload_format::target_id::find_conflict;
///
/// assert_eq!(find_conflict(["gfx906:xnack+", "gfx906"]), Some(("gfx906", "gfx906:xnack+")));
/// assert_eq!(find_conflict(["gfx906:xnack+", "gfx906:xnack-", "gfx908"]), None);
/// assert_eq!(find_conflict(["gfx90a:xnack+", "gfx90a:sramecc+:xnack+"]), None);
/// ```
pub fn find_conflict<'a, I>(ids: I) -> Option<(&'a str, &'a str)>
where
    I: IntoIterator<Item = &'a str>,
{
    let mut sorted: Vec<&'a str> = ids.into_iter().collect();
    sorted.sort_unstable();
    sorted.dedup();

    // Key None = the "no well-formed ID yet" processor.
    let mut seen: Vec<(Option<&'a str>, &'a str, Vec<&'a str>)> = Vec::new();
    let mut last_good: Option<&'a str> = None;
    for id in sorted {
        let (processor, features_text) = id.split_once(':').unwrap_or((id, ""));
        // An empty ID is well formed (empty processor); ":x+" is not, and
        // LLVM gives up on it before reading any feature.
        let no_processor = processor.is_empty() && !id.is_empty();
        let (features, error) = if no_processor {
            (Vec::new(), Some(TargetIdError::EmptyProcessor))
        } else {
            scan_features(features_text)
        };
        let well_formed = error.is_none();
        let key = if well_formed {
            last_good = Some(processor);
            Some(processor)
        } else {
            last_good
        };
        let names: Vec<&'a str> = features.iter().map(|&(name, _)| name).collect();
        match seen.iter().find(|(k, _, _)| *k == key) {
            None => seen.push((key, id, names)),
            Some((_, first, first_names)) => {
                if names.iter().any(|n| !first_names.contains(n)) {
                    return Some((first, id));
                }
            }
        }
    }
    None
}
