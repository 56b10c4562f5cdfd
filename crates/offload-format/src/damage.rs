//! Damage: what the scanning readers (`hip_fatbin`, `nvidia::fatbin`)
//! report where a region does not hold what it should, so that one damaged
//! container does not hide the others.

use std::fmt;

/// What kind of damage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DamageKind {
    /// Bytes that are not a container where containers were expected.
    NotAContainer,
    /// A container whose header or size cannot be right (it runs past the
    /// region, over the next container, or names an impossible size).
    Container,
    /// An entry inside a container that cannot be read; the entries before
    /// it were.
    Entry,
    /// A pointer (a wrapper record) to a place that holds no container.
    DanglingPointer,
}

/// Damage found in a region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damage {
    /// Offset in the region.
    pub offset: usize,
    /// What kind.
    pub kind: DamageKind,
    /// What is wrong, as a sentence.
    pub what: String,
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at offset {}: {}", self.offset, self.what)
    }
}
