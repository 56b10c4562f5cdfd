//! A small, strict LLVM bitstream reader for tests: decodes every block and
//! record (abbreviated or not) and checks block lengths, so our writer's
//! output can be inspected without LLVM.

#![allow(dead_code)]

// The operand kinds are the library's (a plain list of LLVM's encodings);
// everything that reads them is this file's own.
use offload_format::bitcode::bitstream::AbbrevOp as Op;

#[derive(Debug, Clone, Default)]
pub struct Record {
    pub code: u64,
    pub ops: Vec<u64>,
    pub blob: Option<Vec<u8>>,
    pub abbreviated: bool,
}

#[derive(Debug, Clone, Default)]
pub struct Block {
    pub id: u64,
    pub records: Vec<Record>,
    pub blocks: Vec<Block>,
}

impl Block {
    pub fn block(&self, id: u64) -> &Block {
        self.blocks
            .iter()
            .find(|b| b.id == id)
            .unwrap_or_else(|| panic!("no block {id} in block {}", self.id))
    }
    pub fn blocks(&self, id: u64) -> impl Iterator<Item = &Block> {
        self.blocks.iter().filter(move |b| b.id == id)
    }
    pub fn records(&self, code: u64) -> impl Iterator<Item = &Record> {
        self.records.iter().filter(move |r| r.code == code)
    }
}

struct Reader<'a> {
    data: &'a [u8],
    bit: usize,
}

impl Reader<'_> {
    fn read(&mut self, width: u32) -> u64 {
        let mut v = 0u64;
        for i in 0..width {
            let byte = *self
                .data
                .get(self.bit / 8)
                .unwrap_or_else(|| panic!("read past the end at bit {}", self.bit));
            let b = (byte >> (self.bit % 8)) & 1;
            v |= (b as u64) << i;
            self.bit += 1;
        }
        v
    }
    fn vbr(&mut self, width: u32) -> u64 {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let piece = self.read(width);
            v |= (piece & ((1 << (width - 1)) - 1)) << shift;
            if piece & (1 << (width - 1)) == 0 {
                return v;
            }
            shift += width - 1;
            assert!(shift < 64, "VBR too long");
        }
    }
    fn align32(&mut self) {
        self.bit = self.bit.div_ceil(32) * 32;
    }
    fn scalar(&mut self, op: &Op) -> u64 {
        match op {
            Op::Literal(v) => *v,
            Op::Fixed(w) => self.read(*w),
            Op::Vbr(w) => self.vbr(*w),
            Op::Char6 => {
                let c = self.read(6) as u8;
                (match c {
                    0..=25 => b'a' + c,
                    26..=51 => b'A' + c - 26,
                    52..=61 => b'0' + c - 52,
                    62 => b'.',
                    _ => b'_',
                }) as u64
            }
            Op::Array | Op::Blob => panic!("not a scalar operand"),
        }
    }
}

/// Parses a bitcode file (optionally inside the Darwin wrapper) into its
/// top-level blocks.
pub fn parse(file: &[u8]) -> Vec<Block> {
    let data = if file.starts_with(&[0xDE, 0xC0, 0x17, 0x0B]) {
        let off = u32::from_le_bytes(file[8..12].try_into().unwrap()) as usize;
        let size = u32::from_le_bytes(file[12..16].try_into().unwrap()) as usize;
        &file[off..off + size]
    } else {
        file
    };
    assert_eq!(&data[..4], b"BC\xC0\xDE", "bitcode magic");
    assert_eq!(data.len() % 4, 0, "whole words");
    let mut r = Reader { data, bit: 32 };
    let mut top = Vec::new();
    while r.bit < data.len() * 8 {
        let id = r.read(2);
        assert_eq!(id, 1, "only blocks at the top level");
        top.push(block(&mut r));
    }
    top
}

/// Reads a block after its ENTER_SUBBLOCK abbreviation id.
fn block(r: &mut Reader<'_>) -> Block {
    let id = r.vbr(8);
    let width = r.vbr(4) as u32;
    r.align32();
    let words = r.read(32) as usize;
    let end = r.bit + words * 32;
    let mut b = Block {
        id,
        ..Block::default()
    };
    let mut abbrevs: Vec<Vec<Op>> = Vec::new();
    loop {
        let abbrev = r.read(width);
        match abbrev {
            0 => {
                r.align32();
                assert_eq!(r.bit, end, "block {id}: length word matches");
                return b;
            }
            1 => b.blocks.push(block(r)),
            2 => {
                let n = r.vbr(5);
                let mut ops = Vec::new();
                for _ in 0..n {
                    if r.read(1) == 1 {
                        ops.push(Op::Literal(r.vbr(8)));
                    } else {
                        ops.push(match r.read(3) {
                            1 => Op::Fixed(r.vbr(5) as u32),
                            2 => Op::Vbr(r.vbr(5) as u32),
                            3 => Op::Array,
                            4 => Op::Char6,
                            5 => Op::Blob,
                            e => panic!("bad encoding {e}"),
                        });
                    }
                }
                abbrevs.push(ops);
            }
            3 => {
                let code = r.vbr(6);
                let n = r.vbr(6);
                let ops = (0..n).map(|_| r.vbr(6)).collect();
                b.records.push(Record {
                    code,
                    ops,
                    blob: None,
                    abbreviated: false,
                });
            }
            a => {
                let ops = abbrevs
                    .get(a as usize - 4)
                    .unwrap_or_else(|| panic!("undefined abbreviation {a}"))
                    .clone();
                let mut values = Vec::new();
                let mut blob = None;
                let mut i = 0;
                while i < ops.len() {
                    match &ops[i] {
                        Op::Array => {
                            let elt = ops[i + 1];
                            let n = r.vbr(6);
                            for _ in 0..n {
                                values.push(r.scalar(&elt));
                            }
                            i += 2;
                            continue;
                        }
                        Op::Blob => {
                            let n = r.vbr(6) as usize;
                            r.align32();
                            let start = r.bit / 8;
                            blob = Some(r.data[start..start + n].to_vec());
                            r.bit += n * 8;
                            r.align32();
                        }
                        op => values.push(r.scalar(op)),
                    }
                    i += 1;
                }
                let code = values.remove(0);
                b.records.push(Record {
                    code,
                    ops: values,
                    blob,
                    abbreviated: true,
                });
            }
        }
    }
}
