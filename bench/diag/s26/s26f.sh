#!/usr/bin/env bash
# s26 call 6: b64 with 2 (the rule) or 1 vector a thread (KF_EXP_VECS, exp-vecs.patch) on discount at
# 2^12-2^21 and 2^23, 5 rounds, against torch.compile in one process (variant_exp.py).
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
rm -rf /tmp/expt && mkdir -p /tmp/expt && tar --exclude=./build -cf - . | (cd /tmp/expt && tar xf -)
(cd /tmp/expt && patch -p1 < bench/diag/s26/exp-vecs.patch && KFUSE_GPU_TARGET=kfbench_inproc source bench/gpu_env.sh >/dev/null)
step "experiment build"
cd /tmp/expt
ENV=KF_EXP_VECS timeout 200 python3 bench/diag/s25/variant_exp.py 12,16,18,19,20,21,23 5 discount:2+1 > $OUT/vecs2.txt 2>&1; echo "rc=$?"; grep "^|" $OUT/vecs2.txt
step done
