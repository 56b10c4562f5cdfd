//! `offload size --help`'s examples.

/// Shown after the options.
pub const AFTER_HELP: &str = "\
Examples:
  offload size libcurand.so.10                  host, containers, and device code per architecture
  offload size --top 50 --arch sm_90 lib.so     the 50 largest sm_90 functions
  offload size --filter 'gemm|conv' lib.so      functions whose name matches
  offload size --json wheel.whl | jq .duplicates

Every byte of each file is counted once: host code and data, container
overhead, or a device image; an image's bytes go to its kernels and
device functions (a cubin's .text.NAME and the sections made for it, an
AMD code object's code and kernel descriptor, a PTX .entry or .func) and
to the parts they share. A compressed image's stored bytes are split in
proportion to its uncompressed bytes. Duplicates are functions of the
same name in several images of one architecture; the extra copies are
what all but the largest take.";
