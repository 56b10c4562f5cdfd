//! Which stored code object a requested target takes: the examples of
//! part B8 of compression-targetid-archive.md and more, each measured on
//! clang-offload-bundler 22. One table for the two suites that check the
//! rule: `offload-format`'s device-archive unit tests (a target as given on
//! the command line, through the whole `-type=a` plan) and
//! `tests/spec_examples.rs` (`EntryId::is_compatible_code_object` on the
//! standardised target). Where the two suites wrote a target differently
//! (`-unknown-` or an empty environment, a trailing `-`), the row keeps
//! both spellings, and both suites check that each gives the answer.

/// One example: the stored code-object ID, the target as given on the
/// command line (in one or two spellings), and LLVM's answer.
#[derive(Clone, Copy, Debug)]
pub struct Compatibility {
    /// The bundle entry ID of the code object.
    pub code_object: &'static str,
    /// The target as given to `-targets=`.
    pub target: &'static str,
    /// The same target written another way, with the same answer (or
    /// `target` again).
    pub other_spelling: &'static str,
    /// `-hip-openmp-compatible`.
    pub hip_openmp: bool,
    /// Whether the code object goes to the target.
    pub compatible: bool,
}

/// Columns: code object, target as given, another spelling of the target
/// (`=`: none), `hip-openmp` or `-`, `yes` or `no`.
const TABLE: &str = "\
hip-amdgcn-amd-amdhsa--gfx906                 hip-amdgcn-amd-amdhsa--gfx906                   =                                 -          yes
hip-amdgcn-amd-amdhsa--gfx906                 hip-amdgcn-amd-amdhsa--gfx906:xnack+            =                                 -          yes
hip-amdgcn-amd-amdhsa--gfx906                 hip-amdgcn-amd-amdhsa--gfx906:xnack-            =                                 -          yes
hip-amdgcn-amd-amdhsa--gfx906                 hip-amdgcn-amd-amdhsa--gfx906:sramecc+:xnack+   =                                 -          yes
hip-amdgcn-amd-amdhsa--gfx906:xnack+          hip-amdgcn-amd-amdhsa--gfx906                   =                                 -          no
hip-amdgcn-amd-amdhsa--gfx906:xnack+          hip-amdgcn-amd-amdhsa--gfx906:xnack-            =                                 -          no
hip-amdgcn-amd-amdhsa--gfx906:xnack+          hip-amdgcn-amd-amdhsa--gfx906:sramecc-:xnack+   =                                 -          yes
hip-amdgcn-amd-amdhsa--gfx906:xnack+          hip-amdgcn-amd-amdhsa--gfx906:xnack+:sramecc-   =                                 -          yes
hip-amdgcn-amd-amdhsa--gfx906:xnack+:sramecc+ hip-amdgcn-amd-amdhsa--gfx906:sramecc+:xnack+   =                                 -          yes
hip-amdgcn-amd-amdhsa--gfx906:sramecc+:xnack+ hip-amdgcn-amd-amdhsa--gfx906:xnack+            =                                 -          no
hip-amdgcn-amd-amdhsa--gfx90a                 hip-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-   =                                 -          yes
hip-amdgcn-amd-amdhsa--gfx90a:sramecc+        hip-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-   =                                 -          yes
hip-amdgcn-amd-amdhsa--gfx90a:xnack-          hip-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-   =                                 -          yes
hip-amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack- hip-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-   =                                 -          no
hip-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack- hip-amdgcn-amd-amdhsa--gfx90a:sramecc+          =                                 -          no
hip-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack- hip-amdgcn-amd-amdhsa--gfx90a                   =                                 -          no
hip-amdgcn-amd-amdhsa--gfx906                 hip-amdgcn-amd-amdhsa--gfx908                   =                                 -          no
hip-amdgcn-amd-amdhsa--gfx9-generic           hip-amdgcn-amd-amdhsa--gfx906                   =                                 -          no
hip-amdgcn-amd-amdhsa--gfx906                 hip-amdgcn-amd-amdhsa--gfx9-generic             =                                 -          no
hip-amdgcn-amd-amdhsa--gfx1030                hip-amdgcn-amd-amdhsa--gfx1030:xnack+           =                                 -          no
hip-amdgcn-amd-amdhsa--gfx1030:xnack+         hip-amdgcn-amd-amdhsa--gfx1030:xnack+           =                                 -          yes
hipv4-amdgcn-amd-amdhsa--gfx1030:xnack+       hip-amdgcn-amd-amdhsa--gfx1030:xnack+           =                                 -          no
hip-amdgcn-amd-amdhsa--gfx906:foo+            hip-amdgcn-amd-amdhsa--gfx906:foo+              =                                 -          yes
hip-amdgcn-amd-amdhsa--gfx906:foo+            hip-amdgcn-amd-amdhsa--gfx906:foo+:xnack+       =                                 -          no
hip-amdgcn-amd-amdhsa--gfx906                 hipv4-amdgcn-amd-amdhsa--gfx906                 =                                 -          yes
hipv4-amdgcn-amd-amdhsa--gfx906               hip-amdgcn-amd-amdhsa--gfx906                   =                                 -          yes
hipv4-amdgcn-amd-amdhsa--gfx906:xnack+        hip-amdgcn-amd-amdhsa--gfx906                   =                                 -          no
hip-amdgcn-amd-amdhsa--gfx906                 openmp-amdgcn-amd-amdhsa--gfx906                =                                 -          no
hip-amdgcn-amd-amdhsa--gfx906                 openmp-amdgcn-amd-amdhsa--gfx906                =                                 hip-openmp yes
openmp-amdgcn-amd-amdhsa--gfx906              hipv4-amdgcn-amd-amdhsa--gfx906:sramecc-:xnack+ =                                 hip-openmp yes
openmp-amdgcn-amd-amdhsa--gfx906              host-amdgcn-amd-amdhsa--gfx906                  =                                 hip-openmp no
hip-amdgcn-amd-amdhsa-unknown-gfx906          hip-amdgcn-amd-amdhsa--gfx906                   =                                 -          yes
hip-amdgcn-amd-amdhsa-foo-gfx906              hip-amdgcn-amd-amdhsa--gfx906                   =                                 -          yes
hip-amdgcn-amd-amdhsa-elf-gfx906              hip-amdgcn-amd-amdhsa--gfx906                   =                                 -          yes
hip-amdgcn-amd-amdhsa-gnu-gfx906              hip-amdgcn-amd-amdhsa--gfx906                   =                                 -          no
hip-amdgcn-amd-amdhsa-gfx906                  hip-amdgcn-amd-amdhsa--gfx906                   =                                 -          no
hip-amdgcn-amd-amdhsa-gfx906                  hip-amdgcn-amd-amdhsa--                         =                                 -          yes
hip-amdgcn-amd-amdhsa-gfx906                  hip-amdgcn-amd-amdhsa-gfx908                    =                                 -          yes
hip-amdgcn-amd-amdhsa-                        hip-amdgcn-amd-amdhsa--gfx906                   =                                 -          no
openmp-nvptx64-nvidia-cuda--sm_70             openmp-nvptx64-nvidia-cuda-unknown-sm_70        =                                 -          yes
openmp-nvptx64-nvidia-cuda--sm_70             openmp-nvptx64-nvidia-cuda-unknown-sm_80        openmp-nvptx64-nvidia-cuda--sm_80 -          no
openmp-nvptx64-nvidia-cuda--sm_70             openmp-nvptx-nvidia-cuda-unknown-sm_70          openmp-nvptx-nvidia-cuda--sm_70   -          no
hipv4-nvptx64-nvidia-cuda--sm_70              hip-nvptx64-nvidia-cuda-unknown-sm_70           hip-nvptx64-nvidia-cuda--sm_70    -          yes
openmp-nvptx64-nvidia-cuda--sm_70             hip-nvptx64-nvidia-cuda-unknown-sm_70           hip-nvptx64-nvidia-cuda--sm_70    hip-openmp yes
openmp-amdgcn-amd-amdhsa--gfx906              openmp-amdgcn-amd-amdpal-unknown-gfx906         openmp-amdgcn-amd-amdpal--gfx906  -          no
openmp-amdgcn-amd-amdhsa--gfx906              openmp-amdgcn-unknown-amdhsa--gfx906            =                                 -          no
hip-amdgcn--amdhsa--gfx906                    hip-amdgcn-unknown-amdhsa--gfx906               =                                 -          yes
host-x86_64-unknown-linux-gnu-                host-x86_64-unknown-linux-gnu                   host-x86_64-unknown-linux-gnu-    -          yes
host-x86_64-unknown-linux-gnu                 host-x86_64-unknown-linux-gnu                   host-x86_64-unknown-linux-gnu-    -          yes
host-x86_64-unknown-linux-gnu-                host-x86_64-pc-linux-gnu                        host-x86_64-pc-linux-gnu-         -          no
hip-spirv64-amd-amdhsa--amdgcnspirv           hipv4-spirv64-amd-amdhsa--amdgcnspirv           =                                 -          yes
hipv4-amdgcn-amd-amdhsa--generic              hip-amdgcn-amd-amdhsa--generic                  =                                 -          no
hip-amdgcn-amd-amdhsa--fiji                   hip-amdgcn-amd-amdhsa--gfx803                   =                                 -          no
hip-amdgcn-amd-amdhsa-gfx906:xnack+           hip-amdgcn-amd-amdhsa--gfx906:xnack+            =                                 -          no
hip-amdgcn-amd-amdhsa--gfx803                 hip-amdgcn-amd-amdhsa--fiji                     =                                 -          no
hip-amdgcn-amd-amdhsa--gfx90a:xnack-          hip-amdgcn-amd-amdhsa--gfx90a:xnack-            =                                 -          yes
hip-amdgcn-amd-amdhsa--gfx908:sramecc+        hip-amdgcn-amd-amdhsa--gfx908:sramecc+:xnack-   =                                 -          yes
hip-amdgcn-amd-amdhsa-gfx906:xnack+           hip-amdgcn-amd-amdhsa-gfx906:xnack+             =                                 -          yes
hip-amdgcn-amd-amdhsa--gfx908:sramecc+        hip-amdgcn-amd-amdhsa--gfx908:sramecc-          =                                 -          no
hip-amdgcn-amd-amdhsa--gfx1030                hip-amdgcn-amd-amdhsa--gfx1031                  =                                 -          no
openmp-amdgcn-amd-amdhsa--gfx90a:xnack+       openmp-amdgcn-amd-amdhsa--gfx90a:xnack+         =                                 -          yes
HIP-amdgcn-amd-amdhsa--gfx906                 openmp-amdgcn-amd-amdhsa--gfx906                =                                 hip-openmp yes
HIP-amdgcn-amd-amdhsa--gfx906                 hip-amdgcn-amd-amdhsa--gfx906                   =                                 -          no
hip-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack- hip-amdgcn-amd-amdhsa--gfx942:xnack-:sramecc+   =                                 -          yes
hip-amdgcn-amd-amdhsa--gfx1100                hip-amdgcn-amd-amdhsa--gfx1100:xnack-           =                                 -          no
openmp-nvptx64-nvidia-cuda--sm_70             openmp-nvptx64-nvidia-cuda--sm_70:xnack+        =                                 -          no
";

/// The examples, in the table's order.
pub fn compatibility() -> Vec<Compatibility> {
    TABLE
        .lines()
        .map(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let [code_object, target, other, hip_openmp, compatible] = cols[..] else {
                panic!("a row of five columns: {line}");
            };
            Compatibility {
                code_object,
                target,
                other_spelling: if other == "=" { target } else { other },
                hip_openmp: hip_openmp == "hip-openmp",
                compatible: compatible == "yes",
            }
        })
        .collect()
}
