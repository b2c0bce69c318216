#!/usr/bin/env bash
# Session 34, call 4: random graphs under fast math only (no exact pass, no
# corpus) with test_runtime's final skip rule (fast_runs: no approximated
# absolute error in an ill-conditioned operand), CUDA and NVIDIA's OpenCL
# side by side, in runs of 300 seeds from 2000 (call 3's hunt: seed 4278
# failed, s / cos(x)), until the call's time is spent.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
KFUSE_GPU_TARGET=test_runtime source "$here/../../gpu_env.sh"
end=$(( ${CALL_S:-330} ))
hunt() {
    local b=$1 first=2000
    while [ $((SECONDS + 40)) -lt $end ]; do
        (cd tests && KFUSE_CACHE=off KFUSE_TEST_CORPUS=none KFUSE_TEST_RANDOM=0 KFUSE_TEST_SEED=$first \
            KFUSE_TEST_FAST_RANDOM=300 timeout $((end - SECONDS)) ../build/gpu/tests/test_runtime $b 2>&1 |
            grep -E "CHECK failed|fast_math:|passed," | grep -v 'graphs_run > 20' | sed "s/^/[$b from $first] /")
        first=$((first + 300))
    done > "$OUT/hunt-$b.txt"
}
hunt cuda & hunt opencl &
wait
cat "$OUT"/hunt-*.txt
