#!/usr/bin/env bash
# Rebuild the kernel sources same_process.py and launch_floor.c load, into
# DIR (default /tmp/s15-kernels), then their cubins there.
#   - x5.cu, saxpy.cu, rowsum.cu: `fusec emit` (unchanged since 2118113).
#   - rowsum.cu also gets rowsum_warp_bd, a copy of `warp` whose rows per
#     block follow blockDim.
#   - discount_old.cu and discount_new.cu: b64 as emitted at 2118113 and
#     50a2e01 (kernels/, entry points only), behind the module head of
#     today's `fusec emit` of discount (helpers, meta struct, body).
#   - disc_var.cu: that head, variants.cu (an evict_last load, Triton's
#     flat layout), and discount_new's b64 with its broadcast load made
#     evict_last.
# Usage: bash bench/diag/s15/kernels.sh [FUSEC] [DIR]   (FUSEC default build/dev/fusec)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
fusec=${1:-$root/build/dev/fusec}
out=${2:-/tmp/s15-kernels}
mkdir -p "$out"
for g in x5 saxpy rowsum; do
    "$fusec" emit --target cuda "$root/bench/workloads.kir" --graph $g > "$out/$g.cu"
done
cp "$here/kernels/bare.cu" "$out/"
"$fusec" emit --target cuda "$root/bench/workloads.kir" --graph discount |
    awk '/^extern "C" __global__/ { exit } { print }' > "$out/discount_head.cuh"
for k in discount_old discount_new; do
    cat "$out/discount_head.cuh" "$here/kernels/$k.cu" > "$out/$k.cu"
done
python3 - "$out" "$here/kernels/variants.cu" <<'PY'
import re, sys
out, variants = sys.argv[1], open(sys.argv[2]).read()

def kernel(src, suffix):
    """the text of the entry point whose name ends in suffix, and its name"""
    m = re.search(r'extern "C" __global__ void __launch_bounds__\(256\) (\w+_%s)\(' % suffix, src)
    return src[m.start():src.index('\n}\n', m.start()) + 3], m.group(1)

rs = open(out + "/rowsum.cu").read()
w, name = kernel(rs, "warp")
bd = w.replace(name + "(", "rowsum_warp_bd(").replace("blockIdx.x * 8", "blockIdx.x * (blockDim.x / 32)")
bd = bd.replace("gridDim.x * 8", "gridDim.x * (blockDim.x / 32)")
open(out + "/rowsum.cu", "w").write(rs + "\n" + bd)
dn = open(out + "/discount_new.cu").read()
b, name = kernel(dn, "b64")
b = b.replace(name + "(", "disc_b64_evl(").replace("const uint4 u = ((const uint4 *)p0)[iv];",
                                                    "const uint4 u = ld_evict_last((const uint4 *)p0 + iv);")
open(out + "/disc_var.cu", "w").write(dn[:dn.index('extern "C" __global__')] + variants + b)
PY
for f in "$out"/*.cu; do
    nvcc -cubin -arch=sm_90 -O3 -DKF_ONE_PASS -o "${f%.cu}.cubin" "$f"
done
