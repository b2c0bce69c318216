#!/usr/bin/env bash
# On the GPU machine (nothing can be installed there): build kfuse with CUDA
# and OpenCL (bench/gpu_env.sh: the carried packages, NVIDIA's OpenCL ICD,
# build/gpu) and run the whole CTest suite.  Output goes to stdout and $OUT.
# Usage: bash bench/gpu_check.sh [extra ctest args]
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
(cd build/gpu && ctest -V -j 4 "$@" 2>&1) > "$OUT/ctest.txt"
grep -E "^[0-9]+/[0-9]+ Test|tests passed|graphs \(corpus|correct on|SKIP|CHECK failed" "$OUT/ctest.txt" | head -80
