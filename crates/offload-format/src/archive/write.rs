//! Deterministic GNU archive writer, byte-compatible with LLVM's.

use std::collections::HashMap;
use std::io::Write;

use super::error::{ArchiveWriteError, MemberWarning};
use super::symbols::{member_symbols_and_module_asm, MemberSymbols};
use super::{HEADER_SIZE, MAGIC};

/// Default offset at which LLVM switches to the 64-bit symbol table: when
/// the header of the last member would start at or beyond 4 GiB.
pub const SYM64_THRESHOLD: u64 = 1 << 32;

/// The largest member size the 10-digit size field can hold.
pub const MAX_MEMBER_SIZE: u64 = 9_999_999_999;

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
        if let Some(n) = value.and_then(|v| crate::llvm::decimal_u64(v.as_bytes())) {
            self.sym64_threshold = n;
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

/// The layout of a deterministic GNU archive, built one member at a time
/// from its name, size and archive symbols alone; [`ArchiveLayout::finish`]
/// then gives the [`ArchiveHead`]. Lets a caller that learns the members in
/// one pass write them in another without holding them.
///
/// What it keeps is what precedes the first member in the archive: the
/// long-name table (each long name once, plus its place for lookups) and
/// the symbol table (each symbol's name and member), so its memory is the
/// size of the archive's head, not of its members.
#[derive(Clone, Debug)]
pub struct ArchiveLayout {
    options: WriteOptions,
    members: u64,
    /// Bytes of the members so far (headers, contents, padding).
    end: u64,
    /// Where the last member's header starts, relative to the first.
    last_start: u64,
    name_table: Vec<u8>,
    names: NameIndex,
    symbol_names: Vec<u8>,
    /// For each symbol, the start of its member relative to the first.
    symbol_members: Vec<u64>,
    has_object: bool,
    warnings: Vec<MemberWarning>,
}

/// Everything of an archive but its members' contents: the head (magic,
/// symbol table, long-name table), and each member's header on demand.
#[derive(Clone, Debug)]
pub struct ArchiveHead {
    /// Magic, then the symbol table's header, count and offsets.
    start: Vec<u8>,
    /// The symbol table's names (and padding).
    symbol_names: Vec<u8>,
    /// The long-name table's member header, if there is one.
    names_header: Vec<u8>,
    /// The long-name table (and padding).
    name_table: Vec<u8>,
    names: NameIndex,
    #[cfg(feature = "device-archive")]
    head_size: u64,
    members: u64,
    total: u64,
    report: WriteReport,
}

/// Long names and where each starts in the long-name table, found by
/// hashing: an open-addressing table of offsets into the long-name table
/// itself, so that each name is stored once and costs a few bytes more.
/// Names containing `/\n` (where the table's own terminator cannot tell
/// where they end) and offsets past `u32` go in `others`.
#[derive(Clone, Debug, Default)]
struct NameIndex {
    /// 0 for an empty slot, else the offset plus one. The length is a
    /// power of two (or zero).
    slots: Vec<u32>,
    /// Eight more bits of each slot's hash, so that most probes need not
    /// compare names.
    tags: Vec<u8>,
    used: usize,
    others: HashMap<Vec<u8>, usize>,
    hasher: std::collections::hash_map::RandomState,
}

fn contains_terminator(name: &[u8]) -> bool {
    name.windows(2).any(|w| w == b"/\n")
}

/// Whether the long-name table entry at `at` is `name` (which has no
/// `/\n`, so the entry ends at the first one).
fn entry_is(table: &[u8], at: usize, name: &[u8]) -> bool {
    table
        .get(at..)
        .is_some_and(|rest| rest.starts_with(name) && rest[name.len()..].starts_with(b"/\n"))
}

/// The entry at `at`: everything up to the first `/\n`.
fn entry_at(table: &[u8], at: usize) -> &[u8] {
    let rest = table.get(at..).unwrap_or_default();
    let end = rest
        .windows(2)
        .position(|w| w == b"/\n")
        .unwrap_or(rest.len());
    &rest[..end]
}

impl NameIndex {
    fn hash(&self, name: &[u8]) -> u64 {
        use std::hash::BuildHasher;
        self.hasher.hash_one(name)
    }

    /// The slot holding `name` (whose hash is `hash`), or the free slot
    /// where it would go.
    fn slot_of(&self, table: &[u8], name: &[u8], hash: u64) -> Result<usize, usize> {
        let tag = (hash >> 56) as u8;
        let mask = self.slots.len() - 1;
        let mut i = hash as usize & mask;
        loop {
            match self.slots[i] {
                0 => return Err(i),
                s if self.tags[i] == tag && entry_is(table, s as usize - 1, name) => return Ok(i),
                _ => i = (i + 1) & mask,
            }
        }
    }

    fn put(&mut self, i: usize, stored: u32, hash: u64) {
        self.slots[i] = stored;
        self.tags[i] = (hash >> 56) as u8;
    }

    /// The offset of `name` in `table`, appending it (`name/\n`) if new.
    fn insert(&mut self, table: &mut Vec<u8>, name: &[u8]) -> usize {
        let indexed = !contains_terminator(name);
        if indexed {
            // At most three quarters full, so probes stay short.
            if (self.used + 1) * 4 > self.slots.len() * 3 {
                self.grow(table);
            }
            let hash = self.hash(name);
            let free = match self.slot_of(table, name, hash) {
                Ok(i) => return self.slots[i] as usize - 1,
                Err(free) => free,
            };
            if let Some(&at) = self.others.get(name) {
                return at;
            }
            let at = table.len();
            if let Ok(stored) = u32::try_from(at + 1) {
                table.extend_from_slice(name);
                table.extend_from_slice(b"/\n");
                self.put(free, stored, hash);
                self.used += 1;
                return at;
            }
        } else if let Some(&at) = self.others.get(name) {
            return at;
        }
        let at = table.len();
        table.extend_from_slice(name);
        table.extend_from_slice(b"/\n");
        self.others.insert(name.to_vec(), at);
        at
    }

    fn grow(&mut self, table: &[u8]) {
        let len = (self.slots.len() * 2).max(64);
        let old = std::mem::replace(&mut self.slots, vec![0; len]);
        self.tags = vec![0; len];
        for stored in old.into_iter().filter(|&s| s != 0) {
            let name = entry_at(table, stored as usize - 1);
            let hash = self.hash(name);
            if let Err(free) = self.slot_of(table, name, hash) {
                self.put(free, stored, hash);
            }
        }
    }

    /// The offset of `name` in `table`, if it was inserted.
    fn get(&self, table: &[u8], name: &[u8]) -> Option<usize> {
        if !self.slots.is_empty() && !contains_terminator(name) {
            if let Ok(i) = self.slot_of(table, name, self.hash(name)) {
                return Some(self.slots[i] as usize - 1);
            }
        }
        self.others.get(name).copied()
    }
}

fn pad_field(out: &mut Vec<u8>, text: &[u8], width: usize) {
    out.extend_from_slice(text);
    for _ in text.len()..width {
        out.push(b' ');
    }
}

/// A member header: the name (with its `/`) or its long-name table offset,
/// date, uid and gid 0, mode 644, the size.
fn header_bytes(name: &[u8], table_offset: Option<usize>, size: u64) -> [u8; HEADER_SIZE] {
    let mut h = [b' '; HEADER_SIZE];
    match table_offset {
        Some(offset) => {
            h[0] = b'/';
            put_decimal(&mut h[1..16], offset as u64);
        }
        None => {
            h[..name.len()].copy_from_slice(name);
            h[name.len()] = b'/';
        }
    }
    h[16] = b'0';
    h[28] = b'0';
    h[34] = b'0';
    h[40..43].copy_from_slice(b"644");
    put_decimal(&mut h[48..58], size);
    h[58..60].copy_from_slice(b"`\n");
    h
}

/// Where `ArchiveHead::next_member_header` is in the long-name table.
#[derive(Clone, Copy, Debug, Default)]
pub struct HeaderCursor {
    name_at: usize,
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

/// Writes `v` in decimal at the start of `field` (which is wide enough).
fn put_decimal(field: &mut [u8], mut v: u64) {
    let mut digits = [0u8; 20];
    let mut n = 0;
    loop {
        digits[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for (slot, d) in field.iter_mut().zip(digits[..n].iter().rev()) {
        *slot = *d;
    }
}

fn uses_name_table(name: &[u8]) -> bool {
    name.len() >= 16 || name.contains(&b'/')
}

fn member_span(size: u64) -> u64 {
    HEADER_SIZE as u64 + size + size % 2
}

impl ArchiveLayout {
    /// An archive without members yet.
    pub fn new(options: &WriteOptions) -> ArchiveLayout {
        ArchiveLayout {
            options: *options,
            members: 0,
            end: 0,
            last_start: 0,
            name_table: Vec::new(),
            names: NameIndex::default(),
            symbol_names: Vec::new(),
            symbol_members: Vec::new(),
            has_object: false,
            warnings: Vec::new(),
        }
    }

    /// Adds the next member: its name (stored as given), the size of its
    /// contents, and what [`member_symbols`](super::member_symbols) says about them. A member too
    /// large for the header's size field is an error and is not added.
    pub fn push(
        &mut self,
        name: &[u8],
        size: u64,
        symbols: &MemberSymbols,
    ) -> Result<(), ArchiveWriteError> {
        if size > MAX_MEMBER_SIZE {
            return Err(ArchiveWriteError::TooLarge {
                name: name.to_vec(),
            });
        }
        if uses_name_table(name) {
            self.names.insert(&mut self.name_table, name);
        }
        if self.options.symbol_table {
            match symbols {
                MemberSymbols::NotSymbolic => {}
                MemberSymbols::Symbols(names) => {
                    self.has_object = true;
                    for sym in names {
                        self.symbol_names.extend_from_slice(sym);
                        self.symbol_names.push(0);
                        self.symbol_members.push(self.end);
                    }
                }
                MemberSymbols::Unreadable(reason) => self.warnings.push(MemberWarning {
                    member: name.to_vec(),
                    message: reason.to_string(),
                }),
            }
        }
        self.last_start = self.end;
        self.end += member_span(size);
        self.members += 1;
        Ok(())
    }

    /// Number of members added.
    pub fn len(&self) -> u64 {
        self.members
    }

    /// Whether no member was added.
    pub fn is_empty(&self) -> bool {
        self.members == 0
    }

    /// Bitcode members whose symbols could not be read, so far (LLVM warns
    /// about each when it writes the archive).
    pub fn warnings(&self) -> &[MemberWarning] {
        &self.warnings
    }

    /// Lays out the head: symbol table (32- or 64-bit, as LLVM chooses)
    /// and long-name table.
    pub fn finish(mut self) -> ArchiveHead {
        // An archive with objects but no symbols still gets a symbol table,
        // holding three NUL bytes of names (for old Solaris tools).
        if self.has_object && self.symbol_names.is_empty() {
            self.symbol_names.extend_from_slice(&[0, 0, 0]);
        }
        let name_member_size = if self.name_table.is_empty() {
            0
        } else {
            HEADER_SIZE as u64 + self.name_table.len().next_multiple_of(2) as u64
        };
        let num_syms = self.symbol_members.len() as u64;
        let names_len = self.symbol_names.len() as u64;
        let write_symtab = self.options.symbol_table && !self.symbol_names.is_empty();
        let symtab_body =
            |word: u64| -> u64 { (word + num_syms * word + names_len).next_multiple_of(2) };
        let mut word = 4u64;
        let mut report = WriteReport::default();
        let mut headers_size = MAGIC.len() as u64 + name_member_size;
        if write_symtab {
            headers_size += HEADER_SIZE as u64 + symtab_body(4);
            if headers_size + self.last_start >= self.options.sym64_threshold {
                word = 8;
                report.sym64 = true;
                headers_size =
                    MAGIC.len() as u64 + name_member_size + HEADER_SIZE as u64 + symtab_body(8);
            }
        }

        // The tables are moved into the head, not copied: they are most
        // of the memory a large archive's layout takes.
        let mut start = MAGIC.to_vec();
        let mut symbol_names = Vec::new();
        if write_symtab {
            let body = symtab_body(word);
            pad_field(&mut start, if word == 8 { b"/SYM64/" } else { b"/" }, 16);
            rest_of_header(&mut start, b"0", body);
            start.reserve(usize::try_from((num_syms + 1) * word).unwrap_or(0));
            let put = |table: &mut Vec<u8>, v: u64| {
                if word == 8 {
                    table.extend_from_slice(&v.to_be_bytes());
                } else {
                    table.extend_from_slice(&(v as u32).to_be_bytes());
                }
            };
            put(&mut start, num_syms);
            for &member in &self.symbol_members {
                put(&mut start, headers_size + member);
            }
            symbol_names = std::mem::take(&mut self.symbol_names);
            if (word + num_syms * word + names_len) % 2 == 1 {
                symbol_names.push(0);
            }
        }
        let mut names_header = Vec::new();
        let mut name_table = std::mem::take(&mut self.name_table);
        if !name_table.is_empty() {
            let padded = name_table.len().next_multiple_of(2);
            pad_field(&mut names_header, b"//", 48);
            pad_field(&mut names_header, padded.to_string().as_bytes(), 10);
            names_header.extend_from_slice(b"`\n");
            if padded != name_table.len() {
                name_table.push(b'\n');
            }
        }
        report.warnings = self.warnings;
        ArchiveHead {
            start,
            symbol_names,
            names_header,
            name_table,
            names: self.names,
            members: self.members,
            #[cfg(feature = "device-archive")]
            head_size: headers_size,
            total: headers_size + self.end,
            report,
        }
    }
}

impl ArchiveHead {
    /// The bytes before the first member header, in order (magic and
    /// symbol table offsets, symbol names, long-name table header, long
    /// names); see [`ArchiveHead::write_head`].
    pub(crate) fn head_parts(&self) -> [&[u8]; 4] {
        [
            &self.start,
            &self.symbol_names,
            &self.names_header,
            &self.name_table,
        ]
    }

    /// Writes the bytes before the first member header.
    pub fn write_head(&self, out: &mut dyn Write) -> std::io::Result<()> {
        self.head_parts()
            .into_iter()
            .try_for_each(|part| out.write_all(part))
    }

    /// The number of bytes before the first member header.
    #[cfg(feature = "device-archive")]
    pub(crate) fn head_size(&self) -> u64 {
        self.head_size
    }

    /// The 60-byte header of a member with this name and size; `None` if
    /// the name needs the long-name table and was never added (the layout
    /// was made for other members).
    pub fn member_header(&self, name: &[u8], size: u64) -> Option<[u8; HEADER_SIZE]> {
        let offset = if uses_name_table(name) {
            Some(self.names.get(&self.name_table, name)?)
        } else {
            None
        };
        Some(header_bytes(name, offset, size))
    }

    /// Like [`ArchiveHead::member_header`], for members given in the order
    /// they were added (`cursor` starts as [`HeaderCursor::default`]): a
    /// long name used for the first time is then the next one in the
    /// table, which saves looking it up. `None` if the member is not the
    /// next one added.
    pub(crate) fn next_member_header(
        &self,
        cursor: &mut HeaderCursor,
        name: &[u8],
        size: u64,
    ) -> Option<[u8; HEADER_SIZE]> {
        let offset = if uses_name_table(name) {
            let next = cursor.name_at;
            // Without names holding the terminator, an entry is exactly
            // what precedes the first `/\n` after it.
            if self.names.others.is_empty() && entry_is(&self.name_table, next, name) {
                cursor.name_at += name.len() + 2;
                Some(next)
            } else {
                // A repeated name, stored earlier, or (where names hold the
                // terminator) possibly the next one.
                let at = self.names.get(&self.name_table, name)?;
                if at == next {
                    cursor.name_at += name.len() + 2;
                } else if at > next {
                    return None;
                }
                Some(at)
            }
        } else {
            None
        };
        Some(header_bytes(name, offset, size))
    }

    /// What follows a member's contents of `size` bytes: one `\n` if the
    /// size is odd, else nothing.
    pub fn member_padding(size: u64) -> &'static [u8] {
        if size % 2 == 1 {
            b"\n"
        } else {
            b""
        }
    }

    /// Number of members.
    pub fn len(&self) -> u64 {
        self.members
    }

    /// Whether the archive has no members.
    pub fn is_empty(&self) -> bool {
        self.members == 0
    }

    /// Size of the whole archive in bytes.
    pub fn total_size(&self) -> u64 {
        self.total
    }

    /// Warnings and the symbol-table flavour. `module_asm_members` is left
    /// empty: the layout never sees member contents.
    pub fn report(&self) -> &WriteReport {
        &self.report
    }
}

/// Writes a deterministic GNU archive of `members` to `out`, exactly as
/// LLVM 22's archive writer does for the offload tools.
///
/// Member symbols come from [`member_symbols`](super::member_symbols). A broken object member is
/// an error (nothing useful can be written); a bitcode member whose symbols
/// cannot be read becomes a warning in the report and contributes none.
pub fn write_archive(
    members: &[NewMember<'_>],
    options: &WriteOptions,
    out: &mut dyn Write,
) -> Result<WriteReport, ArchiveWriteError> {
    let mut layout = ArchiveLayout::new(options);
    let mut module_asm_members = Vec::new();
    for member in members {
        if (member.data.len() as u64) > MAX_MEMBER_SIZE {
            return Err(ArchiveWriteError::TooLarge {
                name: member.name.to_vec(),
            });
        }
        let (found, module_asm) = if options.symbol_table {
            let (found, module_asm) = member_symbols_and_module_asm(member.data);
            let found = found.map_err(|reason| ArchiveWriteError::Member {
                name: member.name.to_vec(),
                reason,
            })?;
            (found, module_asm)
        } else {
            // Without a symbol table nothing reads the assembly.
            (MemberSymbols::NotSymbolic, false)
        };
        if module_asm {
            module_asm_members.push(member.name.to_vec());
        }
        layout.push(member.name, member.data.len() as u64, &found)?;
    }
    let head = layout.finish();
    head.write_head(out)?;
    let mut cursor = HeaderCursor::default();
    for m in members {
        let size = m.data.len() as u64;
        let header = head
            .next_member_header(&mut cursor, m.name, size)
            .expect("every member was added to the layout");
        out.write_all(&header)?;
        out.write_all(m.data)?;
        out.write_all(ArchiveHead::member_padding(size))?;
    }
    let mut report = head.report;
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
