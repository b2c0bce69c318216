#!/usr/bin/env bash
# The GPU benchmark in one command, on the GPU machine (bench/README.md):
# build kfbench (bench/gpu_env.sh), run it on CUDA and on NVIDIA's OpenCL,
# run bench/peers.py (CuPy, PyTorch, JAX) and bench/report.py; the CSVs (one
# per system), the report and its plot go to bench/results/ as NAME*
# (default GPU-DATE), and to $OUT as NAME.md, NAME.png and NAME.tgz (the
# CSVs, the systems' logs and every round's CSVs).
# Sizes up to 2^ROUNDS_UPTO (default 22) run in ROUNDS rounds (default 3),
# every system once a round, and the report takes each row's median round:
# one process's times drift by 2-3% from the next's at those sizes, as much
# as the gaps being judged (bench/results/h100-2026-11-22-s11-analysis.md);
# larger sizes run once.
# Budget on an H100: about 6 minutes for SIZES=12,20 (3 rounds), 8-9 for
# SIZES=26,28, so the device's 10-minute calls take them apart (then
# report.py on both calls' CSVs).
# FAST (default "boxplus iota chain40": the workloads with an op fast math
# approximates; empty: none) adds kfuse on CUDA with kf_context_options.
# fast_math (system kfuse-cuda-fast) on those, beside the others in every
# round; the targets judge kfuse-cuda, the default kernels.
# Usage: [SIZES=12,20,26,28] [REPS=50] [ROUNDS=3] [ROUNDS_UPTO=22] [NAME=GPU-DATE] [FAST=GRAPHS]
#        bash bench/gpu_bench.sh [GPU]   (GPU: a short name, default from nvidia-smi: h200)
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
rounds=${ROUNDS:-3}
upto=${ROUNDS_UPTO:-22}
name=${NAME:-$gpu-$date}
fast=${FAST-boxplus iota chain40}
cl=$(build/gpu/kfbench --list --backend opencl 2>/dev/null | grep -i nvidia | head -1)
[ -n "$cl" ] || step "no NVIDIA OpenCL device: OpenCL not measured"
small= large=
for s in ${sizes//,/ }; do
    if [ "$s" -le "$upto" ]; then small+=${small:+,}$s; else large+=${large:+,}$s; fi
done

# One round: kfbench on CUDA and OpenCL, then the peers, each system in its
# own processes, at sizes $1; CSVs to $OUT/rounds/SYSTEM-$2.csv.  One
# process per library and size: each library keeps its own memory pool,
# and one process holding them all (or torch.compile's state across sizes)
# ran out of GPU memory; every process uses the copy reference the first
# one measured (JAX has no events to measure one).
run_round() {
    local sizes=$1 r=$2 s lib systems csv launch
    local bench=(build/gpu/kfbench --sizes "$sizes" --reps "$reps" --launch)
    step "round $r, 2^{$sizes}: kfbench on CUDA (device 0)"
    "${bench[@]}" --backend cuda --device 0 --csv "$OUT/rounds/kfuse-cuda-$r.csv" bench/workloads.kir |
        tee -a "$OUT/$name-kfuse-cuda.txt" | grep -E "^copy|^launch"
    if [ -n "$fast" ]; then
        step "round $r, 2^{$sizes}: kfbench on CUDA with fast math: $fast"
        # shellcheck disable=SC2086
        build/gpu/kfbench --sizes "$sizes" --reps "$reps" --fast-math --backend cuda --device 0 \
            --csv "$OUT/rounds/kfuse-cuda-fast-$r.csv" bench/workloads.kir $fast >> "$OUT/$name-kfuse-cuda-fast.txt"
    fi
    if [ -n "$cl" ]; then
        step "round $r, 2^{$sizes}: kfbench on OpenCL device ${cl%%:*}: ${cl#*: }"
        "${bench[@]}" --backend opencl --device "${cl%%:*}" --csv "$OUT/rounds/kfuse-opencl-$r.csv" \
            bench/workloads.kir | tee -a "$OUT/$name-kfuse-opencl.txt" | grep -E "^copy|^launch"
    fi
    for systems in torch,torch.compile cupy,cupy.fuse jax; do
        lib=${systems%%,*}
        launch=--launch
        for s in ${sizes//,/ }; do
            step "round $r: peers: $systems at 2^$s"
            csv=$OUT/rounds/peers-$lib-$s-$r.csv
            python3 bench/peers.py bench/workloads.kir --systems "$systems" --sizes "$s" --reps "$reps" $launch \
                ${copy:+--copy-gbps "$copy"} --csv "$csv" 2>&1 | tee -a "$OUT/$name-peers-$lib.txt" |
                grep -vE "^(cupy|torch|jax)" | head -20
            launch=
            [ -z "$copy" ] && [ -s "$csv" ] && copy=$(awk -F, '$1 == "peers" && $2 == "copy" {print $5}' "$csv")
        done
    done
}

mkdir -p "$OUT/rounds"
rm -f "$OUT/rounds/"*.csv "$OUT/$name"-*.txt
copy=
for r in $(seq 1 "$rounds"); do
    [ -n "$small" ] && run_round "$small" "$r"
done
[ -n "$large" ] && run_round "$large" L
# one CSV per system, every round's rows in it (report.py takes each row's median round)
csvs=()
for sys in kfuse-cuda kfuse-cuda-fast kfuse-opencl peers-torch peers-cupy peers-jax; do
    files=("$OUT/rounds/$sys"-[0-9L]*.csv)
    [ -s "${files[0]}" ] || continue
    awk 'FNR > 1 || NR == 1' "${files[@]}" > "$OUT/$name-$sys.csv"
    csvs+=("$OUT/$name-$sys.csv")
done

step "report"
python3 bench/report.py --gpu "$gpu" --date "$date" --name "$name" --out-dir "$OUT" "${csvs[@]}"
mkdir -p bench/results
cp "${csvs[@]}" "$OUT/$name.md" bench/results/ && { [ ! -e "$OUT/$name.png" ] || cp "$OUT/$name.png" bench/results/; }
sed -n '/^## Targets/,/^## Launch/p' "$OUT/$name.md" | head -12
# $OUT keeps the report, its plot and one archive of the rest (CSVs, logs,
# rounds): the device tool brings back at most 8 files (session 21 lost
# the peers' CSVs of a run that left 17 there)
(cd "$OUT" && tar czf "$name.tgz" "$name"-*.csv "$name"-*.txt rounds && rm -rf "$name"-*.csv "$name"-*.txt rounds)
step "done: $OUT/$name.md, $OUT/$name.tgz"
