//! CUDA architectures (`sm_90`, `sm_90a`, `sm_100f`, `compute_90`) and
//! CUDA's rules for which GPU can use which code.
//!
//! An architecture is a number (`90` for compute capability 9.0, `121`
//! for 12.1: the last digit is the minor version) and a variant:
//!
//! - plain (`sm_90`): a cubin runs on every GPU of the same major version
//!   with an equal or higher minor version (`sm_80` on 8.0, 8.6, 8.9);
//!   PTX is compiled by the driver for any GPU of an equal or higher
//!   capability;
//! - architecture-specific, `a` (`sm_90a`): runs only on exactly that
//!   capability, cubin and PTX alike;
//! - family-specific, `f` (`sm_100f`, CUDA 12.9 and later): runs on the
//!   GPUs of the same major version from that minor version up, cubin and
//!   PTX alike.
//!
//! A fat binary entry records the number in its header and the variant in
//! its flags ([`CudaArch::from_entry`]). cuobjdump 13 names an `f` cubin
//! without its suffix (`sm_100`) but an `f` PTX with it (`sm_100f`);
//! [`CudaArch::cuobjdump_name`] spells both as it does.

use std::fmt;

/// The variant of an architecture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Variant {
    /// No suffix: forward compatible (within the major version, for
    /// cubins).
    Plain,
    /// `a`: architecture-specific, only exactly this capability.
    Specific,
    /// `f`: family-specific, this major version from this minor up.
    Family,
}

impl Variant {
    /// The suffix: `""`, `"a"` or `"f"`.
    pub fn suffix(self) -> &'static str {
        match self {
            Variant::Plain => "",
            Variant::Specific => "a",
            Variant::Family => "f",
        }
    }
}

/// Entry flag of an `a` (architecture-specific) entry.
pub const FLAG_ARCH_SPECIFIC: u64 = 0x10_0000;

/// Entry flag of an `f` (family-specific) entry.
pub const FLAG_FAMILY_SPECIFIC: u64 = 0x20_0000;

/// A CUDA architecture: `sm_90a` is number 90, [`Variant::Specific`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CudaArch {
    number: u32,
    variant: Variant,
}

/// Which code a spelling names: `sm_` (a cubin, or the GPU), `compute_`
/// (PTX), or a bare number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Isa {
    /// `sm_NN`: real architecture (cubins; a GPU).
    Real,
    /// `compute_NN`: virtual architecture (PTX).
    Virtual,
    /// `NN`: no prefix.
    Bare,
}

/// Why a spelling is not an architecture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseArchError {
    text: String,
}

impl fmt::Display for ParseArchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "'{}' is not a CUDA architecture (expected sm_NN, compute_NN or NN, \
             optionally followed by 'a' or 'f', as in sm_90a)",
            self.text
        )
    }
}

impl std::error::Error for ParseArchError {}

impl CudaArch {
    /// An architecture from its number (`90`) and variant.
    pub const fn new(number: u32, variant: Variant) -> CudaArch {
        CudaArch { number, variant }
    }

    /// The architecture an entry header records: the number from its arch
    /// field, the variant from its flags.
    pub fn from_entry(number: u32, flags: u64) -> CudaArch {
        let variant = if flags & FLAG_ARCH_SPECIFIC != 0 {
            Variant::Specific
        } else if flags & FLAG_FAMILY_SPECIFIC != 0 {
            Variant::Family
        } else {
            Variant::Plain
        };
        CudaArch { number, variant }
    }

    /// Reads `sm_90a`, `compute_90`, `90`, `100f` (lower case, as nvcc
    /// spells them).
    pub fn parse(text: &str) -> Result<(Isa, CudaArch), ParseArchError> {
        let err = || ParseArchError {
            text: text.to_owned(),
        };
        let (isa, rest) = if let Some(r) = text.strip_prefix("sm_") {
            (Isa::Real, r)
        } else if let Some(r) = text.strip_prefix("compute_") {
            (Isa::Virtual, r)
        } else {
            (Isa::Bare, text)
        };
        let (digits, variant) = match rest.as_bytes().last() {
            Some(b'a') => (&rest[..rest.len() - 1], Variant::Specific),
            Some(b'f') => (&rest[..rest.len() - 1], Variant::Family),
            _ => (rest, Variant::Plain),
        };
        if !(2..=3).contains(&digits.len()) || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(err());
        }
        let number: u32 = digits.parse().map_err(|_| err())?;
        if number < 10 {
            return Err(err());
        }
        Ok((isa, CudaArch { number, variant }))
    }

    /// Whether a GPU of this compute capability exists, or existed (CUDA
    /// 1.0 to 13: `sm_95` does not), with this variant: `a` from 9.0 on,
    /// `f` from 10.0 on.
    pub fn is_known(self) -> bool {
        const NUMBERS: [u32; 31] = [
            10, 11, 12, 13, 20, 21, 30, 32, 35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87,
            88, 89, 90, 100, 101, 103, 110, 120, 121,
        ];
        NUMBERS.contains(&self.number)
            && match self.variant {
                Variant::Plain => true,
                Variant::Specific => self.number >= 90,
                Variant::Family => self.number >= 100,
            }
    }

    /// The number (`90`, `121`).
    pub fn number(self) -> u32 {
        self.number
    }

    /// The variant.
    pub fn variant(self) -> Variant {
        self.variant
    }

    /// The major version of the compute capability (`12` for `sm_121`).
    pub fn major(self) -> u32 {
        self.number / 10
    }

    /// The minor version (`1` for `sm_121`).
    pub fn minor(self) -> u32 {
        self.number % 10
    }

    /// The same number with another variant.
    pub fn with_variant(self, variant: Variant) -> CudaArch {
        CudaArch { variant, ..self }
    }

    /// Whether a cubin built for `self` runs on a GPU of capability
    /// `device` (whose variant is ignored: a GPU is a capability).
    pub fn cubin_runs_on(self, device: CudaArch) -> bool {
        match self.variant {
            Variant::Specific => self.number == device.number,
            Variant::Plain | Variant::Family => {
                self.major() == device.major() && self.minor() <= device.minor()
            }
        }
    }

    /// Whether PTX for `self` (`compute_NN`) can be compiled by the driver
    /// for a GPU of capability `device`.
    pub fn ptx_runs_on(self, device: CudaArch) -> bool {
        match self.variant {
            Variant::Plain => (self.major(), self.minor()) <= (device.major(), device.minor()),
            Variant::Specific => self.number == device.number,
            Variant::Family => self.major() == device.major() && self.minor() <= device.minor(),
        }
    }

    /// `sm_NN` as cuobjdump 13 names an entry of this architecture: the
    /// `a` suffix always; the `f` suffix for PTX only (`ptx`), since it
    /// lists an `f` cubin as plain.
    pub fn cuobjdump_name(self, ptx: bool) -> String {
        let suffix = match self.variant {
            Variant::Family if !ptx => "",
            v => v.suffix(),
        };
        format!("sm_{}{}", self.number, suffix)
    }
}

/// `sm_90a`: the real-architecture spelling, suffix included.
impl fmt::Display for CudaArch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}{}", self.number, self.variant.suffix())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arch(text: &str) -> CudaArch {
        CudaArch::parse(text).unwrap().1
    }

    #[test]
    fn spellings() {
        assert_eq!(
            CudaArch::parse("sm_90a"),
            Ok((Isa::Real, CudaArch::new(90, Variant::Specific)))
        );
        assert_eq!(
            CudaArch::parse("compute_100f"),
            Ok((Isa::Virtual, CudaArch::new(100, Variant::Family)))
        );
        assert_eq!(
            CudaArch::parse("121"),
            Ok((Isa::Bare, CudaArch::new(121, Variant::Plain)))
        );
        for bad in [
            "", "sm_", "sm_9", "sm_1000", "sm_90b", "gfx90a", "sm_9a0", "SM_90", "compute_",
            "sm_09",
        ] {
            assert!(CudaArch::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(arch("sm_121").major(), 12);
        assert_eq!(arch("sm_121").minor(), 1);
        assert_eq!(arch("sm_100f").to_string(), "sm_100f");
    }

    #[test]
    fn from_entry_flags() {
        assert_eq!(CudaArch::from_entry(90, 0x100011), arch("sm_90a"));
        assert_eq!(CudaArch::from_entry(100, 0x1200011), arch("sm_100f"));
        assert_eq!(CudaArch::from_entry(80, 0x8011), arch("sm_80"));
    }

    #[test]
    fn cuda_compatibility_table() {
        for row in test_support::compatibility::cuda_compatibility() {
            let (isa, code) = CudaArch::parse(row.code).unwrap();
            let (_, device) = CudaArch::parse(row.device).unwrap();
            let usable = match isa {
                Isa::Real => code.cubin_runs_on(device),
                Isa::Virtual => code.ptx_runs_on(device),
                Isa::Bare => unreachable!("{row:?}"),
            };
            assert_eq!(usable, row.usable, "{row:?}");
        }
    }

    #[test]
    fn cuobjdump_names() {
        assert_eq!(arch("sm_100f").cuobjdump_name(false), "sm_100");
        assert_eq!(arch("sm_100f").cuobjdump_name(true), "sm_100f");
        assert_eq!(arch("sm_90a").cuobjdump_name(false), "sm_90a");
        assert_eq!(arch("sm_90a").cuobjdump_name(true), "sm_90a");
        assert_eq!(arch("sm_75").cuobjdump_name(true), "sm_75");
    }

    #[test]
    fn known_gpus() {
        for known in [
            "sm_50",
            "sm_52",
            "sm_70",
            "sm_75",
            "sm_80",
            "sm_86",
            "sm_89",
            "sm_90",
            "sm_90a",
            "sm_100",
            "sm_100a",
            "sm_100f",
            "sm_101",
            "sm_103f",
            "sm_110",
            "sm_120",
            "sm_121a",
            "compute_90",
            "90",
        ] {
            assert!(arch_any(known).is_known(), "{known}");
        }
        for unknown in [
            "sm_95",
            "sm_85",
            "sm_99",
            "sm_130",
            "sm_80a",
            "sm_90f",
            "compute_95",
        ] {
            assert!(!arch_any(unknown).is_known(), "{unknown}");
        }
    }

    fn arch_any(text: &str) -> CudaArch {
        CudaArch::parse(text).unwrap().1
    }
}
