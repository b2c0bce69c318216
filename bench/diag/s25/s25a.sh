#!/usr/bin/env bash
# c64 / h64 / b64 against torch.compile in one process (bench/diag/s25/variant_exp.py on a copy of the tree
# with exp-variant.patch).  Without arguments, s25 call 1: saxpy, poly and x5 at 2^19-2^24, 3 rounds.
# Session 28 ran it for calls 3 and 4 with arguments (bench/diag/s28/README.md).
# Usage (repository root, on the GPU machine): bash bench/diag/s25/s25a.sh [SIZES ROUNDS WORKLOADS [LIMIT_S]]
set -uo pipefail
sizes=${1:-19,20,21,22,23,24} rounds=${2:-3} workloads=${3:-saxpy,poly,x5:c64+b64} limit=${4:-540}
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
rm -rf /tmp/expt && mkdir -p /tmp/expt && tar --exclude=./build -cf - . | (cd /tmp/expt && tar xf -)
(cd /tmp/expt && patch -p1 < bench/diag/s25/exp-variant.patch && KFUSE_GPU_TARGET=kfbench_inproc source bench/gpu_env.sh >/dev/null) || echo "experiment build FAILED"
step "experiment build"
(cd /tmp/expt && timeout $((limit - $(date +%s) + t0)) python3 bench/diag/s25/variant_exp.py $sizes $rounds $workloads) > $OUT/variant.txt 2>&1; echo "rc=$?"; grep "^|\|copy\|\[" $OUT/variant.txt
step done
