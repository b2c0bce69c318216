#!/usr/bin/env bash
# s25 call 5: the GPU suite (all but fuzz) at the branchy h64 rule change; then, on a copy with
# exp-variant.patch, one-array branchy bodies (branchy1.kir) at 2^18-2^20 and boxplus / chain40 at 2^19:
# the rule's choice against h64 and c64 forced, and torch.compile, one process.
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
source bench/gpu_env.sh >/dev/null
step built
mkdir -p $OUT/logs
(cd build/gpu && timeout 330 ctest -V -j 6 -E fuzz 2>&1) > "$OUT/logs/ctest.txt"
grep -E "^[0-9]+/[0-9]+ Test|tests passed|tests failed|graphs \(corpus|correct on|CHECK failed|NVRTC:" "$OUT/logs/ctest.txt" | tail -60
step suite
rm -rf /tmp/expt && mkdir -p /tmp/expt && tar --exclude=./build -cf - . | (cd /tmp/expt && tar xf -)
(cd /tmp/expt && patch -p1 < bench/diag/s25/exp-variant.patch && KFUSE_GPU_TARGET=kfbench_inproc source bench/gpu_env.sh >/dev/null; echo "build rc=$?")
step "experiment build"
(cd /tmp/expt && KIR=bench/diag/s25/branchy1.kir timeout 150 python3 bench/diag/s25/variant_exp.py 18,19,20 5 sig:rule+h64+c64,hyp:rule+h64+c64) > $OUT/logs/branchy1.txt 2>&1; echo "rc=$?"; grep "^|\|copy" $OUT/logs/branchy1.txt
(cd /tmp/expt && timeout 100 python3 bench/diag/s25/variant_exp.py 19 5 boxplus:rule+h64,chain40:rule+h64) > $OUT/logs/rule19.txt 2>&1; echo "rc=$?"; grep "^|\|copy" $OUT/logs/rule19.txt
step experiment
(cd $OUT && tar czf logs.tgz logs && rm -rf logs)
step done
