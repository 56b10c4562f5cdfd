//! Cubins and AMD GPU code objects: ELF images attributed by section and
//! symbol.

use std::borrow::Cow;

use crate::hash::bytes_map::BytesMap;

use super::resolve::{resolve, Claim};
use super::{Function, ImageKind, ImageProfile, Shared, EM_AMDGPU, EM_CUDA};
use crate::objfile::elf::{ElfFile, SectionHeader, SHT_DYNSYM, SHT_NOBITS, SHT_SYMTAB};

/// `SHF_EXECINSTR`.
const SHF_EXECINSTR: u64 = 0x4;
/// `STT_OBJECT`, `STT_FUNC`.
const STT_OBJECT: u8 = 1;
const STT_FUNC: u8 = 2;
/// `STO_CUDA_ENTRY`: a cubin symbol that is a kernel.
const STO_CUDA_ENTRY: u8 = 0x10;
/// Section indices from here on are reserved (`SHN_LORESERVE`).
const SHN_LORESERVE: u16 = 0xff00;

/// Claim ranks: section bytes and header tables, then the entries and
/// code ranges inside them, then the strings inside those.
const RANK_SECTION: u8 = 1;
const RANK_ENTRY: u8 = 2;
const RANK_STRING: u8 = 3;

/// Owners as numbers: functions even, shared parts odd. Names are
/// looked up as the image's own bytes (nothing copied per section).
struct Owners<'a> {
    functions: Vec<Function>,
    by_name: BytesMap<&'a [u8], usize>,
    shared: Vec<String>,
    shared_index: BytesMap<String, usize>,
    claims: Vec<Claim>,
}

impl<'a> Owners<'a> {
    fn function(&mut self, name: &'a [u8], code: u64) -> usize {
        if let Some(&i) = self.by_name.get(name) {
            return i;
        }
        let i = self.functions.len();
        self.functions.push(Function {
            // Names are nearly always UTF-8 (ASCII); checking that is
            // faster than the lossy conversion's own scan.
            name: match std::str::from_utf8(name) {
                Ok(s) => s.into(),
                Err(_) => String::from_utf8_lossy(name).into(),
            },
            kernel: false,
            code,
            bytes: 0,
        });
        self.by_name.insert(name, i);
        i
    }

    fn shared_owner(&mut self, what: &str) -> usize {
        let i = match self.shared_index.get(what) {
            Some(&i) => i,
            None => {
                self.shared.push(what.to_owned());
                self.shared_index
                    .insert(what.to_owned(), self.shared.len() - 1);
                self.shared.len() - 1
            }
        };
        2 * i + 1
    }

    fn claim(&mut self, start: u64, size: u64, rank: u8, owner: usize) {
        if size > 0 {
            self.claims.push(Claim {
                start,
                end: start.saturating_add(size),
                rank,
                owner,
            });
        }
    }

    fn claim_shared(&mut self, start: u64, size: u64, rank: u8, what: &str) {
        let owner = self.shared_owner(what);
        self.claim(start, size, rank, owner);
    }

    fn finish(mut self, kind: ImageKind, len: u64, damage: Vec<String>) -> ImageProfile {
        let padding = self.shared_owner("padding");
        let owners = (2 * self.functions.len()).max(2 * self.shared.len());
        let (won, uncovered) = resolve(len, &self.claims, owners);
        let mut shared: Vec<Shared> = self
            .shared
            .iter()
            .map(|w| Shared {
                what: w.clone(),
                bytes: 0,
            })
            .collect();
        for (owner, bytes) in won.into_iter().enumerate() {
            if owner % 2 == 0 {
                if let Some(f) = self.functions.get_mut(owner / 2) {
                    f.bytes += bytes;
                }
            } else if let Some(s) = shared.get_mut(owner / 2) {
                s.bytes += bytes;
            }
        }
        shared[padding / 2].bytes += uncovered;
        shared.retain(|s| s.bytes > 0);
        ImageProfile {
            kind,
            size: len,
            functions: self.functions,
            shared,
            damage,
        }
    }
}

/// The file range of section `h`'s bytes, if it has any.
fn file_range(h: &SectionHeader) -> Option<(u64, u64)> {
    (h.sh_type != SHT_NOBITS && h.size > 0).then_some((h.offset, h.size))
}

/// The cubin function that a section named `name` is made for.
fn cubin_section_owner(name: &[u8], functions: &BytesMap<&[u8], usize>) -> Option<usize> {
    let rest = name
        .strip_prefix(b".rela")
        .or_else(|| name.strip_prefix(b".rel"))
        .filter(|r| r.starts_with(b"."))
        .unwrap_or(name);
    for prefix in [&b".text."[..], b".nv.info.", b".nv.shared.", b".nv.local."] {
        if let Some(f) = rest.strip_prefix(prefix) {
            return functions.get(f).copied();
        }
    }
    let bank = rest.strip_prefix(b".nv.constant")?;
    let digits = bank.iter().take_while(|b| b.is_ascii_digit()).count();
    let f = bank[digits..].strip_prefix(b".").filter(|_| digits > 0)?;
    functions.get(f).copied()
}

pub(super) fn profile(data: &[u8]) -> ImageProfile {
    let len = data.len() as u64;
    let elf = match ElfFile::parse(data) {
        Ok(e) => e,
        Err(e) => {
            let mut p = ImageProfile::whole(ImageKind::Other, len, "unreadable ELF image");
            p.damage.push(format!("ELF image: {e}"));
            return p;
        }
    };
    let h = elf.header().clone();
    let kind = match h.machine {
        EM_CUDA => ImageKind::Cubin,
        EM_AMDGPU => ImageKind::AmdgpuCodeObject,
        _ => ImageKind::Other,
    };
    let mut damage = Vec::new();
    let mut o = Owners {
        functions: Vec::new(),
        by_name: BytesMap::default(),
        shared: Vec::new(),
        shared_index: BytesMap::default(),
        claims: Vec::new(),
    };
    let class = elf.class();
    o.claim_shared(
        0,
        (h.ehsize as u64).max(class.ehdr_size() as u64),
        RANK_SECTION,
        "ELF headers",
    );
    o.claim_shared(
        h.phoff,
        u64::from(h.phentsize) * u64::from(h.phnum),
        RANK_SECTION,
        "ELF headers",
    );
    let shentsize = u64::from(h.shentsize).max(class.shdr_size() as u64);
    let sections = elf.section_headers();
    o.claim_shared(
        h.shoff,
        shentsize * sections.len() as u64,
        RANK_SECTION,
        "section headers",
    );
    let names_table = match elf.section_name_table() {
        Ok(t) => t,
        Err(e) => {
            damage.push(format!("section names: {e}"));
            None
        }
    };
    let names: Vec<&[u8]> = (0..sections.len())
        .map(|i| match elf.section_name(i, names_table) {
            Ok(n) => n,
            Err(e) => {
                damage.push(format!("section {i}: {e}"));
                &[][..]
            }
        })
        .collect();
    let text = |n: &[u8]| String::from_utf8_lossy(n).into_owned();
    let shstr_offset = sections
        .get(usize::from(h.shstrndx))
        .map(|s| s.offset)
        .unwrap_or(0);
    // Which function each section belongs to.
    let mut owner_of: Vec<Option<usize>> = vec![None; sections.len()];
    if kind == ImageKind::Cubin {
        for (i, name) in names.iter().enumerate() {
            if let Some(f) = name.strip_prefix(b".text.").filter(|f| !f.is_empty()) {
                let code = file_range(&sections[i]).map_or(0, |r| r.1);
                let idx = o.function(f, code);
                owner_of[i] = Some(idx);
            }
        }
        for (i, name) in names.iter().enumerate() {
            // A kernel is a symbol marked STO_CUDA_ENTRY (below), not a
            // function with a `.nv.info.NAME`: relocatable cubins (-rdc)
            // have one for device functions too.
            if owner_of[i].is_none() {
                owner_of[i] = cubin_section_owner(name, &o.by_name);
            }
        }
    }
    // Symbols: (table section, symbols).
    let mut tables = Vec::new();
    for (i, s) in sections.iter().enumerate() {
        if s.sh_type == SHT_SYMTAB || s.sh_type == SHT_DYNSYM {
            match elf.symbols(i) {
                Ok(syms) => tables.push((i, syms)),
                Err(e) => damage.push(format!("symbol table {}: {e}", text(names[i]))),
            }
        }
    }
    if kind == ImageKind::AmdgpuCodeObject {
        // Functions first (symtab before dynsym: they name the same ones).
        let mut order: Vec<usize> = (0..tables.len()).collect();
        order.sort_by_key(|&t| sections[tables[t].0].sh_type != SHT_SYMTAB);
        for &t in &order {
            for sym in &tables[t].1 {
                let Some(sec) = sections.get(usize::from(sym.shndx)) else {
                    continue;
                };
                if sym.sym_type() != STT_FUNC
                    || sym.size == 0
                    || sym.shndx >= SHN_LORESERVE
                    || sec.flags & SHF_EXECINSTR == 0
                {
                    continue;
                }
                let name = sym.name;
                if o.by_name.contains_key(name) {
                    continue;
                }
                let idx = o.function(name, sym.size);
                let at = sec.offset.saturating_add(sym.value.wrapping_sub(sec.addr));
                let in_section = sym.value >= sec.addr
                    && sym.value - sec.addr <= sec.size
                    && sym.size <= sec.size - (sym.value - sec.addr);
                if !in_section {
                    damage.push(format!(
                        "function {}: {} bytes at {:#x} lie outside section {}",
                        text(name),
                        sym.size,
                        sym.value,
                        text(names[usize::from(sym.shndx)])
                    ));
                }
                let size = if in_section { sym.size } else { 0 };
                o.claim(at, size, RANK_ENTRY, 2 * idx);
            }
        }
        // Kernel descriptors.
        for &t in &order {
            for sym in &tables[t].1 {
                let Some(base) = sym.name.strip_suffix(b".kd") else {
                    continue;
                };
                let Some(&idx) = o.by_name.get(base) else {
                    continue;
                };
                if sym.sym_type() != STT_OBJECT || sym.shndx >= SHN_LORESERVE {
                    continue;
                }
                let Some(sec) = sections.get(usize::from(sym.shndx)) else {
                    continue;
                };
                o.functions[idx].kernel = true;
                if sec.sh_type == SHT_NOBITS {
                    continue;
                }
                let off = sym.value.wrapping_sub(sec.addr);
                if sym.value >= sec.addr && off <= sec.size && sym.size <= sec.size - off {
                    o.claim(sec.offset + off, sym.size, RANK_ENTRY, 2 * idx);
                }
            }
        }
    }
    // Section bytes and header entries, and their names.
    for (i, s) in sections.iter().enumerate() {
        let owner = match owner_of[i] {
            Some(f) => 2 * f,
            None => {
                let what = if names[i].is_empty() && i == 0 {
                    continue;
                } else {
                    shared_label(kind, names[i])
                };
                o.shared_owner(&what)
            }
        };
        if let Some((off, size)) = file_range(s) {
            o.claim(off, size, RANK_SECTION, owner);
        }
        if owner_of[i].is_some() {
            o.claim(
                h.shoff.saturating_add(shentsize * i as u64),
                shentsize,
                RANK_ENTRY,
                owner,
            );
            if s.name != 0 {
                o.claim(
                    shstr_offset.saturating_add(u64::from(s.name)),
                    names[i].len() as u64 + 1,
                    RANK_STRING,
                    owner,
                );
            }
        }
    }
    // Symbol entries and their names.
    let sym_size = class.sym_size() as u64;
    for (t, syms) in &tables {
        let table = &sections[*t];
        let strtab = sections.get(table.link as usize).map(|s| s.offset);
        for sym in syms {
            let owner = match kind {
                ImageKind::Cubin => owner_of
                    .get(usize::from(sym.shndx))
                    .copied()
                    .flatten()
                    .filter(|_| sym.shndx < SHN_LORESERVE),
                // The function's symbol, its descriptor `<name>.kd`, and
                // the resource symbols LLVM adds (`<name>.num_vgpr`).
                ImageKind::AmdgpuCodeObject => o.by_name.get(sym.name).copied().or_else(|| {
                    let dot = sym.name.iter().rposition(|&b| b == b'.')?;
                    o.by_name.get(&sym.name[..dot]).copied()
                }),
                _ => None,
            };
            if kind == ImageKind::Cubin && sym.other & STO_CUDA_ENTRY != 0 {
                if let Some(&idx) = o.by_name.get(sym.name) {
                    o.functions[idx].kernel = true;
                }
            }
            let Some(f) = owner else { continue };
            o.claim(
                table.offset.saturating_add(sym_size * sym.index as u64),
                sym_size,
                RANK_ENTRY,
                2 * f,
            );
            if let (Some(strtab), false) = (strtab, sym.name.is_empty()) {
                o.claim(
                    strtab.saturating_add(u64::from(sym.st_name)),
                    // The name is already cut at its NUL.
                    sym.name.len() as u64 + 1,
                    RANK_STRING,
                    2 * f,
                );
            }
        }
    }
    o.finish(kind, len, damage)
}

/// The shared part a section's bytes count in: its name, with a cubin's
/// per-function section families (of functions not in the image) and
/// numbered constant banks kept apart by family only.
fn shared_label(kind: ImageKind, name: &[u8]) -> Cow<'_, str> {
    if name.is_empty() {
        return Cow::Borrowed("unnamed sections");
    }
    if kind == ImageKind::Cubin {
        for family in [".text.", ".nv.info.", ".rel.text.", ".rela.text."] {
            if name.starts_with(family.as_bytes()) {
                return Cow::Owned(format!("{family}*"));
            }
        }
        if let Some(rest) = name.strip_prefix(b".nv.constant") {
            let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            if digits < rest.len() {
                return Cow::Owned(format!(
                    ".nv.constant{}.*",
                    String::from_utf8_lossy(&rest[..digits])
                ));
            }
        }
    }
    String::from_utf8_lossy(name)
}
