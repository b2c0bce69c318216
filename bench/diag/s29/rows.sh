#!/usr/bin/env bash
# s29 calls 5-9: rowsum of [M, 1024] f32, kfuse's warpv against hand kernels (kernels/rows_hand.cu), edited copies
# of warpv (warpv_var.py) and torch.compile, in one process (rows_hand.py, s15's harness), PROCS processes.
# SASS=1 (call 5) also writes the SASS of every kernel and of Triton's, with registers and instruction counts.
# Usage (repository root, on the GPU machine): [PROBE=hand|var|param|r32] [PROCS=N] [SASS=1] bash bench/diag/s29/rows.sh
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
probe=${PROBE:-hand} procs=${PROCS:-1}
KFUSE_GPU_TARGET=fusec source bench/gpu_env.sh >/dev/null
export PATH=/usr/local/cuda/bin:$PATH
K=/tmp/k29; mkdir -p $K
build/gpu/fusec emit --target cuda bench/workloads.kir --graph rowsum > $K/rowsum.cu
cp bench/diag/s29/kernels/rows_hand.cu $K/
python3 bench/diag/s29/warpv_var.py $K
for f in $K/*.cu; do
    nvcc -cubin -arch=sm_90 -O3 -DKF_ONE_PASS -o ${f%.cu}.cubin $f || echo "nvcc FAILED: $f"
    [ "${SASS:-0}" = 1 ] || continue
    cuobjdump -res-usage ${f%.cu}.cubin | grep -E "Function|REG"
    cuobjdump -sass ${f%.cu}.cubin > ${f%.cu}.sass
done
step kernels
for p in $(seq $procs); do
    PROBE=$probe timeout 200 python3 bench/diag/s29/rows_hand.py $K 7 300 2>&1 | grep -v Warning; echo "rc=$?"
    step "process $p"
done
[ "${SASS:-0}" = 1 ] || exit 0
mkdir -p $OUT/k && cp $K/*.sass $OUT/k/
for d in /tmp/torchinductor_* ~/.triton/cache; do [ -d "$d" ] || continue
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
