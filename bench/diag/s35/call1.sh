#!/usr/bin/env bash
# Session 35, call 1: the GPU suite (CUDA, NVIDIA's OpenCL, the CUDA tests
# under compute-sanitizer) at session 34's final fast-math pass and with
# the comparator's slack below float sums (kf_rg_sum_slack), then random
# graphs, exact and fast-math passes both (no corpus), on CUDA and NVIDIA's
# OpenCL side by side, in runs of 200 seeds from FROM (default 5000: past
# the suite's and session 34's), until CALL_S seconds (default 560) are spent.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../gpu_env.sh"
(cd build/gpu && timeout 330 ctest -V -j 6 -E fuzz > "$OUT/ctest.txt" 2>&1; echo "ctest rc=$?" >> "$OUT/ctest.txt")
grep -E "tests passed|tests failed|graphs \(corpus|fast_math:|CHECK failed|ctest rc|\*\*\*|NVRTC:" "$OUT/ctest.txt" | head -40
end=$(( ${CALL_S:-560} ))
hunt() {
    local b=$1 first=${FROM:-5000}
    while [ $((SECONDS + 40)) -lt $end ]; do
        (cd tests && KFUSE_CACHE=off KFUSE_TEST_CORPUS=none KFUSE_TEST_RANDOM=200 KFUSE_TEST_SEED=$first \
            KFUSE_TEST_FAST_RANDOM=200 timeout $((end - SECONDS)) ../build/gpu/tests/test_runtime $b 2>&1 |
            grep -E "CHECK failed|graphs \(|fast_math:|passed," | sed "s/^/[$b from $first] /")
        first=$((first + 200))
    done > "$OUT/hunt-$b.txt"
}
hunt cuda & hunt opencl &
wait
cat "$OUT"/hunt-*.txt
