#!/usr/bin/env bash
# s25 call 2: blocks of 256 (kfuse's), 128 (Triton's 4 warps) and 64 threads for the elementwise kernels'
# c, h64 and s launches, against torch.compile, one process (variant_exp.py, ENV=KF_EXP_BLOCK, exp-block.patch).
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
rm -rf /tmp/expt && mkdir -p /tmp/expt && tar --exclude=./build -cf - . | (cd /tmp/expt && tar xf -)
(cd /tmp/expt && patch -p1 < bench/diag/s25/exp-block.patch && KFUSE_GPU_TARGET=kfbench_inproc source bench/gpu_env.sh >/dev/null) || echo "experiment build FAILED"
step "experiment build"
(cd /tmp/expt && ENV=KF_EXP_BLOCK timeout 400 python3 bench/diag/s25/variant_exp.py 12,19,20,21,22 3 x5:256+128+64,saxpy:256+128+64,poly:256+128+64,gelu:256+128+64,boxplus:256+128+64) > $OUT/block.txt 2>&1; echo "rc=$?"; grep "^|\|copy" $OUT/block.txt
step done
