//! Object files (ELF, COFF, Mach-O) as `offload ls` needs them: the
//! sections that may hold offload data, and the HIP wrapper records that
//! say where each translation unit's bundle starts. All reading is done by
//! the format library's one reader, [`offload_format::objfile`].

use offload_format::bundle;
use offload_format::hip_fatbin;
use offload_format::identify::{identify, FileKind};
use offload_format::objfile::{self, elf};

/// `SHT_LLVM_OFFLOADING`.
const SHT_LLVM_OFFLOADING: u32 = 0x6FFF_4C0B;

/// One section with bytes in the file.
pub struct Section<'a> {
    /// Its index.
    pub index: usize,
    /// Its name (Mach-O: `segment,section`).
    pub name: String,
    /// Its bytes.
    pub data: &'a [u8],
    /// Its address (0 in relocatable objects).
    pub address: u64,
    /// Its section type (ELF).
    pub kind: u32,
}

/// An opened object file.
pub struct Object<'a> {
    obj: objfile::Object<'a>,
    /// `elf64-x86-64`-like description.
    pub format: String,
    /// The sections with contents.
    pub sections: Vec<Section<'a>>,
    /// Problems reading section headers.
    pub damage: Vec<String>,
    /// An object to be linked, not an executable or library.
    pub relocatable: bool,
}

/// Why an object file, or its registration records, cannot be read.
#[derive(Debug)]
pub enum ObjectError {
    /// The file's headers: `format` is `ELF`, `COFF`, `PE` or `Mach-O`.
    Parse {
        /// The kind of object file its magic says it is.
        format: &'static str,
        /// What the object reader found.
        source: objfile::Error,
    },
    /// A relocation or symbol table.
    Tables(objfile::Error),
    /// A relocation naming a symbol past the end of its table.
    NoSymbol(u32),
}

impl std::fmt::Display for ObjectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ObjectError::Parse { format, source } => write!(f, "{format} file: {source}"),
            ObjectError::Tables(e) => write!(f, "{e}"),
            ObjectError::NoSymbol(n) => {
                write!(f, "relocation names symbol {n} which does not exist")
            }
        }
    }
}

impl std::error::Error for ObjectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ObjectError::Parse { source, .. } | ObjectError::Tables(source) => Some(source),
            ObjectError::NoSymbol(_) => None,
        }
    }
}

/// Opens `data` if it is an object file; `None` when it is not one.
pub fn open(data: &[u8]) -> Option<Result<Object<'_>, ObjectError>> {
    let format = match identify(data) {
        FileKind::Elf(_) => "ELF",
        FileKind::Coff { .. } => "COFF",
        FileKind::Pe => "PE",
        FileKind::MachO(_) => "Mach-O",
        _ => return None,
    };
    let obj = match objfile::Object::parse(data) {
        Ok(o) => o,
        Err(source) => return Some(Err(ObjectError::Parse { format, source })),
    };
    let mut sections = Vec::new();
    let mut damage = Vec::new();
    for s in obj.sections() {
        let s = match s {
            Ok(s) => s,
            Err(e) => {
                // A broken section name table fails every section alike:
                // say it once.
                let message = format!("{format} section: {e}");
                if !damage.contains(&message) {
                    damage.push(message);
                }
                continue;
            }
        };
        let name = match s.segment_name {
            Some(seg) => format!(
                "{},{}",
                String::from_utf8_lossy(seg),
                String::from_utf8_lossy(s.name)
            ),
            None => String::from_utf8_lossy(s.name).into_owned(),
        };
        match s.data() {
            Ok(data) => sections.push(Section {
                index: s.index,
                name,
                data,
                address: s.address,
                kind: s.kind,
            }),
            Err(e) => {
                if role_by_name(&name, s.kind).is_some() || bundle_section_id(&name).is_some() {
                    damage.push(format!("section {name}: {e}"));
                }
            }
        }
    }
    let format = match obj.as_elf() {
        Some(e) => {
            let h = e.header();
            format!(
                "ELF{} {}, machine {}",
                if h.class.is64 { 64 } else { 32 },
                match h.e_type {
                    1 => "relocatable",
                    2 => "executable",
                    3 => "shared object",
                    _ => "file",
                },
                h.machine
            )
        }
        None => format.to_owned(),
    };
    let relocatable = obj.is_relocatable();
    Some(Ok(Object {
        obj,
        format,
        sections,
        damage,
        relocatable,
    }))
}

/// What a section holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Bundles and CCOBs, one per translation unit.
    HipFatbin,
    /// Offload binaries.
    OffloadBinaries,
    /// NVIDIA fat binary containers.
    Fatbin,
    /// A section of another name that starts with an offload magic.
    Sniff,
}

/// The section's role from its name (ELF and COFF spell them the same;
/// Mach-O puts them in a segment: `__HIP,__hip_fatbin`, `__LLVM,__offloading`).
fn role_by_name(name: &str, kind: u32) -> Option<Role> {
    let section = name.rsplit(',').next().unwrap_or(name);
    match section {
        ".hip_fatbin" | "__hip_fatbin" => Some(Role::HipFatbin),
        ".llvm.offloading" | "__llvm_offloading" | "__offloading" => Some(Role::OffloadBinaries),
        ".nv_fatbin" | "__nv_relfatbin" | "__nv_fatbin" => Some(Role::Fatbin),
        _ if kind == SHT_LLVM_OFFLOADING => Some(Role::OffloadBinaries),
        _ => None,
    }
}

/// Whether a section is the linked fat binary section (`.nv_fatbin`), the
/// one cuobjdump lists where a file has it.
pub fn is_nv_fatbin(name: &str) -> bool {
    matches!(name, ".nv_fatbin" | "__nv_fatbin")
}

/// Whether a section holds relocatable device code (`__nv_relfatbin`,
/// nvcc's `-rdc=true`): input to a device link, not loaded itself.
pub fn is_nv_relfatbin(name: &str) -> bool {
    name.rsplit(',').next() == Some("__nv_relfatbin")
}

/// The role of a section: by name, else by a magic at its start.
pub fn section_role(name: &str, kind: u32, data: &[u8]) -> Option<Role> {
    if let Some(r) = role_by_name(name, kind) {
        return Some(r);
    }
    let magic = bundle::has_magic(data)
        || matches!(
            identify(data),
            FileKind::OffloadBundle | FileKind::Ccob | FileKind::OffloadBinary | FileKind::NvFatbin
        );
    magic.then_some(Role::Sniff)
}

/// Whether a section of no offload role may hold NVIDIA images among its
/// other data (loaded with `cuModuleLoadData`): the read-only and writable
/// data sections, large-model ones included (`.ldata`, `.lrodata`), and
/// PE's `.rdata`.
pub fn may_embed_images(name: &str) -> bool {
    const DATA: [&str; 6] = [
        ".rodata",
        ".data",
        ".ldata",
        ".lrodata",
        ".rdata",
        ".data.rel.ro",
    ];
    DATA.iter().any(|d| {
        name == *d
            || name
                .strip_prefix(d)
                .is_some_and(|rest| rest.starts_with('.'))
    })
}

/// The entry ID of a `__CLANG_OFFLOAD_BUNDLE__<id>` section.
pub fn bundle_section_id(name: &str) -> Option<&str> {
    let section = name.rsplit(',').next().unwrap_or(name);
    let magic = std::str::from_utf8(bundle::MAGIC).ok()?;
    section.strip_prefix(magic).filter(|id| !id.is_empty())
}

impl Object<'_> {
    /// Where the bundles of `fatbin` start (offsets in the section), from
    /// the `__hip_fatbin_wrapper` records of `.hipFatBinSegment`, their
    /// pointers resolved through relocations. ELF only; empty when there
    /// are no records.
    pub fn hip_wrapper_starts(&self, fatbin: &Section<'_>) -> Result<Vec<usize>, ObjectError> {
        let Some(e) = self.obj.as_elf() else {
            return Ok(Vec::new());
        };
        let Some(seg) = self.sections.iter().find(|s| s.name == ".hipFatBinSegment") else {
            return Ok(Vec::new());
        };
        let class = e.class();
        let ptr = if class.is64 { 8 } else { 4 };
        let wrappers = hip_fatbin::parse_wrappers(seg.data, ptr, class.big_endian);
        if wrappers.is_empty() {
            return Ok(Vec::new());
        }
        let relocatable = e.header().e_type == 1;
        // The relocations that may fill the pointers in: in an object,
        // those of sections applying to the segment; in a linked file, the
        // dynamic ones (which name addresses).
        let mut relocs = Vec::new();
        for (i, h) in e.section_headers().iter().enumerate() {
            if h.sh_type != elf::SHT_RELA && h.sh_type != elf::SHT_REL {
                continue;
            }
            if relocatable && h.info as usize != seg.index {
                continue;
            }
            let list = e.relocations(i).map_err(ObjectError::Tables)?;
            relocs.push((h.link as usize, list));
        }
        let mut starts = Vec::new();
        for w in wrappers {
            let site = if relocatable {
                w.pointer_offset as u64
            } else {
                seg.address + w.pointer_offset as u64
            };
            let found = relocs.iter().find_map(|(link, list)| {
                list.iter().find(|r| r.offset == site).map(|r| (*link, *r))
            });
            let target = match found {
                Some((link, r)) => {
                    let addend = r.addend.unwrap_or(w.pointer as i64);
                    if r.symbol == 0 {
                        Some(addend as u64)
                    } else {
                        let symbols = e.symbols(link).map_err(ObjectError::Tables)?;
                        let sym = symbols
                            .get(r.symbol as usize)
                            .ok_or(ObjectError::NoSymbol(r.symbol))?;
                        if relocatable && sym.shndx as usize != fatbin.index {
                            None
                        } else {
                            Some(sym.value.wrapping_add(addend as u64))
                        }
                    }
                }
                None if w.pointer != 0 => Some(w.pointer),
                None => None,
            };
            let Some(target) = target else { continue };
            let offset = if relocatable {
                target
            } else {
                target.wrapping_sub(fatbin.address)
            };
            if offset < fatbin.data.len() as u64 {
                starts.push(offset as usize);
            }
        }
        Ok(starts)
    }
}
