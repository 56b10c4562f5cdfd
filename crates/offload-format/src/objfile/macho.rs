//! Mach-O files (32/64-bit, either byte order) and universal (fat) files.
//!
//! [`MachOFile::parse`] reads the header and walks the load commands,
//! keeping the `LC_SEGMENT` and `LC_SEGMENT_64` commands and their
//! sections. Every load command must lie inside `sizeofcmds` and the file,
//! and every section table inside its command, as LLVM's `MachOObjectFile`
//! requires. [`parse_fat`] lists the slices of a universal file.

use super::Error;
use crate::bytes::{until_nul, Bytes, Endian};

/// `MH_OBJECT`.
pub const MH_OBJECT: u32 = 1;
/// `MH_EXECUTE`.
pub const MH_EXECUTE: u32 = 2;
/// `MH_DYLIB`.
pub const MH_DYLIB: u32 = 6;
/// `MH_BUNDLE`.
pub const MH_BUNDLE: u32 = 8;
/// `LC_SEGMENT`.
pub const LC_SEGMENT: u32 = 0x1;
/// `LC_SEGMENT_64`.
pub const LC_SEGMENT_64: u32 = 0x19;
/// `LC_SYMTAB`.
pub const LC_SYMTAB: u32 = 0x2;
/// `N_STAB`: debugging symbols.
pub const N_STAB: u8 = 0xe0;
/// `N_TYPE`: the type bits of `n_type`.
pub const N_TYPE: u8 = 0x0e;
/// `N_EXT`: an external symbol.
pub const N_EXT: u8 = 0x01;
/// `N_UNDF`: an undefined symbol.
pub const N_UNDF: u8 = 0x0;
/// `S_ZEROFILL`.
pub const S_ZEROFILL: u32 = 0x1;
/// `S_GB_ZEROFILL`.
pub const S_GB_ZEROFILL: u32 = 0xc;
/// `S_THREAD_LOCAL_ZEROFILL`.
pub const S_THREAD_LOCAL_ZEROFILL: u32 = 0x12;

/// The Mach-O header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// 64-bit (`0xfeedfacf`).
    pub is64: bool,
    /// Byte order.
    pub endian: Endian,
    /// `cputype`.
    pub cputype: u32,
    /// `cpusubtype`.
    pub cpusubtype: u32,
    /// `filetype`.
    pub filetype: u32,
    /// `ncmds`.
    pub ncmds: u32,
    /// `sizeofcmds`.
    pub sizeofcmds: u32,
    /// `flags`.
    pub flags: u32,
}

/// One segment (`LC_SEGMENT` or `LC_SEGMENT_64`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment<'a> {
    /// `segname`, up to its first NUL.
    pub name: &'a [u8],
    /// `vmaddr`.
    pub vmaddr: u64,
    /// `vmsize`.
    pub vmsize: u64,
    /// `fileoff`.
    pub fileoff: u64,
    /// `filesize`.
    pub filesize: u64,
    /// `maxprot`.
    pub maxprot: u32,
    /// `initprot`.
    pub initprot: u32,
    /// `flags`.
    pub flags: u32,
}

/// One section of a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Section<'a> {
    /// `sectname`, up to its first NUL (at most 16 bytes).
    pub name: &'a [u8],
    /// `segname` of the section header, up to its first NUL.
    pub segment_name: &'a [u8],
    /// `addr`.
    pub addr: u64,
    /// `size`.
    pub size: u64,
    /// `offset`.
    pub offset: u32,
    /// `align` (a power of two).
    pub align: u32,
    /// `reloff`.
    pub reloff: u32,
    /// `nreloc`.
    pub nreloc: u32,
    /// `flags`: the low byte is the section type.
    pub flags: u32,
}

impl Section<'_> {
    /// The section type (`S_*`): the low byte of `flags`.
    pub fn section_type(&self) -> u32 {
        self.flags & 0xff
    }

    /// True for the zero-fill types, which have no bytes in the file.
    pub fn is_zerofill(&self) -> bool {
        matches!(
            self.section_type(),
            S_ZEROFILL | S_GB_ZEROFILL | S_THREAD_LOCAL_ZEROFILL
        )
    }
}

/// One `nlist` entry of the symbol table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Symbol<'a> {
    /// The name, from the string table.
    pub name: &'a [u8],
    /// `n_type`.
    pub n_type: u8,
    /// `n_sect` (1-based section number, 0 for none).
    pub n_sect: u8,
    /// `n_desc`.
    pub n_desc: u16,
    /// `n_value`.
    pub n_value: u64,
}

/// Where `LC_SYMTAB` puts the symbol and string tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Symtab {
    /// Offset of the `LC_SYMTAB` command.
    at: u64,
    symoff: u32,
    nsyms: u32,
    stroff: u32,
    strsize: u32,
}

/// A Mach-O file.
#[derive(Clone, Debug)]
pub struct MachOFile<'a> {
    data: &'a [u8],
    header: Header,
    segments: Vec<Segment<'a>>,
    sections: Vec<Section<'a>>,
    symtab: Option<Symtab>,
}

/// The magic, byte order and width of a Mach-O header.
fn magic(data: &[u8]) -> Option<(Endian, bool)> {
    match data.get(..4)? {
        [0xfe, 0xed, 0xfa, 0xce] => Some((Endian::Big, false)),
        [0xfe, 0xed, 0xfa, 0xcf] => Some((Endian::Big, true)),
        [0xce, 0xfa, 0xed, 0xfe] => Some((Endian::Little, false)),
        [0xcf, 0xfa, 0xed, 0xfe] => Some((Endian::Little, true)),
        _ => None,
    }
}

impl<'a> MachOFile<'a> {
    /// Parses the header, the load commands and the segments' sections.
    pub fn parse(data: &'a [u8]) -> Result<Self, Error> {
        let (endian, is64) = magic(data).ok_or(Error::UnknownFormat)?;
        let b = Bytes::new(data);
        let hsize: u64 = if is64 { 32 } else { 28 };
        let trunc = |what, offset| Error::Truncated { what, offset };
        let field = |at| b.u32_at(at, endian).ok_or(trunc("Mach-O header", 0));
        let header = Header {
            is64,
            endian,
            cputype: field(4)?,
            cpusubtype: field(8)?,
            filetype: field(12)?,
            ncmds: field(16)?,
            sizeofcmds: field(20)?,
            flags: field(24)?,
        };
        if b.len() < hsize as usize {
            return Err(trunc("Mach-O header", 0));
        }
        let cmds_end = hsize + u64::from(header.sizeofcmds);
        if cmds_end > data.len() as u64 {
            return Err(Error::Malformed {
                what: "load commands extend past the end of the file",
                offset: hsize,
            });
        }
        let mut file = MachOFile {
            data,
            header,
            segments: Vec::new(),
            sections: Vec::new(),
            symtab: None,
        };
        let mut at = hsize;
        for _ in 0..header.ncmds {
            let cmd = b.u32_at(at, endian);
            let cmdsize = b.u32_at(at + 4, endian);
            let (Some(cmd), Some(cmdsize)) = (cmd, cmdsize) else {
                return Err(trunc("load command", at));
            };
            let end = at + u64::from(cmdsize);
            if cmdsize < 8 || end > cmds_end {
                return Err(Error::Malformed {
                    what: "load command size is too small or extends past the load commands",
                    offset: at,
                });
            }
            let body = b
                .slice(at, u64::from(cmdsize))
                .ok_or(trunc("load command", at))?;
            match cmd {
                LC_SEGMENT => file.segment(body, at, false)?,
                LC_SEGMENT_64 => file.segment(body, at, true)?,
                LC_SYMTAB => {
                    let b = Bytes::new(body);
                    let field = |o| b.u32_at(o, endian).ok_or(trunc("symbol table command", at));
                    file.symtab = Some(Symtab {
                        at,
                        symoff: field(8)?,
                        nsyms: field(12)?,
                        stroff: field(16)?,
                        strsize: field(20)?,
                    });
                }
                _ => {}
            }
            at = end;
        }
        Ok(file)
    }

    fn segment(&mut self, body: &'a [u8], at: u64, is64: bool) -> Result<(), Error> {
        let e = self.header.endian;
        let mut c = Bytes::new(body);
        let trunc = Error::Truncated {
            what: "segment command",
            offset: at,
        };
        let parsed = (|| {
            c.skip(8)?;
            let name = until_nul(c.read_bytes(16)?);
            let vmaddr = c.read_word(is64, e)?;
            let vmsize = c.read_word(is64, e)?;
            let fileoff = c.read_word(is64, e)?;
            let filesize = c.read_word(is64, e)?;
            let maxprot = c.read_u32(e)?;
            let initprot = c.read_u32(e)?;
            let nsects = c.read_u32(e)?;
            let flags = c.read_u32(e)?;
            Some((
                Segment {
                    name,
                    vmaddr,
                    vmsize,
                    fileoff,
                    filesize,
                    maxprot,
                    initprot,
                    flags,
                },
                nsects,
            ))
        })();
        let (segment, nsects) = parsed.ok_or(trunc.clone())?;
        let sect_size: u64 = if is64 { 80 } else { 68 };
        if u64::from(nsects) * sect_size > c.len() as u64 {
            return Err(Error::Malformed {
                what: "segment's sections extend past the end of its load command",
                offset: at,
            });
        }
        for _ in 0..nsects {
            let raw = c.read_bytes(sect_size).ok_or(trunc.clone())?;
            let mut s = Bytes::new(raw);
            let section = (|| {
                let name = until_nul(s.read_bytes(16)?);
                let segment_name = until_nul(s.read_bytes(16)?);
                Some(Section {
                    name,
                    segment_name,
                    addr: s.read_word(is64, e)?,
                    size: s.read_word(is64, e)?,
                    offset: s.read_u32(e)?,
                    align: s.read_u32(e)?,
                    reloff: s.read_u32(e)?,
                    nreloc: s.read_u32(e)?,
                    flags: s.read_u32(e)?,
                })
            })()
            .ok_or(trunc.clone())?;
            self.sections.push(section);
        }
        self.segments.push(segment);
        Ok(())
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The segments in load-command order.
    pub fn segments(&self) -> &[Segment<'a>] {
        &self.segments
    }

    /// All sections in load-command order (LLVM numbers them from 1 in
    /// this order).
    pub fn sections(&self) -> &[Section<'a>] {
        &self.sections
    }

    /// The file range of a section: `None` for zero-fill sections.
    pub fn section_file_range(&self, s: &Section<'_>) -> Option<(u64, u64)> {
        (!s.is_zerofill()).then_some((u64::from(s.offset), s.size))
    }

    /// A section's bytes (empty for zero-fill sections), bounds-checked.
    pub fn section_data(&self, s: &Section<'_>) -> Result<&'a [u8], Error> {
        match self.section_file_range(s) {
            None => Ok(&[]),
            Some((offset, size)) => {
                Bytes::new(self.data)
                    .slice(offset, size)
                    .ok_or(Error::Malformed {
                        what: "section contents extend past the end of the file",
                        offset,
                    })
            }
        }
    }

    /// The symbols of `LC_SYMTAB` (none without one); the symbol and
    /// string tables must lie inside the file, and every name inside the
    /// string table.
    pub fn symbols(&self) -> Result<Vec<Symbol<'a>>, Error> {
        let Some(t) = self.symtab else {
            return Ok(Vec::new());
        };
        let e = self.header.endian;
        let is64 = self.header.is64;
        let b = Bytes::new(self.data);
        let size: u64 = if is64 { 16 } else { 12 };
        let bad = |what| Error::Malformed { what, offset: t.at };
        let table = b
            .slice(u64::from(t.symoff), u64::from(t.nsyms) * size)
            .ok_or(bad("symbol table extends past the end of the file"))?;
        let strings = b
            .slice(u64::from(t.stroff), u64::from(t.strsize))
            .ok_or(bad("string table extends past the end of the file"))?;
        table
            .chunks_exact(size as usize)
            .map(|raw| {
                let mut c = Bytes::new(raw);
                let parsed = (|| {
                    let strx = c.read_u32(e)?;
                    let n_type = c.read_u8()?;
                    let n_sect = c.read_u8()?;
                    let n_desc = c.read_u16(e)?;
                    let n_value = c.read_word(is64, e)?;
                    Some((strx, n_type, n_sect, n_desc, n_value))
                })();
                let (strx, n_type, n_sect, n_desc, n_value) =
                    parsed.ok_or(bad("truncated symbol"))?;
                let name = Bytes::new(strings)
                    .tail(u64::from(strx))
                    .map(until_nul)
                    .ok_or(bad(
                        "symbol name offset is past the end of the string table",
                    ))?;
                Ok(Symbol {
                    name,
                    n_type,
                    n_sect,
                    n_desc,
                    n_value,
                })
            })
            .collect()
    }

    /// The file offset of virtual address `vmaddr`, through the segment
    /// whose file image holds it.
    pub(crate) fn vmaddr_to_offset(&self, vmaddr: u64) -> Option<u64> {
        self.segments.iter().find_map(|s| {
            let delta = vmaddr.checked_sub(s.vmaddr)?;
            (delta < s.filesize).then(|| s.fileoff.checked_add(delta))?
        })
    }
}

/// One slice of a universal file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FatArch {
    /// `cputype`.
    pub cputype: u32,
    /// `cpusubtype`.
    pub cpusubtype: u32,
    /// File offset of the slice.
    pub offset: u64,
    /// Size of the slice.
    pub size: u64,
    /// `align` (a power of two).
    pub align: u32,
}

impl FatArch {
    /// The slice's bytes in `file` (the whole universal file); `None` when
    /// they do not lie inside it.
    pub fn data<'a>(&self, file: &'a [u8]) -> Option<&'a [u8]> {
        let at = usize::try_from(self.offset).ok()?;
        let len = usize::try_from(self.size).ok()?;
        file.get(at..at.checked_add(len)?)
    }
}

/// The slices of a universal (fat) file: big-endian `0xcafebabe` (32-bit
/// entries) or `0xcafebabf` (64-bit entries). Each slice lies inside the
/// file.
pub fn parse_fat(data: &[u8]) -> Result<Vec<FatArch>, Error> {
    let slices = parse_fat_table(data)?;
    for (i, arch) in slices.iter().enumerate() {
        if arch.data(data).is_none() {
            let entry = if data.get(3) == Some(&0xbf) { 32 } else { 20 };
            return Err(Error::Malformed {
                what: "universal file slice extends past the end of the file",
                offset: 8 + i as u64 * entry,
            });
        }
    }
    Ok(slices)
}

/// The architecture table of a universal file as stored, without checking
/// that the slices lie inside the file ([`FatArch::data`] does), for
/// readers that go on past one bad slice.
pub fn parse_fat_table(data: &[u8]) -> Result<Vec<FatArch>, Error> {
    let b = Bytes::new(data);
    let e = Endian::Big;
    let is64 = match b.u32_at(0, e) {
        Some(0xcafe_babe) => false,
        Some(0xcafe_babf) => true,
        _ => return Err(Error::UnknownFormat),
    };
    let n = b.u32_at(4, e).ok_or(Error::Truncated {
        what: "universal header",
        offset: 0,
    })?;
    let entry: u64 = if is64 { 32 } else { 20 };
    if u64::from(n) * entry + 8 > data.len() as u64 {
        return Err(Error::Malformed {
            what: "universal file's architecture table extends past the end of the file",
            offset: 8,
        });
    }
    (0..u64::from(n))
        .map(|i| {
            let at = 8 + i * entry;
            let mut c = Bytes::new(b.slice(at, entry).unwrap_or(&[]));
            let arch = (|| {
                Some(FatArch {
                    cputype: c.read_u32(e)?,
                    cpusubtype: c.read_u32(e)?,
                    offset: c.read_word(is64, e)?,
                    size: c.read_word(is64, e)?,
                    align: c.read_u32(e)?,
                })
            })()
            .ok_or(Error::Truncated {
                what: "universal architecture entry",
                offset: at,
            })?;
            Ok(arch)
        })
        .collect()
}
