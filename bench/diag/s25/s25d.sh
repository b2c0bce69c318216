#!/usr/bin/env bash
# s25 call 4: branchy bodies at 2^18-2^20, a second process, 5 rounds: the rule's choice against h64 and c64
# forced, and torch.compile (variant_exp.py, exp-variant.patch).
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
rm -rf /tmp/expt && mkdir -p /tmp/expt && tar --exclude=./build -cf - . | (cd /tmp/expt && tar xf -)
(cd /tmp/expt && patch -p1 < bench/diag/s25/exp-variant.patch && KFUSE_GPU_TARGET=kfbench_inproc source bench/gpu_env.sh >/dev/null; echo "build rc=$?")
step "experiment build"
(cd /tmp/expt && timeout 400 python3 bench/diag/s25/variant_exp.py 18,19,20 5 boxplus:rule+h64+c64,gelu:rule+h64+c64,chain40:rule+h64+c64) > $OUT/branchy2.txt 2>&1; echo "rc=$?"; grep "^|\|copy" $OUT/branchy2.txt
step done
