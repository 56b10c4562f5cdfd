//! The object-file layer (`offload_format::objfile`) and the sniffer:
//! hostile ELF, COFF, PE and Mach-O files must give typed errors, never a
//! panic or a read outside the file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use offload_format::identify::identify;
use offload_format::objfile::{macho, Object};

fuzz_target!(|data: &[u8]| {
    let _ = identify(data);
    if let Ok(slices) = macho::parse_fat(data) {
        for s in slices {
            assert!(s.offset + s.size <= data.len() as u64);
        }
    }
    let Ok(obj) = Object::parse(data) else {
        return;
    };
    let _ = obj.format();
    for section in obj.sections().flatten() {
        if let Ok(bytes) = section.data() {
            assert!(bytes.len() <= data.len());
        }
    }
    let _ = obj.section_by_name(b".hip_fatbin");
    let _ = obj.address_to_offset(0x1000);
    if let Some(e) = obj.as_elf() {
        if let Ok(phdrs) = e.program_headers() {
            for p in &phdrs {
                let _ = e.segment_data(p);
                if let Ok(notes) = e.segment_notes(p) {
                    notes.take(1000).for_each(drop);
                }
            }
        }
        for i in 0..e.section_headers().len() {
            let _ = e.symbols(i);
            let _ = e.relocations(i);
            if let Ok(notes) = e.section_notes(i) {
                notes.take(1000).for_each(drop);
            }
        }
    }
    if let Some(c) = obj.as_coff() {
        let _ = c.symbols();
        for i in 0..c.section_count() {
            if let Ok(h) = c.section_header(i) {
                let _ = c.relocations(&h);
            }
        }
    }
});
