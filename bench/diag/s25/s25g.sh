#!/usr/bin/env bash
# s25 call 7: every workload between the benchmark's sizes (2^15-2^24), kfuse at d49993a against
# torch.compile in one process (inproc.py, 3 rounds of 50): where else does a launch rule leave a cliff?
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
KFUSE_GPU_TARGET=kfbench_inproc source bench/gpu_env.sh >/dev/null
step built
timeout 540 python3 bench/inproc.py bench/workloads.kir --sizes 15,17,19,21,22,23,24 --rounds 3 --reps 50 \
  --out $OUT/sweep.md > $OUT/sweep.txt 2>&1; echo "rc=$?"; grep "^|" $OUT/sweep.txt
step done
