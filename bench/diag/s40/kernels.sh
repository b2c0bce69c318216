#!/usr/bin/env bash
# Session 40: boxplus's module (fusec emit --target cuda of bench/workloads.kir)
# behind kernels/math.cuh, built as the runtime builds it (nvcc -cubin
# -arch=sm_90 --fmad=false -DKF_ONE_PASS) once as emitted and once per
# swapped part of its math; their registers and SASS instruction counts into
# DIR/sass.txt.  Also divcheck (kf_ddiv against __fdiv_rn) and its naive
# twin, which must fail.
# Usage: bash bench/diag/s40/kernels.sh FUSEC DIR   (on the GPU machine)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=$2
mkdir -p "$out"
"$1" emit --target cuda "$root/bench/workloads.kir" --graph boxplus > "$out/boxplus.cu"
cat "$here/kernels/math.cuh" "$out/boxplus.cu" > "$out/bx.cu"
: > "$out/sass.txt"
for v in precise:"" ddiv:-DKF_DDIV fastdiv:-DKF_FAST_DIV fastlog:-DKF_FAST_LOG fastexp:-DKF_FAST_EXP \
         fast:"-DKF_FAST_DIV -DKF_FAST_LOG -DKF_FAST_EXP"; do
    name=${v%%:*}
    # shellcheck disable=SC2086
    nvcc -cubin -arch=sm_90 -O3 --fmad=false -DKF_ONE_PASS -diag-suppress 177 ${v#*:} -o "$out/bx_$name.cubin" "$out/bx.cu"
    cuobjdump -res-usage "$out/bx_$name.cubin" | grep -E "Function|REG" | sed "s/^/$name /" >> "$out/sass.txt" || true
    cuobjdump -sass "$out/bx_$name.cubin" | awk -v c=$name '/Function :/ { f = $3 } /^ +\/\*[0-9a-f]+\*\// && !/NOP/ { n[f]++ }
        /BRA|CALL/ { b[f]++ } END { for (f in n) printf "%s %s: %d instructions (no NOPs), %d branches or calls\n", c, f, n[f], b[f] }' >> "$out/sass.txt" || true
done
nvcc -O3 -arch=sm_90 --fmad=false -o "$out/divcheck" "$here/divcheck.cu"
nvcc -O3 -arch=sm_90 --fmad=false -DKF_DDIV_NAIVE -o "$out/divcheck_naive" "$here/divcheck.cu"
