//! What LLVM 22 prints where the llvm-objcopy it runs refuses a host
//! object: llvm-objcopy's own line, naming the file its failing phase had,
//! then the bundler's `'llvm-objcopy' tool failed`. Used by `-type=o`
//! unbundling (`run`) and by `-type=a` host members (`archive`).

use std::ffi::OsStr;

use offload_cli::diag::Diag;
use offload_cli::error::quoted;
use offload_format::object_bundle;

use crate::job::Fail;

/// Where llvm-objcopy 22 refuses to remove the bundle sections of a host
/// (`e`), what LLVM 22 prints: llvm-objcopy's line, naming `input` or
/// `output` (the files it was given) as its failing phase does, printed
/// here, then the bundler's `'llvm-objcopy' tool failed`, returned, whose
/// explanation names the host as `shown`. `None` where the message is ours.
pub(crate) fn refusal(
    e: &object_bundle::Error,
    input: &[u8],
    output: &[u8],
    shown: &[u8],
) -> Option<Fail> {
    let reason = e.to_string().into_bytes();
    let message = match objcopy_names(e)? {
        Names::Nothing => reason.clone(),
        Names::Input => quoted(input, &reason),
        Names::Output => quoted(output, &reason),
    };
    Some(objcopy_failed(&message, &reason, shown))
}

/// The file llvm-objcopy 22 names in its message.
enum Names {
    /// None: its ELF reader's errors.
    Nothing,
    /// The input, as given: errors removing ELF sections, and its COFF
    /// reader's errors.
    Input,
    /// The output it was writing (the bundler's temporary file): its COFF
    /// writer's errors.
    Output,
}

/// How llvm-objcopy 22 reports `e` when it removes the bundle sections of
/// a host, or `None` where it does not fail cleanly (it reads past its
/// buffer) or never meets the problem: then the message is ours.
fn objcopy_names(e: &object_bundle::Error) -> Option<Names> {
    use object_bundle::{CoffError as C, ElfError as E, Error};
    Some(match e {
        Error::Elf(
            E::StringTableInUse { .. }
            | E::SymbolTableInUse { .. }
            | E::RelocationAgainstRemoved { .. }
            | E::LinkedSectionRemoved { .. }
            | E::GroupSymbolRemoved { .. }
            | E::SectionNamesRemoved,
        ) => Names::Input,
        Error::Elf(_) => Names::Nothing,
        Error::Coff(C::RelocationsPastEnd | C::SymIdxPartialEntry(_) | C::ImportLibraryHeader) => {
            return None
        }
        Error::Coff(
            C::RelocationTargetMissing { .. }
            | C::SymbolInRemovedSection(_)
            | C::AssociativeToRemoved(_)
            | C::WeakTargetMissing(_)
            | C::StringTableTooLarge
            | C::SymIdxWithoutSymbol(_)
            | C::SymIdxStale { .. },
        ) => Names::Output,
        Error::Coff(_) => Names::Input,
        _ => return None,
    })
}

/// What LLVM 22 prints when the llvm-objcopy it runs fails with `message`:
/// llvm-objcopy's own `llvm-objcopy: error: <message>` (printed here), then
/// the bundler's `'llvm-objcopy' tool failed` (the returned error), whose
/// explanation says what failed (`reason`, the problem without the file).
fn objcopy_failed(message: &[u8], reason: &[u8], input: &[u8]) -> Fail {
    Diag::new(OsStr::new("llvm-objcopy")).error(message);
    let mut why = b"llvm-objcopy cannot rewrite the host object of '".to_vec();
    why.extend_from_slice(input);
    why.extend_from_slice(b"' without its bundle sections: ");
    why.extend_from_slice(reason);
    Fail::msg("'llvm-objcopy' tool failed").explained(why)
}
