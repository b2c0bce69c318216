#!/usr/bin/env bash
# Session 38, call 2, on the GPU machine from the repository root, with
# .deps/ and exp/ carried (exp/lean: `git archive 41efe27`, the lean rule
# with h64 from c's first wave, its bench/results and bench/diag left out):
#   1. bench/ab.sh of exp/lean against this tree (h64 from 8 of c's waves,
#      LEAN_H64_WAVES): saxpy on CUDA at 2^21-2^24, three rounds,
#      torch.compile in each: h64 against c64 at 2^21-2^23, both h64 at 2^24;
#   2. the GPU suite but fuzz, in the time left.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
source "$here/../../gpu_env.sh" >/dev/null
step build
ROUNDS=3 BACKENDS=cuda PEERS="--systems torch.compile" \
    timeout 200 bash bench/ab.sh exp/lean 21,22,23,24 100 saxpy 2>&1 | tail -8
step ab
left=$((470 - ($(date +%s) - t0)))
(cd build/gpu && timeout $left ctest -V -j 6 -E fuzz > "$OUT/ctest.txt" 2>&1; echo "ctest rc=$?" >> "$OUT/ctest.txt")
grep -E "tests passed|tests failed|CHECK failed|ctest rc|\*\*\*|NVRTC:" "$OUT/ctest.txt" | head -20
step suite
