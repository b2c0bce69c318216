#!/usr/bin/env bash
# s26 call 3: b64 with evict-first hints (KF_EXP_HINT: l = __ldcs on loads of args not broadcast,
# s = __stcs on stores, - = none) with chunks of 256 (KF_EXP_CHUNK), discount at 2^22-2^28 and boxplus
# (b64 with no outer dims) at 2^22-2^26, against torch.compile in one process (variant_exp.py).
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
rm -rf /tmp/expt && mkdir -p /tmp/expt && tar --exclude=./build -cf - . | (cd /tmp/expt && tar xf -)
(cd /tmp/expt && patch -p1 < bench/diag/s26/exp-s26.patch && KFUSE_GPU_TARGET=kfbench_inproc source bench/gpu_env.sh >/dev/null) || echo "experiment build FAILED"
step "experiment build"
cd /tmp/expt
export KF_EXP_CHUNK=256
ENV=KF_EXP_HINT timeout 200 python3 bench/diag/s25/variant_exp.py 22,23,24,26,28 3 discount:-+l+s+ls > $OUT/hint.txt 2>&1; echo "rc=$?"; grep "^|" $OUT/hint.txt
step "discount hints"
ENV=KF_EXP_HINT timeout 150 python3 bench/diag/s25/variant_exp.py 22,24,26 3 boxplus:-+l+s+ls > $OUT/hintbox.txt 2>&1; echo "rc=$?"; grep "^|" $OUT/hintbox.txt
step done
