#!/usr/bin/env bash
# s23 call 2: test_runtime cuda (test_wrap's second-context check; corpus runtime,fuse and 20 random graphs),
# then the GPU benchmark at 2^12 and 2^20 (3 rounds) at HEAD.
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
KFUSE_GPU_TARGET=test_runtime source bench/gpu_env.sh
step built
(cd tests && KFUSE_TEST_RANDOM=20 KFUSE_TEST_CORPUS=runtime,fuse timeout 120 ../build/gpu/tests/test_runtime cuda) > $OUT/rt.txt 2>&1
echo "test_runtime cuda: rc=$?"; tail -3 $OUT/rt.txt; grep "CHECK failed" $OUT/rt.txt | head
step "benchmark"
SIZES=12,20 NAME=h200-2026-11-28-s23-small timeout 470 bash bench/gpu_bench.sh h200 2>&1 | tail -40
if [ -d $OUT/rounds ]; then (cd $OUT && tar czf partial.tgz rounds *.txt && rm -rf rounds); fi
step done; ls $OUT
