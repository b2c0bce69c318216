#!/usr/bin/env bash
# Session 36, call 1, on the GPU machine from the repository root, with
# .deps/ and exp/ carried (exp/base: `git archive` of the commit before the
# change, its bench/results and bench/diag left out):
#   1. rowsum's warpv against its edited copies (warpv_var.py) and torch.compile in
#      one process (rows.py), two processes;
#   2. the launch rule under fast math (abi.c, branchy_node): bench/ab.sh of
#      exp/base against this tree, boxplus and iota with kfbench --fast-math
#      on CUDA, 2^20-2^28, three rounds, torch.compile (default math) in each.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
KFUSE_GPU_TARGET="fusec kfbench" source "$here/../../gpu_env.sh" >/dev/null
export PATH=/usr/local/cuda/bin:$PATH
step build
K=/tmp/k36; mkdir -p $K
build/gpu/fusec emit --target cuda bench/workloads.kir --graph rowsum > $K/rowsum.cu
cp bench/diag/s29/kernels/rows_hand.cu $K/
name=$(python3 "$here/warpv_var.py" $K) || exit 1
for f in $K/*.cu; do
    nvcc -cubin -arch=sm_90 -O3 -DKF_ONE_PASS -o "${f%.cu}.cubin" "$f" || echo "nvcc FAILED: $f"
done
step kernels
for p in 1 2; do
    timeout 200 python3 "$here/rows.py" $K "$name" 7 300 2>&1 | grep -v Warning
    step "rows process $p"
done
ROUNDS=3 BACKENDS=cuda KFBENCH_ARGS=--fast-math PEERS="--systems torch.compile" \
    timeout 330 bash bench/ab.sh exp/base 20,22,24,26,28 50 boxplus iota 2>&1 | tail -20
step done
