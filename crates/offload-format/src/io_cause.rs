//! [`IoCause`]: an I/O error kept as the cause of a format error.
//!
//! The readers here write decoded bytes into the caller's `io::Write`; when
//! that writer fails, the format error carries the writer's own
//! `io::Error` (its kind, its OS code, its text), reachable through
//! `std::error::Error::source`, rather than a copy of its text.

use std::fmt;
use std::io;
use std::sync::Arc;

/// The `io::Error` a sink returned, shared so that the error types holding
/// it stay `Clone`. Two are equal when their kinds and texts are.
#[derive(Clone, Debug)]
pub struct IoCause(Arc<io::Error>);

impl IoCause {
    /// The I/O error itself.
    pub fn io(&self) -> &io::Error {
        &self.0
    }
}

impl From<io::Error> for IoCause {
    fn from(e: io::Error) -> IoCause {
        IoCause(Arc::new(e))
    }
}

impl PartialEq for IoCause {
    fn eq(&self, other: &IoCause) -> bool {
        self.0.kind() == other.0.kind() && self.0.to_string() == other.0.to_string()
    }
}

impl Eq for IoCause {}

impl fmt::Display for IoCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for IoCause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}
