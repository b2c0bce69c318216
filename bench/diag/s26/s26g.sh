#!/usr/bin/env bash
# s26 call 7: b1 (ebc2e02, branch s26-b1): the GPU suite (all but fuzz; test_codegen with 100 random graphs,
# not 300, for the device time left); then discount at 2^19-2^28 against torch.compile (inproc.py).
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
source bench/gpu_env.sh >/dev/null
step built
mkdir -p $OUT/logs
(cd build/gpu && KF_TEST_CG_RANDOM=100 timeout 190 ctest -V -j 8 -E fuzz 2>&1) > "$OUT/logs/ctest.txt"
grep -E "^[0-9]+/[0-9]+ Test|tests passed|tests failed|graphs \(corpus|correct on|CHECK failed|NVRTC:|OpenCL runs" "$OUT/logs/ctest.txt" | tail -60
step suite
timeout 75 python3 bench/inproc.py bench/workloads.kir discount --sizes 19,20,22,23,24,26,28 --rounds 3 \
  --out $OUT/sweep.md > $OUT/logs/sweep.txt 2>&1; echo "rc=$?"; grep "^|" $OUT/logs/sweep.txt
step sweep
(cd $OUT && tar czf logs.tgz logs && rm -rf logs)
step done
