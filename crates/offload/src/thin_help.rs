//! The examples of `offload thin --help`.

/// Shown after the options.
pub const AFTER_HELP: &str = "\
Examples:
  offload thin --keep gfx90a -o lib-gfx90a.so lib.so     one GPU's code, every xnack/sramecc variant
  offload thin --keep gfx942 --keep gfx90a --in-place *.so
  offload thin --drop gfx803 --dry-run lib.so            what would go, and the bytes freed
  offload thin --keep gfx90a:xnack- -o app.thin app     what runs with xnack off (xnack- or no setting)
  offload thin --keep sm_90 --in-place libtorch_cuda.so  what a 9.0 GPU runs or compiles (cubins, PTX)
  offload thin --keep sm_90 --drop-ptx -o k.so lib.so    no PTX where the kept cubins suffice
  offload thin --keep sm_90 -o torch-sm_90.whl torch.whl a wheel: members thinned, RECORD updated
  offload thin --keep gfx90a --dry-run site-packages/    a tree: each file thinned on its own
  offload thin --keep sm_90 --keep-layout --in-place k.so nothing moves: the freed bytes zero-filled

Every bundle (uncompressed, or compressed CCOB v1-v3) in executables,
shared libraries, objects and archives is rewritten without the dropped
entries; compressed bundles are compressed again as LLVM 22's bundler
would (same version and method). Offload binaries (.llvm.offloading) are
thinned in objects and archives. NVIDIA fat binary containers keep the
entries the kept GPUs can use (cubins they run, PTX they compile), in
linked files too; --keep values apply to their vendor's code only.
Shared libraries, objects and archives of them shrink: the freed bytes
are taken out of the file and every reference to the moved containers
updated; no address outside the offload section moves. A file where that
cannot be proven safe (programs, unusual references) is rewritten in
place, the freed space zero-filled, and the report says why;
--keep-layout does that for every file. Host entries are always kept. A Python wheel (or any
zip archive) becomes a new one: members with device code are thinned and
deflated again, the others copied as stored, RECORD updated. Outputs are
written together or not at all. --keep and --drop values mean what
extract --target values mean (docs/tools/offload.md, \"Selecting entries\").";
