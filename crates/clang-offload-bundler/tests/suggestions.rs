//! "Did you mean" for mistyped options, against suggestions recorded from
//! clang-offload-bundler-22. Ties between equally close names are decided
//! by LLVM's option-map order, which these cases pin down.

use std::process::Command;

#[test]
fn suggestions_match_llvm_22() {
    let cases = [
        ("-inputx=a", "--inputs=a"),
        ("-outputx=b", "--output=b"),
        ("-tf", "--###"),
        ("-q", "--###"),
        ("-zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", "--help"),
        ("-he-lisp", "--list"),
        ("-heulc=v", "--list=v"),
        ("-verbos", "--verbose"),
        ("-compres", "--compress"),
        ("-tragets=x", "--targets=x"),
        ("-bundle-alig=4", "--bundle-align=4"),
        ("-ype=bc", "--type=bc"),
        ("-xlist", "--list"),
    ];
    for (arg, want) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_clang-offload-bundler"))
            .args(["-type=bc", arg])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{arg}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let expected = format!("clang-offload-bundler: Did you mean '{want}'?\n");
        assert!(stderr.contains(&expected), "{arg}: {stderr}");
    }
}
