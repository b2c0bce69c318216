#!/usr/bin/env bash
# Emit the kernels bench/diag/s20/probe.py loads, into DIR: boxplus.cu and
# gather_boxplus.cu (`fusec emit --target cuda` of bench/workloads.kir) and
# bx_var.cu (kernels/fast.cuh, the boxplus module, kernels/bx_layouts.cu),
# and variants.py's bx_ld.cu and gb_var.cu.
# On the GPU machine CUBIN=1 builds the cubins (nvcc -cubin -arch=sm_90 -O3
# -DKF_ONE_PASS): gather_boxplus, gb_var, bx_var three ways (precise,
# bx_fast with -DKF_FAST, bx_div with -DKF_FAST_DIV) and bx_ld two ways
# (bx_ld, bx_ld_fast with -DKF_FAST), with their SASS
# instruction counts and registers into DIR/sass.txt.
# Usage: bash bench/diag/s20/kernels.sh FUSEC DIR;  CUBIN=1 bash bench/diag/s20/kernels.sh - DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=$2
mkdir -p "$out"
if [ "${CUBIN:-0}" = 1 ]; then
    cc() { nvcc -cubin -arch=sm_90 -O3 -DKF_ONE_PASS "${@:3}" -o "$out/$2.cubin" "$out/$1.cu"; }
    cc gather_boxplus gather_boxplus
    cc bx_var bx_var
    cc bx_var bx_fast -DKF_FAST
    cc bx_var bx_div -DKF_FAST_DIV
    cc bx_ld bx_ld
    cc bx_ld bx_ld_fast -DKF_FAST
    cc gb_var gb_var
    : > "$out/sass.txt"
    for c in gather_boxplus bx_var bx_fast bx_div bx_ld bx_ld_fast gb_var; do
        cuobjdump -res-usage "$out/$c.cubin" | grep -E "Function|REG" >> "$out/sass.txt" || true
        cuobjdump -sass "$out/$c.cubin" | awk -v c=$c '/Function :/ { f = $3 } /^ +\/\*[0-9a-f]+\*\// && !/NOP/ { n[f]++ }
            END { for (f in n) printf "%s %s: %d instructions (no NOPs)\n", c, f, n[f] }' >> "$out/sass.txt" || true
    done
    exit 0
fi
for g in boxplus gather_boxplus; do
    "$1" emit --target cuda "$root/bench/workloads.kir" --graph $g > "$out/$g.cu"
done
cat "$here/kernels/fast.cuh" "$out/boxplus.cu" "$here/kernels/bx_layouts.cu" > "$out/bx_var.cu"
python3 "$here/variants.py" "$out"
