#!/usr/bin/env bash
# s29 call 1: b64 with blocks of 128 threads (two 16-byte vectors a thread, 128 apart: Triton's pointwise
# layout at these sizes, XBLOCK 1024 over 4 warps) against c64, h64, b64 (256 threads) and torch.compile,
# for branchless bodies at 2^19-2^22, one process (s25's variant_exp.py on a copy of the tree with
# exp/s29/exp-b64t.patch = s25's exp-variant.patch + exp-block.patch + KF_EXP_V=b64t128).
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
rm -rf /tmp/expt && mkdir -p /tmp/expt && tar --exclude=./build -cf - . | (cd /tmp/expt && tar xf -)
(cd /tmp/expt && patch -p1 < exp/s29/exp-b64t.patch && KFUSE_GPU_TARGET=kfbench_inproc source bench/gpu_env.sh >/dev/null) || echo "experiment build FAILED"
step "experiment build"
(cd /tmp/expt && timeout $((555 - $(date +%s) + t0)) python3 bench/diag/s25/variant_exp.py 21,20,19,22 3 \
  saxpy:c64+h64+b64+b64t128,x5:c64+b64+b64t128,poly:c64+h64+b64t128,gelu:c64+b64t128) > $OUT/variant.txt 2>&1
echo "rc=$?"; grep "^|\|copy\|\[\|rror" $OUT/variant.txt
step done
