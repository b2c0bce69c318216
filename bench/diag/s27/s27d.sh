#!/usr/bin/env bash
# s27 call 4: a step of b1/b64 as one chunk when its buffers hold at most KF_CG_B_FLAT_BYTES (12 MB; the
# working tree): against always chunked (KF_EXP_FLAT=0, HEAD's walk) and always flat, with torch.compile at
# 2^21-2^24 (combo_exp.py), and kfuse alone at 15, 18 and 21 MB a step (literal shapes, sides_exp.py).
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
rm -rf /tmp/expt && mkdir -p /tmp/expt && tar --exclude=./build -cf - . | (cd /tmp/expt && tar xf -)
cd /tmp/expt && patch -p1 < exp/s27/exp-flat.patch && KFUSE_GPU_TARGET=kfbench_inproc source bench/gpu_env.sh >/dev/null
step built
timeout 200 python3 exp/s27/combo_exp.py 23,22,24,21 3 discount:FLAT=0+-+FLAT=2000000000 > $OUT/d.txt 2>&1
echo "rc=$?"; grep "^|\|copy" $OUT/d.txt
step combo
timeout 150 python3 exp/s27/sides_exp.py bench/workloads.kir discount 10485760,12582912,14680064,16777216 3 \
  KF_EXP_FLAT 0+2000000000 > $OUT/s.txt 2>&1; echo "rc=$?"; grep "^|\|rounds" $OUT/s.txt
step done
