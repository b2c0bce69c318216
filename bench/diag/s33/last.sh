#!/usr/bin/env bash
# Session 33, last call: the GPU suite after test_runtime's output guards
# (64 poisoned bytes on each side of every output), with a compute-sanitizer
# hunt beside it on random graphs past calls 4-6 (memcheck from seed 1600,
# racecheck from seed 1120, test_runtime cuda, no corpus), each cut at HUNT
# seconds.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../gpu_env.sh"
lim=${HUNT:-240}
mkdir -p "$OUT/san"
san() {   # tool first: runs of 100 random graphs until HUNT seconds are spent
    local tool=$1 first=$2 end=$((SECONDS + lim)) api=()
    [ "$tool" = memcheck ] && api=(--report-api-errors no)
    while [ $SECONDS -lt $end ]; do
        (cd tests && KFUSE_CACHE=off KFUSE_TEST_CORPUS=none KFUSE_TEST_SEED=$first KFUSE_TEST_RANDOM=100 \
            timeout $((end - SECONDS + 1)) /usr/local/cuda/bin/compute-sanitizer --tool "$tool" "${api[@]}" \
            --print-limit 10 ../build/gpu/tests/test_runtime cuda 2>&1 | sed "s/^/[from $first] /") >> "$OUT/san/$tool.txt"
        first=$((first + 100))
    done
}
san memcheck 600 &
san racecheck 120 &
(cd build/gpu && timeout 400 ctest -V -j 6 -E fuzz > "$OUT/ctest.txt" 2>&1; echo "ctest rc=$?" >> "$OUT/ctest.txt")
wait
grep -E "tests passed|tests failed|graphs \(corpus|CHECK failed|ctest rc|\*\*\*|ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/ctest.txt" | head -40
grep -E "Test +#[0-9]+: (cuda_|test_runtime_c|test_host_cuda)" "$OUT/ctest.txt"
for f in "$OUT"/san/*.txt; do
    echo "== $(basename "$f" .txt) (runs of 100 graphs; the last one cut at $lim s)"
    grep -E "CHECK failed|passed,|ERROR SUMMARY|RACECHECK SUMMARY" "$f" | head -20
    grep -m 5 -E "=========  *(Invalid|Race|.*hazard)" "$f"
done
