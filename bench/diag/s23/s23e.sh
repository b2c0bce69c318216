#!/usr/bin/env bash
# s23 call 5: b64 for a branchy body's contiguous calls (kf_cg_kinfo.pair).  Build with the change; the
# threshold experiment (bench/diag/s23/exp-pair.patch on a copy of the tree: kfuse c64 against b64 against
# torch.compile, boxplus and chain40, one process); then the GPU suite (all but fuzz) at the change.
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
rm -rf /tmp/expt && mkdir -p /tmp/expt && tar --exclude=./build -cf - . | (cd /tmp/expt && tar xf -)
(cd /tmp/expt && patch -p1 < bench/diag/s23/exp-pair.patch && KFUSE_GPU_TARGET=kfbench_inproc source bench/gpu_env.sh >/dev/null) || echo "experiment build FAILED"
step "experiment build"
(cd /tmp/expt && timeout 170 python3 bench/diag/s23/pair_exp.py 22,24,26,28 3) > $OUT/pair.txt 2>&1; echo "rc=$?"; grep "^|\|copy" $OUT/pair.txt
step "suite"
source bench/gpu_env.sh
step built
(cd build/gpu && timeout 290 ctest -V -j 6 -E fuzz 2>&1) > "$OUT/ctest.txt"
grep -E "^[0-9]+/[0-9]+ Test|tests passed|tests failed|graphs \(corpus|correct on|CHECK failed|b64 launches|NVRTC:" "$OUT/ctest.txt" | tail -70
step done
