#!/usr/bin/env bash
# session 15 call 3: same-process harness (host kept ahead), peers.py chain40 at 2^28
set -uo pipefail
export OUT=${OUT:-/tmp/kfuse-out}
R=/tmp/s15c; mkdir -p $R /tmp/cubins
date -u | tee $R/date.txt
for f in exp/same/*.cu; do b=$(basename $f .cu); /usr/local/cuda/bin/nvcc -cubin -arch=sm_90 -O3 -DKF_ONE_PASS -o /tmp/cubins/$b.cubin $f 2>&1 | grep -i error; done
timeout 300 python3 exp/same.py /tmp/cubins 5 300 2>&1 | grep -v Warning | tee $R/same.txt
timeout 200 python3 bench/peers.py bench/workloads.kir chain40 --systems torch,torch.compile --sizes 28 --reps 20 --csv $R/chain40.csv > $R/chain40.txt 2>&1; echo "peers rc $?"; tail -6 $R/chain40.txt
tar czf /tmp/s15c.tgz -C $R . && find $OUT -mindepth 1 -delete; mv /tmp/s15c.tgz $OUT/
