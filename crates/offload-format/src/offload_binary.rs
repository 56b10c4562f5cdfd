//! Placeholder: filled in by the issue that owns this format.
