//! Offload bundles stored as sections of a host object file (`-type=o`).
//!
//! An object bundle is an ordinary relocatable object (the host code) with
//! one extra section per bundle entry, named `__CLANG_OFFLOAD_BUNDLE__<id>`.
//! The section holds the entry's bytes verbatim; the host entry's section
//! holds a single zero byte, meaning "the host object is the file itself,
//! minus the bundle sections". The sections are `SHT_PROGBITS`, flagged
//! `SHF_EXCLUDE` only (not allocated, not writable), byte-aligned, and are
//! appended after the existing sections in `-targets` order.
//!
//! LLVM 22's bundler does not write these files itself: it runs
//! `llvm-objcopy`. This module does the same work in-process and produces the
//! same bytes ([`add_bundle_sections`], [`strip_bundle_sections`]); it also
//! reads bundles ([`ObjectFile`]) with the acceptance rules of LLVM's object
//! library. (The `llvm-objcopy` command lines the bundler prints instead of
//! running them belong to the bundler, not to this library.)
//!
//! Host formats: ELF (32/64-bit, either byte order) and COFF objects
//! (regular and bigobj) are read and rewritten. Mach-O objects are read (they
//! never contain bundles: their section names are too short for the prefix)
//! but not rewritten, because llvm-objcopy 22 cannot do it either. PE images,
//! WebAssembly, XCOFF, GOFF and DXContainer are refused with
//! [`Error::Unsupported`] (see `docs/compat.md#object-bundles-clang-offload-bundler--typeo`).

mod coff;
mod elf;
mod error;
#[cfg(feature = "object-edit")]
mod objcopy;
// What an edit writes, and the reader over it (`Data`); without the editor
// only `Data`'s slice form is used.
#[cfg_attr(not(feature = "object-edit"), allow(dead_code))]
mod pieces;

pub use error::{CoffError, ElfError, Error, NotObject, ObjectFormat};
pub use pieces::Pieces;

use crate::identify::{identify, FileKind};
use elf::{ElfExt, ElfFile};
use pieces::Data;
#[cfg(feature = "object-edit")]
use pieces::PieceReader;

/// Prefix of every bundle section name; the rest of the name is the entry ID.
pub const SECTION_PREFIX: &str = "__CLANG_OFFLOAD_BUNDLE__";

/// Contents of the host entry's section: one zero byte.
pub const HOST_PLACEHOLDER: &[u8] = &[0];

/// Recognises the object-file formats LLVM would try to open, from the magic
/// bytes alone (LLVM's `identify_magic`, restricted to object files).
pub fn sniff_format(data: &[u8]) -> Option<ObjectFormat> {
    sniff(Data::Slice(data))
}

fn sniff(bytes: Data<'_>) -> Option<ObjectFormat> {
    Some(match kind_of(bytes) {
        FileKind::Elf(_) => ObjectFormat::Elf,
        FileKind::Coff { .. } | FileKind::Pe => ObjectFormat::Coff,
        FileKind::MachO(_) => ObjectFormat::MachO,
        FileKind::Wasm => ObjectFormat::Wasm,
        FileKind::Xcoff { .. } => ObjectFormat::Xcoff,
        FileKind::Goff => ObjectFormat::Goff,
        FileKind::DxContainer => ObjectFormat::DxContainer,
        _ => return None,
    })
}

/// What `data` is. A rewritten image read back in pieces is one of our
/// own ELF or COFF objects, never a PE image, so its first 32 bytes (all
/// the sniffer needs then, and inside the first run of pieces) decide.
fn kind_of(data: Data<'_>) -> FileKind {
    match data {
        Data::Slice(s) => identify(s),
        Data::Pieces(_) => identify(data.head(32)),
    }
}

/// A host object opened for reading bundle sections.
#[derive(Debug, Clone)]
pub struct ObjectFile<'a> {
    inner: Inner<'a>,
}

#[derive(Debug, Clone)]
enum Inner<'a> {
    Elf(ElfFile<'a>),
    Coff(coff::CoffFile<'a>),
    /// Mach-O section names hold at most 16 bytes, so they can never carry
    /// the 24-byte bundle prefix: such objects have no bundles.
    MachO,
}

/// One `__CLANG_OFFLOAD_BUNDLE__` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleSection<'a> {
    /// Entry ID: the section name after the prefix, byte for byte.
    pub id: &'a [u8],
    /// Index of the section in the section header table (ELF: including
    /// the null entry; COFF: 0-based position in the section table).
    pub section_index: usize,
    contents: Result<&'a [u8], Error>,
}

impl<'a> BundleSection<'a> {
    /// The section's bytes. Reading them can fail (data past the end of the
    /// file) even though the section was listed, exactly as in LLVM, where
    /// listing never touches contents.
    pub fn contents(&self) -> Result<&'a [u8], Error> {
        self.contents.clone()
    }

    /// True when the section is the host placeholder (one zero byte): the
    /// bundler then extracts the host object ([`strip_bundle_sections`])
    /// instead of the section bytes. A device entry that happens to be a
    /// single zero byte is indistinguishable, as in LLVM.
    pub fn is_host_placeholder(&self) -> bool {
        matches!(self.contents, Ok(c) if c == HOST_PLACEHOLDER)
    }
}

impl<'a> ObjectFile<'a> {
    /// Opens `data` as a host object.
    ///
    /// * [`Error::NotAnObject`]: LLVM would not open this as an object file;
    ///   the bundler then uses its binary format (callers should fall back).
    /// * [`Error::Unsupported`]: an object format this module cannot read
    ///   (PE images, WebAssembly, XCOFF, GOFF, DXContainer).
    pub fn parse(data: &'a [u8]) -> Result<Self, Error> {
        Self::parse_data(Data::Slice(data))
    }

    fn parse_data(data: Data<'a>) -> Result<Self, Error> {
        let inner = match sniff(data) {
            Some(ObjectFormat::Elf) => Inner::Elf(elf::open(data)?),
            Some(ObjectFormat::Coff) if kind_of(data) == FileKind::Pe => {
                return Err(unsupported_pe())
            }
            Some(ObjectFormat::Coff) => Inner::Coff(coff::open(data)?),
            Some(ObjectFormat::MachO) => Inner::MachO,
            Some(format) => return Err(unsupported_read(format)),
            None => return Err(Error::NotAnObject(NotObject::NotElf)),
        };
        Ok(ObjectFile { inner })
    }

    /// The object format.
    pub fn format(&self) -> ObjectFormat {
        match self.inner {
            Inner::Elf(_) => ObjectFormat::Elf,
            Inner::Coff(_) => ObjectFormat::Coff,
            Inner::MachO => ObjectFormat::MachO,
        }
    }

    /// Bundle sections in section-header order, duplicates included.
    ///
    /// The iterator yields an error and stops at the first section whose
    /// name cannot be read (a broken ELF section name table fails at the very
    /// first section), so a `-list` front-end prints the IDs it got before
    /// reporting the error, like LLVM 22.
    pub fn bundle_sections(&self) -> BundleSections<'_, 'a> {
        BundleSections {
            file: self,
            next: 0,
            done: false,
        }
    }

    /// All bundle sections, or the first error.
    pub fn collect_bundle_sections(&self) -> Result<Vec<BundleSection<'a>>, Error> {
        self.bundle_sections().collect()
    }

    fn section_count(&self) -> usize {
        match &self.inner {
            Inner::Elf(e) => e.section_count(),
            Inner::Coff(c) => c.section_count(),
            Inner::MachO => 0,
        }
    }

    /// Name of section `i`.
    fn section_name(&self, i: usize) -> Result<&'a [u8], Error> {
        match &self.inner {
            Inner::Elf(elf) => Ok(elf
                .section_name_table()
                .and_then(|table| elf.section_name(i, table))
                .map_err(ElfError::from)?),
            Inner::Coff(c) => c.section_name(i).map_err(|e| Error::Coff(e.into())),
            Inner::MachO => Err(Error::NotAnObject(NotObject::NotElf)),
        }
    }

    /// Contents of section `i`: LLVM reads them lazily, so their error is
    /// only reported when an entry is extracted.
    fn section_contents(&self, i: usize) -> Result<&'a [u8], Error> {
        match &self.inner {
            Inner::Elf(elf) => elf
                .object_section_contents(i)
                .map_err(|e| Error::Elf(e.into())),
            Inner::Coff(c) => c.section_contents(i).map_err(|e| Error::Coff(e.into())),
            Inner::MachO => Err(Error::NotAnObject(NotObject::NotElf)),
        }
    }
}

/// Iterator over the bundle sections of an [`ObjectFile`].
#[derive(Debug)]
pub struct BundleSections<'f, 'a> {
    file: &'f ObjectFile<'a>,
    next: usize,
    done: bool,
}

impl<'a> Iterator for BundleSections<'_, 'a> {
    type Item = Result<BundleSection<'a>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done && self.next < self.file.section_count() {
            let i = self.next;
            self.next += 1;
            let name = match self.file.section_name(i) {
                Ok(x) => x,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            };
            // A section named just the prefix carries no entry: LLVM 22
            // skips it when listing and unbundling.
            let id = name
                .strip_prefix(SECTION_PREFIX.as_bytes())
                .filter(|id| !id.is_empty());
            if let Some(id) = id {
                return Some(Ok(BundleSection {
                    id,
                    section_index: i,
                    contents: self.file.section_contents(i),
                }));
            }
        }
        None
    }
}

/// Convenience: the bundle sections of `data`, or an error (including
/// [`Error::NotAnObject`] for inputs LLVM would not open as objects).
pub fn bundle_sections(data: &[u8]) -> Result<Vec<BundleSection<'_>>, Error> {
    ObjectFile::parse(data)?.collect_bundle_sections()
}

fn unsupported_read(format: ObjectFormat) -> Error {
    Error::Unsupported {
        format,
        reason: "only ELF, COFF and Mach-O host objects can be read natively",
    }
}

fn unsupported_pe() -> Error {
    Error::Unsupported {
        format: ObjectFormat::Coff,
        reason: "PE images (executables, DLLs) are not handled, only COFF objects",
    }
}

#[cfg(feature = "object-edit")]
fn section_name(id: &[u8]) -> Vec<u8> {
    let mut n = SECTION_PREFIX.as_bytes().to_vec();
    n.extend_from_slice(id);
    n
}

#[cfg(feature = "object-edit")]
/// Adds one bundle section per entry to a host object, as
/// `llvm-objcopy --add-section=__CLANG_OFFLOAD_BUNDLE__<id>=<file>
/// --set-section-flags=__CLANG_OFFLOAD_BUNDLE__<id>=readonly,exclude ...`
/// does, and returns the new object.
///
/// `entries` are (ID, contents) in `-targets` order; for the host entry pass
/// [`HOST_PLACEHOLDER`]. Existing sections with one of the new names get the
/// same flags, as llvm-objcopy applies `--set-section-flags` by name. The same
/// ID twice is [`Error::DuplicateEntry`] (llvm-objcopy refuses it too).
///
/// This assembles the object in memory; [`add_bundle_sections_pieces`] gives
/// the same bytes without copying the host's data or the entries.
pub fn add_bundle_sections<I: AsRef<[u8]>>(
    host: &[u8],
    entries: &[(I, &[u8])],
) -> Result<Vec<u8>, Error> {
    add_bundle_sections_pieces(host, entries).map(|p| p.to_vec())
}

#[cfg(feature = "object-edit")]
/// [`add_bundle_sections`], returning the object as [`Pieces`] that borrow
/// the host's section data and the entries' contents: write it with
/// [`Pieces::write_to`], and memory use does not grow with their size.
pub fn add_bundle_sections_pieces<'d, I: AsRef<[u8]>>(
    host: &'d [u8],
    entries: &[(I, &'d [u8])],
) -> Result<Pieces<'d>, Error> {
    let mut add: Vec<(Vec<u8>, &[u8])> = Vec::with_capacity(entries.len());
    for (id, contents) in entries {
        let name = section_name(id.as_ref());
        if add.iter().any(|(n, _)| *n == name) {
            return Err(Error::DuplicateEntry(id.as_ref().to_vec()));
        }
        add.push((name, contents));
    }
    let fat = rewrite(
        host,
        &objcopy::Edit {
            remove: None,
            add: &add,
        },
    )?;
    // Never hand out an object whose entries cannot be read back. For a
    // host without a section table, or with an alignment that wraps the
    // layout, llvm-objcopy 22 writes such an object (the entries are lost
    // or the headers overwritten) and the bundler exits 0.
    if read_back(&fat, |data| entries_readable(data, entries)) {
        Ok(fat)
    } else {
        Err(Error::Unreadable)
    }
}

#[cfg(feature = "object-edit")]
/// Removes every section whose name starts with `__CLANG_OFFLOAD_BUNDLE__`,
/// as `llvm-objcopy --regex --remove-section=__CLANG_OFFLOAD_BUNDLE__.*` does:
/// this is the host object the bundler extracts for a placeholder entry.
///
/// This assembles the object in memory; [`strip_bundle_sections_pieces`]
/// gives the same bytes without copying the sections' data.
pub fn strip_bundle_sections(fat: &[u8]) -> Result<Vec<u8>, Error> {
    strip_bundle_sections_pieces(fat).map(|p| p.to_vec())
}

#[cfg(feature = "object-edit")]
/// [`strip_bundle_sections`], returning the object as [`Pieces`] that borrow
/// the section data of `fat`.
pub fn strip_bundle_sections_pieces(fat: &[u8]) -> Result<Pieces<'_>, Error> {
    let pred = |name: &[u8]| name.starts_with(SECTION_PREFIX.as_bytes());
    let host = rewrite(
        fat,
        &objcopy::Edit {
            remove: Some(&pred),
            add: &[],
        },
    )?;
    // As for adding: no output that is not a readable object.
    if read_back(&host, |data| {
        ObjectFile::parse_data(data).is_ok_and(|f| f.collect_bundle_sections().is_ok())
    }) {
        Ok(host)
    } else {
        Err(Error::Unreadable)
    }
}

#[cfg(feature = "object-edit")]
/// True when `data` is an object in which the last section of each entry's
/// ID holds the entry's contents (empty IDs are not looked for).
fn entries_readable<I: AsRef<[u8]>>(data: Data<'_>, entries: &[(I, &[u8])]) -> bool {
    let Ok(found) = ObjectFile::parse_data(data).and_then(|f| f.collect_bundle_sections()) else {
        return false;
    };
    entries.iter().all(|(id, contents)| {
        let id = id.as_ref();
        id.is_empty()
            || found
                .iter()
                .rev()
                .find(|s| s.id == id)
                .is_some_and(|s| s.contents().is_ok_and(|c| same_bytes(c, contents)))
    })
}

#[cfg(feature = "object-edit")]
/// Equal contents; the same slice is equal without reading it (a device
/// image compared with itself stays on disk).
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    std::ptr::eq(a, b) || a == b
}

#[cfg(feature = "object-edit")]
/// Applies the read-back check `readable` to a rewritten object, in place
/// if it only needs bytes that lie within single pieces (headers, tables,
/// names, whole sections), else on the assembled object.
fn read_back(image: &Pieces<'_>, readable: impl Fn(Data<'_>) -> bool) -> bool {
    let reader = PieceReader::new(image);
    let verdict = readable(Data::Pieces(&reader));
    if !reader.incomplete() {
        return verdict;
    }
    readable(Data::Slice(&image.to_vec()))
}

#[cfg(feature = "object-edit")]
fn rewrite<'d>(data: &'d [u8], edit: &objcopy::Edit<'_, 'd>) -> Result<Pieces<'d>, Error> {
    match sniff_format(data) {
        Some(ObjectFormat::Elf) => objcopy::rewrite(data, edit),
        Some(ObjectFormat::Coff) if identify(data) == FileKind::Pe => Err(unsupported_pe()),
        Some(ObjectFormat::Coff) => coff::rewrite(
            data,
            &coff::CoffEdit {
                remove: edit.remove,
                add: edit.add,
            },
        ),
        Some(ObjectFormat::MachO) if edit.add.is_empty() => Err(Error::Unsupported {
            format: ObjectFormat::MachO,
            reason: "Mach-O objects cannot carry bundle sections",
        }),
        // llvm-objcopy 22's own refusals, word for word.
        Some(ObjectFormat::MachO) => Err(Error::Unsupported {
            format: ObjectFormat::MachO,
            reason: "option is not supported for MachO",
        }),
        Some(ObjectFormat::Wasm) => Err(Error::Unsupported {
            format: ObjectFormat::Wasm,
            reason: "only flags for section dumping, removal, and addition are supported",
        }),
        Some(format) => Err(Error::Unsupported {
            format,
            reason: "only ELF and COFF host objects can be rewritten natively",
        }),
        None => Err(Error::NotAnObject(NotObject::NotElf)),
    }
}

/// Optional strictness check for front-ends that want it (LLVM 22 does not
/// do this): fails if the file image of any section overlaps the ELF header,
/// the program or section header table, or another section.
///
/// Sections of type `SHT_NOBITS` and empty sections occupy no file space and
/// are ignored. Sections inside segments are allowed to overlap the program
/// header table (executables commonly map their headers).
pub fn check_layout(data: &[u8]) -> Result<(), Error> {
    let obj = ObjectFile::parse(data)?;
    let Inner::Elf(elf) = &obj.inner else {
        return Ok(());
    };
    let mut regions: Vec<(u64, u64, String)> = Vec::new();
    regions.push((
        0,
        elf.class().ehdr_size() as u64,
        "the ELF header".to_string(),
    ));
    if elf.header().shoff != 0 {
        let size = elf.section_count() as u64 * elf.class().shdr_size() as u64;
        regions.push((
            elf.header().shoff,
            size,
            "the section header table".to_string(),
        ));
    }
    for (i, sh) in elf.section_headers().iter().enumerate().skip(1) {
        if sh.sh_type == elf::SHT_NOBITS || sh.sh_type == elf::SHT_NULL || sh.size == 0 {
            continue;
        }
        regions.push((sh.offset, sh.size, format!("section [index {i}]")));
    }
    regions.sort_by_key(|r| (r.0, r.1));
    for pair in regions.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if a.0.saturating_add(a.1) > b.0 {
            return Err(Error::Overlap {
                first: a.2.clone(),
                second: b.2.clone(),
            });
        }
    }
    Ok(())
}

#[cfg(all(test, feature = "object-edit"))]
mod tests;
