#!/usr/bin/env bash
# s25 call 10: rowsum / rowmax (and x5, a control) at 2^17 and 2^19 through kfbench in one process with
# torch.compile, kfuse on its own stream and on the legacy default stream (inproc.py --stream both):
# is the gap the rows show through kfbench (and not in the cubin harness, call 9) the stream?
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
KFUSE_GPU_TARGET=kfbench_inproc source bench/gpu_env.sh >/dev/null
step built
timeout 200 python3 bench/inproc.py bench/workloads.kir rowsum rowmax x5 --sizes 17,19 --rounds 5 --reps 50 \
  --stream both > $OUT/stream.txt 2>&1; echo "rc=$?"; grep "^|" $OUT/stream.txt
step done
