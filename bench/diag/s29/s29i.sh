#!/usr/bin/env bash
# s29 call 9: rowsum: warpv against wv_clamp, wv_32 (clamp and 32 bits) and wv_r32 (32 bits, the guard kept), and
# rs_kf8, torch.compile beside, three processes.
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
KFUSE_GPU_TARGET=fusec source bench/gpu_env.sh >/dev/null
export PATH=/usr/local/cuda/bin:$PATH
K=/tmp/k29v; mkdir -p $K
build/gpu/fusec emit --target cuda bench/workloads.kir --graph rowsum > $K/rowsum.cu
cp bench/diag/s29/kernels/rows_hand.cu $K/
python3 bench/diag/s29/warpv_var.py $K
for f in $K/*.cu; do nvcc -cubin -arch=sm_90 -O3 -DKF_ONE_PASS -o ${f%.cu}.cubin $f || echo "nvcc FAILED: $f"; done
step kernels
for p in 1 2 3; do PROBE=r32 timeout 200 python3 bench/diag/s29/rows_hand.py $K 7 300 2>&1 | grep -v Warning; echo "rc=$?"; step "process $p"; done
