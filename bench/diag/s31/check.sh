#!/usr/bin/env bash
# Session 31, the last call: the abs probe, the two graphs the hunts caught
# (CUDA seed 3349 after the abs change, NVIDIA OpenCL seed 3126 after the
# fold change) and the GPU suite.  Logs under $OUT.
set -uo pipefail
bash "$(dirname "$0")/abs16.sh" 2>&1 | grep -E "mismatches|form"
source "$(dirname "$0")/../../gpu_env.sh"
cd tests
for c in "cuda 2349" "opencl 2126"; do
    set -- $c
    KFUSE_CACHE=off KFUSE_TEST_CORPUS=none KFUSE_TEST_SEED=$2 KFUSE_TEST_RANDOM=21 \
        ../build/gpu/tests/test_runtime "$1" 2>&1 | grep -E "CHECK failed|passed|graphs" | tee "$OUT/seed-$1.txt"
done
cd ..
(cd build/gpu && timeout 330 ctest -V -j 6 -E fuzz > "$OUT/ctest.txt" 2>&1; echo "ctest rc=$?" >> "$OUT/ctest.txt")
grep -E "^[0-9]+/[0-9]+ Test|tests passed|tests failed|graphs \(corpus|run through|CHECK failed|ctest rc" "$OUT/ctest.txt" | tail -n 14
