//! Write-then-read for offload binaries: images written as version 1 (one
//! binary per image, concatenated) or as one version 2 / 3 binary (v3
//! optionally compressed) read back with the same kinds, strings and bytes.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use offload_format::offload_binary::write::{write_multi, Compression};
use offload_format::offload_binary::{parse_binaries, ImageEntry, ImageKind, OffloadKind};

#[derive(Arbitrary, Debug)]
struct Image<'a> {
    image_kind: u16,
    offload_kind: u16,
    flags: u32,
    strings: Vec<(&'a [u8], &'a [u8])>,
    image: &'a [u8],
}

#[derive(Arbitrary, Debug)]
struct Input<'a> {
    images: Vec<Image<'a>>,
    /// 1: concatenated v1 binaries; 2, 3: one multi-entry binary.
    version: u8,
    compression: Option<(bool, u8)>,
}

/// Strings as a reader returns them: a repeated key keeps its first
/// position and takes the last value.
fn expected<'a>(strings: &[(&'a [u8], &'a [u8])]) -> Vec<(&'a [u8], &'a [u8])> {
    let mut out: Vec<(&[u8], &[u8])> = Vec::new();
    for &(k, v) in strings {
        match out.iter_mut().find(|(ok, _)| *ok == k) {
            Some(slot) => slot.1 = v,
            None => out.push((k, v)),
        }
    }
    out
}

fuzz_target!(|input: Input<'_>| {
    // Keys and values are NUL-terminated in the format.
    if input.images.iter().any(|i| {
        i.strings
            .iter()
            .any(|(k, v)| k.contains(&0) || v.contains(&0))
    }) {
        return;
    }
    let entries: Vec<ImageEntry<'_>> = input
        .images
        .iter()
        .map(|i| ImageEntry {
            image_kind: ImageKind(i.image_kind),
            offload_kind: OffloadKind(i.offload_kind),
            flags: i.flags,
            strings: i.strings.clone(),
            image: i.image,
        })
        .collect();
    let bytes = match input.version % 3 {
        0 => entries.iter().flat_map(|e| e.to_v1()).collect::<Vec<u8>>(),
        1 if !entries.is_empty() => write_multi(&entries, 2, None),
        2 if !entries.is_empty() => {
            let compression = input.compression.map(|(zstd, level)| {
                if zstd {
                    Compression::Zstd(i32::from(level % 10))
                } else {
                    Compression::Zlib(u32::from(level % 10))
                }
            });
            write_multi(&entries, 3, compression)
        }
        _ => return,
    };
    let read = parse_binaries(&bytes).expect("our offload binaries read back");
    assert_eq!(read.len(), entries.len());
    for (r, e) in read.iter().zip(&entries) {
        assert_eq!(r.image_kind, e.image_kind);
        assert_eq!(r.offload_kind, e.offload_kind);
        assert_eq!(r.flags, e.flags);
        assert_eq!(r.image.as_ref(), e.image);
        let got: Vec<(&[u8], &[u8])> = r
            .strings
            .iter()
            .map(|(k, v)| (k.as_ref(), v.as_ref()))
            .collect();
        let mut want = expected(&e.strings);
        let mut got_sorted = got.clone();
        // Versions 2 and 3 may store strings in another order.
        want.sort();
        got_sorted.sort();
        assert_eq!(got_sorted, want);
    }
});
