//! No code: this crate holds the tests of the documentation's commands
//! (`tests/docs.rs`, `tests/cases/`); see docs/README.md, "Tested
//! commands".
