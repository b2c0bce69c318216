#!/usr/bin/env bash
# s25 call 8: row reductions of [M, 1024] with few rows: warpv (8 rows a block of 256 threads, the rule)
# against tile (a block a row, the same bits) forced, and torch.compile, one process
# (variant_exp.py, ENV=KF_EXP_RED, exp-red.patch).
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
rm -rf /tmp/expt && mkdir -p /tmp/expt && tar --exclude=./build -cf - . | (cd /tmp/expt && tar xf -)
(cd /tmp/expt && patch -p1 < bench/diag/s25/exp-red.patch && KFUSE_GPU_TARGET=kfbench_inproc source bench/gpu_env.sh >/dev/null; echo "build rc=$?")
step "experiment build"
(cd /tmp/expt && ENV=KF_EXP_RED timeout 300 python3 bench/diag/s25/variant_exp.py 12,15,16,17,18,19,20,21 3 rowsum:warp+tile,rowmax:warp+tile) > $OUT/rows.txt 2>&1; echo "rc=$?"; grep "^|\|copy" $OUT/rows.txt
step done
