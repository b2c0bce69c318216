#!/usr/bin/env bash
# s27 call 7 (b2e725d): kfuse on NVIDIA's OpenCL against CUDA (kfbench, every workload at 2^20 and 2^26,
# rounds alternated, CSVs kept).
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
KFUSE_GPU_TARGET=kfbench source bench/gpu_env.sh >/dev/null
cl=$(build/gpu/kfbench --list --backend opencl 2>/dev/null | grep -i nvidia | head -1)
step "built; OpenCL device: $cl"
mkdir -p $OUT/csv
for r in 1 2; do
  for b in cuda opencl; do
    [ $(( $(date +%s) - t0 )) -lt 300 ] || break 2
    dev=0; [ $b = opencl ] && dev=${cl%%:*}
    timeout $((330 - $(date +%s) + t0)) build/gpu/kfbench --backend $b --device $dev --sizes 20,26 --reps 50 \
      --csv $OUT/csv/$b-$r.csv bench/workloads.kir > $OUT/$b-$r.txt 2>&1; echo "$b round $r rc=$?"
    step "$b round $r"
  done
done
