#!/usr/bin/env bash
# s22 call 6: kfuse on a created, the legacy and the per-thread default stream against torch.compile, two processes.
set -uo pipefail
export KFUSE_GPU_TARGET=kfbench_inproc
source bench/gpu_env.sh
date -u
timeout 150 python3 exp/stream2_exp.py 12,20 5 > $OUT/s1.log 2>&1; grep "^|" $OUT/s1.log
timeout 100 python3 exp/stream2_exp.py 12 5 > $OUT/s2.log 2>&1; grep "^|" $OUT/s2.log
date -u
