#!/usr/bin/env bash
# s27 call 1: the GPU suite at HEAD (b4be052: b1 since ebc2e02, never run whole on the GPU), then discount's
# b1 with blocks of 128 threads (KF_EXP_BB) and evict_last loads of mb (KF_EXP_EL) against torch.compile
# (exp-s27.patch, combo_exp.py).
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
source bench/gpu_env.sh >/dev/null
step built
mkdir -p $OUT/logs
(cd build/gpu && timeout 320 ctest -V -j 6 -E fuzz 2>&1) > "$OUT/logs/ctest.txt"; echo "ctest rc=$?"
grep -E "^ *[0-9]+/[0-9]+ Test|tests passed|tests failed|graphs \(corpus|correct on|CHECK failed|NVRTC:|OpenCL runs" "$OUT/logs/ctest.txt" | tail -70
step suite
rm -rf /tmp/expt && mkdir -p /tmp/expt && tar --exclude=./build -cf - . | (cd /tmp/expt && tar xf -)
(cd /tmp/expt && patch -p1 < exp/s27/exp-s27.patch && KFUSE_GPU_TARGET=kfbench_inproc source bench/gpu_env.sh >/dev/null)
step "experiment build"
cd /tmp/expt
timeout $((560 - $(date +%s) + t0)) python3 exp/s27/combo_exp.py 22,23,19,21,24 3 \
  discount:BW=b1+BW=b1/BB=128+BW=b1/EL=1+BW=b1/BB=128/EL=1 > $OUT/a.txt 2>&1; echo "rc=$?"; grep "^|\|copy" $OUT/a.txt
step done
(cd $OUT && tar czf logs.tgz logs && rm -rf logs)
