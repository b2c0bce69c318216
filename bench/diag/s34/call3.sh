#!/usr/bin/env bash
# Session 34, call 3: the GPU suite at the fast-math pass's final form
# (graphs whose approximations leave the tolerance by design skipped), the
# error table again, then random graphs under fast math only on CUDA and
# NVIDIA's OpenCL (KFUSE_TEST_FAST_RANDOM, no exact pass, no corpus) past
# the suite's seeds for the rest of the call.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../gpu_env.sh"
gcc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -Ibuild/gpu/include "$here/fast_err.c" -o build/gpu/fast_err \
    -Lbuild/gpu -lkfuse -Wl,-rpath,"$PWD/build/gpu" -lm
for b in cuda opencl; do build/gpu/fast_err $b > "$OUT/err-$b.txt"; done
(cd build/gpu && timeout 330 ctest -V -j 6 -E fuzz > "$OUT/ctest.txt" 2>&1; echo "ctest rc=$?" >> "$OUT/ctest.txt")
grep -E "tests passed|tests failed|graphs \(corpus|fast_math:|CHECK failed|ctest rc|\*\*\*|NVRTC:" "$OUT/ctest.txt" | head -40
left=$(( ${CALL_S:-560} - SECONDS ))
for b in cuda opencl; do
    (cd tests && KFUSE_CACHE=off KFUSE_TEST_CORPUS=none KFUSE_TEST_RANDOM=0 KFUSE_TEST_SEED=${FROM:-2000} \
        KFUSE_TEST_FAST_RANDOM=4000 timeout $((left / 2 - 5)) ../build/gpu/tests/test_runtime $b > "$OUT/hunt-$b.txt" 2>&1)
    echo "hunt $b (fast math, seeds from ${FROM:-2000}): rc=$? $(grep -c '^ok' "$OUT/hunt-$b.txt") checks passed"
    grep -E "CHECK failed|fast_math:|passed," "$OUT/hunt-$b.txt" | grep -v 'graphs_run > 20' | head -8
done
true
