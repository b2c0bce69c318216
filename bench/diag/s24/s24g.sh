#!/usr/bin/env bash
# s24 call 7: the GPU suite at the poly rule change (all but fuzz and test_codegen: the emitted code is
# unchanged, test_codegen's rule checks run on the host), then poly and saxpy through kfbench against
# torch.compile in one process at 2^20 (inproc.py).
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
source bench/gpu_env.sh
step built
mkdir -p $OUT/logs
(cd build/gpu && timeout 200 ctest -V -j 6 -E "fuzz|test_codegen" 2>&1) > "$OUT/logs/ctest.txt"
grep -E "^[0-9]+/[0-9]+ Test|tests passed|tests failed|graphs \(corpus|correct on|CHECK failed|NVRTC:" "$OUT/logs/ctest.txt" | tail -60
step suite
timeout 60 python3 bench/inproc.py bench/workloads.kir poly saxpy --sizes 20 --rounds 5 --reps 50 \
  --out $OUT/logs/inproc.md > $OUT/logs/inproc.txt 2>&1; echo "rc=$?"; grep "^|" $OUT/logs/inproc.txt | tail -4
step inproc
(cd $OUT && tar czf logs.tgz logs && rm -rf logs)
step done
