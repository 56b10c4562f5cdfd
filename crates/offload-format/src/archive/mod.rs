//! `ar` archives: reading GNU, BSD and thin archives, and writing the
//! deterministic GNU archives LLVM 22's offload tools produce.
//!
//! # Reading
//! [`Archive::parse`] checks the magic and finds the special members (symbol
//! table, long-name table); [`Archive::members`] then walks the regular
//! members in order, resolving names the way LLVM's archive reader does
//! (`name/`, `/123` into the `//` table, BSD `#1/<len>`), with LLVM's error
//! texts (`truncated or malformed archive (...)`). Thin archives
//! (`!<thin>\n`) store only headers; [`Archive::member_data`] loads such a
//! member from disk relative to the archive, like LLVM.
//!
//! # Writing
//! [`write_archive`] writes what LLVM's archive writer writes for
//! `llvm-offload-binary --archive` and `clang-offload-bundler -unbundle
//! -type=a` on a Linux host: GNU format, deterministic headers (date 0,
//! uid/gid 0, mode 644), a `//` long-name table for names of 16 bytes or
//! more or containing `/`, members padded to even size with `\n`, and a
//! symbol table member `/` (or `/SYM64/` when offsets need 64 bits) listing
//! the global defined symbols of ELF members and of bitcode members (see
//! [`member_symbols`]). An archive without members is the 8 bytes
//! [`EMPTY_ARCHIVE`]. [`ArchiveLayout`] lays out the same bytes from member
//! names, sizes and symbols alone, so that large archives can be streamed.

mod error;
mod read;
mod symbols;
mod write;

pub use error::{ArchiveError, ArchiveWriteError, MemberWarning};
#[cfg(feature = "device-archive")]
pub(crate) use read::load_thin_with;
pub use read::{
    thin_member_path, Archive, ArchiveKind, CutMember, LoadThin, Member, MemberContent, Members,
};
#[cfg(feature = "device-archive")]
pub(crate) use symbols::member_symbols_and_module_asm;
pub use symbols::{member_symbols, MemberSymbols};
pub use write::{
    write_archive, write_archive_to_vec, ArchiveHead, ArchiveLayout, HeaderCursor, NewMember,
    WriteOptions, WriteReport, MAX_MEMBER_SIZE, SYM64_THRESHOLD,
};

/// Magic of a regular archive.
pub const MAGIC: &[u8; 8] = b"!<arch>\n";
/// Magic of a thin archive.
pub(crate) const THIN_MAGIC: &[u8; 8] = b"!<thin>\n";
/// Magic of an AIX big archive (recognised, not supported).
pub(crate) const BIG_MAGIC: &[u8; 8] = b"<bigaf>\n";
/// The bytes LLVM writes for an archive with no members.
pub const EMPTY_ARCHIVE: &[u8] = MAGIC;
/// Size of a member header.
pub const HEADER_SIZE: usize = 60;
