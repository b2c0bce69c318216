#!/usr/bin/env bash
# s24 call 2: the GPU benchmark at 2^26 and 2^28 at HEAD (after b212e72's b64 pair rule).
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
SIZES=26,28 NAME=h200-2026-11-28-s24-large timeout 560 bash bench/gpu_bench.sh h200 2>&1 | tail -40
if [ -d $OUT/rounds ]; then (cd $OUT && tar czf partial.tgz rounds *.txt && rm -rf rounds); fi
step done; ls $OUT
