#!/usr/bin/env bash
# s26 call 1: gather_boxplus s64 / h64 / g64 forced at 2^15-2^22 and blocks of 256 / 128 at 2^15-2^19;
# discount with b64 chunks of 32 / 128 (the rule) / 512 / flat at 2^21-2^26; each against torch.compile
# in one process (bench/diag/s25/variant_exp.py, bench/diag/s26/exp-s26.patch).
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv
rm -rf /tmp/expt && mkdir -p /tmp/expt && tar --exclude=./build -cf - . | (cd /tmp/expt && tar xf -)
(cd /tmp/expt && patch -p1 < bench/diag/s26/exp-s26.patch && KFUSE_GPU_TARGET=kfbench_inproc source bench/gpu_env.sh >/dev/null) || echo "experiment build FAILED"
step "experiment build"
cd /tmp/expt
ENV=KF_EXP_G timeout 200 python3 bench/diag/s25/variant_exp.py 15,17,19,20,21,22 3 gather_boxplus:s64+h64+g64 > $OUT/gvar.txt 2>&1; echo "rc=$?"; grep "^|\|copy" $OUT/gvar.txt
step "gather variants"
ENV=KF_EXP_BLOCK timeout 120 python3 bench/diag/s25/variant_exp.py 15,17,19 3 gather_boxplus:256+128 > $OUT/gblock.txt 2>&1; echo "rc=$?"; grep "^|" $OUT/gblock.txt
step "gather blocks"
ENV=KF_EXP_CHUNK timeout 200 python3 bench/diag/s25/variant_exp.py 21,22,23,24,26 3 discount:32+128+512+1048576 > $OUT/chunk.txt 2>&1; echo "rc=$?"; grep "^|" $OUT/chunk.txt
step done
