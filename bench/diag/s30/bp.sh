#!/usr/bin/env bash
# s30: boxplus with a branch-free f64 division against the emitted kernels and torch.compile, one process.
set -uo pipefail
D=$(dirname "$0")
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
KFUSE_GPU_TARGET=fusec source bench/gpu_env.sh >/dev/null
export PATH=/usr/local/cuda/bin:$PATH
K=/tmp/k30; mkdir -p $K
build/gpu/fusec emit --target cuda bench/workloads.kir --graph boxplus > $K/bp.cu
( cat $D/kdiv.h; sed 's/__fdiv_rn(/kf_div_f64(/' $K/bp.cu ) > $K/bp_d.cu
sed 's/__fdiv_rn(/__fdividef(/; s/expf(/__expf(/g; s/logf(/__logf(/' $K/bp.cu > $K/bp_fast.cu
cp $D/kdiv.h $D/divchk.cu $K/
for f in bp bp_d bp_fast divchk; do
    nvcc -cubin -arch=sm_90 -O3 -DKF_ONE_PASS -o $K/$f.cubin $K/$f.cu || echo "nvcc FAILED: $f"
    cuobjdump -res-usage $K/$f.cubin | grep -E "REG" | head -4
    cuobjdump -sass $K/$f.cubin | awk '/Function :/ { f = $3 } /^ +\/\*[0-9a-f]+\*\// && !/NOP/ { n[f]++ } END { for (f in n) print "  " f, n[f] }'
done
step kernels
for p in $(seq ${PROCS:-1}); do
    timeout 250 python3 $D/bp_hand.py $K ${ROUNDS:-7} 300 2>&1 | grep -v Warning; echo "rc=$?"
    step "process $p"
done
