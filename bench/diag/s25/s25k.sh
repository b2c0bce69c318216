#!/usr/bin/env bash
# s25 call 11: the GPU suite (all but fuzz) at the warp rule change (rows of at most 1024 elements take
# warp at any count); then, on a copy with exp-red.patch, the rule (now warpv) against tile forced (the old
# rule's choice at [128..512, 1024]) and torch.compile, one process (variant_exp.py, ENV=KF_EXP_RED).
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
source bench/gpu_env.sh >/dev/null
step built
mkdir -p $OUT/logs
(cd build/gpu && timeout 300 ctest -V -j 6 -E fuzz 2>&1) > "$OUT/logs/ctest.txt"
grep -E "^[0-9]+/[0-9]+ Test|tests passed|tests failed|graphs \(corpus|correct on|CHECK failed|NVRTC:" "$OUT/logs/ctest.txt" | tail -60
step suite
rm -rf /tmp/expt && mkdir -p /tmp/expt && tar --exclude=./build -cf - . | (cd /tmp/expt && tar xf -)
(cd /tmp/expt && patch -p1 < bench/diag/s25/exp-red.patch && KFUSE_GPU_TARGET=kfbench_inproc source bench/gpu_env.sh >/dev/null; echo "build rc=$?")
step "experiment build"
(cd /tmp/expt && ENV=KF_EXP_RED timeout 100 python3 bench/diag/s25/variant_exp.py 16,17,18,19,20 5 rowsum:rule+tile,rowmax:rule+tile) > $OUT/logs/rows2.txt 2>&1; echo "rc=$?"; grep "^|\|copy" $OUT/logs/rows2.txt
step experiment
(cd $OUT && tar czf logs.tgz logs && rm -rf logs)
step done
