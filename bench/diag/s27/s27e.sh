#!/usr/bin/env bash
# s27 call 5, at the change (a step within KF_CG_B_FLAT_BYTES is one chunk; the peers' input sets counted as
# kfbench counts them): the GPU suite; the change against HEAD's walk (KF_EXP_FLAT=0, exp-flat.patch) on
# discount with torch.compile (combo_exp.py); every workload at 2^20 and 2^23 and discount at 2^19-2^28
# against torch.compile (inproc.py).
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
rm -rf /tmp/expt && mkdir -p /tmp/expt && tar --exclude=./build -cf - . | (cd /tmp/expt && tar xf -)
source bench/gpu_env.sh >/dev/null
(cd /tmp/expt && patch -p1 < exp/s27/exp-flat.patch >/dev/null && KFUSE_GPU_TARGET=kfbench_inproc source bench/gpu_env.sh >/dev/null)
step built
mkdir -p $OUT/logs
(cd build/gpu && timeout 300 ctest -V -j 6 -E fuzz 2>&1) > "$OUT/logs/ctest.txt"; echo "ctest rc=$?"
grep -E "^ *[0-9]+/[0-9]+ Test|tests passed|tests failed|Total Test" "$OUT/logs/ctest.txt" | tail -60
step suite
(cd /tmp/expt && timeout 60 python3 exp/s27/combo_exp.py 23,22,24 3 discount:FLAT=0+- > $OUT/e.txt 2>&1; echo "rc=$?")
grep "^|\|copy" $OUT/e.txt
step ab
timeout $((570 - $(date +%s) + t0)) python3 bench/inproc.py bench/workloads.kir --sizes 20,23 --rounds 3 \
  --out $OUT/sweep.md > $OUT/logs/sweep.txt 2>&1; echo "rc=$?"; grep "^|" $OUT/sweep.md
step sweep
timeout $((585 - $(date +%s) + t0)) python3 bench/inproc.py bench/workloads.kir discount --sizes 19,21,22,24,26,28 \
  --rounds 3 --out $OUT/discount.md > $OUT/logs/discount.txt 2>&1; echo "rc=$?"; grep "^|" $OUT/discount.md
step done
(cd $OUT && tar czf logs.tgz logs && rm -rf logs)
