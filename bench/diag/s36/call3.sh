#!/usr/bin/env bash
# Session 36, call 3, on the GPU machine from the repository root, with
# .deps/ and exp/ carried (exp/base as in call1.sh):
#   1. the GPU suite but fuzz (CUDA, NVIDIA's OpenCL, compute-sanitizer);
#   2. rowsum's warpv: the commit before (exp/base's fusec) against this
#      tree's (32-bit, the row clamped: wv_new), s29's wv_32 and
#      torch.compile in one process (rows.py), two processes.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
source "$here/../../gpu_env.sh" >/dev/null
step build
(cd build/gpu && timeout 340 ctest -V -j 6 -E fuzz > "$OUT/ctest.txt" 2>&1; echo "ctest rc=$?" >> "$OUT/ctest.txt")
grep -E "tests passed|tests failed|graphs \(corpus|fast_math:|CHECK failed|ctest rc|\*\*\*|NVRTC:" "$OUT/ctest.txt" | head -40
step suite
export PATH=/usr/local/cuda/bin:$PATH
(cd exp/base && cp -r ../../.deps . 2>/dev/null; KFUSE_GPU_TARGET=fusec OUT=$OUT/base source bench/gpu_env.sh >/dev/null) || exit 1
K=/tmp/k36; mkdir -p $K
exp/base/build/gpu/fusec emit --target cuda bench/workloads.kir --graph rowsum > $K/rowsum.cu
build/gpu/fusec emit --target cuda bench/workloads.kir --graph rowsum > $K/new.cu
cp bench/diag/s29/kernels/rows_hand.cu $K/
name=$(python3 "$here/warpv_var.py" $K) || exit 1
for f in $K/*.cu; do
    nvcc -cubin -arch=sm_90 -O3 -DKF_ONE_PASS -o "${f%.cu}.cubin" "$f" || echo "nvcc FAILED: $f"
done
step kernels
for p in 1 2; do
    VARIANTS="wv_new=new.cubin:$name wv_32" timeout 120 python3 "$here/rows.py" $K "$name" 7 300 2>&1 | grep -v Warning
    step "rows process $p"
done
