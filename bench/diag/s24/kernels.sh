#!/usr/bin/env bash
# The kernels bench/diag/s24/probe.py loads, into DIR: `fusec emit --target
# cuda` of rowsum (bench/workloads.kir) and rowsum_w.cu, the same module
# with copies of `warpv` at W = 1, 2 and 4 warps (rows) a block instead of
# 8 (entry <prefix>warpv_wW, __launch_bounds__(32 W)); and x5.cl (`fusec
# emit --target opencl`) for clqueue.c.  With nvcc on the path each .cu is
# built (nvcc -cubin -arch=sm_90 -O3 -DKF_ONE_PASS) and ptxas's resource
# report goes to DIR/res.txt.
# Usage: bash bench/diag/s24/kernels.sh FUSEC DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$2
mkdir -p "$out"
"$1" emit --target cuda "$here/../../workloads.kir" --graph rowsum > "$out/rowsum.cu"
"$1" emit --target opencl "$here/../../workloads.kir" --graph x5 > "$out/x5.cl"
python3 - "$out" <<'PY'
import re, sys
d = sys.argv[1]
src = open(d + "/rowsum.cu").read()
m = re.search(r'extern "C" __global__ void __launch_bounds__\(256\) (\w+_warpv)\(.*?\n}\n', src, re.S)
assert m, "no warpv entry"
fn, copies = m.group(0), []
for w in (1, 2, 4):
    c = fn.replace(m.group(1) + "(", "%s_w%d(" % (m.group(1), w)).replace("__launch_bounds__(256)",
                                                                          "__launch_bounds__(%d)" % (32 * w))
    n = c.count("blockIdx.x * 8") + c.count("gridDim.x * 8")
    assert n == 2, n
    copies.append(c.replace("blockIdx.x * 8", "blockIdx.x * %d" % w).replace("gridDim.x * 8", "gridDim.x * %d" % w))
open(d + "/rowsum_w.cu", "w").write(src + "\n" + "\n".join(copies))
PY
if command -v nvcc > /dev/null; then
    : > "$out/res.txt"
    for f in "$out"/*.cu; do
        nvcc -cubin -arch=sm_90 -O3 -DKF_ONE_PASS --resource-usage -o "${f%.cu}.cubin" "$f" 2>> "$out/res.txt"
    done
fi
