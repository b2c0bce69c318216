#!/usr/bin/env bash
# Session 31, one call on the GPU machine: the GPU suite (its differential
# tests now compare exact outputs bit for bit, tests/randgraph.h
# kf_rg_compare) and, beside it, random graphs past the suite's: test_runtime
# on CUDA and NVIDIA's OpenCL, test_host on CUDA.  Logs under $OUT.
# test_runtime's odd random graphs get special inputs (kf_rg_specials)
# from fbb9e44 on.  Usage: bash bench/diag/s31/hunt.sh [SECONDS for the extra
# runs, 330] [FROM, 200: the first random graph of test_runtime on CUDA;
# OpenCL's start at FROM - 100, test_host's at FROM - 170]
set -uo pipefail
source "$(dirname "$0")/../../gpu_env.sh"
lim=${1:-330}
from=${2:-200}
(cd build/gpu && timeout 330 ctest -V -j 6 -E fuzz > "$OUT/ctest.txt" 2>&1; echo "ctest rc=$?" >> "$OUT/ctest.txt") &
cd tests
hunt() {   # name binary backend first count
    KFUSE_CACHE=off KFUSE_TEST_CORPUS=none KFUSE_TEST_SEED=$4 KFUSE_TEST_RANDOM=$5 \
        timeout "$lim" "../build/gpu/tests/$2" "$3" > "$OUT/$1.txt" 2>&1
    echo "$1 rc=$?" >> "$OUT/$1.txt"
}
hunt rt_cuda test_runtime cuda "$from" 600 &
hunt rt_ocl test_runtime opencl $((from - 100)) 400 &
hunt host_cuda test_host cuda $((from - 170)) 500 &
wait
cd ..
grep -E "^[0-9]+/[0-9]+ Test|tests passed|tests failed|graphs \(corpus|run through|CHECK failed|ctest rc" "$OUT/ctest.txt" | head -80
for f in rt_cuda rt_ocl host_cuda; do
    echo "== $f"
    grep -E "CHECK failed" "$OUT/$f.txt" | head -20
    tail -n 3 "$OUT/$f.txt"
done
