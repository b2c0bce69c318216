#!/usr/bin/env bash
# s25 call 9: rowsum [M, 1024], M = 32-2048: warpv at 8 rows a block (as emitted) against 4, 2 and 1, and
# torch.compile, one process (bench/diag/s25/rows_probe.py on s24's kernels.sh cubins, built here into
# exp/rows25 and carried).
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
timeout 200 python3 bench/diag/s25/rows_probe.py exp/rows25 7 300 > $OUT/rows_probe.txt 2>&1; echo "rc=$?"
grep -v "^\s*$" $OUT/rows_probe.txt | grep -v Warning | tail -60
step done
