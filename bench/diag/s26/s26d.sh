#!/usr/bin/env bash
# s26 call 4: at the change (b64 chunks of 256 blocks; h64 for a take's contiguous call from 8 blocks of
# 1024 points per SM): discount and gather_boxplus at 2^20-2^28 against torch.compile (inproc.py, one
# process); discount on OpenCL and CUDA (kfbench); the GPU suite (all but fuzz).
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
source bench/gpu_env.sh >/dev/null
step built
mkdir -p $OUT/logs
timeout 170 python3 bench/inproc.py bench/workloads.kir discount gather_boxplus --sizes 20,21,22,23,24,26,28 --rounds 3 \
  --out $OUT/sweep.md > $OUT/logs/sweep.txt 2>&1; echo "rc=$?"; grep "^|" $OUT/logs/sweep.txt
step sweep
for b in cuda opencl; do
  timeout 60 build/gpu/kfbench --backend $b --sizes 20,22,24,26,28 --csv $OUT/logs/disc-$b.csv bench/workloads.kir discount > $OUT/logs/disc-$b.txt 2>&1
  echo "$b rc=$?"; grep "2^" $OUT/logs/disc-$b.txt
done
step "opencl / cuda"
(cd build/gpu && timeout 330 ctest -V -j 6 -E fuzz 2>&1) > "$OUT/logs/ctest.txt"
grep -E "^[0-9]+/[0-9]+ Test|tests passed|tests failed|graphs \(corpus|correct on|CHECK failed|NVRTC:" "$OUT/logs/ctest.txt" | tail -60
step suite
(cd $OUT && tar czf logs.tgz logs && rm -rf logs)
step done
