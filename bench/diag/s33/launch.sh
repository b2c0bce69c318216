#!/usr/bin/env bash
# Session 33, call 2: the launch entry points (launch.c), three processes.
set -uo pipefail
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nvcc=/usr/local/cuda/bin/nvcc
$nvcc -cubin -arch=sm_90 -o /tmp/launch.cubin launch.cu && cc -O2 -I/usr/local/cuda/include -o /tmp/launch launch.c -ldl || exit 1
for i in 1 2 3; do echo "== process $i"; timeout 60 /tmp/launch /tmp/launch.cubin; done
