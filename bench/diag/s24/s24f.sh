#!/usr/bin/env bash
# s24 call 6: h64 against c64 for branchless multi-array bodies (poly, saxpy) at 2^19-2^23 against
# torch.compile, one process (bench/diag/s24/wave_exp.py on a copy of the tree with exp-wave.patch).
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
rm -rf /tmp/expt && mkdir -p /tmp/expt && tar --exclude=./build -cf - . | (cd /tmp/expt && tar xf -)
(cd /tmp/expt && patch -p1 < bench/diag/s24/exp-wave.patch && KFUSE_GPU_TARGET=kfbench_inproc source bench/gpu_env.sh >/dev/null) || echo "experiment build FAILED"
step "experiment build"
(cd /tmp/expt && timeout 300 python3 bench/diag/s24/wave_exp.py 19,20,21,22,23 5) > $OUT/wave.txt 2>&1; echo "rc=$?"; grep "^|\|copy" $OUT/wave.txt
step done
