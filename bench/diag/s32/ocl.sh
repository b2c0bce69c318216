#!/usr/bin/env bash
# Session 32, fourth call: which corpus kernel of NVIDIA's OpenCL PTX reads a
# neg.s16 result as signed (ptx_s16.py, with the function and 40 lines
# before), and test_runtime's narrow-integer test (now with composite
# negations) on CUDA and NVIDIA's OpenCL.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../gpu_env.sh"
build/gpu/fusec build --target opencl --cache "$OUT/ptxcache" tests/codegen/corpus.kir 2>&1 | tail -n 2
python3 "$here/ptx_s16.py" "$OUT"/ptxcache/* > "$OUT/ptx.txt" 2>&1
head -c 6000 "$OUT/ptx.txt"
rm -rf "$OUT/ptxcache"
cd tests
for b in cuda opencl; do
    KFUSE_CACHE=off KFUSE_TEST_CORPUS=none KFUSE_TEST_RANDOM=0 ../build/gpu/tests/test_runtime $b 2>&1 |
        grep -E "CHECK failed|passed" | grep -v graphs_run | tee "$OUT/narrow-$b.txt"
done
