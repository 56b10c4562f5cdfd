//! Which symbols of a member go into an archive's symbol table.
//!
//! LLVM's archive writer lists, per member, the symbols that are global,
//! defined and not format-specific, in the member's own symbol order:
//!
//! * ELF: the first `SHT_SYMTAB` section, from index 1; a symbol counts when
//!   its binding is not `STB_LOCAL`, its section index is not `SHN_UNDEF`,
//!   its type is not `STT_FILE` or `STT_SECTION`, and it is not a mapping
//!   symbol (`$d`/`$x` on AArch64 and RISC-V, `$a`/`$d`/`$t` and unnamed
//!   symbols on ARM, `$d`/`$t` on C-SKY, `.L0 ` on RISC-V). Weak, common,
//!   absolute, TLS, IFUNC and hidden symbols all count. `.dynsym` is not
//!   read.
//! * Bitcode: see [`crate::bitcode::archive_symbols`].
//! * COFF and Mach-O, read through [`crate::objfile`]: COFF external
//!   symbols that are defined (or common) and weak externals; Mach-O
//!   external symbols that are neither debugging entries nor undefined.
//!   This is an approximation (the offload tools never put such members in
//!   archives on Linux); COFF files get LLVM's open-time checks first.
//! * Anything else (offload binaries, fat binaries, text) is not a symbolic
//!   file and contributes nothing.

use crate::bitcode;
use crate::bytes::Bytes;
use crate::identify::{identify, FileKind};
use crate::objfile::elf::{self, ElfFile};
use crate::objfile::Error as ObjError;

/// The result of looking at one member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemberSymbols {
    /// Not an object or bitcode file: no symbols, and it does not count as
    /// an object for the "empty symbol table" rule.
    NotSymbolic,
    /// An object or bitcode file with these archive symbols (possibly
    /// none).
    Symbols(Vec<Vec<u8>>),
    /// Bitcode that could not be read; LLVM warns and treats the member as
    /// a blob. The reason (`Display`: LLVM 22's text).
    Unreadable(bitcode::BitcodeError),
}

/// Classifies `data` like LLVM's file-type sniffing and lists its archive
/// symbols. `Err` is what is wrong with a broken object file (its
/// `Display` is LLVM 22's text), which makes LLVM's archive writer fail.
pub fn member_symbols(data: &[u8]) -> Result<MemberSymbols, ObjError> {
    if bitcode::is_bitcode(data) {
        return Ok(match bitcode::archive_symbols(data) {
            Ok(names) => MemberSymbols::Symbols(names),
            Err(e) => MemberSymbols::Unreadable(e),
        });
    }
    non_bitcode_symbols(data)
}

/// [`member_symbols`], and whether the member is bitcode with module-level
/// inline assembly whose symbols could be read (on which LLVM 22's offload
/// tools crash when they write the archive's symbol table; see
/// [`bitcode::has_module_asm`]). A bitcode member is read once for both.
pub(crate) fn member_symbols_and_module_asm(
    data: &[u8],
) -> (Result<MemberSymbols, ObjError>, bool) {
    if bitcode::is_bitcode(data) {
        return match bitcode::archive_symbols_and_module_asm(data) {
            Ok(facts) => (Ok(MemberSymbols::Symbols(facts.symbols)), facts.module_asm),
            Err(e) => (Ok(MemberSymbols::Unreadable(e)), false),
        };
    }
    (non_bitcode_symbols(data), false)
}

fn non_bitcode_symbols(data: &[u8]) -> Result<MemberSymbols, ObjError> {
    match identify(data) {
        FileKind::Elf(_) => elf_symbols(data).map(MemberSymbols::Symbols),
        FileKind::Coff { .. } | FileKind::MachO(_) => {
            other_symbols(data).map(MemberSymbols::Symbols)
        }
        _ => Ok(MemberSymbols::NotSymbolic),
    }
}

fn other_symbols(data: &[u8]) -> Result<Vec<Vec<u8>>, ObjError> {
    use crate::objfile::coff::{CoffFile, SymbolTableCheck};
    use crate::objfile::macho::{self, MachOFile};
    const IMAGE_SYM_CLASS_EXTERNAL: u8 = 2;
    const IMAGE_SYM_CLASS_WEAK_EXTERNAL: u8 = 105;
    let mut out = Vec::new();
    if matches!(identify(data), FileKind::Coff { .. }) {
        // LLVM's own open-time checks and messages for COFF.
        let coff = CoffFile::parse_with(data, SymbolTableCheck::Start)?;
        for sym in coff.symbols()? {
            let undefined = sym.section_number == 0 && sym.value == 0;
            let listed = match sym.storage_class {
                IMAGE_SYM_CLASS_EXTERNAL => !undefined,
                IMAGE_SYM_CLASS_WEAK_EXTERNAL => true,
                _ => false,
            };
            if listed {
                out.push(sym.name.to_vec());
            }
        }
    } else {
        let file = MachOFile::parse(data)?;
        for sym in file.symbols()? {
            let debug = sym.n_type & macho::N_STAB != 0;
            let undefined = sym.n_type & macho::N_TYPE == macho::N_UNDF;
            if !debug && !undefined && sym.n_type & macho::N_EXT != 0 {
                out.push(sym.name.to_vec());
            }
        }
    }
    Ok(out)
}

const EM_CSKY: u16 = 252;

/// Archive symbols of an ELF file, with LLVM's error texts for the common
/// kinds of damage. The file is read through [`crate::objfile::elf`]; the
/// symbol table is validated only when a symbol past the null one is
/// looked at, and symbols are named only when they are listed, as in LLVM.
pub(crate) fn elf_symbols(data: &[u8]) -> Result<Vec<Vec<u8>>, ObjError> {
    let class = elf::ident_class(data)?;
    let header = data
        .get(..class.ehdr_size())
        .and_then(|h| elf::parse_header(h, class));
    let Some(header) = header else {
        return Err(ObjError::ElfTooSmall {
            size: data.len() as u64,
            header: class.ehdr_size() as u64,
        });
    };
    let shoff = header.shoff;
    let file = ElfFile::parse(data).map_err(|e| match e {
        // The whole table is checked as one range here.
        ObjError::ElfBadSectionCount(_)
        | ObjError::ElfSectionTableOverflow { .. }
        | ObjError::ElfSectionTablePastEnd => ObjError::ElfSectionTableStartPastEnd { shoff },
        e => e,
    })?;
    let Some(symtab_index) = file.section_of_type(elf::SHT_SYMTAB) else {
        return Ok(Vec::new());
    };
    let symtab = file.section_headers()[symtab_index];
    let sym_size = class.sym_size() as u64;
    let count = symtab.size / sym_size;
    // LLVM validates the table only when it looks at a symbol past the
    // null one.
    if count < 2 {
        return Ok(Vec::new());
    }
    let past_end = |index: usize, offset: u64, size: u64| ObjError::ElfSectionPastEnd {
        index,
        offset,
        size,
        file_size: data.len() as u64,
    };
    let table = file
        .section_array(symtab_index, sym_size)
        .map_err(|e| match e {
            ObjError::ElfOffsetPlusSizeOverflows {
                index,
                offset,
                size,
            } => past_end(index, offset, size),
            e => e,
        })?;
    let strtab_index = symtab.link as usize;
    let strsec = *file.section_header(strtab_index)?;
    if strsec.sh_type != elf::SHT_STRTAB {
        return Err(ObjError::ElfNotAStringTable {
            index: strtab_index,
            type_name: elf::section_type_name(header.machine, strsec.sh_type),
        });
    }
    let strings = Bytes::new(data)
        .slice(strsec.offset, strsec.size)
        .ok_or_else(|| past_end(strtab_index, strsec.offset, strsec.size))?;
    if strings.last().is_some_and(|&b| b != 0) {
        return Err(ObjError::ElfUnterminatedStringTable {
            index: strtab_index,
        });
    }

    let mut out = Vec::new();
    for index in 1..count as usize {
        let sym = elf::symbol_entry(table, class, index).ok_or(ObjError::ElfSymbolCut { index })?;
        // STB_LOCAL, SHN_UNDEF, STT_SECTION / STT_FILE are never listed.
        if sym.binding() == 0 || sym.shndx == 0 || matches!(sym.sym_type(), 3 | 4) {
            continue;
        }
        let name = elf::symbol_name(strings, sym.st_name)?;
        if is_mapping_symbol(header.machine, name) {
            continue;
        }
        out.push(name.to_vec());
    }
    Ok(out)
}

fn is_mapping_symbol(machine: u16, name: &[u8]) -> bool {
    use elf::{EM_AARCH64, EM_ARM, EM_RISCV};
    match machine {
        EM_AARCH64 => name.starts_with(b"$d") || name.starts_with(b"$x"),
        EM_ARM => {
            name.is_empty()
                || name.starts_with(b"$d")
                || name.starts_with(b"$t")
                || name.starts_with(b"$a")
        }
        EM_CSKY => name.starts_with(b"$d") || name.starts_with(b"$t"),
        EM_RISCV => name == b".L0 " || name.starts_with(b"$d") || name.starts_with(b"$x"),
        _ => false,
    }
}
