#!/usr/bin/env bash
# s28 call 5: at the saxpy rule change (two arrays: h64 only where c's grid is under a wave): the GPU suite
# but fuzz and test_codegen (the emitted code is unchanged; test_codegen's rule checks run on the host and
# it forces every variant in CI), then saxpy and poly through kfbench against torch.compile in one process.
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
source bench/gpu_env.sh >/dev/null
step built
mkdir -p $OUT/logs
(cd build/gpu && timeout 220 ctest -V -j 6 -E "fuzz|test_codegen" 2>&1) > "$OUT/logs/ctest.txt"; echo "ctest rc=$?"
grep -E "^ *[0-9]+/[0-9]+ Test|tests passed|tests failed|graphs \(corpus|correct on|CHECK failed|NVRTC:" "$OUT/logs/ctest.txt" | tail -60
step suite
timeout $((560 - $(date +%s) + t0)) python3 bench/inproc.py bench/workloads.kir saxpy --sizes 20,21,22,26 --rounds 3 --reps 50 \
  --out $OUT/logs/inproc.md > $OUT/logs/inproc.txt 2>&1; echo "rc=$?"; grep "^|" $OUT/logs/inproc.txt | tail -8
step inproc
(cd $OUT && tar czf logs.tgz logs && rm -rf logs)
step done
