#!/usr/bin/env bash
# s24 call 4: the GPU benchmark at 2^12 and 2^20 (3 rounds) at HEAD.
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
SIZES=12,20 NAME=h200-2026-11-28-s24-small timeout 540 bash bench/gpu_bench.sh h200 2>&1 | tail -40
if [ -d $OUT/rounds ]; then (cd $OUT && tar czf partial.tgz rounds *.txt && rm -rf rounds); fi
step done; ls $OUT
