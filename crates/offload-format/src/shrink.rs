//! Laying out a file whose offload containers were thinned: in the space
//! they had ([`in_place`]), or with the freed bytes taken out of the file
//! ([`shrink`], ELF shared libraries).
//!
//! Both take the containers rewritten by [`crate::thin`] ([`Rewrite`]:
//! where each was, and its new bytes) and answer a [`Layout`]: the output
//! as a list of pieces, ranges of the input copied unchanged and new bytes,
//! which the caller writes in order (unchanged ranges never need to be
//! read into memory). Nothing here reads or writes a file.
//!
//! # Shrinking a shared library or a program
//!
//! In a shared library or a dynamically linked program (`ET_DYN`, or
//! `ET_EXEC` with `PT_INTERP`; 64-bit little-endian x86-64 or AArch64)
//! the containers lie in one or more sections (`.nv_fatbin` and nvcc
//! `-rdc`'s `__nv_relfatbin`, or `.hip_fatbin`), each in the middle of a
//! read-only `PT_LOAD` segment: the sections after it in the segment
//! (`.eh_frame_hdr`, `.eh_frame`, ...) may change file offset but never
//! virtual address. [`shrink`], for each section:
//!
//! 1. packs the kept containers at the front of the section, each at its
//!    old alignment (modulo the section's `sh_addralign`, at least 8);
//!    bytes between containers that are not rewritten (containers with
//!    nothing to drop) move as one block, their leading zero padding left
//!    out;
//! 2. splits its segment in two: the first part ends with the packed
//!    section; the second starts at page-aligned address `X` (below the
//!    old section end, above the new one, never sharing a page with the
//!    first) at a file offset `D` bytes lower than before, `D` a multiple
//!    of the page size (the largest `p_align` of the `PT_LOAD`s, or the
//!    machine's largest page, 4 KiB on x86-64 and 64 KiB on AArch64,
//!    where segments are aligned more: such a moved segment gets that
//!    `p_align`, the first keeps its own), so that every offset stays
//!    congruent with its address; a section freeing no whole page keeps
//!    its layout (its containers rewritten in place) and its segment;
//! 3. writes one new program header table, one entry longer per split,
//!    right after the packed section that loses least to it, the first
//!    part of its segment growing to hold it (the old table has no spare
//!    slot; it stays, unused, where it was), and points `e_phoff` and
//!    `PT_PHDR` at it. Where the kernel may run the file (a program, or
//!    any file with an entry point) the table follows the first section
//!    to split, and only if its segment's offsets and addresses differ as
//!    the first `PT_LOAD`'s do: kernels before Linux 5.18 give the
//!    program `AT_PHDR` = the first `PT_LOAD`'s address - its offset +
//!    `e_phoff`, later ones map `e_phoff` through the `PT_LOAD` holding
//!    it, and the dynamic loader takes the load address from `AT_PHDR`
//!    and `PT_PHDR`; all three then agree. A program must have a
//!    `PT_PHDR` that describes the table at `e_phoff`, mapped by a
//!    `PT_LOAD` at its address, before and after;
//! 4. moves every later section, segment and the section header table
//!    down by the sum of the `D`s before it, and shortens the section's
//!    `sh_size`;
//! 5. points every reference into the section at its new place: the
//!    `R_X86_64_RELATIVE` (`R_AARCH64_RELATIVE`) relocations of the
//!    registration records (`.nvFatBinSegment`, `.hipFatBinSegment`), in
//!    `SHT_RELA` addends and in place (`SHT_RELR`, `SHT_REL`), and the
//!    symbols (`.symtab`, `.dynsym`) that name a container. A program
//!    that is not position-independent has no relocations: every aligned
//!    word of its loaded data sections holding an address in the section
//!    must be a record's pointer, and gets its container's new address.
//!
//! Containers in a loaded section of another name (cuBLASLt's
//! `.cask_resource`, which its own tables point into) keep their places
//! in a library or program: laid out in place (as [`in_place`] does),
//! their section's addresses and size unchanged, only its file offset
//! moving with what follows a split section. A file with containers only
//! in such sections is not shrunk.
//!
//! A relocatable object (`ET_REL`) has no segments: its containers are
//! packed the same way, the section shortened, the later sections and the
//! section header table moved down by a multiple of their largest
//! alignment, and every symbol defined in the section and every
//! relocation against one (`SHT_RELA`) made to point at the same
//! container as before.
//!
//! In a GNU archive, each member holding rewritten containers is shrunk
//! as a file is (or laid out in place where it cannot be), its header's
//! size updated, the later members moved, and the symbol table's member
//! offsets updated.
//!
//! Anything else that refers into the section, or that this cannot prove
//! safe, is a [`Fallback`] with its reason: another relocation or a
//! relocation applied inside the section, a record pointing into the
//! middle of a container, outside the section or at a container another
//! record points at, a section or segment overlapping the freed range,
//! less than a page freed, a program header table the loaders would not
//! find (see step 3), a statically linked executable, another kind of
//! file. Addresses outside the
//! sections never change. Debug information describing the section's
//! symbols is not updated (it is not read to load or run the library).

use std::fmt;

use crate::bytes::{Bytes, Endian};
use crate::objfile::elf::{
    self, ElfFile, ProgramHeader, SectionHeader, EM_AARCH64, EM_X86_64, ET_DYN, ET_EXEC, ET_REL,
    PT_LOAD, PT_PHDR, R_AARCH64_RELATIVE, R_X86_64_RELATIVE, SHN_ABS, SHN_UNDEF, SHT_DYNSYM,
    SHT_NOBITS, SHT_PROGBITS, SHT_REL, SHT_RELA, SHT_SYMTAB,
};
use crate::thin::{Piece, Thinned};

mod pe;

/// `SHF_ALLOC`.
const SHF_ALLOC: u64 = 0x2;
/// `PT_INTERP`.
const PT_INTERP: u32 = 3;
/// `SHF_EXECINSTR`.
const SHF_EXECINSTR: u64 = 0x4;
/// `PF_X`.
const PF_X: u32 = 0x1;
/// `SHT_INIT_ARRAY`, `SHT_FINI_ARRAY`, `SHT_PREINIT_ARRAY`.
const SHT_INIT_ARRAY: u32 = 14;
const SHT_FINI_ARRAY: u32 = 15;
const SHT_PREINIT_ARRAY: u32 = 16;
/// `SHT_RELR`: packed relative relocations.
const SHT_RELR: u32 = 19;
/// `__fatBinC_Wrapper_t`'s magic.
const NV_WRAPPER_MAGIC: u32 = 0x4662_43b1;
/// `__hip_fatbin_wrapper`'s magic (`HIPF`).
const HIP_WRAPPER_MAGIC: u32 = 0x4849_5046;
/// Size of a registration record in a 64-bit file: magic, version, two
/// pointers.
const RECORD: u64 = 24;

/// One container rewritten: where it was in the file, and what it became.
#[derive(Clone, Debug)]
pub struct Rewrite<'a> {
    /// Its file offset.
    pub offset: u64,
    /// Its size before.
    pub size: u64,
    /// Its new contents ([`Thinned::used`] bytes, then the zero fill).
    pub new: Thinned<'a>,
}

/// One piece of an output file, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Out {
    /// Bytes `from .. from + len` of the input, unchanged.
    Copy {
        /// Offset in the input.
        from: u64,
        /// Length.
        len: u64,
    },
    /// The first [`Thinned::used`] bytes of rewrite `i`'s new contents.
    Container(usize),
    /// New bytes.
    Bytes(Vec<u8>),
    /// Zero bytes (a hole where the output can have one).
    Zeros(u64),
}

impl Out {
    fn len(&self, rewrites: &[Rewrite<'_>]) -> u64 {
        match self {
            Out::Copy { len, .. } => *len,
            Out::Container(i) => rewrites[*i].new.used,
            Out::Bytes(b) => b.len() as u64,
            Out::Zeros(n) => *n,
        }
    }
}

/// A thinned file, piece by piece.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The pieces, in order.
    pub pieces: Vec<Out>,
    /// The output's length (the sum of the pieces).
    pub len: u64,
    /// Whether the file shrank (else each container kept its place).
    pub shrunk: bool,
}

impl Layout {
    /// The whole output in one buffer (tests, fuzzing, small inputs).
    pub fn to_vec(&self, input: &[u8], rewrites: &[Rewrite<'_>]) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len as usize);
        self.each_part(input, rewrites, &mut |part| match part {
            Part::Bytes(b) => out.extend_from_slice(b),
            Part::Zeros(n) => out.resize(out.len() + n as usize, 0),
        });
        out
    }

    /// Calls `f` with the output's bytes, in order, borrowed from
    /// `input`, the rewrites and the pieces (nothing is copied).
    fn each_part<'p>(
        &'p self,
        input: &'p [u8],
        rewrites: &'p [Rewrite<'_>],
        f: &mut dyn FnMut(Part<'p>),
    ) {
        for p in &self.pieces {
            match p {
                Out::Copy { from, len } => {
                    f(Part::Bytes(&input[*from as usize..(*from + *len) as usize]))
                }
                Out::Container(i) => used_pieces(&rewrites[*i].new).for_each(&mut *f),
                Out::Bytes(b) => f(Part::Bytes(b)),
                Out::Zeros(n) => f(Part::Zeros(*n)),
            }
        }
    }
}

/// The pieces of a rewritten container up to its [`Thinned::used`] bytes
/// (the zero fill left out), borrowed.
pub fn used_pieces<'p>(t: &'p Thinned<'_>) -> impl Iterator<Item = Part<'p>> + 'p {
    let mut left = t.used;
    t.pieces.iter().filter_map(move |p| {
        if left == 0 {
            return None;
        }
        let take = p.len().min(left);
        left -= take;
        Some(match p {
            Piece::Bytes(b) => Part::Bytes(&b[..take as usize]),
            Piece::Input(b) => Part::Bytes(&b[..take as usize]),
            Piece::Zeros(_) => Part::Zeros(take),
        })
    })
}

/// A piece of a rewritten container as [`used_pieces`] lends it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part<'p> {
    /// Bytes (new, or the input's).
    Bytes(&'p [u8]),
    /// Zero bytes.
    Zeros(u64),
}

/// Each container of `file` rewritten in the space it had, the freed
/// bytes zero: the layout-preserving rewrite. `rewrites` are in file
/// order and do not overlap. A PE image's nonzero `CheckSum` is
/// recomputed for the output, as a shrunk one's is.
pub fn in_place(file: &[u8], rewrites: &[Rewrite<'_>]) -> Layout {
    let len = file.len() as u64;
    if let Some(at) = Some(rewrites)
        .filter(|r| !r.is_empty())
        .and_then(|_| pe::checksum_field(file))
    {
        // Zero while the output is summed, then the sum. Only a container
        // over the field could keep it from being set; then the original's
        // bytes stay.
        let mut layout = layout_in_place(len, rewrites, &[(at, vec![0; 4])]);
        if pe::set_checksum(&mut layout, file, rewrites, at).is_ok() {
            return layout;
        }
    }
    layout_in_place(len, rewrites, &[])
}

/// [`in_place`]'s layout of a file of `len` bytes, with `patches` on the
/// bytes it copies.
fn layout_in_place(len: u64, rewrites: &[Rewrite<'_>], patches: &[(u64, Vec<u8>)]) -> Layout {
    let mut pieces = Vec::new();
    let mut pos = 0;
    for (i, r) in rewrites.iter().enumerate() {
        copy(&mut pieces, pos, r.offset, patches);
        pieces.push(Out::Container(i));
        if r.size > r.new.used {
            pieces.push(Out::Zeros(r.size - r.new.used));
        }
        pos = r.offset + r.size;
    }
    copy(&mut pieces, pos, len, patches);
    Layout {
        pieces,
        len,
        shrunk: false,
    }
}

/// Why a file is not shrunk (it is rewritten in place instead).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fallback {
    /// The file cannot be read as ELF.
    Unreadable(String),
    /// A kind of file not shrunk (yet): non-GNU archives, statically
    /// linked executables, 32-bit or big-endian files, other machines,
    /// non-ELF files.
    Kind(&'static str),
    /// A container is not inside one section, no container is inside a
    /// loaded `.nv_fatbin`, `__nv_relfatbin` or `.hip_fatbin` section, or
    /// an object's containers are in another section or in more than
    /// one.
    Section(String),
    /// The section is not in exactly one `PT_LOAD`, consistently mapped.
    Segment,
    /// A section, segment or table overlaps the section's range.
    Overlap(String),
    /// Something refers into the section other than a registration
    /// record's pointer to a container or a symbol naming one.
    Reference(String),
    /// A relocatable object's section would shrink by less than the
    /// alignment of the sections after it.
    TooLittleToMove {
        /// How much shorter the packed section is.
        freed: u64,
        /// The largest alignment of the sections after it.
        align: u64,
    },
    /// The program header table is not where the loaders look for it
    /// (or could not be put where they would).
    ProgramHeaders(&'static str),
    /// No whole page would be freed once the new program header table is
    /// placed.
    TooLittle {
        /// How much shorter the packed section is.
        freed: u64,
        /// The page size the file moves by.
        page: u64,
    },
}

impl fmt::Display for Fallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fallback::Unreadable(e) => write!(f, "cannot read it as ELF: {e}"),
            Fallback::Kind(k) => write!(
                f,
                "{k}: only shared libraries, dynamically linked programs and \
                 relocatable objects are shrunk"
            ),
            Fallback::Section(e) => f.write_str(e),
            Fallback::Segment => {
                f.write_str("the offload section is not mapped by exactly one PT_LOAD segment")
            }
            Fallback::Overlap(what) => write!(f, "{what} overlaps the offload section"),
            Fallback::Reference(what) => write!(f, "{what}"),
            Fallback::ProgramHeaders(why) => write!(f, "the program header table {why}"),
            Fallback::TooLittleToMove { freed, align } => write!(
                f,
                "the packed section is only {freed} bytes shorter, less than the \
                 {align}-byte alignment of the sections after it"
            ),
            Fallback::TooLittle { freed, page } => write!(
                f,
                "the packed section is only {freed} bytes shorter, which frees no whole page \
                 ({page} bytes) once the new program header table is placed"
            ),
        }
    }
}

impl std::error::Error for Fallback {}

/// The size `file` would have once shrunk with `rewrites`, or why it
/// would not shrink (it keeps its size).
pub fn shrunk_size(file: &[u8], rewrites: &[Rewrite<'_>]) -> Result<u64, Fallback> {
    shrink(file, rewrites).map(|l| l.len)
}

/// The `PT_LOAD` whose file range holds `off..off + len`, mapped so that
/// `off` is at `vaddr`.
fn load_holding(phdrs: &[ProgramHeader], off: u64, len: u64, vaddr: u64) -> bool {
    phdrs.iter().any(|p| {
        p.p_type == PT_LOAD
            && off >= p.offset
            && off.saturating_add(len) <= p.offset.saturating_add(p.filesz)
            && vaddr.wrapping_sub(p.vaddr) == off - p.offset
    })
}

/// The address kernels before Linux 5.18 give a program as `AT_PHDR`
/// (the first `PT_LOAD`'s address minus its offset, plus `e_phoff`),
/// before the load bias.
fn kernel_phdr(phdrs: &[ProgramHeader], phoff: u64) -> Option<u64> {
    let first = phdrs.iter().find(|p| p.p_type == PT_LOAD)?;
    Some(first.vaddr.wrapping_sub(first.offset).wrapping_add(phoff))
}

/// The program header table is where every loader finds it: `PT_PHDR`
/// (which a `program`, one with an interpreter, must have) describes the
/// table at `e_phoff`, inside a `PT_LOAD` that maps it at `PT_PHDR`'s
/// address, and where the kernel may run the file (`run`) its `AT_PHDR`
/// is that address too. [`shrink`] writes its new table so that this
/// stays true.
fn check_phdr(
    h: &elf::Header,
    phdrs: &[ProgramHeader],
    program: bool,
    run: bool,
) -> Result<(), Fallback> {
    let mut tables = phdrs.iter().filter(|p| p.p_type == PT_PHDR);
    let ph = match (tables.next(), tables.next()) {
        (None, _) if !program => return Ok(()),
        (None, _) => return Err(Fallback::ProgramHeaders("of a program has no PT_PHDR")),
        (Some(_), Some(_)) => return Err(Fallback::ProgramHeaders("has two PT_PHDR entries")),
        (Some(ph), None) => ph,
    };
    let size = u64::from(h.phnum) * 56;
    if ph.offset != h.phoff || ph.filesz != size {
        return Err(Fallback::ProgramHeaders(
            "is not where PT_PHDR says (e_phoff, e_phnum)",
        ));
    }
    if !load_holding(phdrs, ph.offset, size, ph.vaddr) {
        return Err(Fallback::ProgramHeaders(
            "(PT_PHDR) is not mapped by a PT_LOAD at its address",
        ));
    }
    if run && kernel_phdr(phdrs, h.phoff) != Some(ph.vaddr) {
        return Err(Fallback::ProgramHeaders(
            "is not at the address kernels before Linux 5.18 compute from the first \
             PT_LOAD and e_phoff",
        ));
    }
    Ok(())
}

/// Appends a copy of `from..to` of the input to `pieces`, with `patches`
/// (offset in the input, new bytes; sorted, not overlapping) applied.
fn copy(pieces: &mut Vec<Out>, from: u64, to: u64, patches: &[(u64, Vec<u8>)]) {
    let mut at = from;
    for (off, bytes) in patches {
        let end = off + bytes.len() as u64;
        if end <= from || *off >= to {
            continue;
        }
        if *off > at {
            pieces.push(Out::Copy {
                from: at,
                len: off - at,
            });
        }
        let skip = at.saturating_sub(*off) as usize;
        let keep = (end.min(to) - off) as usize;
        pieces.push(Out::Bytes(bytes[skip..keep].to_vec()));
        at = end.min(to);
    }
    if to > at {
        pieces.push(Out::Copy {
            from: at,
            len: to - at,
        });
    }
}

/// Where a run of the section's old bytes goes.
#[derive(Clone, Copy, Debug)]
struct Block {
    /// Old file offsets.
    old: (u64, u64),
    /// New file offset of its start.
    new: u64,
    /// The rewrite it is, or `None`: bytes moved unchanged.
    rewrite: Option<usize>,
}

/// Where each address of the section goes.
struct Moves {
    sec: SectionHeader,
    blocks: Vec<Block>,
    new_size: u64,
}

/// What an address of the section maps to.
enum Target {
    /// The start of rewrite `i`, now at this address.
    Container(usize, u64),
    /// An address in bytes moved unchanged: now this, and the block's old
    /// end address.
    Moved(u64, u64),
}

impl Moves {
    /// The new value and size of a symbol (`what`) at `value` in the
    /// section, `size` long: a container's start (its size follows the
    /// container's when it was the container's), or bytes moved whole.
    fn symbol(
        &self,
        rewrites: &[Rewrite<'_>],
        value: u64,
        size: u64,
        what: &dyn Fn() -> String,
    ) -> Result<(u64, u64), Fallback> {
        match self.map(value) {
            Some(Target::Container(i, new)) => {
                let r = &rewrites[i];
                if size == r.size {
                    Ok((new, r.new.used))
                } else if size <= r.new.used {
                    Ok((new, size))
                } else {
                    Err(Fallback::Reference(format!(
                        "{} spans more than its container",
                        what()
                    )))
                }
            }
            Some(Target::Moved(new, end)) if value + size <= end => Ok((new, size)),
            _ => Err(Fallback::Reference(format!(
                "{} points into the middle of a container or at freed bytes",
                what()
            ))),
        }
    }

    /// The pieces of the packed section, from its file offset; returns
    /// the offset after them.
    fn pieces(&self, rewrites: &[Rewrite<'_>], pieces: &mut Vec<Out>) -> u64 {
        let mut at = self.sec.offset;
        for b in &self.blocks {
            if b.new > at {
                pieces.push(Out::Zeros(b.new - at));
            }
            match b.rewrite {
                Some(i) => {
                    pieces.push(Out::Container(i));
                    at = b.new + rewrites[i].new.used;
                }
                None => {
                    copy(pieces, b.old.0, b.old.1, &[]);
                    at = b.new + (b.old.1 - b.old.0);
                }
            }
        }
        at
    }

    fn contains(&self, addr: u64) -> bool {
        addr >= self.sec.addr && addr - self.sec.addr < self.sec.size
    }

    fn map(&self, addr: u64) -> Option<Target> {
        let off = self.sec.offset + (addr - self.sec.addr);
        // The blocks are in file order and do not overlap (see `pack`):
        // a binary search, as a library has tens of thousands of them
        // and a relocation per container.
        let b = self.blocks[self.blocks.partition_point(|b| b.old.1 <= off)..]
            .first()
            .filter(|b| off >= b.old.0)?;
        let new = self.sec.addr + (b.new - self.sec.offset) + (off - b.old.0);
        match b.rewrite {
            Some(i) if off == b.old.0 => Some(Target::Container(i, new)),
            Some(_) => None,
            None => Some(Target::Moved(
                new,
                self.sec.addr + (b.old.1 - self.sec.offset),
            )),
        }
    }
}

fn align_up(v: u64, a: u64) -> Option<u64> {
    Some(v.checked_add(a - 1)? & !(a - 1))
}

/// Whether `v` is in `a..b`.
fn in_range(v: u64, a: u64, b: u64) -> bool {
    v >= a && v < b
}

fn align_down(v: u64, a: u64) -> u64 {
    v & !(a - 1)
}

/// The smallest offset at or after `cursor` congruent with `old` modulo
/// `align`.
fn place(cursor: u64, old: u64, align: u64) -> u64 {
    let want = old % align;
    let base = align_down(cursor, align) + want;
    if base >= cursor {
        base
    } else {
        base + align
    }
}

/// Packs the section's containers (see the module documentation).
fn pack(
    file: &[u8],
    sec: SectionHeader,
    rewrites: &[Rewrite<'_>],
    range: std::ops::Range<usize>,
) -> Option<Moves> {
    let align = sec.addralign.max(8);
    if !align.is_power_of_two() || sec.offset % align != sec.addr % align {
        return None;
    }
    let end = sec.offset + sec.size;
    let mut blocks = Vec::new();
    let mut cursor = sec.offset;
    let mut at = sec.offset;
    let opaque = |a: u64, b: u64, cursor: &mut u64, blocks: &mut Vec<Block>| {
        if b <= a {
            return;
        }
        let bytes = &file[a as usize..b as usize];
        let Some(k) = bytes.iter().position(|&x| x != 0) else {
            return;
        };
        let start = align_down(a + k as u64 - sec.offset, align) + sec.offset;
        let start = start.max(a);
        let new = place(*cursor, start, align);
        blocks.push(Block {
            old: (start, b),
            new,
            rewrite: None,
        });
        *cursor = new + (b - start);
    };
    for i in range {
        let r = &rewrites[i];
        opaque(at, r.offset, &mut cursor, &mut blocks);
        let new = place(cursor, r.offset, align);
        blocks.push(Block {
            old: (r.offset, r.offset + r.size),
            new,
            rewrite: Some(i),
        });
        cursor = new + r.new.used;
        at = r.offset + r.size;
    }
    opaque(at, end, &mut cursor, &mut blocks);
    Some(Moves {
        sec,
        blocks,
        new_size: cursor - sec.offset,
    })
}

/// The registration records' pointer slots (sorted), and the containers
/// they were found pointing at.
struct Fixer {
    slots: Vec<u64>,
    /// A set: a library has tens of thousands of containers.
    targeted: std::collections::HashSet<u64>,
}

impl Fixer {
    /// Whether `addr` is a record's pointer (a library holds thousands of
    /// records and millions of relocations: a binary search).
    fn is_slot(&self, addr: u64) -> bool {
        self.slots.binary_search(&addr).is_ok()
    }

    /// The new value of a pointer at `slot` to `old` (in the section).
    fn fix(&mut self, moves: &Moves, slot: u64, old: u64, what: &str) -> Result<u64, Fallback> {
        if !self.is_slot(slot) {
            return Err(Fallback::Reference(format!(
                "{what} at {slot:#x} points into the offload section at {old:#x}, \
                 and is not a registration record's pointer"
            )));
        }
        match moves.map(old) {
            Some(Target::Container(_, new)) => {
                if !self.targeted.insert(old) {
                    return Err(Fallback::Reference(format!(
                        "two registration records point at the container at {old:#x}"
                    )));
                }
                Ok(new)
            }
            Some(Target::Moved(new, _)) => Ok(new),
            None => Err(Fallback::Reference(format!(
                "the registration record at {:#x} points into the middle of a container \
                 or at freed bytes ({old:#x})",
                slot.wrapping_sub(8)
            ))),
        }
    }

    /// Updates the word stored at address `slot` (a relative relocation
    /// applied in place) when it points into the section.
    fn in_place_word<'m>(
        &mut self,
        elf: &Elf<'_>,
        phdrs: &[ProgramHeader],
        find: &dyn Fn(u64) -> Option<&'m Moves>,
        slot: u64,
        what: &str,
        patches: &mut Vec<(u64, Vec<u8>)>,
    ) -> Result<(), Fallback> {
        let Some(off) = elf.offset_of(phdrs, slot) else {
            return Ok(());
        };
        let Some(old) = elf.u64_at(off) else {
            return Ok(());
        };
        if let Some(moves) = find(old) {
            let new = self.fix(moves, slot, old, what)?;
            patches.push((off, new.to_le_bytes().to_vec()));
        }
        Ok(())
    }
}

/// Adds the section header updates (the section's new size, the moved
/// sections' offsets) to `patches`, sorts them, and checks that none
/// overlaps another or falls in the section (`outside` says where not).
fn finish_patches(
    elf: &Elf<'_>,
    h: &elf::Header,
    sizes: &[(usize, u64)],
    shift: &dyn Fn(u64) -> u64,
    outside: &dyn Fn(u64, u64) -> bool,
    patches: &mut Vec<(u64, Vec<u8>)>,
) -> Result<(), Fallback> {
    for (i, s) in elf.secs.iter().enumerate().skip(1) {
        let at = h.shoff + i as u64 * 64;
        if let Some((_, new_size)) = sizes.iter().find(|(si, _)| *si == i) {
            patches.push((at + 32, new_size.to_le_bytes().to_vec()));
        }
        if shift(s.offset) != s.offset {
            patches.push((at + 24, shift(s.offset).to_le_bytes().to_vec()));
        }
    }
    patches.sort_by_key(|p| p.0);
    if patches
        .windows(2)
        .any(|w| w[0].0 + w[0].1.len() as u64 > w[1].0)
        || patches
            .iter()
            .any(|(off, b)| !outside(*off, b.len() as u64))
    {
        return Err(Fallback::Reference(
            "two updates fall on the same bytes".to_owned(),
        ));
    }
    Ok(())
}

/// The ELF facts [`shrink`] works from.
struct Elf<'a> {
    file: &'a [u8],
    e: Endian,
    secs: Vec<SectionHeader>,
    names: Vec<&'a [u8]>,
}

impl<'a> Elf<'a> {
    fn bytes(&self, off: u64, len: u64) -> Option<&'a [u8]> {
        Bytes::new(self.file).slice(off, len)
    }

    fn u64_at(&self, off: u64) -> Option<u64> {
        Bytes::new(self.file).u64_at(off, self.e)
    }

    fn name(&self, i: usize) -> String {
        format!("section {}", String::from_utf8_lossy(self.names[i]))
    }

    /// A section's contents (`None`: outside the file).
    fn contents(&self, i: usize) -> Option<&'a [u8]> {
        let s = &self.secs[i];
        if s.sh_type == SHT_NOBITS {
            return Some(&[]);
        }
        self.bytes(s.offset, s.size)
    }

    /// The file offset of address `vaddr`.
    fn offset_of(&self, phdrs: &[ProgramHeader], vaddr: u64) -> Option<u64> {
        phdrs
            .iter()
            .filter(|p| p.p_type == PT_LOAD)
            .find(|p| vaddr >= p.vaddr && vaddr - p.vaddr < p.filesz)
            .map(|p| p.offset + (vaddr - p.vaddr))
    }
}

/// Whether [`shrink`] or [`in_place`] of `file` reads the new contents of
/// the rewrites (a PE image's checksum covers them; an archive's members
/// may be PE images). Where neither does, a caller may hand them rewrites
/// holding only their lengths ([`Thinned::used`], no pieces) and make the
/// bytes again for the write.
pub fn reads_contents(file: &[u8]) -> bool {
    file.starts_with(b"MZ") || file.starts_with(b"!<arch>\n")
}

/// The output of `file` with its containers rewritten (`rewrites`, in
/// file order) and the freed bytes taken out, or why it cannot be shrunk
/// safely (see the module documentation).
pub fn shrink(file: &[u8], rewrites: &[Rewrite<'_>]) -> Result<Layout, Fallback> {
    #[cfg(feature = "archive")]
    if file.starts_with(b"!<arch>\n") {
        return shrink_archive(file, rewrites);
    }
    if file.starts_with(b"MZ") {
        return pe::shrink(file, rewrites);
    }
    let parsed = ElfFile::parse(file).map_err(|e| match e {
        crate::objfile::Error::UnknownFormat => Fallback::Kind("not an ELF file"),
        e => Fallback::Unreadable(e.to_string()),
    })?;
    let h = parsed.header().clone();
    if !h.class.is64 || h.class.big_endian {
        return Err(Fallback::Kind("a 32-bit or big-endian file"));
    }
    let relative = match h.machine {
        EM_X86_64 => R_X86_64_RELATIVE,
        EM_AARCH64 => R_AARCH64_RELATIVE,
        _ => {
            return Err(Fallback::Kind(
                "a file for a machine other than x86-64 and AArch64",
            ))
        }
    };
    if !matches!(h.e_type, ET_DYN | ET_REL | ET_EXEC) {
        return Err(Fallback::Kind("an ELF file of another type"));
    }
    let unreadable = |e: crate::objfile::Error| Fallback::Unreadable(e.to_string());
    let phdrs = parsed.program_headers().map_err(unreadable)?;
    // A program (with an interpreter): the kernel tells the dynamic
    // loader where its program headers are in memory.
    let program = phdrs.iter().any(|p| p.p_type == PT_INTERP);
    if h.e_type == ET_EXEC && !program {
        return Err(Fallback::Kind("a statically linked executable"));
    }
    // Whether the kernel may run it (a program, a static PIE, a library
    // with an entry point): then its new program header table must be
    // where the kernel says it is.
    let run = program || h.entry != 0;
    check_phdr(&h, &phdrs, program, run)?;
    let secs = parsed.section_headers().to_vec();
    let shstr = parsed
        .string_table(usize::from(h.shstrndx))
        .map_err(unreadable)?;
    let names = secs
        .iter()
        .map(|s| elf::symbol_name(shstr, s.name).unwrap_or(b"?"))
        .collect();
    let elf = Elf {
        file,
        e: Endian::Little,
        secs,
        names,
    };
    check_rewrites(rewrites)?;
    // The sections holding the containers, in file order, each with the
    // rewrites it holds.
    let mut groups: Vec<(usize, std::ops::Range<usize>)> = Vec::new();
    for (ri, r) in rewrites.iter().enumerate() {
        let end = r.offset + r.size;
        let si = (1..elf.secs.len())
            .find(|&i| {
                let s = &elf.secs[i];
                s.sh_type != SHT_NOBITS
                    && s.offset <= r.offset
                    && s.offset.saturating_add(s.size) >= end
            })
            .ok_or_else(|| {
                Fallback::Section(format!(
                    "the container at {:#x} is not inside one section",
                    r.offset
                ))
            })?;
        if let Some((_, range)) = groups.last_mut().filter(|(g, _)| *g == si) {
            range.end = ri + 1;
        } else if groups.iter().any(|(g, _)| *g == si) {
            return Err(Fallback::Section(format!(
                "the containers of {} are not together",
                elf.name(si)
            )));
        } else {
            groups.push((si, ri..ri + 1));
        }
    }
    let mut kind = None;
    // Containers in a section of another name (cuBLASLt's
    // `.cask_resource`, which its own tables point into) keep their
    // places in a library or program: laid out in place, the section
    // and every address in it unchanged, while the offload sections
    // shrink. Only such sections: the file keeps its layout, saying why.
    let foreign_why = |si: usize| {
        Fallback::Section(format!(
            "the containers are in {}, not .nv_fatbin, __nv_relfatbin or .hip_fatbin",
            elf.name(si)
        ))
    };
    let mut foreign: Vec<usize> = Vec::new();
    for (si, _) in &groups {
        let k = match elf.names[*si] {
            b".nv_fatbin" | b"__nv_relfatbin" => (&b".nvFatBinSegment"[..], NV_WRAPPER_MAGIC),
            b".hip_fatbin" => (&b".hipFatBinSegment"[..], HIP_WRAPPER_MAGIC),
            _ if h.e_type == ET_REL => return Err(foreign_why(*si)),
            _ => {
                foreign.push(*si);
                continue;
            }
        };
        if kind.is_some_and(|o| o != k) {
            return Err(Fallback::Section(
                "the containers are in both NVIDIA and AMD sections".to_owned(),
            ));
        }
        kind = Some(k);
        let sec = elf.secs[*si];
        if sec.flags & SHF_ALLOC == 0 || elf.contents(*si).is_none() {
            return Err(Fallback::Section(format!(
                "{} is not loaded",
                elf.name(*si)
            )));
        }
    }
    let Some((wrapper_section, magic)) = kind else {
        return Err(match foreign.first() {
            Some(&si) => foreign_why(si),
            None => Fallback::Section("no containers".to_owned()),
        });
    };
    if h.e_type == ET_REL {
        let [(si, _)] = groups[..] else {
            return Err(Fallback::Section(
                "a relocatable object's containers are in more than one section".to_owned(),
            ));
        };
        return shrink_object(&elf, &h, si, rewrites);
    }
    // What moves, moves by whole pages: the largest `p_align` of the
    // `PT_LOAD`s, or the machine's largest page size where segments are
    // aligned more (2 MiB for huge pages); a moved segment then gets that
    // page size as its `p_align` (the dynamic loader asks each segment's
    // offset and address to agree modulo its own `p_align`, and aligns
    // the whole mapping to the largest, which the first keeps).
    let largest = phdrs
        .iter()
        .filter(|p| p.p_type == PT_LOAD)
        .map(|p| p.align)
        .max()
        .unwrap_or(0)
        .max(4096);
    let machine_page = if h.machine == EM_AARCH64 { 65536 } else { 4096 };
    let page = largest.min(machine_page);
    if !largest.is_power_of_two()
        || phdrs.iter().any(|p| {
            p.p_type == PT_LOAD
                && (p.offset % page != p.vaddr % page
                    || (p.align > 1 && !p.align.is_power_of_two()))
        })
    {
        return Err(Fallback::Segment);
    }
    // Each section packed, with the one PT_LOAD mapping it.
    let mut holes: Vec<Hole> = Vec::new();
    for (si, range) in &groups {
        let hole = place_hole(&elf, &phdrs, page, *si, range.clone(), rewrites);
        let is_foreign = foreign.contains(si);
        let mut hole = hole.map_err(|e| if is_foreign { foreign_why(*si) } else { e })?;
        hole.foreign = is_foreign;
        hole.split &= !is_foreign;
        holes.push(hole);
    }
    // Which sections free whole pages, and the one holding the new
    // program header table (one entry longer per section split), right
    // after its packed containers, in the part of the segment that keeps
    // its place: the one losing least to it. Where the kernel may run the
    // file, only the first section to split (nothing before it moves) in
    // a segment mapped as the first `PT_LOAD` is (its offset and address
    // then differ as the first's do: see [`kernel_phdr`]). A section
    // freeing no page keeps its layout.
    let freed: u64 = holes
        .iter()
        .filter(|o| !o.foreign)
        .map(|o| o.moves.sec.size - o.moves.new_size)
        .sum();
    let delta = |li: usize| phdrs[li].vaddr.wrapping_sub(phdrs[li].offset);
    let first_delta = phdrs
        .iter()
        .position(|p| p.p_type == PT_LOAD)
        .map_or(0, delta);
    let (phsz, host, tab) = loop {
        let splits = holes.iter().filter(|o| o.split).count() as u64;
        if splits == 0 {
            return Err(Fallback::TooLittle { freed, page });
        }
        let phnum = u64::from(h.phnum) + splits;
        if phnum >= u64::from(u16::MAX) {
            return Err(Fallback::Overlap("the program header count".to_owned()));
        }
        let phsz = 56 * phnum;
        let first_split = holes.iter().position(|o| o.split);
        if run && first_split.is_some_and(|k| delta(holes[k].li) != first_delta) {
            return Err(Fallback::ProgramHeaders(
                "cannot follow the offload section: its segment's offsets and addresses \
                 differ by another amount than the first PT_LOAD's, and kernels before \
                 Linux 5.18 would compute another address for it",
            ));
        }
        let best = (0..holes.len())
            .filter(|&k| holes[k].split && (!run || Some(k) == first_split))
            .filter_map(|k| {
                let o = &holes[k];
                let tab = align_up(o.moves.sec.addr + o.moves.new_size, 8)?;
                let lowest = align_up(tab.checked_add(phsz)?, page)?;
                (align_down(o.addr_end, page) > lowest).then_some((lowest - o.lowest, k, tab))
            })
            .min_by_key(|&(loss, k, _)| (loss, k));
        if let Some((_, k, tab)) = best {
            break (phsz, k, tab);
        }
        // No room: the section freeing least keeps its layout.
        if let Some(k) = (0..holes.len())
            .filter(|&k| holes[k].split)
            .min_by_key(|&k| align_down(holes[k].addr_end, page) - holes[k].lowest)
        {
            holes[k].split = false;
        }
    };
    let mut total = 0u64;
    for (k, o) in holes.iter_mut().enumerate() {
        o.before = total;
        if !o.split {
            continue;
        }
        if k == host {
            o.tab = Some((tab, phsz));
            o.lowest = align_up(tab + phsz, page).ok_or(Fallback::Segment)?;
        }
        o.x = align_down(o.addr_end, page);
        o.d = o.x - o.lowest;
        total += o.d;
    }
    let holes = holes;
    let moved: Vec<&Hole> = holes.iter().filter(|o| o.split).collect();
    let kept: Vec<&Rewrite<'_>> = holes
        .iter()
        .filter(|o| !o.split)
        .flat_map(|o| &rewrites[o.range.clone()])
        .collect();
    let shift = |off: u64| {
        off - moved
            .iter()
            .filter(|o| off >= o.sec_end())
            .map(|o| o.d)
            .sum::<u64>()
    };
    let find = |addr: u64| {
        moved
            .iter()
            .find(|o| o.moves.contains(addr))
            .map(|o| &o.moves)
    };
    let contains = |addr: u64| find(addr).is_some();
    // Everything else lies wholly before or after each moved section.
    let outside = |off: u64, len: u64| {
        moved
            .iter()
            .all(|o| off.saturating_add(len) <= o.moves.sec.offset || off >= o.sec_end())
    };
    // Patches also stay clear of the containers laid out in place.
    let clear = |off: u64, len: u64| {
        outside(off, len)
            && kept
                .iter()
                .all(|r| off.saturating_add(len) <= r.offset || off >= r.offset + r.size)
    };
    for o in &moved {
        let sec = o.moves.sec;
        let sec_end = o.sec_end();
        let alone = |off: u64, len: u64| off.saturating_add(len) <= sec.offset || off >= sec_end;
        let in_addr = |a: u64, len: u64| a < o.addr_end && sec.addr < a.saturating_add(len);
        for (i, s) in elf.secs.iter().enumerate().skip(1) {
            if i == o.si {
                continue;
            }
            let len = if s.sh_type == SHT_NOBITS { 0 } else { s.size };
            if !alone(s.offset, len) || (s.flags & SHF_ALLOC != 0 && in_addr(s.addr, s.size.max(1)))
            {
                return Err(Fallback::Overlap(elf.name(i)));
            }
        }
        for (i, p) in phdrs.iter().enumerate() {
            if i != o.li
                && (!alone(p.offset, p.filesz) || (p.memsz > 0 && in_addr(p.vaddr, p.memsz)))
            {
                return Err(Fallback::Overlap(format!("program header {i}")));
            }
        }
    }
    let shtab = u64::from(h.shnum) * 64;
    if !outside(h.shoff, shtab) {
        return Err(Fallback::Overlap("the section header table".to_owned()));
    }
    if !outside(h.phoff, u64::from(h.phnum) * 56) {
        return Err(Fallback::Overlap("the program header table".to_owned()));
    }
    if contains(h.entry) {
        return Err(Fallback::Reference("the entry point".to_owned()));
    }

    let mut patches: Vec<(u64, Vec<u8>)> = Vec::new();
    // Registration records' pointer slots (sorted, for `Fixer::is_slot`).
    let mut slots: Vec<u64> = Vec::new();
    for (i, s) in elf.secs.iter().enumerate() {
        if elf.names[i] == wrapper_section && s.sh_type != SHT_NOBITS {
            let data = elf.contents(i).unwrap_or(&[]);
            let mut at = 0;
            while at + RECORD <= data.len() as u64 {
                if Bytes::new(data).u32_at(at, Endian::Little) == Some(magic) {
                    slots.push(s.addr + at + 8);
                }
                at += RECORD;
            }
        }
    }
    slots.sort_unstable();
    let mut fixer = Fixer {
        slots,
        targeted: std::collections::HashSet::new(),
    };
    // Symbols.
    for (ti, t) in elf.secs.iter().enumerate() {
        if t.sh_type != SHT_SYMTAB && t.sh_type != SHT_DYNSYM {
            continue;
        }
        let data = elf
            .contents(ti)
            .ok_or_else(|| Fallback::Unreadable(format!("{} is outside the file", elf.name(ti))))?;
        for (k, raw) in data.chunks_exact(24).enumerate() {
            let b = Bytes::new(raw);
            let shndx = u32::from(b.u16_at(6, Endian::Little).unwrap_or(0));
            let value = b.u64_at(8, Endian::Little).unwrap_or(0);
            let size = b.u64_at(16, Endian::Little).unwrap_or(0);
            let is_section = raw[4] & 0xf == 3;
            let own = moved.iter().find(|o| o.si == shndx as usize);
            let at_moves = find(value);
            if shndx == SHN_UNDEF || (own.is_none() && at_moves.is_none()) {
                continue;
            }
            let what = || format!("symbol {k} of {}", elf.name(ti));
            let Some(own) = own.filter(|_| shndx != SHN_ABS) else {
                return Err(Fallback::Reference(format!(
                    "{} has an address in the offload section",
                    what()
                )));
            };
            let at = t.offset + k as u64 * 24;
            let (new_value, new_size) = match at_moves {
                Some(m) if m.sec.addr == own.moves.sec.addr => {
                    if is_section && value == m.sec.addr {
                        continue;
                    }
                    m.symbol(rewrites, value, size, &what)?
                }
                None if value == own.addr_end => (own.moves.sec.addr + own.moves.new_size, size),
                _ => {
                    return Err(Fallback::Reference(format!(
                        "{} has an address in the offload section",
                        what()
                    )))
                }
            };
            if new_value != value {
                patches.push((at + 8, new_value.to_le_bytes().to_vec()));
            }
            if new_size != size {
                patches.push((at + 16, new_size.to_le_bytes().to_vec()));
            }
        }
    }
    // Relocations.
    for (ri, r) in elf.secs.iter().enumerate() {
        let rela = match r.sh_type {
            SHT_RELA => true,
            SHT_REL => false,
            SHT_RELR => {
                let data = elf.contents(ri).ok_or_else(|| {
                    Fallback::Unreadable(format!("{} is outside the file", elf.name(ri)))
                })?;
                let mut base = 0u64;
                for raw in data.chunks_exact(8) {
                    let entry = u64::from_le_bytes(raw.try_into().unwrap_or_default());
                    if entry & 1 == 0 {
                        fixer.in_place_word(
                            &elf,
                            &phdrs,
                            &find,
                            entry,
                            "a relocation",
                            &mut patches,
                        )?;
                        base = entry.wrapping_add(8);
                    } else {
                        let mut bits = entry >> 1;
                        let mut at = base;
                        while bits != 0 {
                            if bits & 1 != 0 {
                                fixer.in_place_word(
                                    &elf,
                                    &phdrs,
                                    &find,
                                    at,
                                    "a relocation",
                                    &mut patches,
                                )?;
                            }
                            bits >>= 1;
                            at = at.wrapping_add(8);
                        }
                        base = base.wrapping_add(63 * 8);
                    }
                }
                continue;
            }
            _ => continue,
        };
        let size = if rela { 24 } else { 16 };
        let data = elf
            .contents(ri)
            .ok_or_else(|| Fallback::Unreadable(format!("{} is outside the file", elf.name(ri))))?;
        // The symbol table the relocations name.
        let symtab = elf
            .secs
            .get(r.link as usize)
            .filter(|s| s.sh_type == SHT_SYMTAB || s.sh_type == SHT_DYNSYM)
            .and_then(|_| elf.contents(r.link as usize));
        let what = || format!("a relocation of {}", elf.name(ri));
        for (k, raw) in data.chunks_exact(size).enumerate() {
            let b = Bytes::new(raw);
            let offset = b.u64_at(0, Endian::Little).unwrap_or(0);
            let info = b.u64_at(8, Endian::Little).unwrap_or(0);
            let addend = if rela {
                b.u64_at(16, Endian::Little).unwrap_or(0)
            } else {
                0
            };
            let (sym, r_type) = ((info >> 32) as usize, info as u32);
            if contains(offset) {
                return Err(Fallback::Reference(format!(
                    "{} applies inside the offload section",
                    what()
                )));
            }
            let sym_value = if sym == 0 {
                None
            } else {
                let s = symtab.and_then(|t| t.get(sym * 24..sym * 24 + 24));
                let Some(s) = s else {
                    return Err(Fallback::Unreadable(format!(
                        "{} names a symbol its table lacks",
                        what()
                    )));
                };
                let shndx = u32::from(u16::from_le_bytes([s[6], s[7]]));
                let value = u64::from_le_bytes(s[8..16].try_into().unwrap_or_default());
                (shndx != SHN_UNDEF).then_some((shndx, value))
            };
            if let Some((shndx, value)) = sym_value {
                if moved.iter().any(|o| o.si == shndx as usize)
                    || contains(value)
                    || contains(value.wrapping_add(addend))
                {
                    return Err(Fallback::Reference(format!(
                        "{} refers to a symbol in the offload section",
                        what()
                    )));
                }
                continue;
            }
            if sym != 0 {
                continue;
            }
            if r_type == relative && rela {
                if let Some(m) = find(addend) {
                    let new = fixer.fix(m, offset, addend, &what())?;
                    patches.push((r.offset + k as u64 * 24 + 16, new.to_le_bytes().to_vec()));
                    // A value also stored in place (--apply-dynamic-relocs).
                    if let Some(off) = elf.offset_of(&phdrs, offset) {
                        if elf.u64_at(off) == Some(addend) {
                            patches.push((off, new.to_le_bytes().to_vec()));
                        }
                    }
                } else if fixer.is_slot(offset) && !holes.iter().any(|o| o.moves.contains(addend)) {
                    // (A container in a section keeping its layout stays.)
                    return Err(Fallback::Reference(format!(
                        "the registration record at {:#x} points outside the offload section",
                        offset - 8
                    )));
                }
            } else if r_type == relative {
                fixer.in_place_word(&elf, &phdrs, &find, offset, &what(), &mut patches)?;
            } else if contains(addend) {
                return Err(Fallback::Reference(format!(
                    "{} (type {r_type}) refers into the offload section",
                    what()
                )));
            }
        }
    }

    // A program that is not position-independent has no relocations for
    // its pointers: they are stored as addresses. Every aligned word of
    // its loaded data (not code, not the offload sections, not the
    // symbol tables read above) holding an address in a moved section
    // must be a registration record's pointer, and gets its container's
    // new address.
    if h.e_type == ET_EXEC {
        for (i, s) in elf.secs.iter().enumerate() {
            let data_kind = matches!(
                s.sh_type,
                SHT_PROGBITS | SHT_INIT_ARRAY | SHT_FINI_ARRAY | SHT_PREINIT_ARRAY
            );
            if !data_kind
                || s.flags & SHF_ALLOC == 0
                || s.flags & SHF_EXECINSTR != 0
                || holes.iter().any(|o| o.si == i)
            {
                continue;
            }
            let data = elf.contents(i).ok_or_else(|| {
                Fallback::Unreadable(format!("{} is outside the file", elf.name(i)))
            })?;
            let what = format!("an address stored in {}", elf.name(i));
            let skip = ((8 - s.addr % 8) % 8) as usize;
            for (k, raw) in data.get(skip..).unwrap_or(&[]).chunks_exact(8).enumerate() {
                let value = u64::from_le_bytes(raw.try_into().unwrap_or_default());
                if let Some(m) = find(value) {
                    let at = (skip + k * 8) as u64;
                    let new = fixer.fix(m, s.addr.wrapping_add(at), value, &what)?;
                    patches.push((s.offset + at, new.to_le_bytes().to_vec()));
                }
            }
        }
    }

    // The new program header table: each PT_LOAD holding split sections
    // becomes one segment more per section, the first keeping its start
    // and ending with the first packed section (and the table, after the
    // section holding it), each next one starting at the page below that
    // section's old end.
    let x_new_off = |o: &Hole| o.x_old_off(&phdrs) - o.before - o.d;
    let host_hole = &holes[host];
    let tab_off = shift(host_hole.part_end_off() - phsz);
    let mut table: Vec<ProgramHeader> = Vec::with_capacity(phsz as usize / 56);
    let mut put = |p: &ProgramHeader| {
        table.push(ProgramHeader {
            align: if p.p_type == PT_LOAD
                && p.align > page
                && p.vaddr.wrapping_sub(p.offset) % p.align != 0
            {
                page
            } else {
                p.align
            },
            ..*p
        })
    };
    for (i, p) in phdrs.iter().enumerate() {
        let cuts: Vec<&&Hole> = moved.iter().filter(|o| o.li == i).collect();
        if let Some(first) = cuts.first() {
            let head_len = first.part_end_off() - p.offset;
            put(&ProgramHeader {
                offset: shift(p.offset),
                filesz: head_len,
                memsz: head_len,
                ..*p
            });
            for (j, o) in cuts.iter().enumerate() {
                let start_off = o.x_old_off(&phdrs);
                let (filesz, memsz) = match cuts.get(j + 1) {
                    Some(n) => (n.part_end_off() - start_off, n.part_end_off() - start_off),
                    None => (p.offset + p.filesz - start_off, p.vaddr + p.memsz - o.x),
                };
                // A later part keeps execute permission only if it holds
                // code.
                let code = elf.secs.iter().any(|s| {
                    s.flags & SHF_ALLOC != 0
                        && s.flags & SHF_EXECINSTR != 0
                        && s.size > 0
                        && in_range(s.addr, o.x, o.x + memsz)
                });
                put(&ProgramHeader {
                    offset: x_new_off(o),
                    flags: if code { p.flags } else { p.flags & !PF_X },
                    vaddr: o.x,
                    paddr: p.paddr.wrapping_add(o.x - p.vaddr),
                    filesz,
                    memsz,
                    ..*p
                });
            }
        } else if p.p_type == PT_PHDR {
            let (addr, _) = host_hole.tab.unwrap_or_default();
            put(&ProgramHeader {
                offset: tab_off,
                vaddr: addr,
                paddr: p.paddr.wrapping_add(addr.wrapping_sub(p.vaddr)),
                filesz: phsz,
                memsz: phsz,
                ..*p
            });
        } else {
            put(&ProgramHeader {
                offset: shift(p.offset),
                ..*p
            });
        }
    }
    // The loaders find the new table as they found the old one.
    let new_header = elf::Header {
        phoff: tab_off,
        phnum: table.len() as u16,
        ..h.clone()
    };
    check_phdr(&new_header, &table, program, run)?;
    let table: Vec<u8> = table
        .iter()
        .flat_map(|p| {
            let mut b = Vec::with_capacity(56);
            b.extend_from_slice(&p.p_type.to_le_bytes());
            b.extend_from_slice(&p.flags.to_le_bytes());
            for v in [p.offset, p.vaddr, p.paddr, p.filesz, p.memsz, p.align] {
                b.extend_from_slice(&v.to_le_bytes());
            }
            b
        })
        .collect();
    // The file header: e_phoff, e_shoff, e_phnum.
    patches.push((32, tab_off.to_le_bytes().to_vec()));
    patches.push((40, shift(h.shoff).to_le_bytes().to_vec()));
    patches.push((56, new_header.phnum.to_le_bytes().to_vec()));
    // The section headers: offsets, and the sections' sizes.
    let sizes: Vec<(usize, u64)> = moved.iter().map(|o| (o.si, o.moves.new_size)).collect();
    finish_patches(&elf, &h, &sizes, &shift, &clear, &mut patches)?;

    let mut pieces = Vec::new();
    let mut pos = 0;
    for (k, o) in holes.iter().enumerate() {
        if o.split {
            let sec = o.moves.sec;
            copy(&mut pieces, pos, sec.offset, &patches);
            let end = o.moves.pieces(rewrites, &mut pieces);
            debug_assert_eq!(end, o.new_end_off());
            if k == host {
                pieces.push(Out::Zeros(o.part_end_off() - phsz - end));
                pieces.push(Out::Bytes(table.clone()));
            }
            let x_old_off = o.x_old_off(&phdrs);
            pieces.push(Out::Zeros(x_old_off - o.d - o.part_end_off()));
            pieces.push(Out::Zeros(o.sec_end() - x_old_off));
            pos = o.sec_end();
        } else {
            for i in o.range.clone() {
                let r = &rewrites[i];
                copy(&mut pieces, pos, r.offset, &patches);
                pieces.push(Out::Container(i));
                pieces.push(Out::Zeros(r.size - r.new.used));
                pos = r.offset + r.size;
            }
        }
    }
    copy(&mut pieces, pos, file.len() as u64, &patches);
    pieces.retain(|p| p.len(rewrites) > 0);
    let len = file.len() as u64 - total;
    debug_assert_eq!(pieces.iter().map(|p| p.len(rewrites)).sum::<u64>(), len);
    Ok(Layout {
        pieces,
        len,
        shrunk: true,
    })
}

/// Section `si`, holding `rewrites[range]`, packed, with the one
/// `PT_LOAD` mapping it (pages of `page` bytes).
fn place_hole(
    elf: &Elf<'_>,
    phdrs: &[ProgramHeader],
    page: u64,
    si: usize,
    range: std::ops::Range<usize>,
    rewrites: &[Rewrite<'_>],
) -> Result<Hole, Fallback> {
    let sec = elf.secs[si];
    let sec_end = sec.offset + sec.size;
    let addr_end = sec
        .addr
        .checked_add(sec.size)
        .ok_or_else(|| Fallback::Unreadable("section past the address space".to_owned()))?;
    let loads: Vec<usize> = (0..phdrs.len())
        .filter(|&i| {
            let p = &phdrs[i];
            p.p_type == PT_LOAD && p.offset < sec_end && sec.offset < p.offset + p.filesz
        })
        .collect();
    let [li] = loads[..] else {
        return Err(Fallback::Segment);
    };
    let load = phdrs[li];
    if sec.offset < load.offset
        || sec_end > load.offset + load.filesz
        || sec.addr.checked_sub(load.vaddr) != Some(sec.offset - load.offset)
    {
        return Err(Fallback::Segment);
    }
    let moves = pack(elf.file, sec, rewrites, range.clone())
        .ok_or_else(|| Fallback::Section(format!("{} is misaligned", elf.name(si))))?;
    let lowest = align_up(sec.addr + moves.new_size, page).ok_or(Fallback::Segment)?;
    Ok(Hole {
        si,
        range,
        li,
        addr_end,
        lowest,
        moves,
        x: 0,
        d: 0,
        before: 0,
        tab: None,
        foreign: false,
        split: align_down(addr_end, page) > lowest,
    })
}

/// One offload section of a shared library, packed.
struct Hole {
    /// Its section index.
    si: usize,
    /// The rewrites it holds.
    range: std::ops::Range<usize>,
    /// The `PT_LOAD` mapping it.
    li: usize,
    /// Its old end address.
    addr_end: u64,
    /// The first page boundary after the packed section.
    lowest: u64,
    moves: Moves,
    /// Where the segment's next part starts (page-aligned).
    x: u64,
    /// How far what follows it moves down in the file (a multiple of the
    /// page size).
    d: u64,
    /// How far earlier sections moved the file down before it.
    before: u64,
    /// The new program header table's address and size, when it follows
    /// this section.
    tab: Option<(u64, u64)>,
    /// Whether it frees pages (else it keeps its layout).
    split: bool,
    /// Whether it is a section of another name (which keeps its layout).
    foreign: bool,
}

impl Hole {
    fn sec_end(&self) -> u64 {
        self.moves.sec.offset + self.moves.sec.size
    }

    /// The old file offset of the packed section's end.
    fn new_end_off(&self) -> u64 {
        self.moves.sec.offset + self.moves.new_size
    }

    /// The old file offset of the end of the first part of the segment:
    /// the packed section's end, or the new program header table's.
    fn part_end_off(&self) -> u64 {
        match self.tab {
            Some((addr, len)) => self.moves.sec.offset + (addr - self.moves.sec.addr) + len,
            None => self.new_end_off(),
        }
    }

    /// The old file offset of `x`.
    fn x_old_off(&self, phdrs: &[ProgramHeader]) -> u64 {
        let load = &phdrs[self.li];
        load.offset + (self.x - load.vaddr)
    }
}

/// [`shrink`] for a relocatable object: the containers are packed, the
/// section shortened, the later sections and the section header table
/// moved down (by a multiple of their largest alignment), and every
/// symbol defined in the section and every relocation against one point
/// at the same container or bytes as before.
fn shrink_object(
    elf: &Elf<'_>,
    h: &elf::Header,
    si: usize,
    rewrites: &[Rewrite<'_>],
) -> Result<Layout, Fallback> {
    let sec = elf.secs[si];
    if sec.addr != 0 {
        return Err(Fallback::Section(format!(
            "{} has an address in a relocatable object",
            elf.name(si)
        )));
    }
    let moves = pack(elf.file, sec, rewrites, 0..rewrites.len())
        .ok_or_else(|| Fallback::Section(format!("{} is misaligned", elf.name(si))))?;
    let sec_end = sec.offset + sec.size;
    let outside = |off: u64, len: u64| off.saturating_add(len) <= sec.offset || off >= sec_end;
    // The largest alignment of what moves.
    let mut align = 8u64;
    for (i, s) in elf.secs.iter().enumerate().skip(1) {
        let len = if s.sh_type == SHT_NOBITS { 0 } else { s.size };
        if i != si && !outside(s.offset, len) {
            return Err(Fallback::Overlap(elf.name(i)));
        }
        if i != si && s.offset >= sec_end {
            align = align.max(s.addralign);
        }
    }
    let shtab = u64::from(h.shnum) * 64;
    if !outside(h.shoff, shtab) {
        return Err(Fallback::Overlap("the section header table".to_owned()));
    }
    if !align.is_power_of_two() {
        return Err(Fallback::Section(
            "a section's alignment is not a power of two".to_owned(),
        ));
    }
    let d = align_down(sec.size - moves.new_size, align);
    if d == 0 {
        return Err(Fallback::TooLittleToMove {
            freed: sec.size - moves.new_size,
            align,
        });
    }
    let shift = |off: u64| if off >= sec_end { off - d } else { off };
    let mut patches: Vec<(u64, Vec<u8>)> = Vec::new();
    // Symbols defined in the section, by table and index: new value.
    let mut new_values: Vec<(usize, Vec<Option<u64>>)> = Vec::new();
    for (ti, t) in elf.secs.iter().enumerate() {
        if t.sh_type != SHT_SYMTAB {
            continue;
        }
        let data = elf
            .contents(ti)
            .ok_or_else(|| Fallback::Unreadable(format!("{} is outside the file", elf.name(ti))))?;
        let mut values = Vec::new();
        for (k, raw) in data.chunks_exact(24).enumerate() {
            let b = Bytes::new(raw);
            let shndx = usize::from(b.u16_at(6, Endian::Little).unwrap_or(0));
            let value = b.u64_at(8, Endian::Little).unwrap_or(0);
            let size = b.u64_at(16, Endian::Little).unwrap_or(0);
            if shndx != si {
                values.push(None);
                continue;
            }
            let what = || format!("symbol {k} of {}", elf.name(ti));
            let at = t.offset + k as u64 * 24;
            let (new_value, new_size) = if value == 0 && raw[4] & 0xf == 3 {
                (0, size)
            } else if value == sec.size {
                (moves.new_size, size)
            } else if !moves.contains(value) {
                return Err(Fallback::Reference(format!(
                    "{} lies outside its section",
                    what()
                )));
            } else {
                moves.symbol(rewrites, value, size, &what)?
            };
            if new_value != value {
                patches.push((at + 8, new_value.to_le_bytes().to_vec()));
            }
            if new_size != size {
                patches.push((at + 16, new_size.to_le_bytes().to_vec()));
            }
            values.push(Some(new_value));
        }
        new_values.push((ti, values));
    }
    // Relocations against those symbols: the same target, new addend.
    for (ri, r) in elf.secs.iter().enumerate() {
        if r.sh_type != SHT_RELA && r.sh_type != SHT_REL {
            continue;
        }
        let what = || format!("a relocation of {}", elf.name(ri));
        if r.info as usize == si {
            return Err(Fallback::Reference(format!(
                "{} applies inside the offload section",
                what()
            )));
        }
        let Some((_, values)) = new_values.iter().find(|(t, _)| *t == r.link as usize) else {
            continue;
        };
        let table = elf.contents(r.link as usize).unwrap_or(&[]);
        let size = if r.sh_type == SHT_RELA { 24 } else { 16 };
        let data = elf
            .contents(ri)
            .ok_or_else(|| Fallback::Unreadable(format!("{} is outside the file", elf.name(ri))))?;
        for (k, raw) in data.chunks_exact(size).enumerate() {
            let b = Bytes::new(raw);
            let sym = (b.u64_at(8, Endian::Little).unwrap_or(0) >> 32) as usize;
            let Some(Some(new_value)) = values.get(sym) else {
                continue;
            };
            if size != 24 {
                return Err(Fallback::Reference(format!(
                    "{} (without addend) refers to the offload section",
                    what()
                )));
            }
            let value = table
                .get(sym * 24 + 8..sym * 24 + 16)
                .map(|v| u64::from_le_bytes(v.try_into().unwrap_or_default()))
                .unwrap_or(0);
            let addend = b.u64_at(16, Endian::Little).unwrap_or(0);
            let target = value.wrapping_add(addend);
            let new_target = if target == sec.size {
                moves.new_size
            } else if moves.contains(target) {
                match moves.map(target) {
                    Some(Target::Container(_, new)) | Some(Target::Moved(new, _)) => new,
                    None => {
                        return Err(Fallback::Reference(format!(
                            "{} points into the middle of a container",
                            what()
                        )))
                    }
                }
            } else {
                return Err(Fallback::Reference(format!(
                    "{} points outside the offload section",
                    what()
                )));
            };
            let new_addend = new_target.wrapping_sub(*new_value);
            if new_addend != addend {
                patches.push((
                    r.offset + k as u64 * 24 + 16,
                    new_addend.to_le_bytes().to_vec(),
                ));
            }
        }
    }
    // The file header's e_shoff, and the section headers.
    patches.push((40, shift(h.shoff).to_le_bytes().to_vec()));
    finish_patches(
        elf,
        h,
        &[(si, moves.new_size)],
        &shift,
        &outside,
        &mut patches,
    )?;
    let mut pieces = Vec::new();
    copy(&mut pieces, 0, sec.offset, &patches);
    let at = moves.pieces(rewrites, &mut pieces);
    pieces.push(Out::Zeros(sec_end - d - at));
    copy(&mut pieces, sec_end, elf.file.len() as u64, &patches);
    pieces.retain(|p| p.len(rewrites) > 0);
    let len = elf.file.len() as u64 - d;
    Ok(Layout {
        pieces,
        len,
        shrunk: true,
    })
}

/// [`shrink`] for a GNU archive: each member holding rewritten containers
/// (a relocatable object) is shrunk as a file is (or, where it cannot be,
/// laid out in place), its header's size updated, the members after it
/// moved, and the symbol table's member offsets updated.
#[cfg(feature = "archive")]
fn shrink_archive(file: &[u8], rewrites: &[Rewrite<'_>]) -> Result<Layout, Fallback> {
    use crate::archive::{Archive, ArchiveKind, MemberContent};
    let archive = Archive::parse(file).map_err(|e| Fallback::Unreadable(e.to_string()))?;
    let wide = match archive.kind() {
        ArchiveKind::Gnu => false,
        ArchiveKind::Gnu64 => true,
        _ => return Err(Fallback::Kind("a BSD, Darwin or COFF archive")),
    };
    // Each regular member: header offset, data offset, size.
    let mut members: Vec<(u64, u64, u64)> = Vec::new();
    for m in archive.members() {
        let m = m.map_err(|e| Fallback::Unreadable(e.to_string()))?;
        let MemberContent::Inline(bytes) = m.content else {
            return Err(Fallback::Kind("a thin archive"));
        };
        members.push((m.header_offset, m.header_offset + 60, bytes.len() as u64));
    }
    // The rewrites of each member, as offsets in the member.
    let mut first_reason = None;
    let mut per_member: Vec<Option<(usize, Layout, Vec<Rewrite<'_>>)>> = Vec::new();
    let mut next = 0;
    for &(_, data, size) in &members {
        let start = next;
        while next < rewrites.len() && rewrites[next].offset < data + size {
            let r = &rewrites[next];
            if r.offset < data || r.offset + r.size > data + size {
                return Err(Fallback::Section(
                    "a container is not inside one archive member".to_owned(),
                ));
            }
            next += 1;
        }
        if start == next {
            per_member.push(None);
            continue;
        }
        let own: Vec<Rewrite<'_>> = rewrites[start..next]
            .iter()
            .map(|r| Rewrite {
                offset: r.offset - data,
                ..r.clone()
            })
            .collect();
        let bytes = &file[data as usize..(data + size) as usize];
        let layout = match shrink(bytes, &own) {
            Ok(l) => l,
            Err(why) => {
                first_reason.get_or_insert(why);
                in_place(bytes, &own)
            }
        };
        per_member.push(Some((start, layout, own)));
    }
    if next != rewrites.len() {
        return Err(Fallback::Section(
            "a container is not inside an archive member".to_owned(),
        ));
    }
    if per_member
        .iter()
        .all(|m| m.as_ref().is_none_or(|(_, l, _)| !l.shrunk))
    {
        return Err(first_reason.unwrap_or(Fallback::Kind("an archive")));
    }
    // New header offsets.
    let padded = |n: u64| n + (n & 1);
    let mut moved: Vec<(u64, u64)> = Vec::new();
    let mut delta = 0u64;
    for (k, &(header, _, size)) in members.iter().enumerate() {
        moved.push((header, header - delta));
        if let Some((_, l, _)) = &per_member[k] {
            delta += padded(size) - padded(l.len);
        }
    }
    // The symbol table's member offsets.
    let mut patches: Vec<(u64, Vec<u8>)> = Vec::new();
    let table = archive.symbol_table();
    if !table.is_empty() {
        let at = table.as_ptr() as u64 - file.as_ptr() as u64;
        let w = if wide { 8 } else { 4 };
        let b = Bytes::new(table);
        let count = b
            .word_at(0, wide, Endian::Big)
            .ok_or_else(|| Fallback::Unreadable("a symbol table cut short".to_owned()))?;
        for i in 0..count {
            let pos = w + i * w;
            let old = b
                .word_at(pos, wide, Endian::Big)
                .ok_or_else(|| Fallback::Unreadable("a symbol table cut short".to_owned()))?;
            let Some(&(_, new)) = moved.iter().find(|(o, _)| *o == old) else {
                return Err(Fallback::Reference(format!(
                    "the archive symbol table names offset {old}, not a member"
                )));
            };
            if new != old {
                let bytes = if wide {
                    new.to_be_bytes().to_vec()
                } else {
                    (new as u32).to_be_bytes().to_vec()
                };
                patches.push((at + pos, bytes));
            }
        }
    }
    // The pieces: up to the first member, then member by member.
    let mut pieces = Vec::new();
    let first = members.first().map_or(file.len() as u64, |m| m.0);
    copy(&mut pieces, 0, first, &patches);
    let mut pos = first;
    for (k, &(header, data, size)) in members.iter().enumerate() {
        let end = (data + padded(size)).min(file.len() as u64);
        match &per_member[k] {
            None => copy(&mut pieces, header, end, &[]),
            Some((base, layout, _)) => {
                let mut h = file[header as usize..data as usize].to_vec();
                let text = format!("{:<10}", layout.len);
                h[48..58].copy_from_slice(text.as_bytes());
                pieces.push(Out::Bytes(h));
                for p in &layout.pieces {
                    pieces.push(match p {
                        Out::Copy { from, len } => Out::Copy {
                            from: from + data,
                            len: *len,
                        },
                        Out::Container(i) => Out::Container(base + i),
                        other => other.clone(),
                    });
                }
                if layout.len & 1 == 1 {
                    pieces.push(Out::Bytes(b"\n".to_vec()));
                }
            }
        }
        pos = end;
    }
    copy(&mut pieces, pos, file.len() as u64, &[]);
    pieces.retain(|p| p.len(rewrites) > 0);
    let len = pieces.iter().map(|p| p.len(rewrites)).sum();
    Ok(Layout {
        pieces,
        len,
        shrunk: true,
    })
}

/// The rewrites a layout is made from: some, in file order, none
/// overlapping the next, none growing (both file kinds check this first).
fn check_rewrites(rewrites: &[Rewrite<'_>]) -> Result<(), Fallback> {
    if rewrites.is_empty()
        || rewrites
            .windows(2)
            .any(|w| w[0].offset + w[0].size > w[1].offset)
        || rewrites.iter().any(|r| r.new.used > r.size)
    {
        return Err(Fallback::Section(
            "the rewritten containers overlap or grow".to_owned(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(offset: u64, size: u64, kept: &[u8]) -> Rewrite<'static> {
        Rewrite {
            offset,
            size,
            new: Thinned {
                pieces: vec![
                    Piece::Bytes(kept.to_vec()),
                    Piece::Zeros(size - kept.len() as u64),
                ],
                used: kept.len() as u64,
                kept: Vec::new(),
                dropped: Vec::new(),
            },
        }
    }

    #[test]
    fn patches_split_copies_and_are_cut_at_the_range() {
        let mut pieces = Vec::new();
        let patches = vec![(2, vec![9, 9]), (6, vec![7, 7, 7, 7])];
        copy(&mut pieces, 0, 8, &patches);
        assert_eq!(
            pieces,
            vec![
                Out::Copy { from: 0, len: 2 },
                Out::Bytes(vec![9, 9]),
                Out::Copy { from: 4, len: 2 },
                Out::Bytes(vec![7, 7]),
            ]
        );
        // A range starting inside a patch takes its tail.
        let mut pieces = Vec::new();
        copy(&mut pieces, 8, 12, &patches);
        assert_eq!(
            pieces,
            vec![Out::Bytes(vec![7, 7]), Out::Copy { from: 10, len: 2 }]
        );
    }

    #[test]
    fn in_place_keeps_every_offset_and_zeroes_the_freed_bytes() {
        let input: Vec<u8> = (0..64).collect();
        let rewrites = vec![rewrite(8, 16, b"abc"), rewrite(32, 8, b"")];
        let layout = in_place(&input, &rewrites);
        assert!(!layout.shrunk);
        let out = layout.to_vec(&input, &rewrites);
        assert_eq!(out.len(), 64);
        assert_eq!(&out[..8], &input[..8]);
        assert_eq!(&out[8..11], b"abc");
        assert!(out[11..24].iter().all(|&b| b == 0));
        assert_eq!(&out[24..32], &input[24..32]);
        assert!(out[32..40].iter().all(|&b| b == 0));
        assert_eq!(&out[40..], &input[40..]);
    }

    #[test]
    fn used_pieces_stop_at_the_used_bytes() {
        let r = rewrite(0, 10, b"xyz");
        let parts: Vec<Part<'_>> = used_pieces(&r.new).collect();
        assert_eq!(parts, vec![Part::Bytes(b"xyz")]);
    }

    #[test]
    fn containers_keep_their_alignment_when_packed() {
        assert_eq!(place(0x1234, 0x3000, 0x1000), 0x2000);
        assert_eq!(place(0x2000, 0x3000, 0x1000), 0x2000);
        assert_eq!(place(0x2001, 0x3008, 8), 0x2008);
    }

    #[test]
    fn other_files_fall_back_with_a_reason() {
        let r = [rewrite(0, 4, b"")];
        assert_eq!(
            shrink(b"not an object file", &r),
            Err(Fallback::Kind("not an ELF file"))
        );
        let mut elf32 = vec![0x7f, b'E', b'L', b'F', 1, 1, 1];
        elf32.resize(64, 0);
        assert!(shrink(&elf32, &r).is_err());
    }
}
