#!/usr/bin/env bash
# Build the kernels bench/diag/s18/probe.py loads into DIR: `fusec emit
# --target cuda` of dot and rowsum (bench/workloads.kir), each to a cubin.
# Usage: bash bench/diag/s18/kernels.sh [FUSEC] [DIR]   (FUSEC default build/dev/fusec)
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
fusec=${1:-$root/build/dev/fusec}
out=${2:-/tmp/s18-kernels}
mkdir -p "$out"
for g in dot rowsum; do
    "$fusec" emit --target cuda "$root/bench/workloads.kir" --graph $g > "$out/$g.cu"
    nvcc -cubin -arch=sm_90 -O3 -DKF_ONE_PASS -o "$out/$g.cubin" "$out/$g.cu"
done
# <g>_hc.cu: the chunking from the host: the meta block two int64 longer
# (nchunks, chunk elements: what kf_cg_red_chunks gives, or any other
# split), in place of the kernel's computation of them with 64-bit
# divides, and the chunk of block w in 32 bits
for g in dot rowsum; do
    k=$(sed -n 's/^    long long v\[\([0-9]*\)\];$/\1/p' "$out/$g.cu")
    perl -0pe "s/long long v\\[$k\\];/long long v[$((k + 2))];/;
               s/    const unsigned long long ntiles = .*?reduced elements per chunk \\*\\/\\n/    const unsigned long long nchunks = (unsigned long long)m.v[$k], ce = (unsigned long long)m.v[$((k + 1))];\\n/sg;
               s/\\bw % nchunks/(unsigned)w % (unsigned)nchunks/g; s/\\bw \\/ nchunks/(unsigned)w \\/ (unsigned)nchunks/g" \
        "$out/$g.cu" > "$out/${g}_hc.cu"
    test "$(grep -c "ce = (unsigned long long)m.v\[$((k + 1))\]" "$out/${g}_hc.cu")" -ge 1
    nvcc -cubin -arch=sm_90 -O3 -DKF_ONE_PASS -o "$out/${g}_hc.cubin" "$out/${g}_hc.cu"
done
