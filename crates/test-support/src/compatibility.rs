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

/// One example of CUDA's rule: the code (`sm_` cubin or `compute_` PTX),
/// the GPU's capability, and whether the GPU can use the code.
#[derive(Clone, Copy, Debug)]
pub struct CudaCompatibility {
    /// `sm_90a`, `compute_80`...
    pub code: &'static str,
    /// The GPU, as `sm_NN`.
    pub device: &'static str,
    /// Whether it runs (cubin) or can be JIT-compiled (PTX) there.
    pub usable: bool,
}

/// Columns: code, device, `yes` or `no`. From CUDA's compatibility rules
/// (the CUDA C++ Programming Guide's "Binary Compatibility", "PTX
/// Compatibility" and architecture- and family-specific features); the
/// plain and `a` rows for sm_90 were checked on an H200 (nvidia.md).
const CUDA_TABLE: &str = "\
sm_90         sm_90    yes
sm_90a        sm_90    yes
sm_80         sm_90    no
sm_80         sm_86    yes
sm_80         sm_89    yes
sm_86         sm_80    no
sm_89         sm_86    no
sm_90         sm_100   no
sm_100        sm_103   yes
sm_100a       sm_103   no
sm_100a       sm_100   yes
sm_100f       sm_100   yes
sm_100f       sm_103   yes
sm_103f       sm_100   no
sm_100f       sm_110   no
sm_120        sm_121   yes
sm_120a       sm_121   no
sm_120f       sm_121   yes
sm_121a       sm_121   yes
sm_75         sm_80    no
compute_90    sm_90    yes
compute_80    sm_90    yes
compute_80    sm_120   yes
compute_90    sm_80    no
compute_90a   sm_90    yes
compute_90a   sm_100   no
compute_100a  sm_103   no
compute_100f  sm_103   yes
compute_100f  sm_120   no
compute_120   sm_121   yes
compute_121   sm_120   no
compute_75    sm_75    yes
";

/// The rows of the CUDA table.
pub fn cuda_compatibility() -> Vec<CudaCompatibility> {
    CUDA_TABLE
        .lines()
        .map(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(cols.len(), 3, "{line}");
            CudaCompatibility {
                code: cols[0],
                device: cols[1],
                usable: match cols[2] {
                    "yes" => true,
                    "no" => false,
                    other => panic!("{other}"),
                },
            }
        })
        .collect()
}
