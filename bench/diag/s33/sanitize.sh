#!/usr/bin/env bash
# Session 33: kfuse's CUDA kernels under compute-sanitizer, which no
# session had run.  memcheck (out-of-bounds and misaligned global and
# shared accesses), racecheck (shared-memory hazards), synccheck (barriers
# in divergent code) and initcheck (reads of device memory never written)
# on test_runtime cuda (corpus and random graphs, dense and as strided
# views at unaligned offsets, sizes 1, 7, 1000, 66000), memcheck on
# test_host cuda, test_cuda and kfbench's workloads at 2^12 and 2^20; all at once, each cut at LIMIT seconds.
# memcheck leaves out API errors (--report-api-errors no): kfuse counts a
# kernel's parameters by asking cuFuncGetParamInfo for indices until it
# fails, and test_cuda asks for a missing kernel and too much memory on
# purpose.  R scales the random graphs (default 1: 40, 60, 20 and 20; the
# first, racecheck, synccheck and initcheck run the corpus as well).
# Logs under $OUT/san; the summary lines and the first reports are printed.
set -uo pipefail
source "$(dirname "$0")/../../gpu_env.sh"
uname -r
cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer /opt/nvidia/*/compute-sanitizer 2>/dev/null | head -1)
echo "compute-sanitizer: ${cs:-none}"; [ -n "$cs" ] || exit 1
$cs --version | tail -1
lim=${LIMIT:-400} r=${R:-1}
mkdir -p "$OUT/san"
cd tests
run() {   # name tool [VAR=value...] binary args
    local name=$1 tool=$2; shift 2
    local vars=()
    while [[ $1 == *=* ]]; do vars+=("$1"); shift; done
    local bin=$1; shift
    local api=()
    [ "$tool" = memcheck ] && api=(--report-api-errors no)
    timeout "$lim" env KFUSE_CACHE=off "${vars[@]}" "$cs" --tool "$tool" "${api[@]}" --print-limit 20 \
        "../build/gpu/tests/$bin" "$@" > "$OUT/san/$name.txt" 2>&1
    echo "rc=$?" >> "$OUT/san/$name.txt"
}
run rt_memcheck memcheck KFUSE_TEST_RANDOM=$((40 * r)) test_runtime cuda &
run rt_memcheck_r memcheck KFUSE_TEST_CORPUS=none KFUSE_TEST_SEED=$((40 * r)) KFUSE_TEST_RANDOM=$((60 * r)) test_runtime cuda &
run rt_racecheck racecheck KFUSE_TEST_RANDOM=$((20 * r)) test_runtime cuda &
run rt_synccheck synccheck KFUSE_TEST_RANDOM=$((20 * r)) test_runtime cuda &
run rt_initcheck initcheck KFUSE_TEST_RANDOM=$((20 * r)) test_runtime cuda &
run host_memcheck memcheck KFUSE_TEST_RANDOM=$((20 * r)) test_host cuda &
run cuda_memcheck memcheck test_cuda &
(cd .. && timeout "$lim" "$cs" --tool memcheck --report-api-errors no --print-limit 20 build/gpu/kfbench \
    --backend cuda --sizes 12,20 --reps 3 bench/workloads.kir > "$OUT/san/kfbench_memcheck.txt" 2>&1
    echo "rc=$?" >> "$OUT/san/kfbench_memcheck.txt") &
wait
for f in "$OUT"/san/*.txt; do
    echo "== $(basename "$f" .txt)"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed, |graphs \(corpus|^rc=" "$f" | tail -n 5
    grep -m 12 -E "^========= (Invalid|Uninitialized|Race|Barrier|Error|Warning|Program hit|.*hazard)" "$f"
done
