#!/usr/bin/env bash
# s28 call 6: one-array branchless bodies (x5, gelu) on c64 / h64 at 2^19-2^21 against torch.compile, one
# process: does the band where saxpy wants h64 (c's grid under a wave, h64's filling one: 2^20) hold for one
# array too?  s25's exp-variant.patch, and h64 emitted for every body while KF_EXP_V is set (sed below).
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
rm -rf /tmp/expt && mkdir -p /tmp/expt && tar --exclude=./build -cf - . | (cd /tmp/expt && tar xf -)
cd /tmp/expt && patch -p1 < bench/diag/s25/exp-variant.patch >/dev/null &&
  sed -i 's/ki->streams >= 2)))/ki->streams >= 2 || getenv("KF_EXP_V"))))/' src/codegen/abi.c &&
  grep -c 'streams >= 2 || getenv' src/codegen/abi.c && KFUSE_GPU_TARGET=kfbench_inproc source bench/gpu_env.sh >/dev/null
step "experiment build"
timeout $((250 - $(date +%s) + t0)) python3 bench/diag/s25/variant_exp.py 20,19,21 5 x5:c64+h64,gelu:c64+h64,saxpy:c64+h64 > $OUT/variant.txt 2>&1; echo "rc=$?"; grep "^|\|copy\|\[" $OUT/variant.txt
step done
