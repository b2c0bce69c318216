#!/usr/bin/env bash
# s27 call 2: torch.compile with the floor's input sets (inproc.py, peers.py) against kfbench's count
# (inputs alone) beside kfuse, at the sizes where kfuse trails (sets_exp.py).
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
KFUSE_GPU_TARGET=kfbench_inproc source bench/gpu_env.sh >/dev/null
step built
timeout $((560 - $(date +%s) + t0)) python3 exp/s27/sets_exp.py 3 \
  discount:22+23+21+24+19,gather_boxplus:21+22+15,x5:22+23,boxplus:22+23,poly:22,gelu:23 > $OUT/b.txt 2>&1
echo "rc=$?"; grep "^|\|copy" $OUT/b.txt
step done
