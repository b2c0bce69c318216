#!/usr/bin/env bash
# Session 32, one call on the GPU machine, after 8- and 16-bit integer
# results started passing kf_keep32 (docs/codegen.md): the PTX that
# NVIDIA's OpenCL compiler makes of the codegen corpus (the kernel cache
# holds it) must not hold neg.s16 or abs.s16; then the GPU suite (its
# test_narrow_ints: every i8/i16/u8/u16 value through every integer op,
# against runtime and literal operands) with random graphs past the suite's
# beside it (bench/diag/s31/hunt.sh).  Usage: check.sh SECONDS FROM.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../gpu_env.sh"
build/gpu/fusec build --target opencl --cache "$OUT/ptxcache" tests/codegen/corpus.kir 2>&1 | tail -n 2
for f in "$OUT"/ptxcache/*; do
    echo "$(basename "$f"): $(grep -a -c -E 'neg\.s16|abs\.s16' "$f") lines with neg.s16/abs.s16," \
         "$(grep -a -c 'kf_keep32\|\.entry' "$f") with kf_keep32 or .entry"
done | tee "$OUT/ptx.txt"
rm -rf "$OUT/ptxcache"
bash "$here/../s31/hunt.sh" "$@"
