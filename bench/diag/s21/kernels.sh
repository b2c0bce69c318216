#!/usr/bin/env bash
# The kernels bench/diag/s21/probe.py loads, into DIR: dot.cu and
# discount.cu (`fusec emit --target cuda` of bench/workloads.kir),
# kernels/dot_small.cu, session 16's flat discount kernels
# (../s16/kernels/layouts.cu) and variants.py's dot_var.cu and
# disc_var.cu; on
# the GPU machine CUBIN=1 builds each .cu in DIR (nvcc -cubin -arch=sm_90
# -O3 -DKF_ONE_PASS) and writes their registers and SASS instruction counts
# (all, and before the first global load) to DIR/sass.txt.
# Usage: bash bench/diag/s21/kernels.sh FUSEC DIR;  CUBIN=1 bash bench/diag/s21/kernels.sh - DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$2
mkdir -p "$out"
if [ "${CUBIN:-0}" = 1 ]; then
    : > "$out/sass.txt"
    for f in "$out"/*.cu; do
        c=${f%.cu}.cubin
        nvcc -cubin -arch=sm_90 -O3 -DKF_ONE_PASS -o "$c" "$f"
        cuobjdump -res-usage "$c" | grep -E "Function|REG" >> "$out/sass.txt" || true
        cuobjdump -sass "$c" > "${f%.cu}.sass"
        awk -v c="$(basename "$c")" '/Function :/ { f = $3; seen[f] = 0 }
            /^ +\/\*[0-9a-f]+\*\// && !/NOP/ { n[f]++; if (!seen[f]) { if (/LDG/) seen[f] = 1; else pre[f]++ } }
            END { for (f in n) printf "%s %s: %d instructions (no NOPs), %d before the first LDG\n", c, f, n[f], pre[f] }' \
            "${f%.cu}.sass" >> "$out/sass.txt"
    done
    exit 0
fi
for g in dot discount; do
    "$1" emit --target cuda "$here/../../workloads.kir" --graph $g > "$out/$g.cu"
done
cp "$here/kernels/dot_small.cu" "$here/../s16/kernels/layouts.cu" "$out/"
python3 "$here/variants.py" "$out"
