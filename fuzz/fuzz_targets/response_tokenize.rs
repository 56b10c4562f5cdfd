//! The GNU response-file tokenizer: never panics, never yields an empty
//! token, and reads back any token list quoted the GNU way.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use offload_cli::tokenize_gnu;

#[derive(Arbitrary, Debug)]
enum Input {
    Raw(Vec<u8>),
    Tokens(Vec<Vec<u8>>, bool),
}

fuzz_target!(|input: Input| match input {
    Input::Raw(bytes) => {
        let tokens = tokenize_gnu(&bytes);
        assert!(tokens.iter().all(|t| !t.is_empty()));
        let total: usize = tokens.iter().map(Vec::len).sum();
        assert!(total <= bytes.len(), "tokens longer than their source");
    }
    Input::Tokens(tokens, double) => {
        let tokens: Vec<Vec<u8>> = tokens.into_iter().filter(|t| !t.is_empty()).collect();
        let quote = if double { b'"' } else { b'\'' };
        let mut text = Vec::new();
        for t in &tokens {
            text.push(quote);
            for &b in t {
                if b == b'\\' || b == quote {
                    text.push(b'\\');
                }
                text.push(b);
            }
            text.push(quote);
            text.push(b' ');
        }
        assert_eq!(tokenize_gnu(&text), tokens);
    }
});
