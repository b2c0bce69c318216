#!/usr/bin/env bash
# kfuse's own host time per launch, no GPU needed: build bench/null_cuda.c
# as a libcuda.so.1 that does no GPU work and run kfbench --launch (x5 at
# n = 4096, 10,000 calls queued, median of 7 loops) against it.  What it
# prints is the time kf_run takes down to cuLaunchKernel; on the GPU
# machine kfbench --launch gives the driver's bare cuLaunchKernel beside
# kfuse's, and their difference holds this plus what the real driver does
# differently for kfuse's launches.
# Usage: bash bench/host_cost.sh [BUILD_DIR]   (default build/dev, with CUDA on)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/dev}
cuda=${CUDA_HOME:-/usr/local/cuda}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -shared -fPIC -Wall -Wextra -I"$cuda/include" -o "$tmp/libcuda.so.1" bench/null_cuda.c
cmake --build "$build" --target kfbench >/dev/null
for i in 1 2 3; do
    # a fresh cache: the first compile goes through NVRTC; the x5 row kfbench
    # then times at 2^12 means nothing here (no kernel runs) and is not shown
    KFUSE_CACHE_DIR=$tmp/cache LD_LIBRARY_PATH=$tmp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
        "$build/kfbench" --backend cuda --launch --sizes 12 --reps 3 bench/workloads.kir x5 2>&1 |
        grep -E "^launch: x5|kfbench:" || true
done
