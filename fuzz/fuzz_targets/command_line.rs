//! LLVM-style command lines (`offload_cli::cl`) on arbitrary arguments,
//! under LLVM 22 and LLVM 14 rules: every option kind the tools use
//! (booleans with and without `=value`, `uint` and `int` in any radix,
//! comma lists, repeated options, choices, required options, positionals,
//! "Did you mean" suggestions). Each command line is parsed or refused
//! with a message, never a panic.
//!
//! Response files (`@file`) are not expanded here: the fuzzer would read
//! files of the machine; their tokenizer has a target of its own.
#![no_main]

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use offload_cli::cl::parse_to;
use offload_cli::cl::table::{
    choice, flag, int, string, uint, Build, Dialect, Manual, Opt, Tool, HELP, VERSION,
};

/// The option kinds of the tools' own tables.
const OPTIONS: &[Opt] = &[
    HELP.rank(0),
    string("type", "string", "").required().rank(1),
    string("targets", "string", "").comma().rank(2),
    string("input", "string", "").multi().rank(3),
    string("o", "file", "").rank(4),
    choice("kind", &[("openmp", ""), ("cuda", ""), ("hip", "")], "").rank(5),
    flag("unbundle", "").rank(6),
    flag("###", "").rank(7),
    uint("bundle-align", "uint", "").rank(8),
    flag("compress", "").rank(9),
    int("compression-level", "n", "").rank(10),
    VERSION.rank(11),
    flag("h", "").never_shown(),
];

const fn tool(dialect: Dialect) -> Tool {
    Tool {
        name: "tool",
        overview: "fuzz",
        positional: Some(offload_cli::cl::table::Positional {
            help: "<file>",
            min: 0,
            max: None,
        }),
        options: OPTIONS,
        build: Build {
            version: "fuzz version\n",
            dialect,
            empty_categories: &[],
        },
        manual: Manual {
            summary: "",
            description: "",
            see_also: &[],
            environment: &[],
        },
    }
}

static LLVM22: Tool = tool(Dialect::Llvm22);
static LLVM14: Tool = tool(Dialect::Llvm14);

#[derive(Arbitrary, Debug)]
struct Input {
    llvm14: bool,
    args: Vec<Vec<u8>>,
}

fuzz_target!(|input: Input| {
    let tool = if input.llvm14 { &LLVM14 } else { &LLVM22 };
    let mut argv = vec![OsString::from("tool")];
    for mut a in input.args {
        if a.first() == Some(&b'@') {
            a[0] = b'-';
        }
        argv.push(OsString::from_vec(a));
    }
    let (mut out, mut err) = (Vec::new(), Vec::new());
    match parse_to(tool, argv, &mut out, &mut err) {
        Ok(_) => {}
        // Refused, or help / version printed: something was said.
        Err(_) => assert!(
            !out.is_empty() || !err.is_empty(),
            "a command line refused without a message"
        ),
    }
});
