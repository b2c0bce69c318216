#!/usr/bin/env bash
# s25 call 6: at 2^19, one element per thread (s64, the rule before the change) against h64 (the rule now)
# and c64, forced, for the one-array branchy bodies (branchy1.kir) and boxplus / chain40; torch.compile
# alongside, one process each (variant_exp.py, exp-variant.patch with s64).
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
rm -rf /tmp/expt && mkdir -p /tmp/expt && tar --exclude=./build -cf - . | (cd /tmp/expt && tar xf -)
(cd /tmp/expt && patch -p1 < bench/diag/s25/exp-variant.patch && KFUSE_GPU_TARGET=kfbench_inproc source bench/gpu_env.sh >/dev/null; echo "build rc=$?")
step "experiment build"
(cd /tmp/expt && KIR=bench/diag/s25/branchy1.kir timeout 150 python3 bench/diag/s25/variant_exp.py 19 7 sig:s64+h64+c64,hyp:s64+h64+c64) > $OUT/s19a.txt 2>&1; echo "rc=$?"; grep "^|\|copy" $OUT/s19a.txt
(cd /tmp/expt && timeout 150 python3 bench/diag/s25/variant_exp.py 19 7 boxplus:s64+h64+c64,chain40:s64+h64+c64) > $OUT/s19b.txt 2>&1; echo "rc=$?"; grep "^|\|copy" $OUT/s19b.txt
step done
