#!/usr/bin/env bash
# s27 call 6 (5f8fa81): what the walk's divide by a step's blocks costs (KF_EXP_NODIV=1: a shift, valid where
# those are a power of two, as at every benchmark size; exp-nodiv.patch) on discount at 2^19-2^24 against
# torch.compile; then the rows still under 1.0 in three fresh processes (inproc.py --processes 3).
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
rm -rf /tmp/expt && mkdir -p /tmp/expt && tar --exclude=./build -cf - . | (cd /tmp/expt && tar xf -)
KFUSE_GPU_TARGET=kfbench_inproc source bench/gpu_env.sh >/dev/null
(cd /tmp/expt && patch -p1 < exp/s27/exp-nodiv.patch >/dev/null && KFUSE_GPU_TARGET=kfbench_inproc source bench/gpu_env.sh >/dev/null)
step built
(cd /tmp/expt && timeout 120 python3 exp/s27/combo_exp.py 21,19,22,23,24 3 discount:-+NODIV=1 > $OUT/f.txt 2>&1; echo "rc=$?")
grep "^|\|copy" $OUT/f.txt
step nodiv
timeout $((540 - $(date +%s) + t0)) python3 bench/inproc.py bench/workloads.kir boxplus rowsum dot saxpy discount \
  --sizes 20,21,22,23 --rounds 3 --processes 3 --out $OUT/proc.md > $OUT/proc.txt 2>&1; echo "rc=$?"; grep "^|" $OUT/proc.md
step done
