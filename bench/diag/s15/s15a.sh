#!/usr/bin/env bash
# session 15 call 1: GPU suite on the b64 change, then the same-process harness
set -uo pipefail
export OUT=${OUT:-/tmp/kfuse-out}
R=/tmp/s15; mkdir -p $R
date -u | tee $R/date.txt
bash bench/gpu_check.sh -E fuzz > $R/check.txt 2>&1; cp $OUT/ctest.txt $R/ 2>/dev/null; tail -25 $R/check.txt
mkdir -p /tmp/cubins
for f in exp/same/*.cu; do b=$(basename $f .cu); /usr/local/cuda/bin/nvcc -cubin -arch=sm_90 -O3 -DKF_ONE_PASS -o /tmp/cubins/$b.cubin $f 2>&1 | grep -i error; done
ls /tmp/cubins
gcc -O2 exp/launch.c -I/usr/local/cuda/include -o /tmp/launch_test -lcuda || gcc -O2 exp/launch.c -I/usr/local/cuda/include -o /tmp/launch_test -L/usr/local/cuda/lib64/stubs -lcuda
/tmp/launch_test /tmp/cubins 2>&1 | tee $R/launch.txt
for r in 1 2; do LD_LIBRARY_PATH=/opt/kfuse-deps/usr/lib/x86_64-linux-gnu build/gpu/kfbench --backend cuda --launch --sizes 12 --reps 20 bench/workloads.kir x5 2>&1 | grep launch | tee -a $R/launch.txt; done
timeout 300 python3 exp/same.py /tmp/cubins 5 300 2>&1 | grep -v Warning | tee $R/same.txt
tar czf /tmp/s15a.tgz -C $R . && find $OUT -mindepth 1 -delete; mv /tmp/s15a.tgz $OUT/
