//! AMDGPU target IDs on arbitrary text: parsing, the canonical spelling
//! (which must parse back to itself), compatibility and conflict checks.
#![no_main]

use libfuzzer_sys::fuzz_target;
use offload_format::target_id::{find_conflict, TargetId};
use offload_format::triple::Triple;

fuzz_target!(|input: (&str, &str, Vec<&str>)| {
    let (text, triple, list) = input;
    let _ = TargetId::parse_syntax(text);
    let triple = Triple::new(triple);
    if let Ok(id) = TargetId::parse(text, &triple) {
        let canonical = id.canonical();
        let again = TargetId::parse(&canonical, &triple).expect("a canonical ID parses");
        assert_eq!(
            again.canonical(),
            canonical,
            "canonical form of {text:?} is not stable"
        );
        assert!(
            id.is_compatible_code_object(&id),
            "{text:?} incompatible with itself"
        );
        let _ = id.feature("xnack");
    }
    if let Some((x, y)) = find_conflict(list.iter().copied()) {
        assert!(list.contains(&x) && list.contains(&y));
    }
});
