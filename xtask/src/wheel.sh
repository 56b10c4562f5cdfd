# The install commands of README.md (the blocks marked `<!-- doc-test:
# wheel -->`), quoted as the page shows them, and what a user then does
# with the tools. `cargo xtask wheel --check` (CI's `wheel` step) runs this
# with bash -euo pipefail after building the wheel, in a fresh directory
# holding the repository's example files at their paths, with HOME there,
# and with:
#
#   OFFLOAD_TOOLS_REPO  the checkout (`cargo install --path` runs there)
#   WHEELS              the directory holding the wheel just built
#   NO_RUST_PATH        PATH without cargo, rustc and rustup, plus a
#                       directory holding only `uv`
#   CARGO_INSTALL_ROOT, CARGO_TARGET_DIR, CARGO_PROFILE_RELEASE_*,
#   CARGO_NET_OFFLINE:  where `cargo install` installs and builds (a quick
#                       profile: these builds prove that the commands work;
#                       the release build is CI's install step's), from the
#                       crates already downloaded
#
# crates/doc-tests/tests/docs.rs checks that each such page command is here.

check() { # what, expected, actual
    if [ "$2" != "$3" ]; then
        printf 'wheel: %s: expected\n%s\ngot\n%s\n' "$1" "$2" "$3" >&2
        exit 1
    fi
}
contains() { # what, expected text, actual
    case "$3" in
        *"$2"*) ;;
        *) printf 'wheel: %s: no %s in\n%s\n' "$1" "$2" "$3" >&2; exit 1 ;;
    esac
}
tools="offload clang-offload-bundler llvm-offload-binary clang-offload-packager llvm-offload-wrapper clang-offload-wrapper"

# --- README.md: cargo install from the repository (with Rust) -------------
(
    cd "$OFFLOAD_TOOLS_REPO"
    cargo install --locked --path crates/offload
    cargo install --locked --path crates/clang-offload-bundler
    cargo install --locked --path crates/llvm-offload-binary     # and clang-offload-packager
    cargo install --locked --path crates/llvm-offload-wrapper
    cargo install --locked --path crates/clang-offload-wrapper
)
for t in $tools; do
    "$CARGO_INSTALL_ROOT/bin/$t" --version >/dev/null
done
contains "cargo-installed bundler --version" "compression: zstd" \
    "$(OFFLOAD_TOOLS_VERSION=1 "$CARGO_INSTALL_ROOT/bin/clang-offload-bundler" --version)"
echo "wheel: ok cargo install of every tool"

# --- From here on, no Rust: what a user of the wheel has -------------------
PATH=$NO_RUST_PATH
export PATH
if command -v cargo || command -v rustc; then
    echo "wheel: Rust is still on PATH" >&2
    exit 1
fi
# The README's commands install offload-tools from PyPI; here pip and uv
# find it in $WHEELS instead (and only there).
export PIP_NO_INDEX=1 PIP_FIND_LINKS=$WHEELS PIP_DISABLE_PIP_VERSION_CHECK=1
export UV_NO_INDEX=1 UV_FIND_LINKS=$WHEELS UV_PYTHON_DOWNLOADS=never UV_NO_CACHE=1

# README.md: pip, into a fresh virtual environment.
python3 -m venv venv
. venv/bin/activate
start=$(date +%s%N)
pip install offload-tools
end=$(date +%s%N)
echo "wheel: pip install offload-tools took $(( (end - start) / 1000000 )) ms"
for t in $tools; do
    check "$t on PATH" "$VIRTUAL_ENV/bin/$t" "$(command -v "$t")"
done
echo "wheel: ok pip install offload-tools, without Rust on PATH: $tools"

# Only glibc (and GCC's unwinder, libgcc_s) is linked: the libraries every
# manylinux system has. No libzstd, no libz.
for t in $tools; do
    ldd "$VIRTUAL_ENV/bin/$t" | while read -r lib _; do
        case "$lib" in
            linux-vdso.so.1 | /lib64/ld-linux-x86-64.so.2 | ld-linux-x86-64.so.2 | libc.so.6 | libm.so.6 | \
                libdl.so.2 | libpthread.so.0 | librt.so.1 | libgcc_s.so.1) ;;
            *) echo "wheel: $t links $lib" >&2; exit 1 ;;
        esac
    done
    echo "ldd $t: $(ldd "$VIRTUAL_ENV/bin/$t" | awk '{print $1}' | tr '\n' ' ')"
done

# The identification: the wheel's build, with its own codecs.
version=$(OFFLOAD_TOOLS_VERSION=1 offload --version)
echo "$version"
contains "offload --version" ", Python wheel build" "$version"
contains "offload --version" "compression: zstd 1.5.7 (bundled), miniz_oxide (bundled)" "$version"
version=$(OFFLOAD_TOOLS_VERSION=1 clang-offload-bundler --version)
contains "clang-offload-bundler --version" ", Python wheel build" "$version"
contains "clang-offload-bundler --version" "zstd 1.5.7 (bundled)" "$version"

# offload on a fixture wheel, read without unpacking.
listing=$(offload ls tests/fixtures/wheel/demo-1.0-py3-none-any.whl)
contains "offload ls" "member demo/lib/libk.so" "$listing"
contains "offload ls" "sm_90a.cubin" "$listing"
dry=$(offload thin --dry-run --keep sm_90 tests/fixtures/wheel/demo-1.0-py3-none-any.whl)
contains "offload thin --dry-run" "3 entries would be dropped" "$dry"
echo "wheel: ok offload ls and thin --dry-run of a fixture wheel"

# The bundler on fixture bundles: LLVM 22's compressed one (zstd) and a plain one.
check "bundler -list (CCOB)" "host-aarch64-unknown-linux-gnu-
hip-amdgcn-amd-amdhsa--gfx906
hip-amdgcn-amd-amdhsa--gfx908" "$(clang-offload-bundler -list -type=o -input=tests/fixtures/ccob/medium.v3.ccob)"
clang-offload-bundler -unbundle -type=o -input=tests/fixtures/ccob/medium.v3.ccob \
    -targets=hip-amdgcn-amd-amdhsa--gfx906 -output=gfx906.from-ccob
clang-offload-bundler -unbundle -type=o -input=tests/fixtures/ccob/medium.bundle \
    -targets=hip-amdgcn-amd-amdhsa--gfx906 -output=gfx906.from-bundle
cmp gfx906.from-ccob gfx906.from-bundle
echo "wheel: ok clang-offload-bundler -list and -unbundle of LLVM 22's compressed bundle"

# README.md: thin an environment's GPU code in place (here a fixture wheel
# installed into the venv).
pip install tests/fixtures/wheel/demo-1.0-py3-none-any.whl
offload thin --keep sm_90 --in-place "$VIRTUAL_ENV/lib"
summary=$(offload ls --summary "$VIRTUAL_ENV/lib")
contains "thinned venv" "sm_90 " "$summary"
if grep -E 'sm_80 +cubin' <<<"$summary"; then
    echo "wheel: sm_80 cubins left after thin --keep sm_90" >&2
    exit 1
fi
echo "wheel: ok offload thin --keep sm_90 --in-place of the venv"

# README.md: clang-22 builds the HIP example with the wheel's tools.
if command -v clang-22 >/dev/null; then
    clang-22 -B "$VIRTUAL_ENV/bin" -x hip --offload-arch=gfx906 -nogpuinc -nogpulib \
        --offload-compress -c docs/examples/k.hip -o k.o
    contains "clang-22 -B -###" "\"$VIRTUAL_ENV/bin/clang-offload-bundler\"" \
        "$(clang-22 -B "$VIRTUAL_ENV/bin" -x hip --offload-arch=gfx906 -nogpuinc -nogpulib \
            --offload-compress -c docs/examples/k.hip -o k.o -### 2>&1)"
    llvm-objcopy-22 --dump-section .hip_fatbin=k.fatbin k.o
    check "bundler -list (k.o)" "hipv4-amdgcn-amd-amdhsa--gfx906
host-x86_64-unknown-linux-gnu-" "$(clang-offload-bundler -list -type=o -input=k.fatbin)"
    echo "wheel: ok clang-22 -B \"\$VIRTUAL_ENV/bin\" built the HIP example with the wheel's bundler"
else
    echo "wheel: clang-22 is not installed; the HIP example skipped"
fi
deactivate

# README.md: uv, as a tool of its own (its bin directory is ~/.local/bin).
uv tool install offload-tools
for t in $tools; do
    contains "uv tool's $t" ", Python wheel build" "$(OFFLOAD_TOOLS_VERSION=1 ~/.local/bin/$t --version)"
done
echo "wheel: ok uv tool install offload-tools"
echo "wheel: all good"
