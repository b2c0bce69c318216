#!/usr/bin/env bash
# On the GPU machine, one call: build (bench/gpu_env.sh), the whole test
# suite with CUDA and NVIDIA's OpenCL (bench/gpu_check.sh), the seed-problem
# examples at full size on CUDA (issue #8's targets), and the cache
# benchmark (bench/cache_bench.sh, issue #5), and the CPU backend benchmark
# when a bundle from bench/cpu_host.sh pack is there.  Everything goes to $OUT.
# Usage: bash bench/gpu_all.sh [NAME]   (NAME of the results, default h200-DATE)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
t0=$(date +%s)
step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
name=${1:-h200-$(date +%F)}
step "build and test"
bash bench/gpu_check.sh -E fuzz
OUT=${OUT:-/tmp/kfuse-out}
export LD_LIBRARY_PATH=/opt/kfuse-deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export KFUSE_BACKEND=cuda
ex=build/gpu/tests
{
    step "example_threads: 10000 calls, n=100000, 1 and 4 threads, replay, 4 processes"
    $ex/example_threads --calls 10000 --procs 4
    step "example_host_pipeline: 1 GiB"
    $ex/example_host_pipeline 1024
    step "example_timing"
    (cd "$OUT" && "$OLDPWD/$ex/example_timing")
    step "example_cost"
    $ex/example_cost
    step "first_call"
    KFUSE_CACHE_DIR=$(mktemp -d) build/gpu/first_call
} 2>&1 | tee "$OUT/$name-examples.txt"
step "where a warm first call goes: traces of fusec run in a new process, warm cache"
for g in examples/x5.kir bench/chain40.kir; do
    d=$(mktemp -d)
    KFUSE_CACHE_DIR=$d build/gpu/fusec run "$g" --backend cuda --dim n=4096 >/dev/null
    t=$OUT/warm-$(basename "$g" .kir).json
    KFUSE_CACHE_DIR=$d KFUSE_TRACE=$t build/gpu/fusec run "$g" --backend cuda --dim n=4096 | tail -2
    python3 - "$t" <<'PY'
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X" and e.get("cat") != "device"]
for e in sorted(ev, key=lambda e: e["ts"])[:14]:
    print(f'  {e["name"]:28s} {e["dur"]:9.1f} us  {e.get("args", {})}')
PY
done
step "cache benchmark"
cmake --build build/gpu --target cache_bench >/dev/null
bash bench/cache_bench.sh "$name" --backend cuda --build build/gpu 2>&1 | tail -40
cp bench/results/cache-"$name"*.md "$OUT/" 2>/dev/null
if [ -f .cpubundle.tar.xz ]; then
    step "CPU backend benchmark on this host (bench/cpu_host.sh)"
    bash bench/cpu_host.sh run | tail -30
fi
step "done"
