//! The forged files of the hostile-input corpus, built byte by byte so each
//! one breaks exactly one rule. `cargo xtask hostile --write-corpus`
//! rewrites them; what each breaks is said in `tests/hostile/index.txt`.

use std::fs;
use std::path::Path;

use test_support::ar::{long_names, member_header};

/// (file name, bytes) of every generated corpus file.
pub fn files() -> Vec<(&'static str, Vec<u8>)> {
    let mut v: Vec<(&'static str, Vec<u8>)> = Vec::new();
    bundles(&mut v);
    text_bundles(&mut v);
    ccobs(&mut v);
    archives(&mut v);
    offload_binaries(&mut v);
    elves(&mut v);
    nvidia(&mut v);
    zips(&mut v);
    response_files(&mut v);
    v
}

/// Writes the generated files into `dir` (others are left alone).
pub fn write(dir: &Path) -> Result<(), String> {
    for (name, bytes) in files() {
        let p = dir.join(name);
        fs::write(&p, bytes).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(())
}

const HOST: &[u8] = b"host-x86_64-unknown-linux-gnu-";
const GFX906: &[u8] = b"hip-amdgcn-amd-amdhsa--gfx906";

fn le(v: &mut Vec<u8>, x: u64) {
    v.extend_from_slice(&x.to_le_bytes());
}

// ---------------------------------------------------------------- bundles

const BUNDLE_MAGIC: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__";

/// A binary bundle header with the given (offset, size, id) entries and
/// entry count, followed by `tail`.
fn bundle(count: u64, entries: &[(u64, u64, &[u8])], tail: &[u8]) -> Vec<u8> {
    let mut v = BUNDLE_MAGIC.to_vec();
    le(&mut v, count);
    for (offset, size, id) in entries {
        le(&mut v, *offset);
        le(&mut v, *size);
        le(&mut v, id.len() as u64);
        v.extend_from_slice(id);
    }
    v.extend_from_slice(tail);
    v
}

/// The size of a bundle header with these IDs.
fn header_len(ids: &[&[u8]]) -> u64 {
    32 + ids.iter().map(|id| 24 + id.len() as u64).sum::<u64>()
}

/// A correct bundle of host and gfx906 entries.
pub fn valid_bundle() -> Vec<u8> {
    let h = header_len(&[HOST, GFX906]);
    bundle(2, &[(h, 8, HOST), (h + 8, 4, GFX906)], b"HOSTDATADEV1")
}

fn bundles(v: &mut Vec<(&'static str, Vec<u8>)>) {
    v.push(("ok-bundle.bc", valid_bundle()));
    v.push(("ok-host.bin", b"HOSTDATA".to_vec()));
    v.push(("ok-device.bin", b"DEV1".to_vec()));

    // One good entry (pointing at the count field), then a header cut in
    // the middle of the second entry: LLVM 22 crashes in -list and
    // -unbundle.
    let mut t = bundle(2, &[(24, 8, HOST)], &[]);
    t.extend_from_slice(&64u64.to_le_bytes());
    v.push(("bundle-truncated-after-entry.bc", t));

    // offset + size wraps around to a small number.
    let h = header_len(&[HOST]);
    v.push((
        "bundle-offset-wraps.bc",
        bundle(1, &[(u64::MAX - 7, 16, HOST)], b"HOSTDATA"),
    ));
    // The data is at `h`; the offset says 4 GiB further. Truncating it to
    // 32 bits would find the data.
    v.push((
        "bundle-offset-past-4g.bc",
        bundle(1, &[(h + (1 << 32), 8, HOST)], b"HOSTDATA"),
    ));
    v.push((
        "bundle-size-past-4g.bc",
        bundle(1, &[(h, 8 + (1 << 32), HOST)], b"HOSTDATA"),
    ));
    // 2^64-1 entries announced, none present: must not allocate for them.
    v.push(("bundle-count-huge.bc", bundle(u64::MAX, &[], b"")));
    // An ID length of 2^63.
    let mut t = BUNDLE_MAGIC.to_vec();
    for x in [1u64, 64, 8, 1 << 63] {
        le(&mut t, x);
    }
    t.extend_from_slice(b"host-x86_64");
    v.push(("bundle-idlen-huge.bc", t));
    // A well-formed entry whose ID is not an entry ID.
    let id: &[u8] = b"garbage";
    let h = header_len(&[id]);
    v.push(("bundle-bad-id.bc", bundle(1, &[(h, 4, id)], b"DATA")));
    // Offset zero (LLVM's reader takes it as the end of the entries).
    v.push((
        "bundle-offset-zero.bc",
        bundle(1, &[(0, 8, HOST)], b"HOSTDATA"),
    ));
}

// ----------------------------------------------------------- text bundles

fn text_bundles(v: &mut Vec<(&'static str, Vec<u8>)>) {
    // START without END: LLVM 22 reads past the end of its buffer.
    v.push((
        "text-start-no-end.ll",
        b"\n; __CLANG_OFFLOAD_BUNDLE____START__ host-x86_64-unknown-linux-gnu-\ndefine void @f() {\n  ret void\n}\n"
            .to_vec(),
    ));
    v.push((
        "text-start-no-end.i",
        b"\n// __CLANG_OFFLOAD_BUNDLE____START__ hip-amdgcn-amd-amdhsa--gfx906\nint x;\n// __CLANG_OFFLOAD_BUNDLE____END__ hip-amdgcn-amd-amdhsa--gfx906\n\n// __CLANG_OFFLOAD_BUNDLE____START__ host-x86_64-unknown-linux-gnu-\nint y;\n"
            .to_vec(),
    ));
}

// ------------------------------------------------------------------ CCOBs

/// A CCOB v3 header.
fn ccob_v3(method: u16, total: u64, usize_: u64, hash: u64) -> Vec<u8> {
    let mut v = b"CCOB".to_vec();
    v.extend_from_slice(&3u16.to_le_bytes());
    v.extend_from_slice(&method.to_le_bytes());
    le(&mut v, total);
    le(&mut v, usize_);
    le(&mut v, hash);
    v
}

/// A zstd frame of `blocks` RLE blocks of 128 KiB zero bytes each, with
/// the content size recorded: 4 bytes per 128 KiB of output.
fn zstd_zero_frame(blocks: u64) -> Vec<u8> {
    let mut v = vec![0x28, 0xB5, 0x2F, 0xFD];
    // Frame header: 8-byte content size, a window descriptor (128 KiB).
    v.push(0xC0);
    v.push((17 - 10) << 3);
    le(&mut v, blocks * (128 << 10));
    for i in 0..blocks {
        let last = u32::from(i + 1 == blocks);
        let header: u32 = last | (1 << 1) | ((128 << 10) << 3);
        v.extend_from_slice(&header.to_le_bytes()[..3]);
        v.push(0);
    }
    v
}

/// A zstd frame holding `data` as one raw block.
fn zstd_raw_frame(data: &[u8]) -> Vec<u8> {
    let mut v = vec![0x28, 0xB5, 0x2F, 0xFD];
    // Single segment, 1-byte content size.
    v.push(0x20);
    v.push(data.len() as u8);
    let header: u32 = 1 | ((data.len() as u32) << 3);
    v.extend_from_slice(&header.to_le_bytes()[..3]);
    v.extend_from_slice(data);
    v
}

/// The truncated MD5 CCOB headers carry.
fn hash(data: &[u8]) -> u64 {
    offload_format::ccob::truncated_md5(data)
}

fn ccobs(v: &mut Vec<(&'static str, Vec<u8>)>) {
    let ok = valid_bundle();
    let frame = zstd_raw_frame(&ok);
    let good = |total_extra: u64, usize_extra: u64, h: u64| {
        let mut c = ccob_v3(
            1,
            32 + frame.len() as u64 + total_extra,
            ok.len() as u64 + usize_extra,
            h,
        );
        c.extend_from_slice(&frame);
        c
    };
    let h = hash(&ok);
    v.push(("ok-bundle.ccob", good(0, 0, h)));

    let mut c = good(0, 0, h);
    c[4] = 4;
    v.push(("ccob-version4.bc", c));
    let mut c = good(0, 0, h);
    c[6] = 9;
    v.push(("ccob-method9.bc", c));
    v.push(("ccob-total-past-4g.bc", good(1 << 32, 0, h)));
    v.push(("ccob-usize-past-4g.bc", good(0, 1 << 32, h)));
    v.push((
        "ccob-usize-huge.bc",
        good(0, (1 << 63) - ok.len() as u64, h),
    ));
    v.push(("ccob-hash-mismatch.bc", good(0, 0, h ^ 1)));
    // 768 MiB of zeros in 24 KiB: more than the test's memory limit.
    let blocks = 6144;
    let frame = zstd_zero_frame(blocks);
    let mut c = ccob_v3(1, 32 + frame.len() as u64, blocks * (128 << 10), 0);
    c.extend_from_slice(&frame);
    v.push(("ccob-zstd-bomb.bc", c));
    // zlib method, payload that is not a zlib stream.
    let mut c = ccob_v3(0, 32 + 16, 64, 0);
    c.extend_from_slice(b"\x78\x9cnot deflate!!!");
    v.push(("ccob-zlib-garbage.bc", c));
    // Damaged bundles inside a good CCOB: they reach the bundler's
    // streaming reader, which plans from the header as it decompresses.
    let wrap = |bundle: &[u8]| {
        let frame = zstd_raw_frame(bundle);
        let mut c = ccob_v3(
            1,
            32 + frame.len() as u64,
            bundle.len() as u64,
            hash(bundle),
        );
        c.extend_from_slice(&frame);
        c
    };
    let mut t = bundle(2, &[(24, 8, HOST)], &[]);
    t.extend_from_slice(&64u64.to_le_bytes());
    v.push(("ccob-bundle-truncated-after-entry.bc", wrap(&t)));
    let h = header_len(&[HOST, GFX906]);
    v.push((
        "ccob-bundle-entry-past-end.bc",
        wrap(&bundle(
            2,
            &[(h, 8, HOST), (h + 8, 400, GFX906)],
            b"HOSTDATADEV1",
        )),
    ));
    v.push((
        "ccob-bundle-count-huge.bc",
        wrap(&bundle(u64::MAX, &[], b"")),
    ));
}

// --------------------------------------------------------------- archives

/// A GNU member header.
fn archive(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut v = b"!<arch>\n".to_vec();
    for (name, data) in members {
        v.extend(member_header(name, data.len() as u64));
        v.extend_from_slice(data);
        if data.len() % 2 == 1 {
            v.push(b'\n');
        }
    }
    v
}

fn archives(v: &mut Vec<(&'static str, Vec<u8>)>) {
    let mut a = b"!<arch>\n".to_vec();
    a.extend(member_header("big.o/", 9_999_999_999));
    a.extend_from_slice(b"tiny");
    v.push(("archive-member-size-huge.a", a));

    // Found by the archive_read fuzz target (a panic before the fix).
    let table = b"ab/\n";
    let mut a = b"!<arch>\n".to_vec();
    a.extend(long_names(table));
    a.extend(member_header("/3", 2));
    a.extend_from_slice(b"hi");
    v.push(("archive-long-name-at-terminator.a", a));

    let mut bad_ccob = ccob_v3(1, 40, 8, 0);
    bad_ccob[4] = 4;
    bad_ccob.extend_from_slice(&[0; 8]);
    v.push((
        "archive-member-ccob-version4.a",
        archive(&[("k.o/", &bad_ccob)]),
    ));
    let mut t = bundle(2, &[(24, 8, HOST)], &[]);
    t.extend_from_slice(&64u64.to_le_bytes());
    v.push((
        "archive-member-bundle-truncated.a",
        archive(&[("k.o/", &t)]),
    ));
    v.push((
        "archive-member-ob-image-oob.a",
        archive(&[("k.o/", &ob_image_oob())]),
    ));
    // Found by the member_symbols fuzz target (a panic before the fix): a
    // device entry that is an ELF object whose section header table offset
    // is 2^64-1 with e_shnum 0. The output archive lists member symbols.
    let mut elf = vec![0u8; 64];
    elf[..8].copy_from_slice(b"\x7fELF\x02\x01\x01\x00");
    elf[16..18].copy_from_slice(&1u16.to_le_bytes());
    elf[18..20].copy_from_slice(&224u16.to_le_bytes());
    elf[40..48].copy_from_slice(&u64::MAX.to_le_bytes());
    elf[58..60].copy_from_slice(&64u16.to_le_bytes());
    let h = header_len(&[HOST, GFX906]);
    let b = bundle(2, &[(h, 0, HOST), (h, elf.len() as u64, GFX906)], &elf);
    v.push(("archive-member-elf-shoff-max.a", archive(&[("k.o/", &b)])));
    // A thin archive naming a member that does not exist.
    let mut a = b"!<thin>\n".to_vec();
    a.extend(member_header("missing.o/", 100));
    v.push(("archive-thin-missing.a", a));
    // A thin archive whose member is /dev/zero: an endless read.
    let table = b"/dev/zero/\n";
    let mut a = b"!<thin>\n".to_vec();
    a.extend(long_names(table));
    a.extend(member_header("/0", 100));
    v.push(("archive-thin-dev-zero.a", a));
    // A member header cut short.
    let mut a = archive(&[("a.o/", b"abcd")]);
    a.extend_from_slice(&member_header("b.o/", 4)[..30]);
    v.push(("archive-header-cut.a", a));
    // Found by `cargo xtask mutate`: a long-name offset past the string
    // table, on the member after a good one.
    let table = b"k.o/\n\n";
    let mut a = b"!<arch>\n".to_vec();
    a.extend(long_names(table));
    a.extend(member_header("/0", 4));
    a.extend_from_slice(b"abcd");
    a.extend(member_header("/99", 4));
    a.extend_from_slice(b"data");
    v.push(("archive-long-name-past-table.a", a));
    // Found by `cargo xtask mutate`: a thin member name holding a NUL byte
    // (LLVM opens the part before it; Rust refuses the whole name).
    let table = b"missing\0\xffx.o/\n";
    let mut a = b"!<thin>\n".to_vec();
    a.extend(long_names(table));
    a.extend(member_header("/0", 100));
    v.push(("archive-thin-nul-name.a", a));
}

// -------------------------------------------------------- offload binaries

/// One version-1 offload binary with explicit fields.
struct Ob {
    version: u32,
    size: Option<u64>,
    entry_offset: u64,
    entry_size: u64,
    string_offset: u64,
    strings: Vec<(u64, u64)>,
    num_strings: Option<u64>,
    image_offset: Option<u64>,
    image_size: Option<u64>,
    table: Vec<u8>,
    image: Vec<u8>,
}

impl Ob {
    /// triple=x86_64-unknown-linux-gnu, arch=gfx906-ish, image `IMAGE!!!`.
    fn valid() -> Ob {
        // Table at 72 + 2*16 = 104: "\0triple\0x86_64-pc-linux-gnu\0arch\0generic\0"
        let table = b"\0triple\0x86_64-pc-linux-gnu\0arch\0generic\0".to_vec();
        Ob {
            version: 1,
            size: None,
            entry_offset: 32,
            entry_size: 40,
            string_offset: 72,
            strings: vec![(104 + 1, 104 + 8), (104 + 28, 104 + 33)],
            num_strings: None,
            image_offset: None,
            image_size: None,
            table,
            image: b"IMAGE!!!".to_vec(),
        }
    }

    fn bytes(&self) -> Vec<u8> {
        let table_at = 72 + 16 * self.strings.len() as u64;
        let image_at = (table_at + self.table.len() as u64).next_multiple_of(8);
        let end = (image_at + self.image.len() as u64).next_multiple_of(8);
        let mut v = vec![0x10, 0xFF, 0x10, 0xAD];
        v.extend_from_slice(&self.version.to_le_bytes());
        le(&mut v, self.size.unwrap_or(end));
        le(&mut v, self.entry_offset);
        le(&mut v, self.entry_size);
        v.extend_from_slice(&1u16.to_le_bytes()); // image kind: object
        v.extend_from_slice(&1u16.to_le_bytes()); // offload kind: OpenMP
        v.extend_from_slice(&0u32.to_le_bytes());
        le(&mut v, self.string_offset);
        le(
            &mut v,
            self.num_strings.unwrap_or(self.strings.len() as u64),
        );
        le(&mut v, self.image_offset.unwrap_or(image_at));
        le(&mut v, self.image_size.unwrap_or(self.image.len() as u64));
        for (k, val) in &self.strings {
            le(&mut v, *k);
            le(&mut v, *val);
        }
        v.extend_from_slice(&self.table);
        v.resize(image_at as usize, 0);
        v.extend_from_slice(&self.image);
        v.resize(end as usize, 0);
        v
    }
}

fn ob_image_oob() -> Vec<u8> {
    Ob {
        image_size: Some(1 << 20),
        ..Ob::valid()
    }
    .bytes()
}

fn offload_binaries(v: &mut Vec<(&'static str, Vec<u8>)>) {
    v.push(("ok-offload.bin", Ob::valid().bytes()));
    v.push(("ob-image-oob.bin", ob_image_oob()));
    v.push((
        "ob-image-offset-oob.bin",
        Ob {
            image_offset: Some(1 << 40),
            ..Ob::valid()
        }
        .bytes(),
    ));
    v.push((
        "ob-image-size-1t.bin",
        Ob {
            image_size: Some(1 << 40),
            ..Ob::valid()
        }
        .bytes(),
    ));
    v.push((
        "ob-image-size-past-4g.bin",
        Ob {
            image_size: Some(8 + (1 << 32)),
            ..Ob::valid()
        }
        .bytes(),
    ));
    v.push((
        "ob-size-past-4g.bin",
        Ob {
            size: Some(Ob::valid().bytes().len() as u64 + (1 << 32)),
            ..Ob::valid()
        }
        .bytes(),
    ));
    // A key offset far past the end.
    let mut ob = Ob::valid();
    ob.strings[0].0 = 1 << 33;
    v.push(("ob-string-offset-oob.bin", ob.bytes()));
    // The last value runs to the end of the binary without a NUL.
    let mut ob = Ob::valid();
    ob.table = b"\0triple\0x86_64-pc-linux-gnu\0arch\0generic".to_vec();
    ob.image = Vec::new();
    v.push(("ob-string-unterminated.bin", ob.bytes()));
    v.push((
        "ob-string-count-huge.bin",
        Ob {
            num_strings: Some(1 << 60),
            ..Ob::valid()
        }
        .bytes(),
    ));
    v.push((
        "ob-entry-offset-oob.bin",
        Ob {
            entry_offset: u64::MAX - 8,
            ..Ob::valid()
        }
        .bytes(),
    ));
    // A good binary, then one cut in the middle: nothing may be extracted.
    let mut t = Ob::valid().bytes();
    let second = Ob::valid().bytes();
    t.extend_from_slice(&second[..100]);
    v.push(("ob-second-truncated.bin", t));
    // A good binary, then eight zero bytes.
    let mut t = Ob::valid().bytes();
    t.extend_from_slice(&[0; 8]);
    v.push(("ob-trailing-zeros.bin", t));
    // Version 2 (newer upstream), 2^40 entries announced.
    let mut t = vec![0x10, 0xFF, 0x10, 0xAD];
    t.extend_from_slice(&2u32.to_le_bytes());
    le(&mut t, 80);
    le(&mut t, 32);
    le(&mut t, 1 << 40);
    t.resize(80, 0);
    v.push(("ob-v2-entries-huge.bin", t));
    // Version 3 (newer upstream), inflated size 2^62.
    let mut t = vec![0x10, 0xFF, 0x10, 0xAD];
    t.extend_from_slice(&3u32.to_le_bytes());
    le(&mut t, 80);
    le(&mut t, 40);
    le(&mut t, 1);
    le(&mut t, 1 << 62);
    t.extend_from_slice(&zstd_raw_frame(b"0123456789abcdef0123456789abcdef01234567"));
    t.resize(80, 0);
    let len = t.len() as u64;
    t[8..16].copy_from_slice(&len.to_le_bytes());
    v.push(("ob-v3-inflated-huge.bin", t));
    // An arch that climbs out of the working directory. LLVM builds the
    // extraction name from it; the directory it names does not exist.
    let mut ob = Ob::valid();
    ob.table = b"\0triple\0x86_64-pc-linux-gnu\0arch\0/../../escaped\0".to_vec();
    v.push(("ob-arch-path.bin", ob.bytes()));
}

// -------------------------------------------------------------------- ELF

/// A minimal ELF64 relocatable with one SHT_LLVM_OFFLOADING section whose
/// offset and size are given.
fn elf_with_offloading(offset: u64, size: u64) -> Vec<u8> {
    let shstr = b"\0.llvm.offloading\0.shstrtab\0";
    let mut v = vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 0];
    v.resize(16, 0);
    v.extend_from_slice(&1u16.to_le_bytes()); // ET_REL
    v.extend_from_slice(&62u16.to_le_bytes()); // x86-64
    v.extend_from_slice(&1u32.to_le_bytes());
    le(&mut v, 0); // entry
    le(&mut v, 0); // phoff
    let shoff = 64 + shstr.len() as u64;
    let shoff = shoff.next_multiple_of(8);
    le(&mut v, shoff);
    v.extend_from_slice(&0u32.to_le_bytes()); // flags
    v.extend_from_slice(&64u16.to_le_bytes()); // ehsize
    v.extend_from_slice(&0u16.to_le_bytes()); // phentsize
    v.extend_from_slice(&0u16.to_le_bytes()); // phnum
    v.extend_from_slice(&64u16.to_le_bytes()); // shentsize
    v.extend_from_slice(&3u16.to_le_bytes()); // shnum
    v.extend_from_slice(&2u16.to_le_bytes()); // shstrndx
    v.extend_from_slice(shstr);
    v.resize(shoff as usize, 0);
    let section = |v: &mut Vec<u8>, name: u32, ty: u32, off: u64, size: u64| {
        v.extend_from_slice(&name.to_le_bytes());
        v.extend_from_slice(&ty.to_le_bytes());
        le(v, 0x8000_0000); // SHF_EXCLUDE
        le(v, 0);
        le(v, off);
        le(v, size);
        v.extend_from_slice(&0u32.to_le_bytes());
        v.extend_from_slice(&0u32.to_le_bytes());
        le(v, 1);
        le(v, 0);
    };
    v.extend_from_slice(&[0; 64]);
    section(&mut v, 1, 0x6FFF_4C0B, offset, size);
    section(&mut v, 18, 3, 64, shstr.len() as u64);
    v
}

/// A minimal ELF64 relocatable whose sections are the null section, the
/// section name table and `sections` (name, type, offset, size) with their
/// contents `data` placed right after the headers.
fn elf_with(sections: &[(&[u8], u32, Option<u64>, u64)], data: &[u8]) -> Vec<u8> {
    let mut shstr = b"\0.shstrtab\0".to_vec();
    let mut names = Vec::new();
    for (name, ..) in sections {
        names.push(shstr.len() as u32);
        shstr.extend_from_slice(name);
        shstr.push(0);
    }
    let shnum = 2 + sections.len() as u64;
    let shoff = (64 + shstr.len() as u64).next_multiple_of(8);
    let data_at = shoff + 64 * shnum;
    let mut v = vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 0];
    v.resize(16, 0);
    v.extend_from_slice(&1u16.to_le_bytes()); // ET_REL
    v.extend_from_slice(&62u16.to_le_bytes()); // x86-64
    v.extend_from_slice(&1u32.to_le_bytes());
    le(&mut v, 0);
    le(&mut v, 0);
    le(&mut v, shoff);
    v.extend_from_slice(&0u32.to_le_bytes());
    v.extend_from_slice(&64u16.to_le_bytes());
    v.extend_from_slice(&0u16.to_le_bytes());
    v.extend_from_slice(&0u16.to_le_bytes());
    v.extend_from_slice(&64u16.to_le_bytes());
    v.extend_from_slice(&(shnum as u16).to_le_bytes());
    v.extend_from_slice(&1u16.to_le_bytes()); // shstrndx
    v.extend_from_slice(&shstr);
    v.resize(shoff as usize, 0);
    let header = |v: &mut Vec<u8>, name: u32, ty: u32, flags: u64, off: u64, size: u64| {
        v.extend_from_slice(&name.to_le_bytes());
        v.extend_from_slice(&ty.to_le_bytes());
        le(v, flags);
        le(v, 0);
        le(v, off);
        le(v, size);
        v.extend_from_slice(&0u32.to_le_bytes());
        v.extend_from_slice(&0u32.to_le_bytes());
        le(v, 1);
        le(v, 0);
    };
    v.extend_from_slice(&[0; 64]);
    header(&mut v, 1, 3, 0, 64, shstr.len() as u64);
    let mut at = data_at;
    for ((_, ty, off, size), name) in sections.iter().zip(&names) {
        header(&mut v, *name, *ty, 0x8000_0000, off.unwrap_or(at), *size);
        if off.is_none() {
            at += size;
        }
    }
    v.extend_from_slice(data);
    v
}

/// A COFF x86-64 object with one section whose long name is in the string
/// table and whose raw data is `size` bytes at `offset`.
fn coff_with(name: &[u8], offset: u32, size: u32) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&0x8664u16.to_le_bytes());
    v.extend_from_slice(&1u16.to_le_bytes()); // sections
    v.extend_from_slice(&0u32.to_le_bytes()); // time stamp
    v.extend_from_slice(&60u32.to_le_bytes()); // symbol table (empty)
    v.extend_from_slice(&0u32.to_le_bytes()); // symbols
    v.extend_from_slice(&0u16.to_le_bytes()); // optional header
    v.extend_from_slice(&0u16.to_le_bytes()); // characteristics
    v.extend_from_slice(b"/4\0\0\0\0\0\0");
    for x in [0u32, 0, size, offset, 0, 0] {
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.extend_from_slice(&0u16.to_le_bytes());
    v.extend_from_slice(&0u16.to_le_bytes());
    v.extend_from_slice(&0x4010_0840u32.to_le_bytes());
    // String table: its size, then the name.
    v.extend_from_slice(&(4 + name.len() as u32 + 1).to_le_bytes());
    v.extend_from_slice(name);
    v.push(0);
    v
}

fn elves(v: &mut Vec<(&'static str, Vec<u8>)>) {
    let gfx906_section: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__hip-amdgcn-amd-amdhsa--gfx906";
    let host_section: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__host-x86_64-unknown-linux-gnu-";
    v.push((
        "ok-host.o",
        elf_with(&[(b".text", 1, None, 4)], b"\xc3\x90\x90\x90"),
    ));
    v.push((
        "ok-fat.o",
        elf_with(
            &[
                (b".text", 1, None, 4),
                (host_section, 1, None, 1),
                (gfx906_section, 1, None, 4),
            ],
            b"\xc3\x90\x90\x90\0DEV1",
        ),
    ));
    // The gfx906 bundle section's data lies 1 MiB past the end.
    v.push((
        "elf-bundle-section-oob.o",
        elf_with(
            &[
                (host_section, 1, None, 1),
                (gfx906_section, 1, Some(1 << 20), 4),
            ],
            b"\0",
        ),
    ));
    // Its size wraps the 64-bit offset.
    v.push((
        "elf-bundle-section-wraps.o",
        elf_with(
            &[
                (host_section, 1, None, 1),
                (gfx906_section, 1, Some(64), u64::MAX - 32),
            ],
            b"\0",
        ),
    ));
    // A section name offset far outside the name table, after a good one.
    let mut e = elf_with(
        &[(host_section, 1, None, 1), (gfx906_section, 1, None, 4)],
        b"\0DEV1",
    );
    set_shdr_field(&mut e, 3, 0, &0xFFFF_FFF0u32.to_le_bytes());
    v.push(("elf-bundle-name-oob.o", e));
    // The section name table index names no section.
    let mut e = elf_with(&[(gfx906_section, 1, None, 4)], b"DEV1");
    e[62..64].copy_from_slice(&200u16.to_le_bytes());
    v.push(("elf-shstrndx-oob.o", e));
    // A NOBITS section aligned to 0xFF00000000000004: laying the object out
    // again cannot honour that (llvm-objcopy 22 fails to allocate).
    let mut e = elf_with(
        &[(b".text", 1, None, 4), (b".tbss", 8, None, 0)],
        b"\xc3\x90\x90\x90",
    );
    set_shdr_field(
        &mut e,
        3,
        SH_ADDRALIGN,
        &0xFF00_0000_0000_0004u64.to_le_bytes(),
    );
    v.push(("elf-host-huge-align.o", e));
    // A PROGBITS section aligned to 0xFC00000000000001 (not a power of two).
    let mut e = elf_with(
        &[(b".text", 1, None, 4), (b".comment", 1, None, 4)],
        b"\xc3\x90\x90\x90GCC\0",
    );
    set_shdr_field(
        &mut e,
        3,
        SH_ADDRALIGN,
        &0xFC00_0000_0000_0001u64.to_le_bytes(),
    );
    v.push(("elf-host-odd-align.o", e));
    // Both: a NOBITS section aligned to 0xFF00000000000004, then a PROGBITS
    // one aligned to 0xFB00000000000001 (found by object_bundle_roundtrip).
    let mut e = elf_with(
        &[
            (b".text", 1, None, 4),
            (b".tbss", 8, None, 0),
            (b".comment", 1, None, 4),
        ],
        b"\xc3\x90\x90\x90GCC\0",
    );
    set_shdr_field(
        &mut e,
        3,
        SH_ADDRALIGN,
        &0xFF00_0000_0000_0004u64.to_le_bytes(),
    );
    set_shdr_field(
        &mut e,
        4,
        SH_ADDRALIGN,
        &0xFB00_0000_0000_0001u64.to_le_bytes(),
    );
    v.push(("elf-host-two-huge-aligns.o", e));
    // A NOBITS section aligned to 2^64-1: the next section is laid out at a
    // wrapped, small offset, over the headers. llvm-objcopy 22 writes that
    // object; it reads as no object at all.
    let mut e = elf_with(
        &[
            (b".text", 1, None, 4),
            (b".bss", 8, Some(64), 4),
            (b".comment", 1, None, 4),
        ],
        b"\xc3\x90\x90\x90GCC\0",
    );
    set_shdr_field(&mut e, 3, SH_ADDRALIGN, &u64::MAX.to_le_bytes());
    v.push(("elf-host-align-max.o", e));
    // No section header table (e_shoff, e_shnum and e_shstrndx 0):
    // llvm-objcopy 22 appends the bundle data but lists it nowhere, so
    // every entry is lost.
    let mut e = elf_with(&[(b".text", 1, None, 4)], b"\xc3\x90\x90\x90");
    e[40..48].copy_from_slice(&0u64.to_le_bytes());
    e[60..64].copy_from_slice(&[0; 4]);
    v.push(("elf-host-no-section-table.o", e));
    v.push((
        "coff-bundle-section-oob.o",
        coff_with(gfx906_section, 1 << 20, 16),
    ));

    v.push(("elf-offloading-oob.o", elf_with_offloading(1 << 20, 64)));
    v.push((
        "elf-offloading-wraps.o",
        elf_with_offloading(u64::MAX - 15, 64),
    ));
    // The section holds a good binary followed by a truncated one.
    let mut e = elf_with_offloading(0, 0);
    let at = e.len() as u64;
    let mut payload = Ob::valid().bytes();
    payload.extend_from_slice(&Ob::valid().bytes()[..50]);
    e.extend_from_slice(&payload);
    // Patch the offloading section header (index 1) offset and size.
    set_shdr_field(&mut e, 1, SH_OFFSET, &at.to_le_bytes());
    set_shdr_field(&mut e, 1, SH_SIZE, &(payload.len() as u64).to_le_bytes());
    v.push(("elf-offloading-truncated-binary.o", e));
    // Section header table past the end of the file, 65535 sections.
    let mut e = elf_with_offloading(0, 0);
    e[40..48].copy_from_slice(&(1u64 << 40).to_le_bytes());
    e[60..62].copy_from_slice(&0xFFFFu16.to_le_bytes());
    v.push(("elf-shoff-oob.o", e));
}

// ------------------------------------------------------ NVIDIA fat binaries

/// A file of `tests/fixtures/nvidia/` (nvcc 13.5 builds).
fn nvidia_fixture(name: &str) -> Vec<u8> {
    let p = crate::harness::workspace_root()
        .join("tests/fixtures/nvidia")
        .join(name);
    fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A fat binary container in a fixture: where it starts, and where each
/// of its entries starts (file offsets).
struct Fatbin {
    at: usize,
    entries: Vec<usize>,
}

const FATBIN_MAGIC: [u8; 4] = 0xBA55_ED50u32.to_le_bytes();

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn put_u32(b: &mut [u8], at: usize, x: u32) {
    b[at..at + 4].copy_from_slice(&x.to_le_bytes());
}

fn put_u64(b: &mut [u8], at: usize, x: u64) {
    b[at..at + 8].copy_from_slice(&x.to_le_bytes());
}

/// The first container of `file` (the start of its `.nv_fatbin`).
fn first_fatbin(file: &[u8]) -> Fatbin {
    let at = file
        .windows(4)
        .position(|w| w == FATBIN_MAGIC)
        .expect("a fat binary container");
    let end = at + 16 + u64_at(file, at + 8) as usize;
    let mut entries = Vec::new();
    let mut e = at + 16;
    while e < end {
        entries.push(e);
        e += u32_at(file, e + 4) as usize + u64_at(file, e + 8) as usize;
    }
    Fatbin { at, entries }
}

/// `file` with one byte of entry `entry` of its first container's
/// compressed stream changed (its lowest bit), the last one (from the end of the
/// stream) whose change naming the payload (its first 4 KiB, decoded as
/// `offload ls` decodes them) does not see and decoding it to its end
/// does.
fn flip_past_head(file: &[u8], entry: usize) -> Vec<u8> {
    use offload_format::nvidia::fatbin;
    fn nth(f: &[u8], at: usize, entry: usize) -> fatbin::Entry<'_> {
        fatbin::scan(&f[at..]).containers[0].entries[entry]
    }
    let z = first_fatbin(file);
    let e = nth(file, z.at, entry);
    let head = e.head(4096).expect("the fixture decodes");
    let start = z.at + e.payload_offset;
    (start..start + e.payload.len())
        .rev()
        .map(|at| {
            let mut f = file.to_vec();
            f[at] ^= 1;
            f
        })
        .find(|f| {
            let e = nth(f, z.at, entry);
            e.head(4096).is_ok_and(|h| h == head) && e.check_stream().is_err()
        })
        .expect("a byte whose change only a whole decode sees")
}

/// Offsets of an entry's fields.
const NV_ARCH: usize = 28;
const NV_STORED: usize = 8;
const NV_COMPRESSED: usize = 16;
const NV_DECODED: usize = 56;

/// The section header of `file` (ELF64) whose contents start at `offset`.
fn shdr_at_offset(file: &[u8], offset: usize) -> usize {
    let shoff = u64_at(file, 40) as usize;
    let count = u16::from_le_bytes([file[60], file[61]]) as usize;
    (0..count)
        .map(|i| shoff + i * 64)
        .find(|&h| u64_at(file, h + SH_OFFSET) as usize == offset)
        .expect("the section holding the container")
}

fn nvidia(v: &mut Vec<(&'static str, Vec<u8>)>) {
    // compress-all.o: one container in .nv_fatbin, entries sm_80 cubin,
    // compute_80 PTX, sm_90 cubin, all zstd.
    let zstd = nvidia_fixture("compress-all.o");
    let z = first_fatbin(&zstd);
    // The first entry's compressed size past its stored size: its payload
    // would run over the next entry's header.
    let mut f = zstd.clone();
    let stored = u64_at(&f, z.entries[0] + NV_STORED);
    put_u32(&mut f, z.entries[0] + NV_COMPRESSED, stored as u32 + 64);
    v.push(("nv-entries-overlap.o", f));
    // The first entry's header size past the entry.
    let mut f = zstd.clone();
    put_u32(&mut f, z.entries[0] + 4, 1 << 20);
    v.push(("nv-entry-header-huge.o", f));
    // The container claims 4 KiB more than its section holds (the file
    // goes on: the bytes are there, but belong to other sections).
    let mut f = zstd.clone();
    let size = u64_at(&f, z.at + 8);
    put_u64(&mut f, z.at + 8, size + 4096);
    v.push(("nv-container-past-section.o", f));
    // The container's size wraps past 2^64 with its header.
    let mut f = zstd.clone();
    put_u64(&mut f, z.at + 8, u64::MAX - 7);
    v.push(("nv-container-size-wraps.o", f));
    // The last entry's stored size past the end of the container.
    let mut f = zstd.clone();
    let last = *z.entries.last().unwrap();
    let stored = u64_at(&f, last + NV_STORED);
    put_u64(&mut f, last + NV_STORED, stored + 4096);
    v.push(("nv-entry-past-container.o", f));
    // A compressed entry whose recorded decoded size lies: 2^63 bytes, one
    // byte fewer than the frame holds, and one more.
    for (name, change) in [
        ("nv-zstd-decoded-size-huge.o", i64::MIN),
        ("nv-zstd-decoded-size-short.o", -1),
        ("nv-zstd-decoded-size-long.o", 1),
    ] {
        let mut f = zstd.clone();
        let at = z.entries[0] + NV_DECODED;
        let decoded = if change == i64::MIN {
            1 << 63
        } else {
            u64_at(&f, at).wrapping_add_signed(change)
        };
        put_u64(&mut f, at, decoded);
        v.push((name, f));
    }
    // The zstd stream cut in half (the entry says so: its compressed size).
    let mut f = zstd.clone();
    let csize = u32_at(&f, z.entries[0] + NV_COMPRESSED);
    put_u32(&mut f, z.entries[0] + NV_COMPRESSED, csize / 2);
    v.push(("nv-zstd-truncated.o", f));
    // A container with no entries: size 0, the section's rest zeros.
    let mut f = zstd.clone();
    let shdr = shdr_at_offset(&f, z.at);
    let section_end = z.at + u64_at(&f, shdr + SH_SIZE) as usize;
    put_u64(&mut f, z.at + 8, 0);
    f[z.at + 16..section_end].fill(0);
    v.push(("nv-container-empty.o", f));

    // speed.o: every entry in NVIDIA's LZ format.
    let lz = nvidia_fixture("speed.o");
    let l = first_fatbin(&lz);
    let mut f = lz.clone();
    put_u64(&mut f, l.entries[0] + NV_DECODED, 1 << 40);
    v.push(("nv-lz-decoded-size-huge.o", f));
    let mut f = lz.clone();
    let decoded = u64_at(&f, l.entries[0] + NV_DECODED);
    put_u64(&mut f, l.entries[0] + NV_DECODED, decoded / 2);
    v.push(("nv-lz-decoded-size-short.o", f));
    let mut f = lz.clone();
    let csize = u32_at(&f, l.entries[0] + NV_COMPRESSED);
    put_u32(&mut f, l.entries[0] + NV_COMPRESSED, csize / 2);
    v.push(("nv-lz-truncated.o", f));

    // concat.o: a PTX entry, then one kind-0x100 entry holding both
    // cubins; its member table follows the first 64 bytes of its header
    // (count, table size, then 64 bytes per member: offset at 4, size at 8).
    let cat = nvidia_fixture("concat.o");
    let c = first_fatbin(&cat);
    let entry = c.entries[1];
    let member = |i: usize| entry + 72 + 64 * i;
    let mut f = cat.clone();
    put_u64(&mut f, member(1) + 8, 1 << 40);
    v.push(("nv-concat-member-size-huge.o", f));
    let mut f = cat.clone();
    put_u32(&mut f, member(1) + 4, u32::MAX - 15);
    v.push(("nv-concat-member-offset-past-end.o", f));
    let mut f = cat.clone();
    put_u32(&mut f, entry + 64, u32::MAX);
    v.push(("nv-concat-member-count-huge.o", f));

    // One byte of an entry header changed: what thin decides on. The
    // sm_90 cubin (zstd) recorded as sm_75 (0x5a -> 0x4b), or as of a
    // kind no reader knows (2 -> 3); the compute_80 PTX as compute_90
    // (0x50 -> 0x5a), against its `.target sm_80`.
    let mut f = zstd.clone();
    assert_eq!(f[z.entries[2] + NV_ARCH], 90);
    f[z.entries[2] + NV_ARCH] = 75;
    v.push(("nv-cubin-arch-flipped.o", f));
    let mut f = zstd.clone();
    assert_eq!(f[z.entries[2]], 2);
    f[z.entries[2]] = 3;
    v.push(("nv-cubin-kind-flipped.o", f));
    let mut f = zstd.clone();
    assert_eq!((f[z.entries[1]], f[z.entries[1] + NV_ARCH]), (1, 80));
    f[z.entries[1] + NV_ARCH] = 90;
    v.push(("nv-ptx-arch-flipped.o", f));
    // none.o: the same cubin stored, so that reading headers only (a
    // summary, a dry run) sees its first bytes too.
    let stored = nvidia_fixture("none.o");
    let n = first_fatbin(&stored);
    let mut f = stored.clone();
    assert_eq!(f[n.entries[2] + NV_ARCH], 90);
    f[n.entries[2] + NV_ARCH] = 75;
    v.push(("nv-stored-cubin-arch-flipped.o", f));
    // A byte of a compressed stream changed past what naming the payload
    // decodes (its first 4 KiB): only decoding it to its end sees it.
    // lz-big.o's PTX (49,309 bytes, LZ); compress-all.o's sm_90 cubin
    // (zstd, one block, which naming decodes whole: the byte that shows
    // is the block header's, whose last-block bit leaves the frame open).
    let big = nvidia_fixture("lz-big.o");
    v.push(("nv-lz-flipped-deep.o", flip_past_head(&big, 1)));
    v.push(("nv-zstd-flipped-past-head.o", flip_past_head(&zstd, 2)));

    // libk.so: a shared library with two containers in .nv_fatbin; the
    // first one's first entry runs past the container (and the section),
    // or its zstd stream is cut.
    let lib = nvidia_fixture("libk.so");
    let first = first_fatbin(&lib);
    let mut f = lib.clone();
    put_u64(&mut f, first.entries[0] + NV_STORED, 1 << 32);
    v.push(("nv-so-entry-past-container.so", f));
    let mut f = lib.clone();
    let csize = u32_at(&f, first.entries[0] + NV_COMPRESSED);
    put_u32(&mut f, first.entries[0] + NV_COMPRESSED, csize / 2);
    v.push(("nv-so-zstd-truncated.so", f));
}

// ------------------------------------------------- zip archives (wheels)

fn zips(v: &mut Vec<(&'static str, Vec<u8>)>) {
    use offload_format::zip::Archive;
    // The wheel Python's zipfile made of the nvcc fixtures: libk.so
    // deflated (the 2nd member), RECORD last.
    let p = crate::harness::workspace_root().join("tests/fixtures/wheel/demo-1.0-py3-none-any.whl");
    let whl = fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let a = Archive::parse(&whl).expect("the wheel fixture parses");
    let cd = a.central_offset as usize;
    let so = a
        .members
        .iter()
        .position(|m| m.name == b"demo/lib/libk.so")
        .expect("libk.so in the wheel");
    let m = &a.members[so];
    let (data_at, data_len) = (m.data_offset as usize, m.data.len());
    // The central entry of libk.so.
    let mut central = cd;
    for prior in &a.members[..so] {
        central += 46 + prior.name.len() + prior.central_extra.len() + prior.comment.len();
    }
    let end = whl.len() - 22;
    // The end record counts 65,535 entries; the directory holds 7.
    let mut f = whl.clone();
    f[end + 8..end + 12].copy_from_slice(&[0xff; 4]);
    v.push(("zip-count-huge.whl", f));
    // The central directory's offset past the end of the file.
    let mut f = whl.clone();
    f[end + 16..end + 20].copy_from_slice(&u32::MAX.to_le_bytes());
    v.push(("zip-directory-past-end.whl", f));
    // libk.so records 4 GiB - 1 uncompressed (a bomb's claim): decoding
    // stops at the stream's end, short of it.
    let mut f = whl.clone();
    f[central + 24..central + 28].copy_from_slice(&0xffff_fffeu32.to_le_bytes());
    v.push(("zip-member-size-huge.whl", f));
    // libk.so records 1 KiB: its stream decodes past it.
    let mut f = whl.clone();
    f[central + 24..central + 28].copy_from_slice(&1024u32.to_le_bytes());
    v.push(("zip-member-size-short.whl", f));
    // libk.so's CRC-32 is not its contents'.
    let mut f = whl.clone();
    f[central + 16] ^= 0xff;
    v.push(("zip-member-crc.whl", f));
    // libk.so's deflate stream damaged near its end (its first bytes
    // still say ELF, so it is read).
    let mut f = whl.clone();
    for b in &mut f[data_at + data_len - 48..data_at + data_len - 40] {
        *b ^= 0x5a;
    }
    v.push(("zip-deflate-damaged.whl", f));
    // libk.so's compressed size reaches into the central directory.
    let mut f = whl.clone();
    let reach = (cd - data_at + 16) as u32;
    f[central + 20..central + 24].copy_from_slice(&reach.to_le_bytes());
    v.push(("zip-member-into-directory.whl", f));
    // The member after libk.so points at libk.so's local header: two
    // entries sharing data (the shape of overlapping zip bombs).
    let mut f = whl.clone();
    let next = central + 46 + m.name.len() + m.central_extra.len() + m.comment.len();
    f[next + 42..next + 46].copy_from_slice(&(m.local_offset as u32).to_le_bytes());
    v.push(("zip-members-overlap.whl", f));
    // Cut inside the central directory.
    v.push(("zip-cut.whl", whl[..cd + 60].to_vec()));
    // libk.so compressed with method 12 (bzip2), which is not read.
    let mut f = whl.clone();
    f[central + 10..central + 12].copy_from_slice(&12u16.to_le_bytes());
    v.push(("zip-member-method-bzip2.whl", f));
}

// --------------------------------------------------------- response files

fn response_files(v: &mut Vec<(&'static str, Vec<u8>)>) {
    // Each copy of the file names itself twice: expanding it naively
    // doubles the argument list at every level.
    v.push(("rsp-self.rsp", b"@rsp-self.rsp @rsp-self.rsp\n".to_vec()));
}

/// Offsets of fields within an ELF64 section header.
const SH_OFFSET: usize = 24;
const SH_SIZE: usize = 32;
const SH_ADDRALIGN: usize = 48;

/// Overwrites a field of section header `index` of the ELF64 object `e`.
fn set_shdr_field(e: &mut [u8], index: usize, field: usize, value: &[u8]) {
    let shoff = u64::from_le_bytes(e[40..48].try_into().unwrap()) as usize;
    let at = shoff + index * 64 + field;
    e[at..at + value.len()].copy_from_slice(value);
}
