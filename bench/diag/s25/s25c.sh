#!/usr/bin/env bash
# s25 call 3: branchy bodies (boxplus, gelu, chain40) below a wave: c64 / h64 / b64 forced against the rule's
# choice ("rule": s64 below h64's wave) and torch.compile, one process (variant_exp.py, exp-variant.patch).
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
rm -rf /tmp/expt && mkdir -p /tmp/expt && tar --exclude=./build -cf - . | (cd /tmp/expt && tar xf -)
(cd /tmp/expt && patch -p1 < bench/diag/s25/exp-variant.patch && KFUSE_GPU_TARGET=kfbench_inproc source bench/gpu_env.sh >/dev/null) || echo "experiment build FAILED"
step "experiment build"
(cd /tmp/expt && timeout 400 python3 bench/diag/s25/variant_exp.py 17,18,19,20,21 3 boxplus:rule+c64+h64+b64,gelu:rule+c64+h64+b64,chain40:rule+c64+h64) > $OUT/branchy.txt 2>&1; echo "rc=$?"; grep "^|\|copy" $OUT/branchy.txt
step done
