#!/usr/bin/env bash
# s29 call 2: the whole GPU suite at HEAD but fuzz (test_codegen included: its CUDA and NVIDIA OpenCL
# graphs against the interpreter; not run whole on a GPU since d0e1e60's saxpy rule).
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
source bench/gpu_env.sh >/dev/null
step built
mkdir -p $OUT/logs
(cd build/gpu && timeout $((560 - $(date +%s) + t0)) ctest -V -j 6 -E fuzz 2>&1) > "$OUT/logs/ctest.txt"; echo "ctest rc=$?"
grep -E "^ *[0-9]+/[0-9]+ Test|tests passed|tests failed|graphs \(corpus|correct on|CHECK failed|NVRTC:" "$OUT/logs/ctest.txt" | tail -70
step suite
