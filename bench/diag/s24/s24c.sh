#!/usr/bin/env bash
# s24 call 3: the launch's parameter bytes (bench/diag/s24/params.c); gather_boxplus at 2^26 and 2^28,
# kfuse and torch.compile in one process (inproc.py), 3 rounds.
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
KFUSE_GPU_TARGET="kfbench_inproc" source bench/gpu_env.sh
step built
mkdir -p $OUT/logs
cc -O2 -I/usr/local/cuda/include -o /tmp/params bench/diag/s24/params.c -ldl &&
  (timeout 60 /tmp/params exp/params.cubin; timeout 60 /tmp/params exp/params.cubin) 2>&1 | tee $OUT/logs/params.txt
step params
timeout 420 python3 bench/inproc.py bench/workloads.kir gather_boxplus --sizes 26,28 --rounds 3 --reps 20 \
  --out $OUT/logs/gather.md > $OUT/logs/gather.txt 2>&1; echo "rc=$?"
grep -v "^\s*$" $OUT/logs/gather.txt | tail -20
step gather
(cd $OUT && tar czf logs.tgz logs && rm -rf logs)
step done
