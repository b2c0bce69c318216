#!/usr/bin/env bash
# s22 call 5: torch.compile on the legacy default stream and on a created stream, beside kfuse, 2^12 (and 2^20), two processes.
set -uo pipefail
export KFUSE_GPU_TARGET=kfbench_inproc
source bench/gpu_env.sh
date -u
timeout 170 python3 exp/stream_exp.py 12,20 5 > $OUT/st1.log 2>&1; grep "^|" $OUT/st1.log
timeout 100 python3 exp/stream_exp.py 12 5 > $OUT/st2.log 2>&1; grep "^|" $OUT/st2.log
date -u
