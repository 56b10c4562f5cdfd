//! The seed corpus of each fuzz target: small valid (and deliberately
//! broken) inputs from the committed fixtures, which the LLVM tools made,
//! and from our own writers. Kept small; the fuzzer finds the rest.

use offload_format::{archive, ccob};

use super::{fixture_files, fixtures, fuzz_dir, write_dir};

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
        // A mask byte (how much of each container stays), then a shared
        // library with a .hip_fatbin or .nv_fatbin section.
        "shrink" => {
            let mut s = fixture_files("thin", 64 << 10, |n| n.ends_with(".so"));
            s.extend(fixture_files("nvidia", 64 << 10, |n| n.ends_with(".so")));
            s.into_iter()
                .map(|(n, b)| {
                    let mut seed = vec![0x11u8];
                    seed.extend_from_slice(&b);
                    (n, seed)
                })
                .collect()
        }
        "offload_regions" => {
            // A switch byte (no known starts), then a region: the ROCm 5
            // style bundle, our CCOBs concatenated.
            let mut s: Seeds = fixture_files("offload", 8192, |n| n.ends_with(".bundle"));
            s.extend(own_ccobs()?);
            s.into_iter()
                .map(|(n, b)| {
                    let mut seed = vec![0u8];
                    seed.extend_from_slice(&b);
                    (n, seed)
                })
                .collect()
        }
        "bundle_read" => fixture_tree("bundler", 8192)
            .into_iter()
            .filter(|(_, b)| b.starts_with(b"__CLANG_OFFLOAD_BUNDLE__"))
            .collect(),
        "text_bundle_read" => fixture_tree("bundler", 8192)
            .into_iter()
            .filter_map(|(n, b)| {
                // The target reads (comment selector, take/skip bits, text).
                let comment = [&b"\n// __CLANG"[..], b"\n# __CLANG", b"\n; __CLANG"]
                    .iter()
                    .position(|m| b.windows(m.len()).any(|w| w == *m))?;
                let mut seed = vec![comment as u8];
                seed.extend_from_slice(&[0xAA; 8]);
                seed.extend_from_slice(&b);
                Some((n, seed))
            })
            .collect(),
        "device_archive" => fixture_files("hda/inputs", 35_000, |n| {
            n.ends_with(".a") && !n.contains("thin")
        })
        .into_iter()
        // Switches: every target, and once more with missing bundles
        // allowed and the input archive checked.
        .flat_map(|(n, b)| {
            [0xF8u8, 0xFB].map(|switches| {
                let mut seed = vec![switches];
                seed.extend_from_slice(&b);
                (format!("{n}-{switches:02x}"), seed)
            })
        })
        .collect(),
        "object_bundle_read" => fixture_files("object_bundle", 4096, |n| n.ends_with(".o")),
        "objfile" => fixture_files("objfile", 20_000, |n| {
            !n.ends_with(".c") && !n.ends_with(".cl") && !n.ends_with(".sh")
        }),
        "object_bundle_roundtrip" => fixture_files("object_bundle", 4096, |n| {
            n.starts_with("host-") && n.ends_with(".o")
        })
        .into_iter()
        .map(|(n, host)| {
            // Two entries (a host placeholder and a device blob), then the
            // host object; see the target for the layout.
            let mut seed = vec![2];
            for (id, content) in [
                (&b"host-x86_64-unknown-linux-gnu-"[..], &b"\0"[..]),
                (b"hip-amdgcn-amd-amdhsa--gfx906", b"DEVICE CODE"),
            ] {
                seed.push(id.len() as u8);
                seed.extend_from_slice(id);
                seed.extend_from_slice(&(content.len() as u16).to_le_bytes());
                seed.extend_from_slice(content);
            }
            seed.extend_from_slice(&host);
            (n, seed)
        })
        .collect(),
        "offload_binary_read" => {
            let mut s: Seeds = fixture_tree("packager", 4096)
                .into_iter()
                .filter(|(_, b)| {
                    [
                        &b"\x10\xff\x10\xad"[..],
                        b"\x7fELF",
                        b"!<arch>\n",
                        b"BC\xc0\xde",
                        b"\x64\x86",
                    ]
                    .iter()
                    .any(|m| b.starts_with(m))
                })
                .collect();
            // Many cases share inputs; keep a spread of at most 60.
            let step = s.len().div_ceil(60).max(1);
            s = s.into_iter().step_by(step).collect();
            s.extend(fixture_files("packager/clang-objects", 8192, |_| true));
            s
        }
        "entry_id" => tsv_column("entry_id/standardise.tsv", 0, 40),
        "triple" => tsv_column("triple/normalize.tsv", 0, 60)
            .into_iter()
            .chain(
                [
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
                .map(|(i, t)| (format!("triple-{i}"), t.as_bytes().to_vec())),
            )
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
        "nvidia_lz" => nvidia_streams(offload_format::nvidia::Codec::Lz),
        "nvidia_zstd" => nvidia_streams(offload_format::nvidia::Codec::Zstd),
        "zstd_head" => zstd_heads(),
        // The cubins, PTX and code objects of the fixtures (the packager
        // cases' inputs), and the host object holding images among other
        // data.
        "profile" => fixture_tree("nvidia", 16 << 10)
            .into_iter()
            .chain(fixture_tree("offload", 16 << 10))
            .chain(fixture_tree("packager", 16 << 10))
            .filter(|(n, b)| {
                n.ends_with(".cubin")
                    || n.ends_with(".ptx")
                    || n.ends_with(".co")
                    || n.ends_with("embedded.o")
                    || b.get(18..20) == Some(&[190, 0][..])
                    || b.get(18..20) == Some(&[224, 0][..])
            })
            .collect(),
        // The wheels Python's zipfile made (with and without data
        // descriptors and ZIP64 records).
        "zip_read" => fixture_tree("wheel", 64 << 10)
            .into_iter()
            .filter(|(n, _)| n.ends_with(".whl"))
            .collect(),
        _ => Vec::new(),
    })
}

/// The compressed entries of the nvcc-built fixtures (tests/fixtures/
/// nvidia) stored with `codec`, as the codec targets read them: a kind
/// byte (bit 0: PTX), the recorded decoded size (u32), the stream.
fn nvidia_streams(codec: offload_format::nvidia::Codec) -> Seeds {
    use offload_format::nvidia::fatbin::{self, EntryKind};
    let mut out = Vec::new();
    for (name, file) in fixture_tree("nvidia", 64 << 10) {
        let Some(at) = file
            .windows(4)
            .position(|w| w == 0xBA55_ED50u32.to_le_bytes())
        else {
            continue;
        };
        for c in fatbin::scan(&file[at..]).containers {
            for (i, e) in c.entries.iter().enumerate() {
                if e.codec() != Some(codec) || e.payload.len() > 8192 {
                    continue;
                }
                let mut seed = vec![u8::from(e.kind == EntryKind::Ptx)];
                seed.extend_from_slice(&(e.uncompressed_size as u32).to_le_bytes());
                seed.extend_from_slice(e.payload);
                out.push((format!("{name}-{}-{i}", c.offset), seed));
            }
        }
    }
    out
}

/// `zstd_head` seeds: the zstd streams of the NVIDIA fixtures as they are
/// (form 0), and some fixtures' bytes as content to compress and damage
/// (form 1, no damage), each for a head of 256 bytes.
fn zstd_heads() -> Seeds {
    let mut out: Seeds = nvidia_streams(offload_format::nvidia::Codec::Zstd)
        .into_iter()
        .map(|(name, seed)| {
            let mut s = vec![0, 0, 255, 0];
            s.extend_from_slice(&seed[5..]);
            (format!("stream-{name}"), s)
        })
        .collect();
    for (i, (name, file)) in fixture_tree("nvidia", 16 << 10)
        .into_iter()
        .enumerate()
        .take(12)
    {
        let mut s = vec![1, (i * 7) as u8, 255, 0];
        s.extend_from_slice(&file);
        s.push(0);
        out.push((format!("content-{name}"), s));
    }
    out
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

/// Every file under a fixture area (recursively) of at most `max` bytes,
/// named by its path.
fn fixture_tree(area: &str, max: u64) -> Seeds {
    let mut out = Vec::new();
    let mut stack = vec![fixtures(area)];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if e.metadata().is_ok_and(|m| m.len() <= max) {
                if let Ok(bytes) = std::fs::read(&p) {
                    let rel = p.strip_prefix(fixtures(area)).unwrap_or(&p);
                    let name = rel.to_string_lossy().replace('/', "-");
                    out.push((format!("{area}-{name}"), bytes));
                }
            }
        }
    }
    out
}

/// Up to `max` values of column `col` of a tab-separated fixture table,
/// evenly spread over its rows.
fn tsv_column(path: &str, col: usize, max: usize) -> Seeds {
    let text = std::fs::read_to_string(fixtures("").join(path)).unwrap_or_default();
    let values: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split('\t').nth(col))
        .collect();
    let step = values.len().div_ceil(max.max(1)).max(1);
    values
        .iter()
        .step_by(step)
        .enumerate()
        .map(|(i, v)| {
            (
                format!("{}-{i}", path.replace('/', "-")),
                v.as_bytes().to_vec(),
            )
        })
        .collect()
}
