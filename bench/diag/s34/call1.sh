#!/usr/bin/env bash
# Session 34, call 1: fast math (kf_context_options.fast_math) on the GPU.
# The error of each approximated op against the exact kernels on CUDA and
# NVIDIA's OpenCL (fast_err.c), the GPU suite (test_runtime's fast-math
# pass on both, test_codegen's NVRTC compile of the fast module), then
# kfuse exact, kfuse fast-math and torch.compile in one process
# (bench/inproc.py --fast-math) on the workloads with an approximated op.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../gpu_env.sh"
git log --oneline -1 2>/dev/null || true
gcc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -Ibuild/gpu/include "$here/fast_err.c" -o build/gpu/fast_err \
    -Lbuild/gpu -lkfuse -Wl,-rpath,"$PWD/build/gpu" -lm
for b in cuda opencl; do build/gpu/fast_err $b | tee "$OUT/err-$b.txt"; done
(cd build/gpu && timeout 330 ctest -V -j 6 -E fuzz > "$OUT/ctest.txt" 2>&1; echo "ctest rc=$?" >> "$OUT/ctest.txt")
grep -E "tests passed|tests failed|graphs \(corpus|fast_math:|CHECK failed|ctest rc|\*\*\*|NVRTC:" "$OUT/ctest.txt" | head -40
left=$(( ${CALL_S:-570} - SECONDS ))
echo "inproc: $left s left"
timeout $((left * 2 / 3)) python3 bench/inproc.py bench/workloads.kir boxplus iota --sizes 12,20,22,24,26 \
    --rounds 5 --reps 50 --fast-math --out "$OUT/inproc-workloads.md" 2>&1 | grep -v "^#" | tail -20
left=$(( ${CALL_S:-570} - SECONDS - 10 ))
[ "$left" -gt 40 ] && timeout "$left" python3 bench/inproc.py bench/chain40.kir --sizes 12,20,26 \
    --rounds 5 --reps 50 --fast-math --out "$OUT/inproc-chain40.md" 2>&1 | grep -v "^#" | tail -10
true
