//! Deterministic GNU archive writer, byte-compatible with LLVM's.

use std::collections::HashMap;
use std::io::Write;

use super::error::{ArchiveWriteError, MemberWarning};
use super::symbols::{member_symbols, MemberSymbols};
use super::{HEADER_SIZE, MAGIC};

/// Default offset at which LLVM switches to the 64-bit symbol table: when
/// the header of the last member would start at or beyond 4 GiB.
pub const SYM64_THRESHOLD: u64 = 1 << 32;

/// The largest member size the 10-digit size field can hold.
const MAX_MEMBER_SIZE: u64 = 9_999_999_999;

/// A member to write.
#[derive(Clone, Copy, Debug)]
pub struct NewMember<'a> {
    /// The member name, stored as given (a path is kept whole).
    pub name: &'a [u8],
    /// The member contents.
    pub data: &'a [u8],
}

/// Options of [`write_archive`].
#[derive(Clone, Copy, Debug)]
pub struct WriteOptions {
    /// Write the symbol table (LLVM's tools always do).
    pub symbol_table: bool,
    /// Offset from which the 64-bit symbol table is used. LLVM reads an
    /// override from the `SYM64_THRESHOLD` environment variable (a test
    /// hook); the command-line tools pass it here.
    pub sym64_threshold: u64,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            symbol_table: true,
            sym64_threshold: SYM64_THRESHOLD,
        }
    }
}

impl WriteOptions {
    /// Applies LLVM's `SYM64_THRESHOLD` override: a decimal number; any
    /// other text leaves the default, as LLVM's parser does.
    pub fn with_sym64_env(mut self, value: Option<&str>) -> Self {
        if let Some(v) = value {
            if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
                if let Ok(n) = v.parse::<u64>() {
                    self.sym64_threshold = n;
                }
            }
        }
        self
    }
}

/// What [`write_archive`] reports besides the bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteReport {
    /// Bitcode members whose symbols could not be read (LLVM prints each as
    /// `warning: '<member>': <message>`).
    pub warnings: Vec<MemberWarning>,
    /// Whether the 64-bit symbol table (`/SYM64/`) was used.
    pub sym64: bool,
    /// Bitcode members with module-level inline assembly. Their symbols
    /// are listed (as `llvm-ar` lists them), but LLVM 22's
    /// `llvm-offload-binary --archive` and `clang-offload-bundler -type=a`
    /// crash on such members; those tools report an error instead.
    pub module_asm_members: Vec<Vec<u8>>,
}

/// A member whose contents are not at hand: its name, size and archive
/// symbols, for [`plan_archive`]. The bytes are streamed later, between
/// [`ArchivePlan::member_header`] and [`ArchivePlan::member_padding`].
#[derive(Clone, Copy, Debug)]
pub struct MemberLayout<'a> {
    /// The member name, stored as given.
    pub name: &'a [u8],
    /// The size of the contents.
    pub size: u64,
    /// What [`member_symbols`] says about the contents.
    pub symbols: &'a MemberSymbols,
}

/// Everything of an archive except member contents, laid out exactly as
/// [`write_archive`] writes it: the head (magic, symbol table, long-name
/// table) and each member's header and padding. Lets a caller that knows
/// member sizes and symbols in advance write a large archive without
/// holding its members in memory.
#[derive(Clone, Debug)]
pub struct ArchivePlan {
    head: Vec<u8>,
    headers: Vec<Vec<u8>>,
    pads: Vec<bool>,
    total: u64,
    report: WriteReport,
}

impl ArchivePlan {
    /// The bytes before the first member header.
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// The 60-byte header of member `index`.
    pub fn member_header(&self, index: usize) -> &[u8] {
        &self.headers[index]
    }

    /// What follows member `index`'s contents: one `\n` for an odd size,
    /// else nothing.
    pub fn member_padding(&self, index: usize) -> &'static [u8] {
        if self.pads[index] {
            b"\n"
        } else {
            b""
        }
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.headers.len()
    }

    /// Whether the archive has no members.
    pub fn is_empty(&self) -> bool {
        self.headers.is_empty()
    }

    /// Size of the whole archive in bytes.
    pub fn total_size(&self) -> u64 {
        self.total
    }

    /// Warnings and the symbol-table flavour. `module_asm_members` is left
    /// empty: the plan never sees member contents.
    pub fn report(&self) -> &WriteReport {
        &self.report
    }
}

fn pad_field(out: &mut Vec<u8>, text: &[u8], width: usize) {
    out.extend_from_slice(text);
    for _ in text.len()..width {
        out.push(b' ');
    }
}

/// The fixed part after the name: date 0, uid 0, gid 0, mode, size.
fn rest_of_header(out: &mut Vec<u8>, mode: &[u8], size: u64) {
    pad_field(out, b"0", 12);
    pad_field(out, b"0", 6);
    pad_field(out, b"0", 6);
    pad_field(out, mode, 8);
    pad_field(out, size.to_string().as_bytes(), 10);
    out.extend_from_slice(b"`\n");
}

fn uses_name_table(name: &[u8]) -> bool {
    name.len() >= 16 || name.contains(&b'/')
}

/// Lays out a deterministic GNU archive of members known by name, size and
/// symbols; see [`ArchivePlan`]. The bytes are those of [`write_archive`]
/// for members with these properties.
pub fn plan_archive(
    members: &[MemberLayout<'_>],
    options: &WriteOptions,
) -> Result<ArchivePlan, ArchiveWriteError> {
    let mut report = WriteReport::default();
    let mut name_table: Vec<u8> = Vec::new();
    let mut name_offsets: HashMap<&[u8], usize> = HashMap::new();
    let mut symbol_names: Vec<u8> = Vec::new();
    let mut has_object = false;
    let mut headers = Vec::with_capacity(members.len());
    let mut counts = Vec::with_capacity(members.len());
    let mut pads = Vec::with_capacity(members.len());

    for member in members {
        if member.size > MAX_MEMBER_SIZE {
            return Err(ArchiveWriteError::TooLarge {
                name: member.name.to_vec(),
            });
        }
        let mut header = Vec::with_capacity(HEADER_SIZE);
        if uses_name_table(member.name) {
            let offset = *name_offsets.entry(member.name).or_insert_with(|| {
                let at = name_table.len();
                name_table.extend_from_slice(member.name);
                name_table.extend_from_slice(b"/\n");
                at
            });
            header.push(b'/');
            pad_field(&mut header, offset.to_string().as_bytes(), 15);
        } else {
            let mut field = member.name.to_vec();
            field.push(b'/');
            pad_field(&mut header, &field, 16);
        }
        rest_of_header(&mut header, b"644", member.size);

        let mut count = 0u64;
        if options.symbol_table {
            match member.symbols {
                MemberSymbols::NotSymbolic => {}
                MemberSymbols::Symbols(names) => {
                    has_object = true;
                    for name in names {
                        symbol_names.extend_from_slice(name);
                        symbol_names.push(0);
                        count += 1;
                    }
                }
                MemberSymbols::Unreadable(message) => report.warnings.push(MemberWarning {
                    member: member.name.to_vec(),
                    message: message.clone(),
                }),
            }
        }
        headers.push(header);
        counts.push(count);
        pads.push(member.size % 2 == 1);
    }
    // An archive with objects but no symbols still gets a symbol table,
    // holding three NUL bytes of names (for old Solaris tools).
    if has_object && symbol_names.is_empty() {
        symbol_names.extend_from_slice(&[0, 0, 0]);
    }

    let name_member_size = if name_table.is_empty() {
        0
    } else {
        HEADER_SIZE as u64 + name_table.len().next_multiple_of(2) as u64
    };
    let num_syms: u64 = counts.iter().sum();
    let write_symtab = options.symbol_table && !symbol_names.is_empty();
    let symtab_body = |word: u64| -> u64 {
        let raw = word + num_syms * word + symbol_names.len() as u64;
        raw.next_multiple_of(2)
    };
    let member_span = |m: &MemberLayout<'_>| HEADER_SIZE as u64 + m.size + m.size % 2;
    let mut word = 4u64;
    let mut headers_size = MAGIC.len() as u64 + name_member_size;
    if write_symtab {
        headers_size += HEADER_SIZE as u64 + symtab_body(4);
        // Offset of the last member's header, relative to the first member.
        let mut last_start = 0u64;
        let mut end = 0u64;
        for m in members {
            last_start = end;
            end += member_span(m);
        }
        if headers_size + last_start >= options.sym64_threshold {
            word = 8;
            report.sym64 = true;
            headers_size =
                MAGIC.len() as u64 + name_member_size + HEADER_SIZE as u64 + symtab_body(8);
        }
    }

    let mut head = Vec::with_capacity(usize::try_from(headers_size).unwrap_or(0));
    head.extend_from_slice(MAGIC);
    if write_symtab {
        let body = symtab_body(word);
        pad_field(&mut head, if word == 8 { b"/SYM64/" } else { b"/" }, 16);
        rest_of_header(&mut head, b"0", body);
        let table_start = head.len();
        let put = |table: &mut Vec<u8>, v: u64| {
            if word == 8 {
                table.extend_from_slice(&v.to_be_bytes());
            } else {
                table.extend_from_slice(&(v as u32).to_be_bytes());
            }
        };
        put(&mut head, num_syms);
        let mut pos = headers_size;
        for (m, &count) in members.iter().zip(&counts) {
            for _ in 0..count {
                put(&mut head, pos);
            }
            pos += member_span(m);
        }
        head.extend_from_slice(&symbol_names);
        if (head.len() - table_start) % 2 == 1 {
            head.push(0);
        }
    }
    if !name_table.is_empty() {
        let padded = name_table.len().next_multiple_of(2);
        pad_field(&mut head, b"//", 48);
        pad_field(&mut head, padded.to_string().as_bytes(), 10);
        head.extend_from_slice(b"`\n");
        head.extend_from_slice(&name_table);
        if padded != name_table.len() {
            head.push(b'\n');
        }
    }
    let total = headers_size + members.iter().map(member_span).sum::<u64>();
    Ok(ArchivePlan {
        head,
        headers,
        pads,
        total,
        report,
    })
}

/// Writes a deterministic GNU archive of `members` to `out`, exactly as
/// LLVM 22's archive writer does for the offload tools.
///
/// Member symbols come from [`member_symbols`]. A broken object member is
/// an error (nothing useful can be written); a bitcode member whose symbols
/// cannot be read becomes a warning in the report and contributes none.
pub fn write_archive(
    members: &[NewMember<'_>],
    options: &WriteOptions,
    out: &mut dyn Write,
) -> Result<WriteReport, ArchiveWriteError> {
    let mut symbols = Vec::with_capacity(members.len());
    let mut module_asm_members = Vec::new();
    for member in members {
        if (member.data.len() as u64) > MAX_MEMBER_SIZE {
            return Err(ArchiveWriteError::TooLarge {
                name: member.name.to_vec(),
            });
        }
        let found = if options.symbol_table {
            member_symbols(member.data).map_err(|reason| ArchiveWriteError::Member {
                name: member.name.to_vec(),
                reason,
            })?
        } else {
            MemberSymbols::NotSymbolic
        };
        if matches!(found, MemberSymbols::Symbols(_))
            && crate::bitcode::is_bitcode(member.data)
            && crate::bitcode::has_module_asm(member.data).unwrap_or(false)
        {
            module_asm_members.push(member.name.to_vec());
        }
        symbols.push(found);
    }
    let layouts: Vec<MemberLayout<'_>> = members
        .iter()
        .zip(&symbols)
        .map(|(m, s)| MemberLayout {
            name: m.name,
            size: m.data.len() as u64,
            symbols: s,
        })
        .collect();
    let plan = plan_archive(&layouts, options)?;
    out.write_all(plan.head())?;
    for (i, m) in members.iter().enumerate() {
        out.write_all(plan.member_header(i))?;
        out.write_all(m.data)?;
        out.write_all(plan.member_padding(i))?;
    }
    let mut report = plan.report;
    report.module_asm_members = module_asm_members;
    Ok(report)
}

/// [`write_archive`] into a new vector.
pub fn write_archive_to_vec(
    members: &[NewMember<'_>],
    options: &WriteOptions,
) -> Result<(Vec<u8>, WriteReport), ArchiveWriteError> {
    let mut out = Vec::new();
    let report = write_archive(members, options, &mut out)?;
    Ok((out, report))
}
