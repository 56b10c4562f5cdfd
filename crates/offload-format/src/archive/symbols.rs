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
//! * Other object formats (COFF, Mach-O, Wasm, XCOFF): global defined
//!   symbols as the `object` crate reports them (an approximation; the
//!   offload tools never put such members in archives on Linux).
//! * Anything else (offload binaries, fat binaries, text) is not a symbolic
//!   file and contributes nothing.

use crate::bitcode;

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
    /// a blob. The text is the reason.
    Unreadable(String),
}

/// Classifies `data` like LLVM's file-type sniffing and lists its archive
/// symbols. `Err` holds the reason for a broken object file, which makes
/// LLVM's archive writer fail.
pub fn member_symbols(data: &[u8]) -> Result<MemberSymbols, String> {
    if bitcode::is_bitcode(data) {
        return Ok(match bitcode::archive_symbols(data) {
            Ok(names) => MemberSymbols::Symbols(names),
            Err(e) => MemberSymbols::Unreadable(e.to_string()),
        });
    }
    non_bitcode_symbols(data)
}

/// [`member_symbols`], and whether the member is bitcode with module-level
/// inline assembly whose symbols could be read (on which LLVM 22's offload
/// tools crash when they write the archive's symbol table; see
/// [`bitcode::has_module_asm`]). A bitcode member is read once for both.
pub fn member_symbols_and_module_asm(data: &[u8]) -> (Result<MemberSymbols, String>, bool) {
    if bitcode::is_bitcode(data) {
        return match bitcode::archive_symbols_and_module_asm(data) {
            Ok(facts) => (Ok(MemberSymbols::Symbols(facts.symbols)), facts.module_asm),
            Err(e) => (Ok(MemberSymbols::Unreadable(e.to_string())), false),
        };
    }
    (non_bitcode_symbols(data), false)
}

fn non_bitcode_symbols(data: &[u8]) -> Result<MemberSymbols, String> {
    if data.len() >= 18 && data.starts_with(b"\x7fELF") {
        return elf_symbols(data).map(MemberSymbols::Symbols);
    }
    if is_other_object(data) {
        return other_symbols(data).map(MemberSymbols::Symbols);
    }
    Ok(MemberSymbols::NotSymbolic)
}

/// COFF objects (by LLVM's magic rules) and Mach-O objects, which LLVM
/// treats as symbolic.
fn is_other_object(data: &[u8]) -> bool {
    if is_coff(data) {
        return true;
    }
    match object::FileKind::parse(data) {
        Ok(kind) => matches!(kind, object::FileKind::MachO32 | object::FileKind::MachO64),
        Err(_) => false,
    }
}

fn is_coff(data: &[u8]) -> bool {
    matches!(
        crate::identify::identify(data),
        crate::identify::FileKind::Coff { .. }
    )
}

fn other_symbols(data: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    use object::{Object, ObjectSymbol, SymbolKind};
    // LLVM's own open-time checks and messages for COFF come first.
    if is_coff(data) {
        use crate::objfile::coff::{CoffFile, SymbolTableCheck};
        if let Err(e) = CoffFile::parse_with(data, SymbolTableCheck::Start) {
            return Err(e.to_string());
        }
    }
    // The object crate needs naturally aligned input; members and images
    // inside other files often are not (LLVM copies such buffers too).
    let copy;
    let data = if data.as_ptr() as usize % 8 == 0 {
        data
    } else {
        copy = AlignedCopy::new(data);
        copy.bytes()
    };
    let file = object::File::parse(data).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for sym in file.symbols() {
        if !sym.is_global() || sym.is_undefined() {
            continue;
        }
        if matches!(sym.kind(), SymbolKind::File | SymbolKind::Section) {
            continue;
        }
        out.push(sym.name_bytes().map_err(|e| e.to_string())?.to_vec());
    }
    Ok(out)
}

/// A copy of a byte slice in 8-aligned storage.
struct AlignedCopy {
    words: Vec<u64>,
    len: usize,
}

impl AlignedCopy {
    fn new(bytes: &[u8]) -> AlignedCopy {
        let mut words = vec![0u64; bytes.len().div_ceil(8)];
        object::pod::bytes_of_slice_mut(&mut words)[..bytes.len()].copy_from_slice(bytes);
        AlignedCopy {
            words,
            len: bytes.len(),
        }
    }

    fn bytes(&self) -> &[u8] {
        &object::pod::bytes_of_slice(&self.words)[..self.len]
    }
}

struct Elf<'a> {
    data: &'a [u8],
    is64: bool,
    big: bool,
}

impl Elf<'_> {
    fn bytes(&self, at: u64, len: u64) -> Option<&[u8]> {
        let start = usize::try_from(at).ok()?;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        self.data.get(start..end)
    }
    fn uint(&self, at: u64, size: u64) -> Option<u64> {
        let b = self.bytes(at, size)?;
        let mut v = 0u64;
        if self.big {
            for &x in b {
                v = (v << 8) | u64::from(x);
            }
        } else {
            for &x in b.iter().rev() {
                v = (v << 8) | u64::from(x);
            }
        }
        Some(v)
    }
}

struct Section {
    sh_type: u64,
    link: u64,
    offset: u64,
    size: u64,
    entsize: u64,
}

fn read_section(elf: &Elf<'_>, table: u64, index: u64) -> Option<Section> {
    let shdr = if elf.is64 { 64 } else { 40 };
    let base = table.checked_add(index.checked_mul(shdr)?)?;
    // `table` comes from the file: a header near 2^64 must read as out of
    // bounds, not wrap around to the start of the file.
    let field = |at: u64, size: u64| elf.uint(base.checked_add(at)?, size);
    if elf.is64 {
        Some(Section {
            sh_type: field(4, 4)?,
            offset: field(24, 8)?,
            size: field(32, 8)?,
            link: field(40, 4)?,
            entsize: field(56, 8)?,
        })
    } else {
        Some(Section {
            sh_type: field(4, 4)?,
            offset: field(16, 4)?,
            size: field(20, 4)?,
            link: field(24, 4)?,
            entsize: field(36, 4)?,
        })
    }
}

const SHT_SYMTAB: u64 = 2;
const SHT_STRTAB: u64 = 3;
const EM_ARM: u64 = 40;
const EM_AARCH64: u64 = 183;
const EM_RISCV: u64 = 243;
const EM_CSKY: u64 = 252;

/// Archive symbols of an ELF file, with LLVM's error texts for the common
/// kinds of damage.
pub(crate) fn elf_symbols(data: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let is64 = match data.get(4) {
        Some(1) => false,
        Some(2) => true,
        _ => return Err("Invalid ELF class".into()),
    };
    let big = match data.get(5) {
        Some(1) => false,
        Some(2) => true,
        _ => return Err("Invalid ELF data".into()),
    };
    let elf = Elf { data, is64, big };
    let ehdr = if is64 { 64 } else { 52 };
    if data.len() < ehdr {
        return Err(format!(
            "invalid buffer: the size ({}) is smaller than an ELF header ({ehdr})",
            data.len()
        ));
    }
    let truncated = || "truncated ELF file".to_string();
    let machine = elf.uint(18, 2).ok_or_else(truncated)?;
    let (shoff, shentsize_at, shnum_at) = if is64 {
        (elf.uint(40, 8).ok_or_else(truncated)?, 58, 60)
    } else {
        (elf.uint(32, 4).ok_or_else(truncated)?, 46, 48)
    };
    if shoff == 0 {
        return Ok(Vec::new());
    }
    let shdr = if is64 { 64 } else { 40 };
    let shentsize = elf.uint(shentsize_at, 2).ok_or_else(truncated)?;
    if shentsize != shdr {
        return Err(format!("invalid e_shentsize in ELF header: {shentsize}"));
    }
    let past_end =
        || format!("section header table goes past the end of the file: e_shoff = 0x{shoff:x}");
    let mut shnum = elf.uint(shnum_at, 2).ok_or_else(truncated)?;
    if shnum == 0 {
        // The real count is in the first section header's size field.
        let first = read_section(&elf, shoff, 0).ok_or_else(past_end)?;
        shnum = first.size;
    }
    shnum
        .checked_mul(shdr)
        .and_then(|n| n.checked_add(shoff))
        .filter(|&end| end <= data.len() as u64)
        .ok_or_else(past_end)?;

    let mut symtab = None;
    for index in 0..shnum {
        let section = read_section(&elf, shoff, index).ok_or_else(past_end)?;
        if section.sh_type == SHT_SYMTAB {
            symtab = Some((index, section));
            break;
        }
    }
    let Some((symtab_index, symtab)) = symtab else {
        return Ok(Vec::new());
    };
    let sym_size = if is64 { 24 } else { 16 };
    let count = symtab.size / sym_size;
    // LLVM validates the table only when it looks at a symbol past the
    // null one.
    if count < 2 {
        return Ok(Vec::new());
    }
    if symtab.entsize != sym_size {
        return Err(format!(
            "section [index {symtab_index}] has invalid sh_entsize: expected {sym_size}, but got {}",
            symtab.entsize
        ));
    }
    if symtab.size % sym_size != 0 {
        return Err(format!(
            "section [index {symtab_index}] has an invalid sh_size ({}) which is not a multiple of its sh_entsize ({sym_size})",
            symtab.size
        ));
    }
    elf.bytes(symtab.offset, symtab.size).ok_or_else(|| {
        format!(
            "section [index {symtab_index}] has a sh_offset (0x{:x}) + sh_size (0x{:x}) that is greater than the file size (0x{:x})",
            symtab.offset,
            symtab.size,
            data.len()
        )
    })?;

    let strtab_index = symtab.link;
    if strtab_index >= shnum {
        return Err(format!("invalid section index: {strtab_index}"));
    }
    let strsec = read_section(&elf, shoff, strtab_index).ok_or_else(past_end)?;
    if strsec.sh_type != SHT_STRTAB {
        return Err(format!(
            "invalid sh_type for string table section [index {strtab_index}]: expected SHT_STRTAB, but got {}",
            sh_type_name(strsec.sh_type)
        ));
    }
    let strings = elf.bytes(strsec.offset, strsec.size).ok_or_else(|| {
        format!(
            "section [index {strtab_index}] has a sh_offset (0x{:x}) + sh_size (0x{:x}) that is greater than the file size (0x{:x})",
            strsec.offset,
            strsec.size,
            data.len()
        )
    })?;
    if strings.last().is_some_and(|&b| b != 0) {
        return Err(format!(
            "SHT_STRTAB string table section [index {strtab_index}] is non-null terminated"
        ));
    }

    let mut out = Vec::new();
    for index in 1..count {
        let base = symtab.offset + index * sym_size;
        let (name_off, info, shndx) = if is64 {
            (
                elf.uint(base, 4).ok_or_else(truncated)?,
                elf.uint(base + 4, 1).ok_or_else(truncated)?,
                elf.uint(base + 6, 2).ok_or_else(truncated)?,
            )
        } else {
            (
                elf.uint(base, 4).ok_or_else(truncated)?,
                elf.uint(base + 12, 1).ok_or_else(truncated)?,
                elf.uint(base + 14, 2).ok_or_else(truncated)?,
            )
        };
        let binding = info >> 4;
        let sym_type = info & 0xf;
        // STB_LOCAL, SHN_UNDEF, STT_SECTION / STT_FILE are never listed.
        if binding == 0 || shndx == 0 || sym_type == 3 || sym_type == 4 {
            continue;
        }
        let name = symbol_name(strings, name_off)?;
        if is_mapping_symbol(machine, name) {
            continue;
        }
        out.push(name.to_vec());
    }
    Ok(out)
}

fn symbol_name(strings: &[u8], offset: u64) -> Result<&[u8], String> {
    let start = usize::try_from(offset)
        .ok()
        .filter(|&s| s < strings.len())
        .ok_or_else(|| {
            format!(
                "st_name (0x{offset:x}) is past the end of the string table of size 0x{:x}",
                strings.len()
            )
        })?;
    let rest = &strings[start..];
    let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
    Ok(&rest[..end])
}

fn is_mapping_symbol(machine: u64, name: &[u8]) -> bool {
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

fn sh_type_name(t: u64) -> String {
    let name = match t {
        0 => "SHT_NULL",
        1 => "SHT_PROGBITS",
        2 => "SHT_SYMTAB",
        4 => "SHT_RELA",
        5 => "SHT_HASH",
        6 => "SHT_DYNAMIC",
        7 => "SHT_NOTE",
        8 => "SHT_NOBITS",
        9 => "SHT_REL",
        11 => "SHT_DYNSYM",
        _ => return format!("0x{t:x}"),
    };
    name.to_string()
}
