//! Finding the other LLVM tools a tool would run (`llvm-objcopy`), the way
//! LLVM's `sys::findProgramByName` does: first in the tool's own directory,
//! then in each directory of `PATH`, taking the first executable regular
//! file of that name. The path is returned as found, not made canonical.

use std::path::{Path, PathBuf};

use crate::env;

/// Which executable's directory is searched first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Beside {
    /// `argv[0]` when it names an existing file, else the running
    /// executable: LLVM 22's bundler.
    Invoked,
    /// The running executable (`/proc/self/exe`): LLVM 14's
    /// `clang-offload-wrapper`.
    Running,
}

/// The executable whose directory is searched first.
pub fn executable(beside: Beside) -> Option<PathBuf> {
    if beside == Beside::Invoked {
        let argv0 = Path::new(env::get().argv0());
        if !argv0.as_os_str().is_empty() && argv0.exists() {
            return Some(argv0.to_path_buf());
        }
    }
    std::env::current_exe().ok()
}

/// `name` beside the executable chosen by `beside`, else on `PATH`.
pub fn find_llvm_tool(name: &str, beside: Beside) -> Option<PathBuf> {
    let own = executable(beside)
        .as_deref()
        .and_then(Path::parent)
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| d.join(name));
    own.into_iter()
        .chain(env::get().path_dirs().into_iter().map(|d| d.join(name)))
        .find(|p| can_execute(p))
}

/// LLVM's `sys::fs::can_execute`: an executable regular file.
fn can_execute(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
