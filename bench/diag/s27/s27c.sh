#!/usr/bin/env bash
# s27 call 3: with the peers' input sets counted as kfbench counts them (peers.input_sets): discount with
# kernels specialised to the shape (inproc.py --literal: the b1 walk's divides by constants), then every
# workload at the sizes between the benchmark's (inproc.py).
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
KFUSE_GPU_TARGET=kfbench_inproc source bench/gpu_env.sh >/dev/null
step built
timeout 150 python3 bench/inproc.py bench/workloads.kir discount --sizes 21,22,23,24 --rounds 3 --literal \
  > $OUT/lit.txt 2>&1; echo "rc=$?"; grep "^|" $OUT/lit.txt
step literal
timeout $((560 - $(date +%s) + t0)) python3 bench/inproc.py bench/workloads.kir --sizes 19,21,22,23,24 --rounds 3 \
  --out $OUT/sweep.md > $OUT/sweep.txt 2>&1; echo "rc=$?"; grep "^|" $OUT/sweep.txt
step done
