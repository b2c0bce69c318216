#!/usr/bin/env bash
# The GPU benchmark in one command, on the GPU machine (bench/README.md):
# build kfbench (bench/gpu_env.sh), run it on CUDA and on NVIDIA's OpenCL,
# run bench/peers.py (CuPy, PyTorch, JAX) and bench/report.py; the CSVs, the
# report and its plot go to $OUT and bench/results/ as GPU-DATE*.
# Budget: under 8 minutes on an H200 with the defaults (SIZES=12,20,26,28,
# REPS=50; set them to change it).
# Usage: bash bench/gpu_bench.sh [GPU]   (GPU: a short name, default from nvidia-smi: h200)
set -uo pipefail
t0=$(date +%s)
step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
step "build"
KFUSE_GPU_TARGET=kfbench source "$(dirname "$0")/gpu_env.sh"
gpu=${1:-$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 |
    grep -oiE '(gh|[abhl])[0-9]{2,3}s?' | head -1 | tr 'A-Z' 'a-z')}
gpu=${gpu:-gpu}
date=$(date +%Y-%m-%d)
sizes=${SIZES:-12,20,26,28}
reps=${REPS:-50}
name=$gpu-$date
bench=(build/gpu/kfbench --sizes "$sizes" --reps "$reps")
csvs=("$OUT/$name-kfuse-cuda.csv")

step "kfbench on CUDA (device 0)"
"${bench[@]}" --backend cuda --device 0 --launch --csv "$OUT/$name-kfuse-cuda.csv" bench/workloads.kir |
    tee "$OUT/$name-kfuse-cuda.txt"
cl=$(build/gpu/kfbench --list --backend opencl 2>/dev/null | grep -i nvidia | head -1)
if [ -n "$cl" ]; then
    step "kfbench on OpenCL device ${cl%%:*}: ${cl#*: }"
    "${bench[@]}" --backend opencl --device "${cl%%:*}" --launch --csv "$OUT/$name-kfuse-opencl.csv" \
        bench/workloads.kir | tee "$OUT/$name-kfuse-opencl.txt"
    csvs+=("$OUT/$name-kfuse-opencl.csv")
else
    step "no NVIDIA OpenCL device: OpenCL not measured"
fi

# one process per library and size: each library keeps its own memory
# pool, and one process holding them all (or torch.compile's state across
# sizes) ran out of GPU memory; every process uses the copy reference the
# first one measured (JAX has no events to measure one)
copy=
for systems in torch,torch.compile cupy,cupy.fuse jax; do
    lib=${systems%%,*}
    launch=--launch
    for s in ${sizes//,/ }; do
        step "peers: $systems at 2^$s"
        csv=$OUT/$name-peers-$lib-$s.csv
        python3 bench/peers.py bench/workloads.kir --systems "$systems" --sizes "$s" --reps "$reps" $launch \
            ${copy:+--copy-gbps "$copy"} --csv "$csv" 2>&1 | tee -a "$OUT/$name-peers-$lib.txt" |
            grep -vE "^(cupy|torch|jax)" | head -20
        launch=
        [ -s "$csv" ] && csvs+=("$csv")
        [ -z "$copy" ] && [ -s "$csv" ] && copy=$(awk -F, '$1 == "peers" && $2 == "copy" {print $5}' "$csv")
    done
done

step "report"
python3 bench/report.py --gpu "$gpu" --date "$date" --out-dir "$OUT" "${csvs[@]}"
mkdir -p bench/results
cp "${csvs[@]}" "$OUT/$name.md" bench/results/ && { [ ! -e "$OUT/$name.png" ] || cp "$OUT/$name.png" bench/results/; }
sed -n '/^## Targets/,/^## Launch/p' "$OUT/$name.md" | head -12
step "done: $OUT/$name.md"
