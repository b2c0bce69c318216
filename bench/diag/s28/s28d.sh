#!/usr/bin/env bash
# s28 call 4: saxpy on c64 / h64 at 2^26, 2^28, 2^22, 2^20, a second process after call 3 against
# torch.compile, one process (bench/diag/s25/variant_exp.py on a copy of the tree with s25's exp-variant.patch):
# the full benchmark (calls 1, 2 and session 24) has saxpy 1.3% / 0.9% behind at 2^26 / 2^28 on h64.
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
rm -rf /tmp/expt && mkdir -p /tmp/expt && tar --exclude=./build -cf - . | (cd /tmp/expt && tar xf -)
(cd /tmp/expt && patch -p1 < bench/diag/s25/exp-variant.patch && KFUSE_GPU_TARGET=kfbench_inproc source bench/gpu_env.sh >/dev/null) || echo "experiment build FAILED"
step "experiment build"
(cd /tmp/expt && timeout $((540 - $(date +%s) + t0)) python3 bench/diag/s25/variant_exp.py 26,28,22,20 5 saxpy:c64+h64) > $OUT/variant.txt 2>&1; echo "rc=$?"; grep "^|\|copy\|\[" $OUT/variant.txt
step done
