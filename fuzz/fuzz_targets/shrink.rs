//! The shrinking layout of `offload thin` on any bytes taken as an ELF
//! file whose `.hip_fatbin`, `.nv_fatbin` or `__nv_relfatbin` containers
//! were thinned (each container found in its section, made shorter as the
//! first input byte says): it never panics; it shrinks or says why not; a
//! shrunk layout tiles the output exactly from input ranges inside the
//! file, is smaller by a whole number of pages, and reads back as ELF
//! whose `PT_LOAD` segments keep offsets congruent with addresses (each
//! keeping its `p_align` or getting the page size moved by) and whose
//! other sections keep their addresses, whose `PT_PHDR` is mapped where
//! every loader looks for it; the in-place layout keeps the size.
#![no_main]

use libfuzzer_sys::fuzz_target;
use offload_format::hip_fatbin;
use offload_format::nvidia::fatbin;
use offload_format::objfile::elf::{ElfFile, EM_AARCH64, PT_LOAD, PT_PHDR};
use offload_format::shrink::{self, Out, Rewrite};
use offload_format::thin::{Piece, Thinned};

fuzz_target!(|data: &[u8]| {
    let Some((&mask, file)) = data.split_first() else {
        return;
    };
    let Ok(elf) = ElfFile::parse(file) else {
        return;
    };
    // The containers of the offload section, each rewritten as its first
    // part (a quarter to all of it, as two bits of `mask` say).
    let mut spans: Vec<(u64, u64)> = Vec::new();
    for (i, h) in elf.section_headers().iter().enumerate() {
        let Ok(name) = elf.section_name(i, None) else {
            continue;
        };
        let Ok(bytes) = elf.section_bytes(i) else {
            continue;
        };
        if name == b".hip_fatbin" {
            for item in hip_fatbin::scan(bytes, &[]).items {
                spans.push((h.offset + item.offset as u64, item.bytes.len() as u64));
            }
        } else if name == b".nv_fatbin" || name == b"__nv_relfatbin" {
            for c in fatbin::scan(bytes).containers {
                spans.push((h.offset + c.offset as u64, c.len()));
            }
        }
    }
    spans.sort_unstable();
    spans.dedup_by(|b, a| b.0 < a.0 + a.1);
    let rewrites: Vec<Rewrite<'_>> = spans
        .iter()
        .enumerate()
        .filter_map(|(k, &(offset, size))| {
            let bytes = file.get(offset as usize..(offset + size) as usize)?;
            let quarters = u64::from((mask >> (2 * (k % 4))) & 3) + 1;
            let used = size * quarters / 4;
            Some(Rewrite {
                offset,
                size,
                new: Thinned {
                    pieces: vec![
                        Piece::Input(&bytes[..used as usize]),
                        Piece::Zeros(size - used),
                    ],
                    used,
                    kept: Vec::new(),
                    dropped: Vec::new(),
                },
            })
        })
        .collect();
    let tile = |layout: &shrink::Layout| {
        let mut total = 0u64;
        for p in &layout.pieces {
            total += match p {
                Out::Copy { from, len } => {
                    assert!(from + len <= file.len() as u64, "a copy outside the input");
                    *len
                }
                Out::Container(i) => rewrites[*i].new.used,
                Out::Bytes(b) => b.len() as u64,
                Out::Zeros(n) => *n,
            };
        }
        assert_eq!(total, layout.len, "the pieces do not add up");
    };
    let kept = shrink::in_place(file, &rewrites);
    tile(&kept);
    assert_eq!(kept.len, file.len() as u64);
    let Ok(layout) = shrink::shrink(file, &rewrites) else {
        return;
    };
    tile(&layout);
    assert!(layout.shrunk && layout.len < file.len() as u64);
    let out = layout.to_vec(file, &rewrites);
    let new = ElfFile::parse(&out[..]).expect("a shrunk file reads as ELF");
    let phdrs = new.program_headers().expect("its program headers read");
    let machine_page = if elf.header().machine == EM_AARCH64 {
        65536
    } else {
        4096
    };
    let old_phdrs = elf
        .program_headers()
        .expect("the input's program headers read");
    let aligns: Vec<u64> = old_phdrs
        .iter()
        .filter(|p| p.p_type == PT_LOAD)
        .map(|p| p.align)
        .collect();
    let page = aligns
        .iter()
        .copied()
        .max()
        .unwrap_or(0)
        .max(4096)
        .min(machine_page);
    assert_eq!((file.len() as u64 - layout.len) % page, 0);
    for p in phdrs.iter().filter(|p| p.p_type == PT_LOAD) {
        assert_eq!(p.offset % page, p.vaddr % page, "a segment lost congruence");
        assert!(
            p.align == page || aligns.contains(&p.align),
            "a segment got another alignment"
        );
        assert!(
            p.offset + p.filesz <= out.len() as u64,
            "a segment past the end"
        );
    }
    // A PT_PHDR (as the input had, where it had one) describes the table
    // at e_phoff, mapped there by a PT_LOAD; in a program (PT_INTERP),
    // at the address old kernels compute from the first PT_LOAD.
    let h = new.header();
    if let Some(ph) = phdrs.iter().find(|p| p.p_type == PT_PHDR) {
        assert_eq!(ph.offset, h.phoff, "PT_PHDR is not at e_phoff");
        assert!(
            phdrs.iter().any(|l| l.p_type == PT_LOAD
                && ph.offset >= l.offset
                && ph.offset + ph.filesz <= l.offset + l.filesz
                && ph.vaddr.wrapping_sub(l.vaddr) == ph.offset - l.offset),
            "PT_PHDR is not mapped at its address"
        );
        if phdrs.iter().any(|p| p.p_type == 3) {
            let first = phdrs.iter().find(|p| p.p_type == PT_LOAD).unwrap();
            assert_eq!(
                first.vaddr.wrapping_sub(first.offset).wrapping_add(h.phoff),
                ph.vaddr,
                "old kernels would compute another AT_PHDR"
            );
        }
    }
    // Every section keeps its address and type; one shrinks.
    let (old, new) = (elf.section_headers(), new.section_headers());
    assert_eq!(old.len(), new.len());
    for (a, b) in old.iter().zip(new) {
        assert_eq!((a.addr, a.sh_type, a.flags), (b.addr, b.sh_type, b.flags));
        assert!(b.size <= a.size);
    }
});
