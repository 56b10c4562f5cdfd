//! Extraction never panics, whatever is wrong with an object, archive or
//! bitcode file: every truncation and many byte changes of real clang-22
//! outputs (`tests/fixtures/packager/clang-objects`) are tried.

use offload_format::offload_binary::extract::extract;

fn inputs() -> Vec<(String, Vec<u8>)> {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/packager/clang-objects"
    );
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .expect("clang objects present")
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn real_objects_extract() {
    for (name, data) in inputs() {
        let found = extract(&data, name.as_bytes()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!found.is_empty(), "{name}: no images");
        for f in &found {
            assert!(!f.binary.triple().is_empty(), "{name}");
            assert_eq!(f.source, name.as_bytes());
        }
    }
}

#[test]
fn damaged_objects_do_not_panic() {
    for (name, data) in inputs() {
        for cut in (0..data.len()).step_by(17) {
            let _ = extract(&data[..cut], name.as_bytes());
        }
        // Headers and section tables live in the first and last few hundred
        // bytes; change every byte there in a few ways.
        let n = data.len();
        let spots: Vec<usize> = (0..n.min(256)).chain(n.saturating_sub(512)..n).collect();
        for &i in &spots {
            for x in [0x01u8, 0xff] {
                let mut d = data.clone();
                d[i] ^= x;
                let _ = extract(&d, name.as_bytes());
            }
        }
    }
}
