# The commands of README.md and docs/ that need LLVM 22 (and 14): the
# blocks marked `<!-- doc-test: e2e -->`, quoted as the pages show them.
# `cargo xtask e2e docs` runs this with bash -euo pipefail in a fresh copy
# of the repository's example files, with HOME there and our tools in
# ~/.local/bin (where the README installs them) at the front of PATH.
# crates/doc-tests/tests/docs.rs checks that every such page command is
# here. `check` lines compare with what the page says.

check() { # what, expected, actual
    if [ "$2" != "$3" ]; then
        printf 'docs e2e: %s: expected\n%s\ngot\n%s\n' "$1" "$2" "$3" >&2
        exit 1
    fi
}

# README.md: a HIP kernel, compiled without ROCm.
clang-22 -B ~/.local/bin -x hip --offload-arch=gfx906 -nogpuinc -nogpulib \
    --offload-compress -c docs/examples/k.hip -o k.o

# README.md, and docs/tools/clang-offload-bundler.md: what is in a HIP object.
llvm-objcopy-22 --dump-section .hip_fatbin=k.fatbin k.o
check "bundler -list" "hipv4-amdgcn-amd-amdhsa--gfx906
host-x86_64-unknown-linux-gnu-" "$(clang-offload-bundler -list -type=o -input=k.fatbin)"
clang-offload-bundler -unbundle -type=o -input=k.fatbin \
    -targets=hipv4-amdgcn-amd-amdhsa--gfx906 -output=k-gfx906.co
llvm-readelf-22 -h k-gfx906.co | grep -q 'Flags: .*, gfx906'

# README.md: OpenMP offloading to the host plugin.
mkdir -p omplib && ln -sf /usr/lib/llvm-22/lib/libomptarget.so.22.1 omplib/libomptarget.so
clang-22 -B ~/.local/bin -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu \
    docs/examples/omp.c -o omp -Lomplib -Wl,-rpath,/usr/lib/llvm-22/lib
check "./omp" "sum = 499500 (expected 499500), offloaded: yes" "$(OMP_TARGET_OFFLOAD=MANDATORY ./omp)"

# docs/tools/clang-offload-bundler.md: bundle a host file with device files,
# the inputs made with --cuda-host-only / --cuda-device-only as the page shows.
clang-22 -x hip -nogpuinc -nogpulib --cuda-host-only -emit-llvm -c docs/examples/k.hip -o host.bc
for g in gfx906 gfx90a; do
    clang-22 -x hip -nogpuinc -nogpulib --offload-arch=$g --cuda-device-only -emit-llvm -c docs/examples/k.hip -o $g.bc
done
clang-offload-bundler -type=bc \
    -targets=host-x86_64-unknown-linux-gnu,hipv4-amdgcn-amd-amdhsa--gfx906,hipv4-amdgcn-amd-amdhsa--gfx90a \
    -input=host.bc -input=gfx906.bc -input=gfx90a.bc -output=fat.bc
check "fat.bc" "3" "$(clang-offload-bundler -list -type=bc -input=fat.bc | wc -l)"

# docs/tools/clang-offload-bundler.md: device archives (libk.a made here,
# as the page says).
clang-22 -x hip -nogpuinc -nogpulib --offload-arch=gfx906 -fgpu-rdc -c docs/examples/k.hip -o krdc.o
llvm-ar-22 rcs libk.a krdc.o
clang-offload-bundler -unbundle -type=a -input=libk.a \
    -targets=hipv4-amdgcn-amd-amdhsa--gfx906 -output=libk-gfx906.a
check "libk-gfx906.a" "krdc-hip-amdgcn-amd-amdhsa--gfx906krdc.bc" "$(llvm-ar-22 t libk-gfx906.a)"

# docs/tools/llvm-offload-binary.md: extract everything.
clang-22 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu -c docs/examples/omp.c -o omp.o
llvm-offload-binary omp.o --image=
test -s omp-x86_64-pc-linux-gnu-generic.0.o

# docs/tools/llvm-offload-binary.md: device code of a static library as an
# archive (libfoo.a made here, as the page says).
clang-22 -x hip -nogpuinc -nogpulib --offload-arch=gfx906 --offload-new-driver -fgpu-rdc \
    -c docs/examples/k.hip -o foo.o
llvm-ar-22 rcs libfoo.a foo.o
llvm-offload-binary libfoo.a --archive --image=triple=amdgcn-amd-amdhsa,arch=gfx906,file=libfoo-gfx906.a
check "libfoo-gfx906.a" "1" "$(llvm-ar-22 t libfoo-gfx906.a | wc -l)"

# docs/tools/llvm-offload-wrapper.md: the OpenMP host pipeline.
clang-22 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu --offload-device-only -c docs/examples/omp.c -o g.dev.o
clang-22 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu --offload-host-only  -c docs/examples/omp.c -o g.host.o
clang-22 -shared -Wl,-Bsymbolic g.dev.o -o g.dev.so -L/usr/lib/llvm-22/lib -lomp /usr/lib/llvm-22/lib/libomptarget.so.22.1
llvm-offload-wrapper --kind=openmp g.dev.so -o g.wrap.bc
clang-22 -c g.wrap.bc -o g.wrap.o
clang-22 -fopenmp g.host.o g.wrap.o /usr/lib/llvm-22/lib/libomptarget.so.22.1 -o g
check "./g" "sum = 499500 (expected 499500), offloaded: yes" \
    "$(LD_LIBRARY_PATH=/usr/lib/llvm-22/lib OMP_TARGET_OFFLOAD=MANDATORY ./g)"
llvm-offload-binary -o g.dev.ob --image=file=g.dev.so,triple=x86_64-pc-linux-gnu,arch=generic,kind=openmp
llvm-offload-wrapper --kind=openmp g.dev.ob -o g.wrap.bc
llvm-objcopy-22 --dump-section .nv_fatbin=kernels.fatbin tests/fixtures/nvidia/concat.o
llvm-offload-wrapper --kind=cuda --triple=x86_64-pc-windows-msvc kernels.fatbin -o fatbin.bc
llvm-dis-22 fatbin.bc -o - | grep 'target triple = "x86_64-pc-windows-msvc"' >/dev/null

# docs/tools/clang-offload-wrapper.md (LLVM 14).
if command -v clang-14 >/dev/null; then
    offload extract --bundle 0 --target gfx906 -o gfx906.out tests/fixtures/offload/lib.so
    offload extract --bundle 0 --target gfx90a:xnack+ -o gfx90a.out tests/fixtures/offload/lib.so
    clang-offload-wrapper -target x86_64-pc-linux-gnu -o host-wrapper.bc \
        --offload-arch=gfx906 gfx906.out --offload-arch=gfx90a:xnack+ gfx90a.out
    clang-14 -c host-wrapper.bc -o host-wrapper.o
else
    echo "docs e2e: clang-14 is not installed; docs/tools/clang-offload-wrapper.md skipped" >&2
fi

# docs/tools/offload.md: a thinned file checked with LLVM 22's tools.
offload thin --keep gfx90a --keep-layout -o lib-gfx90a.so tests/fixtures/offload/lib.so
tests/fixtures/thin/verify.py tests/fixtures/offload/lib.so lib-gfx90a.so --offload "$(command -v offload)"
