#!/usr/bin/env bash
# Session 32, third call on the GPU machine, after kf_keep32 was narrowed to
# i16 (and casts to i16): NVIDIA's OpenCL PTX of the codegen corpus through
# ptx_s16.py; the GPU suite; then the A/B of bench/diag/s32/narrow.kir
# against exp/base (8cd01cc, before kf_keep32) on CUDA and NVIDIA's OpenCL.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../gpu_env.sh"
build/gpu/fusec build --target opencl --cache "$OUT/ptxcache" tests/codegen/corpus.kir 2>&1 | tail -n 2
python3 "$here/ptx_s16.py" "$OUT"/ptxcache/* | tee "$OUT/ptx.txt"
rm -rf "$OUT/ptxcache"
(cd build/gpu && timeout 300 ctest -V -j 6 -E fuzz > "$OUT/ctest.txt" 2>&1; echo "ctest rc=$?" >> "$OUT/ctest.txt")
grep -E "tests passed|tests failed|graphs \(corpus|run through|CHECK failed|ctest rc|\*\*\*" "$OUT/ctest.txt" | head -30
ROUNDS=${ROUNDS:-2} WORKLOADS=bench/diag/s32/narrow.kir timeout 240 bash bench/ab.sh exp/base 26,28 30 x5_i16 mix_i16 blend_u8
rm -f "$OUT"/ab/*.txt
