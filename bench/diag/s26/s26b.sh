#!/usr/bin/env bash
# s26 call 2: gather_boxplus s64 against h64 (KF_EXP_G) at N = 2^19 .. 2^22 in steps of 2^18 (kfuse
# alone, literal shapes, sides_exp.py); discount with b64 chunks of 128 (the rule) / 256 / 512 / 1024
# blocks at 2^22-2^28 against torch.compile (variant_exp.py), twice (two processes).
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
rm -rf /tmp/expt && mkdir -p /tmp/expt && tar --exclude=./build -cf - . | (cd /tmp/expt && tar xf -)
(cd /tmp/expt && patch -p1 < bench/diag/s26/exp-s26.patch && KFUSE_GPU_TARGET=kfbench_inproc source bench/gpu_env.sh >/dev/null) || echo "experiment build FAILED"
step "experiment build"
cd /tmp/expt
N=""; for k in $(seq 2 16); do N="$N,$((k * 262144))"; done
timeout 150 python3 bench/diag/s26/sides_exp.py bench/workloads.kir gather_boxplus ${N#,} 5 KF_EXP_G s64+h64 > $OUT/gsizes.txt 2>&1; echo "rc=$?"; grep "^|\|rounds" $OUT/gsizes.txt
step "gather sizes"
for p in 1 2; do
  ENV=KF_EXP_CHUNK timeout 170 python3 bench/diag/s25/variant_exp.py 22,23,24,25,26,28 3 discount:128+256+512+1024 > $OUT/chunk$p.txt 2>&1; echo "rc=$?"; grep "^|" $OUT/chunk$p.txt
  step "chunks, process $p"
done
