//! Shared command-line support for the offload tools.
