#!/usr/bin/env bash
# Build the kernels bench/diag/s17/probe.py loads into DIR, each to a cubin
# (nvcc -cubin -arch=sm_90 -O3 -DKF_ONE_PASS): `fusec emit` of rowsum, x5,
# discount and dot (as kfuse emits them now); rowsum_old.cu, rowsum's warp
# as emitted at 24f935e, and two edits of it (below); kernels/rows.cu; and
# s16's flat layouts; discount_1c.cu, an edit of discount's b64 (below).
# Usage: bash bench/diag/s17/kernels.sh [FUSEC] [DIR]   (FUSEC default build/dev/fusec)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
fusec=${1:-$root/build/dev/fusec}
out=${2:-/tmp/s17-kernels}
mkdir -p "$out"
for g in rowsum x5 discount dot; do
    "$fusec" emit --target cuda "$root/bench/workloads.kir" --graph $g > "$out/$g.cu"
done
# rowsum_old.cu: warp as emitted at 24f935e (kernels/rowsum_warp_24f935e.cu)
# behind today's module head (helpers, meta, body: the same text), and two
# edits of it: rowsum_cs.cu, its loads marked evict-first (__ldcs), and
# rowsum_rb.cu, its rows a block from the block size (blockDim.x / 32)
awk '/^extern "C" __global__/ { exit } { print }' "$out/rowsum.cu" | sed '$d' > "$out/rowsum_head.cuh"
cat "$out/rowsum_head.cuh" "$here/kernels/rowsum_warp_24f935e.cu" > "$out/rowsum_old.cu"
sed 's|((const uint4 \*)(p0 + c0 \* st0_0 + c1))\[0\]|__ldcs((const uint4 *)(p0 + c0 * st0_0 + c1))|' \
    "$out/rowsum_old.cu" > "$out/rowsum_cs.cu"
test "$(grep -c __ldcs "$out/rowsum_cs.cu")" -eq 2
sed 's|(unsigned long long)blockIdx.x \* 8|(unsigned long long)blockIdx.x * (blockDim.x / 32)|; s|(unsigned long long)gridDim.x \* 8|(unsigned long long)gridDim.x * (blockDim.x / 32)|' \
    "$out/rowsum_old.cu" > "$out/rowsum_rb.cu"
test "$(grep -o 'blockDim.x / 32' "$out/rowsum_rb.cu" | wc -l)" -eq 2
# rowsum_ng.cu: rowsum_old.cu without its layout test (gvec = 1: valid for
# the probe's contiguous rows); rowsum_rb32.cu: rowsum_rb.cu built for
# blocks of at most 32 threads
perl -0pe 's/const int gvec = d1 % 4 == 0 &&\n[^;]*;/const int gvec = 1;/' "$out/rowsum_old.cu" > "$out/rowsum_ng.cu"
test "$(grep -c 'const int gvec = 1;' "$out/rowsum_ng.cu")" -eq 1
sed 's/__launch_bounds__(256)/__launch_bounds__(32)/' "$out/rowsum_rb.cu" > "$out/rowsum_rb32.cu"
test "$(grep -c '__launch_bounds__(32)' "$out/rowsum_rb32.cu")" -eq 1
# discount_1c.cu: b64 whose call fits one chunk (nblk <= CT) skips the chunk divide
sed 's|const unsigned int c = (unsigned int)w / CT, r|const unsigned int c = nblk <= CT ? 0u : (unsigned int)w / CT, r|' \
    "$out/discount.cu" > "$out/discount_1c.cu"
test "$(grep -c 'nblk <= CT ? 0u' "$out/discount_1c.cu")" -eq 1
cp "$here/kernels/rows.cu" "$here/../s16/kernels/layouts.cu" "$out/"
rm "$out/rowsum_head.cuh"
for f in "$out"/*.cu; do
    nvcc -cubin -arch=sm_90 -O3 -DKF_ONE_PASS -o "${f%.cu}.cubin" "$f"
done
