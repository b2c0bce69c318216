#!/usr/bin/env bash
# Session 40, call 1, on the GPU machine from the repository root, .deps/
# carried:
#   1. the peak DRAM bandwidth the CUDA context reads (kfbench's first line);
#   2. kf_ddiv against __fdiv_rn (divcheck, and its naive twin that must fail);
#   3. boxplus's math, part by part, against torch.compile in one process
#      (probe.py, 2^20-2^26);
#   4. the GPU suite but fuzz (CUDA, NVIDIA's OpenCL, compute-sanitizer) at
#      this tree, in the time left.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
source "$here/../../gpu_env.sh" >/dev/null
step build
build/gpu/kfbench --backend cuda --sizes 12 --reps 5 bench/workloads.kir saxpy 2>&1 | head -3
nvidia-smi --query-gpu=name,clocks.max.memory,clocks.max.sm --format=csv,noheader
k=/tmp/s40k
bash "$here/kernels.sh" build/gpu/fusec $k > $k.log 2>&1 || tail -20 $k.log
cat $k/sass.txt
step kernels
timeout 60 $k/divcheck
timeout 60 $k/divcheck_naive | head -3
step divcheck
SIZES=${SIZES:-20,22,24,26} timeout 200 python3 "$here/probe.py" $k 5 300 2>&1 | grep -v "^W[0-9]"
step probe
left=$((${CALL_LIMIT:-575} - ($(date +%s) - t0)))
[ $left -lt 60 ] && { step "no time left for the suite"; exit 0; }
(cd build/gpu && timeout $left ctest -V -j 6 -E fuzz > "$OUT/ctest.txt" 2>&1; echo "ctest rc=$?" >> "$OUT/ctest.txt")
grep -E "tests passed|tests failed|graphs \(corpus|fast_math:|CHECK failed|ctest rc|\*\*\*|NVRTC:|memory_gbps" "$OUT/ctest.txt" | head -40
step suite
