#!/usr/bin/env bash
# Session 32, last call: random graphs past every earlier hunt's, without
# the suite: test_runtime on CUDA (from 1000 + FROM) and NVIDIA's OpenCL
# (from 1000 + FROM - 100), test_host on CUDA (from 5000 + FROM - 170),
# each for SECONDS, in runs of 100 graphs (the last one cut short).  Usage: hunt.sh SECONDS FROM.  Logs under $OUT.
set -uo pipefail
source "$(dirname "$0")/../../gpu_env.sh"
lim=$1 from=$2
cd tests
hunt() {   # name binary backend first: chunks of 100 graphs until SECONDS are spent
    local end=$((SECONDS + lim)) first=$4
    while [ $SECONDS -lt $end ]; do
        KFUSE_CACHE=off KFUSE_TEST_CORPUS=none KFUSE_TEST_SEED=$first KFUSE_TEST_RANDOM=100 \
            timeout $((end - SECONDS + 1)) "../build/gpu/tests/$2" "$3" 2>&1 |
            grep -E "CHECK failed|passed" | grep -v graphs_run | sed "s/^/[from $first] /" >> "$OUT/$1.txt"
        first=$((first + 100))
    done
}
hunt rt_cuda test_runtime cuda "$from" &
hunt rt_ocl test_runtime opencl $((from - 100)) &
hunt host_cuda test_host cuda $((from - 170)) &
wait
for f in rt_cuda rt_ocl host_cuda; do
    echo "== $f"
    grep -E "CHECK failed" "$OUT/$f.txt" | head -20
    tail -n 2 "$OUT/$f.txt"
done
