//! The seed corpus of each fuzz target: small valid (and deliberately
//! broken) inputs from the committed fixtures, which the LLVM tools made,
//! and from our own writers. Kept small; the fuzzer finds the rest.

use offload_format::{archive, ccob};

use super::{fixture_files, fuzz_dir, write_dir};

type Seeds = Vec<(String, Vec<u8>)>;

/// Rewrites `fuzz/corpus/<target>/` for each target.
pub fn write_all(targets: &[String]) -> Result<(), String> {
    let mut total = 0u64;
    for t in targets {
        let files = seeds_for(t)?;
        let dir = fuzz_dir().join("corpus").join(t);
        write_dir(&dir, &files)?;
        let bytes: u64 = files.iter().map(|(_, b)| b.len() as u64).sum();
        total += bytes;
        eprintln!("seeds {t}: {} files, {bytes} bytes", files.len());
    }
    eprintln!("seeds: {total} bytes in all");
    Ok(())
}

fn seeds_for(target: &str) -> Result<Seeds, String> {
    Ok(match target {
        "ccob_header" => fixture_files("ccob", 1 << 20, |n| n.ends_with(".ccob"))
            .into_iter()
            .map(|(n, b)| (n, b[..b.len().min(40)].to_vec()))
            .collect(),
        "ccob_stream" => {
            let mut s = fixture_files("ccob", 4096, |n| n.ends_with(".ccob"));
            s.extend(own_ccobs()?);
            s
        }
        "archive_read" => {
            let mut s = fixture_files("archive", 8192, |n| n.ends_with(".a"));
            s.extend(own_archives()?);
            s
        }
        "member_symbols" => {
            let mut s = archive_members(4096)?;
            s.extend(fixture_files("bitcode", 4096, |n| n.ends_with(".bc")));
            s
        }
        "bitcode_read" => fixture_files("bitcode", 8192, |n| n.ends_with(".bc")),
        "triple" => [
            "x86_64-unknown-linux-gnu",
            "amdgcn-amd-amdhsa",
            "nvptx64-nvidia-cuda",
            "spirv64-amd-amdhsa",
            "x86_64-pc-windows-msvc",
            "arm64-apple-macosx14.0.0",
            "dxil-pc-shadermodel6.3-library",
            "armv7-linux-gnueabihf",
            "i686-w64-mingw32",
        ]
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("triple-{i}"), t.as_bytes().to_vec()))
        .collect(),
        "response_tokenize" => vec![
            ("simple".into(), b"\x00-type=o -targets=a,b @x".to_vec()),
            (
                "quotes".into(),
                b"\x00'a b' \"c\\\"d\" e\\ f # g\n\t\r".to_vec(),
            ),
        ],
        // Structured targets start from nothing: libFuzzer's first inputs
        // already decode to small valid values.
        _ => Vec::new(),
    })
}

/// CCOBs from our writer: each method and writable version, and a
/// concatenation.
fn own_ccobs() -> Result<Seeds, String> {
    let bundle: &[u8] = b"__CLANG_OFFLOAD_BUNDLE____\x01\x00\x00\x00\x00\x00\x00\x00";
    let mut seeds = Vec::new();
    let mut concat = Vec::new();
    for (method, mname) in [(ccob::Method::Zstd, "zstd"), (ccob::Method::Zlib, "zlib")] {
        for (version, vname) in [(ccob::Version::V2, "v2"), (ccob::Version::V3, "v3")] {
            let options = ccob::CompressOptions {
                method,
                level: None,
                version,
            };
            let c = ccob::compress(bundle, &options).map_err(|e| e.to_string())?;
            concat.extend_from_slice(&c.bytes);
            seeds.push((format!("own-{mname}-{vname}.ccob"), c.bytes));
        }
    }
    seeds.push(("own-concat4.ccob".into(), concat));
    Ok(seeds)
}

/// Archives from our writer: long names, odd sizes, and the 64-bit symbol
/// table.
fn own_archives() -> Result<Seeds, String> {
    let elf = archive_members(4096)?
        .into_iter()
        .map(|(_, b)| b)
        .find(|b| b.starts_with(b"\x7fELF"));
    let mut members = vec![
        archive::NewMember {
            name: b"a",
            data: b"odd",
        },
        archive::NewMember {
            name: b"dir/a-name-longer-than-16",
            data: b"even",
        },
    ];
    if let Some(elf) = &elf {
        members.push(archive::NewMember {
            name: b"k.o",
            data: elf,
        });
    }
    let mut seeds = Vec::new();
    for (threshold, name) in [(archive::SYM64_THRESHOLD, "own-gnu.a"), (0, "own-sym64.a")] {
        let options = archive::WriteOptions {
            sym64_threshold: threshold,
            ..archive::WriteOptions::default()
        };
        let (bytes, _) =
            archive::write_archive_to_vec(&members, &options).map_err(|e| e.to_string())?;
        seeds.push((name.into(), bytes));
    }
    Ok(seeds)
}

/// Members of the archive fixtures (ELF, COFF, bitcode, blobs), each no
/// larger than `max`.
fn archive_members(max: usize) -> Result<Seeds, String> {
    let mut seeds = Vec::new();
    for (name, bytes) in fixture_files("archive", 1 << 20, |n| n.ends_with(".a")) {
        let Ok(a) = archive::Archive::parse(&bytes) else {
            continue;
        };
        for (i, m) in a.members().enumerate() {
            let Ok(m) = m else { break };
            if let archive::MemberContent::Inline(data) = m.content {
                if !data.is_empty() && data.len() <= max {
                    seeds.push((format!("{name}.{i}"), data.to_vec()));
                }
            }
        }
    }
    Ok(seeds)
}
