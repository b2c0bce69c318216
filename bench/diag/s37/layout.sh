#!/usr/bin/env bash
# Session 37's unrun A/B (no device time was left): on the GPU machine,
# kfuse's launch rule against the same tree with exp-layout.patch, which
# gives two-array bodies without branches h64 (8-byte vectors) at every
# size from a wave of h64 instead of only below c's wave, and branchy bodies
# c64 instead of b64 (two vectors a thread) at large sizes.  Today's H100
# benchmark (h100-2026-12-07-s37.md) had saxpy 1.1% and boxplus 1.3-1.6%
# behind torch.compile at 2^26-2^28; session 11 measured h64 1.2-1.6%
# faster for saxpy on an H100, session 28 c64 ahead on an H200, and session
# 20 b64 0.4% slower than c64 for boxplus on an H100: the rule follows the
# H200.  Run on both GPUs before any rule that tells them apart.
#   here:   bash bench/diag/s37/layout.sh prep
#   device: bash bench/diag/s37/layout.sh run     (carry: .deps exp; ~6 min)
set -euo pipefail
cd "$(dirname "$0")/../../.."
case ${1:-} in
prep)
    rm -rf exp/base exp/layout
    mkdir -p exp/base exp/layout
    git archive HEAD | tar -x -C exp/base
    git archive HEAD | tar -x -C exp/layout
    rm -rf exp/base/bench/results exp/base/bench/diag exp/layout/bench/results
    patch -s -d exp/layout -p1 < bench/diag/s37/exp-layout.patch
    cp -r .deps exp/layout/ ;;
run)
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    BACKENDS=cuda ROUNDS=3 PEERS="--systems torch.compile" \
        bash exp/layout/bench/ab.sh exp/base 22,24,26,28 50 saxpy boxplus ;;
*)
    echo "usage: $0 prep|run" >&2
    exit 2 ;;
esac
