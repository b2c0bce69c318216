#!/usr/bin/env bash
# Session 38, call 1, on the GPU machine from the repository root, with
# .deps/ and exp/ carried (exp/base: `git archive e569ee9`, its bench/results
# and bench/diag left out: the tree before the lean GPU's launch rule):
#   1. the peak DRAM bandwidth the CUDA context reads (kfbench's first line);
#   2. the rule's A/B: bench/ab.sh of exp/base against this tree, saxpy and
#      boxplus on CUDA, 2^22-2^28, three rounds, torch.compile in each;
#   3. the GPU suite but fuzz (CUDA, NVIDIA's OpenCL, compute-sanitizer),
#      in the time left.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
source "$here/../../gpu_env.sh" >/dev/null
step build
build/gpu/kfbench --backend cuda --sizes 12 --reps 5 bench/workloads.kir saxpy 2>&1 | head -3
ROUNDS=3 BACKENDS=cuda PEERS="--systems torch.compile" \
    timeout 250 bash bench/ab.sh exp/base 22,24,26,28 50 saxpy boxplus 2>&1 | tail -20
step ab
left=$((575 - ($(date +%s) - t0)))
(cd build/gpu && timeout $left ctest -V -j 6 -E fuzz > "$OUT/ctest.txt" 2>&1; echo "ctest rc=$?" >> "$OUT/ctest.txt")
grep -E "tests passed|tests failed|graphs \(corpus|fast_math:|CHECK failed|ctest rc|\*\*\*|NVRTC:|memory_gbps" "$OUT/ctest.txt" | head -40
step suite
