#!/usr/bin/env bash
# s30 calls 1-2: boxplus's division.  Builds the emitted boxplus module four ways (__fdiv_rn as emitted;
# kf_div_f64 from kdiv.h, branch-free through f64; kf_div_nf from kdivf.h, __fdiv_rn's fast path with no
# slow path; __fdividef; all-approximate math) and divchk.cu, then runs bp_probe.py PROCS times.
# Usage (repository root, on the GPU machine): PROBE=f64|nf [PROCS=N] [ROUNDS=R] bash bench/diag/s30/bp.sh
set -uo pipefail
D=$(dirname "$0")
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
KFUSE_GPU_TARGET=fusec source bench/gpu_env.sh >/dev/null
export PATH=/usr/local/cuda/bin:$PATH
K=/tmp/k30; mkdir -p $K
build/gpu/fusec emit --target cuda bench/workloads.kir --graph boxplus > $K/bp.cu
( cat $D/kdiv.h; sed 's/__fdiv_rn(/kf_div_f64(/' $K/bp.cu ) > $K/bp_d.cu
( cat $D/kdivf.h; sed 's/__fdiv_rn(/kf_div_nf(/' $K/bp.cu ) > $K/bp_nf.cu
sed 's/__fdiv_rn(/__fdividef(/' $K/bp.cu > $K/bp_fd.cu
sed 's/__fdiv_rn(/__fdividef(/; s/expf(/__expf(/g; s/logf(/__logf(/' $K/bp.cu > $K/bp_fast.cu
cp $D/kdiv.h $D/divchk.cu $K/
for f in bp bp_d bp_nf bp_fd bp_fast divchk; do
    nvcc -cubin -arch=sm_90 -O3 -DKF_ONE_PASS -o $K/$f.cubin $K/$f.cu || echo "nvcc FAILED: $f"
done
step kernels
for p in $(seq ${PROCS:-1}); do
    timeout 250 python3 $D/bp_probe.py $K ${ROUNDS:-7} 300 2>&1 | grep -v Warning; echo "rc=$?"
    step "process $p"
done
