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
//! library, and renders the `llvm-objcopy` command lines that `-###` prints
//! ([`bundle_command_line`], [`unbundle_host_command_line`]).
//!
//! Host formats: ELF (32/64-bit, either byte order) is fully supported.
//! COFF and Mach-O hosts are recognised and rejected with
//! [`Error::Unsupported`] (see `docs/compat/object-bundles.md`).

mod command;
mod elf;
mod error;
mod objcopy;
mod strtab;

pub use command::{
    bundle_command_line, bundle_objcopy_args, render_command_line, temp_file_path,
    unbundle_host_command_line, unbundle_objcopy_args, TEMP_DIR_ENV_VARS, TEMP_FILE_PREFIX,
    TEMP_FILE_SUFFIX,
};
pub use error::{ElfError, Error, NotObject, ObjectFormat};

use elf::ElfFile;

/// Prefix of every bundle section name; the rest of the name is the entry ID.
pub const SECTION_PREFIX: &str = "__CLANG_OFFLOAD_BUNDLE__";

/// Contents of the host entry's section: one zero byte.
pub const HOST_PLACEHOLDER: &[u8] = &[0];

/// Recognises the object-file formats LLVM would try to open, from the magic
/// bytes alone (LLVM's `identify_magic`, restricted to object files).
pub fn sniff_format(data: &[u8]) -> Option<ObjectFormat> {
    if elf::has_elf_magic(data) {
        return Some(ObjectFormat::Elf);
    }
    let b = |i: usize| data.get(i).copied();
    match (b(0)?, b(1)?) {
        (0xfe, 0xed) if b(2)? == 0xfa && matches!(b(3)?, 0xce | 0xcf) => Some(ObjectFormat::MachO),
        (0xce | 0xcf, 0xfa) if b(2)? == 0xed && b(3)? == 0xfe => Some(ObjectFormat::MachO),
        // COFF objects start with their machine type.
        (0x64, 0x86) | (0x64, 0xaa) | (0x4c, 0x01) | (0xc4, 0x01) => Some(ObjectFormat::Coff),
        (0x41, 0xa6) | (0x4e, 0xa6) => Some(ObjectFormat::Coff),
        (b'M', b'Z') => {
            // A PE image: "PE\0\0" at the offset stored at 0x3c.
            let at = u32::from_le_bytes(data.get(0x3c..0x40)?.try_into().ok()?) as usize;
            (data.get(at..at.checked_add(4)?)? == b"PE\0\0").then_some(ObjectFormat::Coff)
        }
        (0x00, b'a') if data.starts_with(b"\0asm") => Some(ObjectFormat::Wasm),
        (0x01, 0xdf) | (0x01, 0xf7) => Some(ObjectFormat::Xcoff),
        (0x03, 0xf0) if b(2)? == 0x00 => Some(ObjectFormat::Goff),
        _ => None,
    }
}

/// A host object opened for reading bundle sections.
#[derive(Debug, Clone)]
pub struct ObjectFile<'a> {
    elf: ElfFile<'a>,
}

/// One `__CLANG_OFFLOAD_BUNDLE__` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleSection<'a> {
    /// Entry ID: the section name after the prefix, byte for byte.
    pub id: &'a [u8],
    /// Index of the section in the section header table.
    pub section_index: usize,
    contents: Result<&'a [u8], ElfError>,
}

impl<'a> BundleSection<'a> {
    /// The section's bytes. Reading them can fail (data past the end of the
    /// file) even though the section was listed, exactly as in LLVM, where
    /// listing never touches contents.
    pub fn contents(&self) -> Result<&'a [u8], Error> {
        self.contents.clone().map_err(Error::Elf)
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
    /// * [`Error::Unsupported`]: an object format other than ELF.
    pub fn parse(data: &'a [u8]) -> Result<Self, Error> {
        match sniff_format(data) {
            Some(ObjectFormat::Elf) => Ok(ObjectFile {
                elf: ElfFile::parse(data)?,
            }),
            Some(format) => Err(unsupported_read(format)),
            None => Err(Error::NotAnObject(NotObject::NotElf)),
        }
    }

    /// The object format (always ELF for now).
    pub fn format(&self) -> ObjectFormat {
        ObjectFormat::Elf
    }

    /// Bundle sections in section-header order, duplicates included.
    ///
    /// The iterator yields an error and stops at the first section whose
    /// name cannot be read (a broken section name table fails at the very
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
        let elf = &self.file.elf;
        while !self.done && self.next < elf.section_count() {
            let i = self.next;
            self.next += 1;
            let name = elf
                .section_name_table()
                .and_then(|table| elf.section_name(i, table));
            let name = match name {
                Ok(n) => n,
                Err(e) => {
                    self.done = true;
                    return Some(Err(Error::Elf(e)));
                }
            };
            if let Some(id) = name.strip_prefix(SECTION_PREFIX.as_bytes()) {
                return Some(Ok(BundleSection {
                    id,
                    section_index: i,
                    contents: elf.object_section_contents(i),
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
        reason: "only ELF host objects can be read natively",
    }
}

fn unsupported_write(format: ObjectFormat) -> Error {
    match format {
        ObjectFormat::MachO => Error::Unsupported {
            format,
            reason: "llvm-objcopy 22 cannot add sections to Mach-O objects \
                     (\"option is not supported for MachO\"), so LLVM 22 fails too",
        },
        _ => Error::Unsupported {
            format,
            reason: "only ELF host objects can be rewritten natively",
        },
    }
}

fn section_name(id: &[u8]) -> Vec<u8> {
    let mut n = SECTION_PREFIX.as_bytes().to_vec();
    n.extend_from_slice(id);
    n
}

/// Adds one bundle section per entry to a host object, as
/// `llvm-objcopy --add-section=__CLANG_OFFLOAD_BUNDLE__<id>=<file>
/// --set-section-flags=__CLANG_OFFLOAD_BUNDLE__<id>=readonly,exclude ...`
/// does, and returns the new object.
///
/// `entries` are (ID, contents) in `-targets` order; for the host entry pass
/// [`HOST_PLACEHOLDER`]. Existing sections with one of the new names get the
/// same flags, as llvm-objcopy applies `--set-section-flags` by name. The same
/// ID twice is [`Error::DuplicateEntry`] (llvm-objcopy refuses it too).
pub fn add_bundle_sections<I: AsRef<[u8]>>(
    host: &[u8],
    entries: &[(I, &[u8])],
) -> Result<Vec<u8>, Error> {
    let mut add: Vec<(Vec<u8>, &[u8])> = Vec::with_capacity(entries.len());
    for (id, contents) in entries {
        let name = section_name(id.as_ref());
        if add.iter().any(|(n, _)| *n == name) {
            return Err(Error::DuplicateEntry(id.as_ref().to_vec()));
        }
        add.push((name, contents));
    }
    rewrite(
        host,
        &objcopy::Edit {
            remove: None,
            add: &add,
        },
    )
}

/// Removes every section whose name starts with `__CLANG_OFFLOAD_BUNDLE__`,
/// as `llvm-objcopy --regex --remove-section=__CLANG_OFFLOAD_BUNDLE__.*` does:
/// this is the host object the bundler extracts for a placeholder entry.
pub fn strip_bundle_sections(fat: &[u8]) -> Result<Vec<u8>, Error> {
    let pred = |name: &[u8]| name.starts_with(SECTION_PREFIX.as_bytes());
    rewrite(
        fat,
        &objcopy::Edit {
            remove: Some(&pred),
            add: &[],
        },
    )
}

fn rewrite<'a>(data: &'a [u8], edit: &objcopy::Edit<'a>) -> Result<Vec<u8>, Error> {
    match sniff_format(data) {
        Some(ObjectFormat::Elf) => objcopy::rewrite(data, edit),
        Some(format) => Err(unsupported_write(format)),
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
    let elf = &obj.elf;
    let mut regions: Vec<(u64, u64, String)> = Vec::new();
    regions.push((
        0,
        elf.class.ehdr_size() as u64,
        "the ELF header".to_string(),
    ));
    if elf.ehdr.shoff != 0 {
        let size = elf.section_count() as u64 * elf.class.shdr_size() as u64;
        regions.push((elf.ehdr.shoff, size, "the section header table".to_string()));
    }
    for (i, sh) in elf.shdrs.iter().enumerate().skip(1) {
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

#[cfg(test)]
mod tests;
