//! Bitcode reading: the top-level layout, embedded offload objects, IR
//! symbol tables and module records of hostile bitstreams; the one-read
//! symbols-and-module-asm call must agree with the two separate reads.
#![no_main]

use libfuzzer_sys::fuzz_target;
use offload_format::bitcode::{
    archive_symbols, archive_symbols_and_module_asm, bitstream_bytes, embedded_objects,
    has_module_asm, is_bitcode, module_archive_symbols, BitcodeFile,
};

fuzz_target!(|data: &[u8]| {
    let _ = is_bitcode(data);
    if let Ok(stream) = bitstream_bytes(data) {
        assert!(stream.len() <= data.len());
    }
    let Ok(file) = BitcodeFile::parse(data) else {
        return;
    };
    for module in &file.modules {
        assert!(module.bit / 8 < file.stream.len() as u64);
    }
    let _ = file.last_strtab();
    if let Ok(objects) = embedded_objects(data) {
        let total: usize = objects.iter().map(Vec::len).sum();
        assert!(total <= data.len(), "embedded objects larger than the file");
    }
    let symbols = archive_symbols(data);
    let _ = module_archive_symbols(data);
    let module_asm = has_module_asm(data);
    match (archive_symbols_and_module_asm(data), symbols) {
        (Ok(facts), Ok(symbols)) => {
            assert_eq!(facts.symbols, symbols);
            assert_eq!(facts.module_asm, module_asm.unwrap_or(false));
        }
        (Err(one), Err(separate)) => assert_eq!(one, separate),
        (one, separate) => panic!("one read: {one:?}, separate: {separate:?}"),
    }
});
