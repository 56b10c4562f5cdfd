//! `--add-omp-offload-notes`: adds a `.note.openmp` section with three
//! `LLVMOMPOFFLOAD` notes (image format version, producer, producer version)
//! to ELF device images, by running `llvm-objcopy` as LLVM 14's tool does.
//! Every problem is a warning and leaves the image as it was.

use offload_cli::diag::{os_error_text, Diag};
use offload_cli::error::quoted;
use offload_cli::fsio::Input;
use offload_cli::temp;
use offload_cli::tools::{find_llvm_tool, Beside};
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::process::Command;

/// Note types from LLVM's ELF definitions.
const NT_LLVM_OPENMP_OFFLOAD_VERSION: u32 = 1;
const NT_LLVM_OPENMP_OFFLOAD_PRODUCER: u32 = 2;
const NT_LLVM_OPENMP_OFFLOAD_PRODUCER_VERSION: u32 = 3;

/// Adds notes to images; removes (or, with --save-temps, reports) its
/// temporary files when dropped.
pub struct Notes<'d> {
    diag: &'d Diag,
    save_temps: bool,
    objcopy: Option<PathBuf>,
    temps: Vec<PathBuf>,
}

/// `llvm-objcopy` beside our own executable (the running one, as LLVM 14
/// finds it), else on PATH.
fn find_objcopy() -> Option<PathBuf> {
    find_llvm_tool("llvm-objcopy", Beside::Running)
}

/// The notes section contents for the given byte order.
fn note_section(big_endian: bool) -> Vec<u8> {
    let word = |v: u32| {
        if big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let pad = |v: &mut Vec<u8>| {
        while v.len() % 4 != 0 {
            v.push(0);
        }
    };
    let mut out = Vec::new();
    for (ty, desc) in [
        (NT_LLVM_OPENMP_OFFLOAD_VERSION, &b"1.0"[..]),
        (NT_LLVM_OPENMP_OFFLOAD_PRODUCER, b"LLVM"),
        (NT_LLVM_OPENMP_OFFLOAD_PRODUCER_VERSION, b"14.0.6"),
    ] {
        let name = b"LLVMOMPOFFLOAD\0";
        out.extend_from_slice(&word(name.len() as u32));
        out.extend_from_slice(&word(desc.len() as u32));
        out.extend_from_slice(&word(ty));
        out.extend_from_slice(name);
        pad(&mut out);
        out.extend_from_slice(desc);
        pad(&mut out);
    }
    out
}

/// The byte order of an ELF image, or `None` when `data` is not ELF.
fn elf_big_endian(data: &[u8]) -> Option<bool> {
    if data.len() < 16 || &data[..4] != b"\x7fELF" {
        return None;
    }
    let header_size = match data[4] {
        1 => 52,
        2 => 64,
        _ => return None,
    };
    if data.len() < header_size {
        return None;
    }
    match data[5] {
        1 => Some(false),
        2 => Some(true),
        _ => None,
    }
}

/// A fresh name `<base><7 hex digits>.tmp`, created empty.
fn temp_beside(base: &OsStr) -> std::io::Result<PathBuf> {
    temp::create_unique(7, 0o666, |random| {
        let mut name = base.to_os_string();
        name.push(random);
        name.push(".tmp");
        PathBuf::from(name)
    })
    .map(|(_, path)| path)
    .map_err(|(_, e)| e)
}

impl<'d> Notes<'d> {
    /// Looks for llvm-objcopy; without it, warns once and adds nothing.
    pub fn new(diag: &'d Diag, save_temps: bool) -> Notes<'d> {
        let objcopy = find_objcopy();
        if objcopy.is_none() {
            diag.warning("cannot find llvm-objcopy[.exe] in PATH; ELF notes cannot be added.");
        }
        Notes {
            diag,
            save_temps,
            objcopy,
            temps: Vec::new(),
        }
    }

    fn warn_file(&self, file: &OsStr, e: &std::io::Error) {
        self.diag
            .warning(quoted(file.as_bytes(), os_error_text(e).as_bytes()));
    }

    /// Returns `data` with the notes added, or unchanged after a warning.
    pub fn add(&mut self, input: &OsStr, data: Input) -> Input {
        let Some(objcopy) = self.objcopy.clone() else {
            return data;
        };
        let Some(big_endian) = elf_big_endian(&data) else {
            let mut m = input.as_bytes().to_vec();
            m.extend_from_slice(b" is not an ELF image, so notes cannot be added to it.");
            self.diag.warning(m);
            return data;
        };
        let mut notes_base = input.to_os_string();
        notes_base.push(".elfnotes.");
        let notes_path = match temp_beside(&notes_base) {
            Ok(p) => p,
            Err(e) => {
                self.warn_file(&notes_base, &e);
                return data;
            }
        };
        self.temps.push(notes_path.clone());
        let mut elf_base = input.to_os_string();
        elf_base.push(".elfwithnotes.");
        let elf_path = match temp_beside(&elf_base) {
            Ok(p) => p,
            Err(e) => {
                self.warn_file(&elf_base, &e);
                return data;
            }
        };
        self.temps.push(elf_path.clone());
        let written = fs::OpenOptions::new()
            .write(true)
            .open(&notes_path)
            .and_then(|mut f| f.write_all(&note_section(big_endian)));
        if let Err(e) = written {
            self.warn_file(notes_path.as_os_str(), &e);
            return data;
        }
        let mut section = OsString::from("--add-section=.note.openmp=");
        section.push(&notes_path);
        match Command::new(&objcopy)
            .arg(section)
            .arg(input)
            .arg(&elf_path)
            .status()
        {
            Err(e) => {
                self.diag.warning(os_error_text(&e));
                return data;
            }
            // LLVM would go on and embed whatever llvm-objcopy left behind
            // (usually nothing); keep the original image instead.
            Ok(s) if !s.success() => {
                let mut m = b"llvm-objcopy failed to add notes to ".to_vec();
                m.extend_from_slice(input.as_bytes());
                m.extend_from_slice(b"; the image is used unchanged.");
                self.diag.warning(m);
                return data;
            }
            Ok(_) => {}
        }
        match fs::read(&elf_path) {
            Ok(with_notes) => with_notes.into(),
            Err(e) => {
                self.warn_file(elf_path.as_os_str(), &e);
                data
            }
        }
    }
}

impl Drop for Notes<'_> {
    fn drop(&mut self) {
        for t in &self.temps {
            if self.save_temps {
                let mut m = b"keeping temporary file ".to_vec();
                m.extend_from_slice(t.as_os_str().as_bytes());
                self.diag.warning(m);
                continue;
            }
            if let Err(e) = fs::remove_file(t) {
                let mut m = b"cannot remove temporary file ".to_vec();
                m.extend_from_slice(t.as_os_str().as_bytes());
                m.extend_from_slice(b": ");
                m.extend_from_slice(os_error_text(&e).as_bytes());
                self.diag.warning(m);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn note_layout_matches_llvm_14() {
        // Bytes observed in the notes file LLVM 14's tool hands llvm-objcopy.
        let want: &[u8] = b"\x0f\0\0\0\x03\0\0\0\x01\0\0\0LLVMOMPOFFLOAD\0\0\x31.0\0\
            \x0f\0\0\0\x04\0\0\0\x02\0\0\0LLVMOMPOFFLOAD\0\0LLVM\
            \x0f\0\0\0\x06\0\0\0\x03\0\0\0LLVMOMPOFFLOAD\0\x0014.0.6\0\0";
        assert_eq!(note_section(false), want);
        assert_eq!(&note_section(true)[..4], &[0, 0, 0, 0x0f]);
    }

    #[test]
    fn elf_detection() {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = 2;
        h[5] = 1;
        assert_eq!(elf_big_endian(&h), Some(false));
        h[5] = 2;
        assert_eq!(elf_big_endian(&h), Some(true));
        assert_eq!(elf_big_endian(&h[..40]), None);
        h[0] = 0;
        assert_eq!(elf_big_endian(&h), None);
    }
}
