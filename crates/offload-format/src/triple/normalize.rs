//! `Triple::normalize`: LLVM's canonical spelling of a triple.

use super::names::{parse_arch, parse_environment, parse_object_format, parse_os, parse_vendor};
use super::{Arch, Environment, ObjectFormat, Os, Vendor};

/// How many components the normalised triple must have
/// (`llvm::Triple::CanonicalForm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CanonicalForm {
    /// Keep however many components normalisation produced.
    Any,
    /// `arch-vendor-os`: extra components dropped, missing ones `unknown`.
    ThreeIdent,
    /// `arch-vendor-os-environment`.
    FourIdent,
    /// `arch-vendor-os-environment-format`.
    FiveIdent,
}

impl CanonicalForm {
    fn width(self) -> Option<usize> {
        match self {
            CanonicalForm::Any => None,
            CanonicalForm::ThreeIdent => Some(3),
            CanonicalForm::FourIdent => Some(4),
            CanonicalForm::FiveIdent => Some(5),
        }
    }
}

/// Why [`normalize`] could not produce a triple. LLVM reports these as
/// fatal errors (`LLVM ERROR: <message>`, exit status 1).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NormalizeError {
    /// A `dxil` triple whose OS is `shadermodel6.N` with a minor version
    /// LLVM 22 has no DXIL version for (N > 9).
    UnsupportedShaderModel,
}

impl std::fmt::Display for NormalizeError {
    /// The text LLVM prints after `LLVM ERROR: `.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NormalizeError::UnsupportedShaderModel => {
                f.write_str("Unsupported Shader Model version")
            }
        }
    }
}

impl std::error::Error for NormalizeError {}

/// Normalises a triple the way LLVM 22's `Triple::normalize` does.
///
/// Components that parse as the architecture, vendor, OS or environment
/// (or object format) are moved to their positions; components already in
/// the right place stay put; empty components become `unknown`. Then the
/// special spellings are rewritten: `mingw32`/`cygwin`/`msys` and `win32`
/// become `windows-gnu`/`windows-cygnus`/`windows-msvc`, `androideabi`
/// becomes `android`, SUSE's `gnueabi` becomes `gnueabihf`, and a `dxil`
/// architecture gets its version from a `shadermodel` OS. Finally the result
/// is padded with `unknown` or cut to the requested [`CanonicalForm`].
///
/// ```
/// use offload_format::triple::{normalize, CanonicalForm};
///
/// assert_eq!(normalize("i686-linux", CanonicalForm::Any).unwrap(), "i686-unknown-linux");
/// assert_eq!(normalize("amdgcn-amd-amdhsa-gnu", CanonicalForm::ThreeIdent).unwrap(), "amdgcn-amd-amdhsa");
/// assert_eq!(normalize("x86_64-pc-win32", CanonicalForm::Any).unwrap(), "x86_64-pc-windows-msvc");
/// assert_eq!(normalize("linux-x86_64", CanonicalForm::Any).unwrap(), "x86_64-unknown-linux");
/// ```
pub fn normalize(text: &str, form: CanonicalForm) -> Result<String, NormalizeError> {
    let mut comps: Vec<String> = text.split('-').map(str::to_owned).collect();

    // Parsed values; the search below overwrites them as it tries
    // components, exactly as LLVM does, so the special cases at the end see
    // the same values LLVM's do.
    let mut arch = parse_arch(&comps[0]);
    let mut vendor = comps.get(1).map_or(Vendor::Unknown, |c| parse_vendor(c));
    let mut os = Os::Unknown;
    let mut is_cygwin = false;
    let mut is_mingw = false;
    if let Some(c) = comps.get(2) {
        os = parse_os(c);
        is_cygwin = c.starts_with("cygwin") || c.starts_with("msys");
        is_mingw = c.starts_with("mingw");
    }
    let mut env = comps
        .get(3)
        .map_or(Environment::Unknown, |c| parse_environment(c));
    let mut format = comps
        .get(4)
        .map_or(ObjectFormat::Unknown, |c| parse_object_format(c));

    // Components already recognised at their own position never move.
    let mut fixed = [
        arch != Arch::Unknown,
        vendor != Vendor::Unknown,
        os != Os::Unknown,
        env != Environment::Unknown,
    ];
    let is_fixed = |fixed: &[bool; 4], i: usize| i < 4 && fixed[i];

    for pos in 0..4 {
        if fixed[pos] {
            continue;
        }
        let mut idx = 0;
        while idx < comps.len() {
            if is_fixed(&fixed, idx) {
                idx += 1;
                continue;
            }
            let comp = comps[idx].clone();
            let valid = match pos {
                0 => {
                    arch = parse_arch(&comp);
                    arch != Arch::Unknown
                }
                1 => {
                    vendor = parse_vendor(&comp);
                    vendor != Vendor::Unknown
                }
                2 => {
                    os = parse_os(&comp);
                    is_cygwin = comp.starts_with("cygwin") || comp.starts_with("msys");
                    is_mingw = comp.starts_with("mingw");
                    os != Os::Unknown || is_cygwin || is_mingw
                }
                _ => {
                    env = parse_environment(&comp);
                    if env != Environment::Unknown {
                        true
                    } else {
                        format = parse_object_format(&comp);
                        format != ObjectFormat::Unknown
                    }
                }
            };
            if !valid {
                idx += 1;
                continue;
            }

            if pos < idx {
                // Move left: take the component out and shift the movable
                // components from `pos` rightwards until the hole is filled
                // (a-b-i386 -> i386-a-b).
                let mut carried = std::mem::take(&mut comps[idx]);
                let mut i = pos;
                while !carried.is_empty() {
                    while is_fixed(&fixed, i) {
                        i += 1;
                    }
                    let Some(slot) = comps.get_mut(i) else { break };
                    std::mem::swap(&mut carried, slot);
                    i += 1;
                }
            } else if pos > idx {
                // Move right: insert empty components in front of it until it
                // reaches `pos` (pc-a -> -pc-a), pushing movable components
                // along and off the end.
                loop {
                    let mut carried = String::new();
                    let mut i = idx;
                    while i < comps.len() {
                        std::mem::swap(&mut carried, &mut comps[i]);
                        if carried.is_empty() {
                            break;
                        }
                        i += 1;
                        while is_fixed(&fixed, i) {
                            i += 1;
                        }
                    }
                    if !carried.is_empty() {
                        comps.push(carried);
                    }
                    idx += 1;
                    while is_fixed(&fixed, idx) {
                        idx += 1;
                    }
                    if idx >= pos {
                        break;
                    }
                }
            }
            fixed[pos] = true;
            break;
        }
    }

    // "arch-none-env": `none` is the OS, not the vendor.
    if fixed[0] && !fixed[1] && !fixed[2] && fixed[3] && comps[1] == "none" && comps[2].is_empty() {
        comps.swap(1, 2);
    }

    for c in comps.iter_mut() {
        if c.is_empty() {
            *c = "unknown".to_owned();
        }
    }

    if env == Environment::Android {
        if let Some(c) = comps.get_mut(3) {
            if let Some(version) = c.strip_prefix("androideabi") {
                *c = format!("android{version}");
            }
        }
    }

    // SUSE spells the hard-float ABI `gnueabi`.
    if vendor == Vendor::Suse && env == Environment::GnuEabi {
        if let Some(c) = comps.get_mut(3) {
            *c = "gnueabihf".to_owned();
        }
    }

    if os == Os::Win32 {
        comps.resize(4, String::new());
        comps[2] = "windows".to_owned();
        if env == Environment::Unknown {
            comps[3] = if matches!(format, ObjectFormat::Unknown | ObjectFormat::Coff) {
                "msvc".to_owned()
            } else {
                format.name().to_owned()
            };
        }
    } else if is_mingw {
        comps.resize(4, String::new());
        comps[2] = "windows".to_owned();
        comps[3] = "gnu".to_owned();
    } else if is_cygwin {
        comps.resize(4, String::new());
        comps[2] = "windows".to_owned();
        comps[3] = "cygnus".to_owned();
    }
    if (is_mingw || is_cygwin || (os == Os::Win32 && env != Environment::Unknown))
        && !matches!(format, ObjectFormat::Unknown | ObjectFormat::Coff)
    {
        comps.resize(5, String::new());
        comps[4] = format.name().to_owned();
    }

    if comps[0] == "dxil" {
        comps.truncate(4);
        if os == Os::ShaderModel {
            if let Some(os_text) = comps.get(2) {
                comps[0] = dxil_arch_for_shader_model(os_text)?.to_owned();
            }
        }
    }

    if let Some(width) = form.width() {
        comps.resize(width, "unknown".to_owned());
    }
    Ok(comps.join("-"))
}

/// The versioned `dxil` spelling implied by a `shadermodelX.Y` OS
/// component: Shader Model 6.Y maps to DXIL 1.Y; other versions to 1.0;
/// `shadermodel6.x` to the newest DXIL version.
fn dxil_arch_for_shader_model(os_text: &str) -> Result<&'static str, NormalizeError> {
    const DXIL: [&str; 10] = [
        "dxilv1.0", "dxilv1.1", "dxilv1.2", "dxilv1.3", "dxilv1.4", "dxilv1.5", "dxilv1.6",
        "dxilv1.7", "dxilv1.8", "dxilv1.9",
    ];
    let version = Version::parse(os_text.get("shadermodel".len()..).unwrap_or(""));
    if !version.is_empty() {
        if version.major == 6 {
            if let Some(minor) = version.minor {
                return usize::try_from(minor)
                    .ok()
                    .and_then(|m| DXIL.get(m).copied())
                    .ok_or(NormalizeError::UnsupportedShaderModel);
            }
        }
    } else if os_text == "shadermodel6.x" {
        return Ok(DXIL[9]);
    }
    Ok(DXIL[0])
}

/// A `major[.minor[.subminor[.build]]]` version with LLVM `VersionTuple`
/// storage: 32-bit wrapping arithmetic, 31-bit minor/subminor fields.
/// Unparseable text gives the empty version, as in LLVM.
#[derive(Default)]
struct Version {
    major: u32,
    minor: Option<u32>,
    subminor: u32,
}

impl Version {
    fn parse(text: &str) -> Version {
        let mut numbers = [0u32; 4];
        let mut count = 0;
        let mut rest = text.as_bytes();
        loop {
            let Some((&first, tail)) = rest.split_first() else {
                return Version::default();
            };
            if !first.is_ascii_digit() {
                return Version::default();
            }
            let mut value = u32::from(first - b'0');
            rest = tail;
            while let Some((&d, tail)) = rest.split_first() {
                if !d.is_ascii_digit() {
                    break;
                }
                value = value.wrapping_mul(10).wrapping_add(u32::from(d - b'0'));
                rest = tail;
            }
            numbers[count] = value;
            count += 1;
            match rest.split_first() {
                None => break,
                Some((b'.', tail)) if count < 4 => rest = tail,
                Some(_) => return Version::default(),
            }
        }
        const LOW31: u32 = 0x7fff_ffff;
        Version {
            major: numbers[0],
            minor: (count >= 2).then_some(numbers[1] & LOW31),
            // The build number is dropped (LLVM keeps three components).
            subminor: if count >= 3 { numbers[2] & LOW31 } else { 0 },
        }
    }

    fn is_empty(&self) -> bool {
        self.major == 0 && self.minor.unwrap_or(0) == 0 && self.subminor == 0
    }
}
