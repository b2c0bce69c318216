#!/usr/bin/env bash
# s29 call 4: the full benchmark at 2^12 and 2^20 in 3 rounds (gpu_bench.sh), the peers rotating kfbench's count of input sets.
set -uo pipefail
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
SIZES=12,20 NAME=h200-2026-11-28-s29-small timeout 570 bash bench/gpu_bench.sh h200 2>&1 | tail -40
if [ -d $OUT/rounds ]; then (cd $OUT && tar czf partial.tgz rounds *.txt && rm -rf rounds); fi
ls $OUT
