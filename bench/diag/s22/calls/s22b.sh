#!/usr/bin/env bash
# s22 call 2: each kernel alone under ncu (duration with cold caches, instructions, grid), kfuse vs torch.compile, 2^12 and 2^20.
set -uo pipefail
export KFUSE_GPU_TARGET=kfbench_inproc
source bench/gpu_env.sh
date -u
which ncu; ncu --version | tail -1
M=gpu__time_duration.sum,sm__cycles_elapsed.max,smsp__inst_executed.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,dram__bytes.sum,smsp__cycles_active.avg
timeout 500 ncu --clock-control none -k 'regex:_k0_|triton' --metrics $M --csv \
    python3 bench/inproc.py bench/workloads.kir --sizes 12,20 --rounds 1 --reps 5 > $OUT/ncu.csv 2> $OUT/ncu.err
echo "ncu rc=$?"; tail -5 $OUT/ncu.err; wc -l $OUT/ncu.csv; grep -c triton $OUT/ncu.csv
date -u
cd $OUT && tar czf s22b.tgz ncu.csv ncu.err
