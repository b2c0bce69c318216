#!/usr/bin/env bash
# Build the kernels bench/diag/s16/layouts.py loads into DIR (default
# /tmp/s16-kernels), each to a cubin: discount.cu from `fusec emit` (b64
# as kfuse emits it now); kernels/discount_b64x1.cu and discount_b64x4.cu,
# b64 as emitted with one vector a thread (4ef94c9) and with four in 64
# bits (tried and reverted in session 16), entry points only, each behind
# discount.cu's module head (helpers, meta struct, body); kernels/layouts.cu
# (flat layouts); and variants.py's edits of those two b64s.
# Usage: bash bench/diag/s16/kernels.sh [FUSEC] [DIR]   (FUSEC default build/dev/fusec)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
fusec=${1:-$root/build/dev/fusec}
out=${2:-/tmp/s16-kernels}
mkdir -p "$out"
"$fusec" emit --target cuda "$root/bench/workloads.kir" --graph discount > "$out/discount.cu"
awk '/^extern "C" __global__/ { exit } { print }' "$out/discount.cu" > "$out/discount_head.cuh"
for k in discount_b64x1 discount_b64x4; do
    cat "$out/discount_head.cuh" "$here/kernels/$k.cu" > "$out/$k.cu"
done
cp "$here/kernels/layouts.cu" "$out/"
python3 "$here/variants.py" "$out"
for f in "$out"/*.cu; do
    nvcc -cubin -arch=sm_90 -O3 -DKF_ONE_PASS -o "${f%.cu}.cubin" "$f"
done
