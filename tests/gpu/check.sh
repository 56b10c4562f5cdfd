#!/usr/bin/env bash
# The GPU checks of issues 23 and 24, as one script for the GPU machine
# (docs/DEVELOPERS: CUDA 13, PyTorch 2.11 + cu130 in python3, no cargo).
# Build the release `offload` here first and carry it:
#   run(command="bash tests/gpu/check.sh target/release/offload", carry=["target/release/offload"])
# Everything it records goes to $OUT (default ./gpu-out): check.log, the
# cuobjdump listing and md5s of libtorch_cuda.so as fixtures.
set -uo pipefail
offload=$(realpath "${1:-target/release/offload}")
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
log=$out/check.log
work=$(mktemp -d)
exec > >(tee "$log") 2>&1
say() { printf '\n== %s\n' "$*"; }
fail=0
check() { if "$@"; then echo "PASS: $*"; else echo "FAIL: $*"; fail=1; fi; }
nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader
cuobjdump --version | tail -1
cd "$work"

say "1. cubins decoded by offload extract load and run (zstd and LZ builds)"
for mode in "-Xfatbin=-compress-all" "--compress-mode=speed -Xfatbin=-compress-all"; do
  rm -rf x && mkdir x
  nvcc -shared -Xcompiler -fPIC $mode -gencode arch=compute_90,code=[sm_90,compute_90] \
    -gencode arch=compute_80,code=sm_80 "$here/../fixtures/nvidia/axpy.cu" -o libk.so
  "$offload" extract --target sm_90 -d x libk.so
  for c in x/*.cubin; do check python3 "$here/load_cubin.py" "$c"; done
  (cd x && cuobjdump -xelf all -xptx all ../libk.so >/dev/null && md5sum *.cubin *.ptx | sort) > c.md5
  rm -rf y && mkdir y && "$offload" extract -d y libk.so >/dev/null
  (cd y && md5sum * | sort) > o.md5
  check cmp -s c.md5 o.md5
done

say "2. an nvcc program thinned to sm_90 runs; to PTX only, it JIT-compiles and runs; to sm_80 only, it fails"
nvcc -Xfatbin=-compress-all -gencode arch=compute_80,code=[sm_80,compute_80] \
  -gencode arch=compute_90,code=sm_90 "$here/main.cu" "$here/../fixtures/nvidia/axpy.cu" -o app
check ./app
"$offload" thin --keep sm_90 --drop-ptx -o app90 app && check ./app90
"$offload" thin --keep compute_80 -o appptx app && check ./appptx
"$offload" thin --keep sm_80 --drop-ptx -o app80 app && check bash -c '! ./app80'

say "3. PyTorch: thinned to sm_90 in place, the smoke line is unchanged"
site=$(python3 -c 'import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))')
dirs=("$site/torch/lib")
for d in "$site"/nvidia/*/lib; do [ -d "$d" ] && dirs+=("$d"); done
python3 "$here/torch_smoke.py" > smoke-before.txt; cat smoke-before.txt
cp "$site/torch/lib/libtorch_cuda.so" libtorch_cuda.orig.so
(cd "$work" && cuobjdump --list-elf --list-ptx libtorch_cuda.orig.so > "$out/libtorch_cuda.so.list" 2>/dev/null)
du -sb "${dirs[@]}" | tee du-before.txt
/usr/bin/time -v "$offload" ls --summary "${dirs[@]}" 2> ls-time.txt | tee "$out/summary-before.txt"
grep -E "Elapsed|Maximum resident" ls-time.txt
/usr/bin/time -v "$offload" thin --keep sm_90 --in-place "${dirs[@]}" > thin-report.txt 2> thin-time.txt
echo "thin exit $?"; tail -3 thin-report.txt; grep -E "Elapsed|Maximum resident" thin-time.txt
du -sb "${dirs[@]}" | tee du-after.txt
python3 "$here/torch_smoke.py" > smoke-after.txt; cat smoke-after.txt
check cmp -s smoke-before.txt smoke-after.txt

say "4. libtorch_cuda.so thinned to sm_80 only: torch's kernels fail on this GPU"
"$offload" thin --keep sm_80 --drop-ptx -o "$site/torch/lib/libtorch_cuda.so" libtorch_cuda.orig.so > /dev/null
check bash -c "! python3 '$here/torch_smoke.py' > smoke-80.txt 2>&1"
tail -2 smoke-80.txt
cp libtorch_cuda.orig.so "$site/torch/lib/libtorch_cuda.so"

say "5. libtorch_cuda.so: cuobjdump's files among ours, byte for byte (fixture md5s)"
mkdir c o
(cd c && /usr/bin/time -f "cuobjdump %e s %M KB" cuobjdump -xelf all -xptx all ../libtorch_cuda.orig.so >/dev/null && md5sum * | LC_ALL=C sort -k2) > "$out/libtorch_cuda.so.md5"
(cd o && /usr/bin/time -f "offload %e s %M KB" "$offload" extract ../libtorch_cuda.orig.so >/dev/null && md5sum * | LC_ALL=C sort -k2) > o.md5
missing=$(comm -23 <(sort "$out/libtorch_cuda.so.md5") <(sort o.md5) | wc -l)
echo "cuobjdump files: $(wc -l < "$out/libtorch_cuda.so.md5"), ours: $(wc -l < o.md5), cuobjdump's not among ours: $missing"
check test "$missing" -eq 0
sha256sum libtorch_cuda.orig.so | cut -d' ' -f1 > "$out/libtorch_cuda.so.sha256"
python3 -c 'import torch; print(torch.__version__)' > "$out/torch-version.txt"

say "done: $( [ $fail -eq 0 ] && echo all passed || echo SOME FAILED )"
rm -rf "$work"
exit $fail
