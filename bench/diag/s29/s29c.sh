#!/usr/bin/env bash
# s29 call 3: the full benchmark at 2^26 and 2^28 (gpu_bench.sh), the peers rotating kfbench's count of input sets.
set -uo pipefail
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
SIZES=26,28 NAME=h200-2026-11-28-s29-large timeout 570 bash bench/gpu_bench.sh h200 2>&1 | tail -40
if [ -d $OUT/rounds ]; then (cd $OUT && tar czf partial.tgz rounds *.txt && rm -rf rounds); fi
ls $OUT
