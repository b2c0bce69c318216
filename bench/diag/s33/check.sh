#!/usr/bin/env bash
# Session 33, first call on the GPU machine: the GPU suite for session 32's
# two codegen warning fixes (g64 without per-point loads; unsigned compares
# with 0 as constants), NVIDIA's OpenCL PTX of the codegen corpus through
# ptx_s16.py, then random graphs past session 32's hunt for the rest of the
# call (bench/diag/s32/hunt.sh SECONDS FROM).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../gpu_env.sh"
git log --oneline -1 2>/dev/null || true
build/gpu/fusec build --target opencl --cache "$OUT/ptxcache" tests/codegen/corpus.kir 2>&1 | tail -n 2
python3 "$here/../s32/ptx_s16.py" "$OUT"/ptxcache/* | tee "$OUT/ptx.txt"
rm -rf "$OUT/ptxcache"
(cd build/gpu && timeout 300 ctest -V -j 6 -E fuzz > "$OUT/ctest.txt" 2>&1; echo "ctest rc=$?" >> "$OUT/ctest.txt")
grep -E "tests passed|tests failed|graphs \(corpus|run through|CHECK failed|ctest rc|\*\*\*" "$OUT/ctest.txt" | head -30
left=$(( ${CALL_S:-560} - SECONDS - 20 ))
[ "$left" -gt 30 ] && bash "$here/../s32/hunt.sh" "$left" "${FROM:-3800}"
