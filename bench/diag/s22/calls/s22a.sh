#!/usr/bin/env bash
# s22 call 1: kfuse (symbolic and literal shapes) against torch.compile in one process, 2^12 and 2^20.
set -uo pipefail
export KFUSE_GPU_TARGET=kfbench_inproc
source bench/gpu_env.sh
date -u
for run in 1 2; do
    python3 bench/inproc.py bench/workloads.kir --sizes 12,20 --rounds 7 --reps 100 --literal \
        --out $OUT/inproc$run.md > $OUT/inproc$run.log 2>&1
    tail -30 $OUT/inproc$run.log
done
date -u
cd $OUT && tar czf s22a.tgz *.md *.log *.txt
