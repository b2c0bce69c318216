#!/usr/bin/env bash
# s23 call 4: boxplus at 2^20, 2^26, 2^28 (and gather_boxplus at 2^26, 2^28) on the H200: kfuse's emitted c64/h64
# against the same kernels with approximate math (__expf, __logf, __fdividef) and torch.compile, one process
# (session 20's PROBE=math on s15's harness), and the kernels' SASS instruction counts.
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
CUBIN=1 bash bench/diag/s20/kernels.sh - exp/s23k 2>&1 | grep -v "warning\|ts0\|\^\|Remark\|^$"
cp exp/s23k/sass.txt $OUT/
grep -E "bx_var|bx_fast|bx_div" exp/s23k/sass.txt
step probe
PROBE=math timeout 400 python3 bench/diag/s20/probe.py exp/s23k 5 300 > $OUT/math.txt 2>&1; echo "rc=$?"
cat $OUT/math.txt | tail -70
step done
