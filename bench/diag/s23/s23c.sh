#!/usr/bin/env bash
# s23 call 3: the GPU benchmark at 2^26 and 2^28 (one round) at HEAD.
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
step built
step "benchmark"
SIZES=26,28 NAME=h200-2026-11-28-s23-large timeout 560 bash bench/gpu_bench.sh h200 2>&1 | tail -40
if [ -d $OUT/rounds ]; then (cd $OUT && tar czf partial.tgz rounds *.txt && rm -rf rounds); fi
step done; ls $OUT
