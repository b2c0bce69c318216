#!/usr/bin/env bash
# Emit the kernels bench/diag/s19/probe.py loads: dot and rowsum
# (bench/workloads.kir) from this tree's fusec (<g>.cu) and from BASE_FUSEC
# (<g>_base.cu), into DIR; on the GPU machine, CUBIN=1 builds the cubins
# (nvcc -cubin -arch=sm_90 -O3 -DKF_ONE_PASS) of every .cu in DIR.
# Usage: bash bench/diag/s19/kernels.sh FUSEC BASE_FUSEC DIR;  CUBIN=1 bash bench/diag/s19/kernels.sh - - DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
out=$3
mkdir -p "$out"
if [ "${CUBIN:-0}" = 1 ]; then
    for f in "$out"/*.cu; do nvcc -cubin -arch=sm_90 -O3 -DKF_ONE_PASS -o "${f%.cu}.cubin" "$f"; done
    exit 0
fi
for g in dot rowsum; do
    "$1" emit --target cuda "$root/bench/workloads.kir" --graph $g > "$out/$g.cu"
    "$2" emit --target cuda "$root/bench/workloads.kir" --graph $g > "$out/${g}_base.cu"
done
