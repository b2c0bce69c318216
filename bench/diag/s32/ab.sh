#!/usr/bin/env bash
# Session 32, second call on the GPU machine: the PTX that NVIDIA's OpenCL
# compiler makes of the codegen corpus must hold no neg.s16 or abs.s16;
# seed 4168 on CUDA under the widened compare rule; then the cost of
# kf_keep32 on 8- and 16-bit kernels (bench/diag/s32/narrow.kir), A/B
# against exp/base (the tree before it, 8cd01cc), CUDA and NVIDIA's OpenCL.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../gpu_env.sh"
build/gpu/fusec build --target opencl --cache "$OUT/ptxcache" tests/codegen/corpus.kir 2>&1 | tail -n 2
for f in "$OUT"/ptxcache/*; do
    echo "$(basename "$f"): $(grep -a -c -E 'neg\.s16|abs\.s16' "$f") lines with neg.s16/abs.s16," \
         "$(grep -a -c 'mov\.b32\|\.entry' "$f") with mov.b32 or .entry"
done | tee "$OUT/ptx.txt"
rm -rf "$OUT/ptxcache"
(cd tests && KFUSE_CACHE=off KFUSE_TEST_CORPUS=none KFUSE_TEST_SEED=3168 KFUSE_TEST_RANDOM=1 \
    ../build/gpu/tests/test_runtime cuda 2>&1 | grep -E "CHECK failed|passed" | tee "$OUT/seed4168.txt")
ROUNDS=${ROUNDS:-3} WORKLOADS=bench/diag/s32/narrow.kir timeout 400 bash bench/ab.sh exp/base 26,28 30 x5_i16 mix_i16 blend_u8
