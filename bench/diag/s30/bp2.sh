#!/usr/bin/env bash
# s30 call 2: boxplus's division: the emitted __fdiv_rn, its fast path alone (no check: the ceiling of
# hoisting the slow path), __fdividef with accurate exp/log, and all-approximate math; one process each.
set -uo pipefail
D=$(dirname "$0")
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
KFUSE_GPU_TARGET=fusec source bench/gpu_env.sh >/dev/null
export PATH=/usr/local/cuda/bin:$PATH
K=/tmp/k30b; mkdir -p $K
build/gpu/fusec emit --target cuda bench/workloads.kir --graph boxplus > $K/bp.cu
( cat $D/kdivf.h; sed 's/__fdiv_rn(/kf_div_nf(/' $K/bp.cu ) > $K/bp_nf.cu
sed 's/__fdiv_rn(/__fdividef(/' $K/bp.cu > $K/bp_fd.cu
sed 's/__fdiv_rn(/__fdividef(/; s/expf(/__expf(/g; s/logf(/__logf(/' $K/bp.cu > $K/bp_fast.cu
for f in bp bp_nf bp_fd bp_fast; do
    nvcc -cubin -arch=sm_90 -O3 -DKF_ONE_PASS -o $K/$f.cubin $K/$f.cu || echo "nvcc FAILED: $f"
done
step kernels
for p in $(seq ${PROCS:-1}); do
    timeout 250 python3 $D/bp_div.py $K ${ROUNDS:-7} 300 2>&1 | grep -v Warning; echo "rc=$?"
    step "process $p"
done
