#!/usr/bin/env bash
# s29 call 5: rowsum at [1024, 1024] (0.95 of torch.compile in sessions 28 and 29's benchmarks): kfuse's warpv
# against hand kernels (bench/diag/s29/kernels/rows_hand.cu) and torch.compile in one process
# (bench/diag/s29/rows_hand.py); the SASS of each and of Triton's kernel, and Triton's source and config.
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
KFUSE_GPU_TARGET=fusec source bench/gpu_env.sh >/dev/null
export PATH=/usr/local/cuda/bin:$PATH
K=/tmp/k29; mkdir -p $K
build/gpu/fusec emit --target cuda bench/workloads.kir --graph rowsum > $K/rowsum.cu
cp bench/diag/s29/kernels/rows_hand.cu $K/
for f in $K/*.cu; do
    nvcc -cubin -arch=sm_90 -O3 -DKF_ONE_PASS -o ${f%.cu}.cubin $f || echo "nvcc FAILED: $f"
    cuobjdump -res-usage ${f%.cu}.cubin | grep -E "Function|REG"
    cuobjdump -sass ${f%.cu}.cubin > ${f%.cu}.sass
done
step kernels
timeout 400 python3 bench/diag/s29/rows_hand.py $K 7 300 2>&1 | grep -v Warning; echo "rc=$?"
step probe
mkdir -p $OUT/k && cp $K/*.sass $OUT/k/
for d in /tmp/torchinductor_* ~/.triton/cache /root/.triton/cache; do [ -d "$d" ] || continue
    for f in $(grep -rl "def triton_per_fused_sum" $d 2>/dev/null | head -4); do cp "$f" $OUT/k/ 2>/dev/null; done
    for c in $(find $d -name "triton_per_fused_sum*.cubin" 2>/dev/null | head -4); do
        b=$(basename $(dirname $c))-$(basename $c .cubin); cuobjdump -sass $c > $OUT/k/$b.sass; cuobjdump -res-usage $c | grep -E "REG"
        ls $(dirname $c) | head; cat $(dirname $c)/*.json 2>/dev/null | head -c 600; echo
    done
done
for s in $OUT/k/*.sass; do
    awk -v c="$(basename $s)" '/Function :/ { f = $3; seen[f] = 0 }
        /^ +\/\*[0-9a-f]+\*\// && !/NOP/ { n[f]++; if (!seen[f]) { if (/LDG/) seen[f] = 1; else pre[f]++ } }
        END { for (f in n) if (f ~ /warpv|rs_|triton/) printf "%s %s: %d instructions (no NOPs), %d before the first LDG\n", c, f, n[f], pre[f] }' $s
done
step done
