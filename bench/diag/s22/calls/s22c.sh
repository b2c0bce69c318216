#!/usr/bin/env bash
# s22 call 3: block size of small elementwise launches (KF_EXP_BLOCK patch), one process, and under ncu.
set -uo pipefail
export KFUSE_GPU_TARGET=kfbench_inproc
source bench/gpu_env.sh
date -u
for run in 1 2; do
    BLOCKS=128,64 python3 exp/inproc_exp.py 12 5 x5,gelu,boxplus,poly,saxpy,iota,chain40,gather_boxplus > $OUT/blk$run.log 2>&1
    grep "^|" $OUT/blk$run.log
done
M=gpu__time_duration.sum,smsp__inst_executed.sum,launch__grid_size,launch__block_size
BLOCKS=128,64 timeout 200 ncu --clock-control none -k 'regex:_k0_|triton' --metrics $M --csv \
    python3 exp/inproc_exp.py 12 1 x5,saxpy,gelu > $OUT/ncu.csv 2> $OUT/ncu.err
echo "ncu rc=$?"
date -u
cd $OUT && tar czf s22c.tgz *.log ncu.csv ncu.err
