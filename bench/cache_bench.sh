#!/usr/bin/env bash
# The kernel cache's costs (docs/cache.md) for x+x+x+x+x (examples/x5.kir)
# and a 40-op elementwise chain (bench/chain40.kir), each figure the median
# of fresh cache_bench processes: (a) context creation; (b) the first call
# on an empty cache and (c) in a new process on a warm one, both beyond
# context creation; (d) an in-process repeat (kf_compile of an equal graph
# + kf_run) against a plain kf_run and, on CUDA, a bare cuLaunchKernel;
# (e) the device compile alone.  On CUDA, CuPy's fuse beside it
# (bench/cache_peers.py) where CuPy is installed.  Writes the tables to
# bench/results/cache-NAME.md (NAME: the GPU or host and the date).
# Usage: bench/cache_bench.sh NAME [--backend cuda|opencl|cpu]... [--build DIR]
#        [--runs R] [--n N] [--python PY] [--note TEXT]
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    echo "usage: bench/cache_bench.sh NAME [--backend cuda|opencl|cpu]... [--build DIR] [--runs R] [--n N]" \
        "[--python PY] [--note TEXT]" >&2
    exit 2
}
if [ $# -lt 1 ] || [ "${1#-}" != "$1" ]; then usage; fi
name=$1
shift
backends=() build=build/dev runs=10 n=4096 py=python3 note=""
while [ $# -gt 0 ]; do
    [ $# -ge 2 ] || usage
    case $1 in
    --backend) backends+=("$2") ;;
    --build) build=$2 ;;
    --runs) runs=$2 ;;
    --n) n=$2 ;;
    --python) py=$2 ;;
    --note) note=$2 ;;
    *) usage ;;
    esac
    shift 2
done
[ ${#backends[@]} -gt 0 ] || backends=(cuda)
bench=$build/cache_bench
[ -x "$bench" ] || { echo "cache_bench.sh: no $bench (cmake --build $build --target cache_bench)" >&2; exit 1; }
out=bench/results/cache-$name.md
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
start=$SECONDS

# One cache_bench process with every on-disk cache under $1: kfuse's and
# the drivers' own (PoCL's kernel cache, NVIDIA's compute cache), so that
# "empty" is a first run on a fresh machine and "warm" a second run.
one() {
    local dir=$1
    shift
    KFUSE_CACHE_DIR=$dir/kfuse POCL_CACHE_DIR=$dir/pocl CUDA_CACHE_PATH=$dir/nv \
        "$bench" --n "$n" "$@"
}
# The values of key $1 in the lines on stdin; their median.
val() { grep -o " $1=[-0-9.]*" | cut -d= -f2; }
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
fmt() { awk -v v="$1" -v d="$2" 'BEGIN { printf "%.*f", d, v }'; }
below() { awk -v v="$1" -v t="$2" 'BEGIN { print (v < t) ? "yes" : "**no**" }'; }
fail() { echo "cache_bench.sh: $*" >&2; exit 1; }

{
    echo "# Kernel cache: first call and repeat costs ($name)"
    echo
    cpu=$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)
    echo "Host: $cpu, $(nproc) cores, $(. /etc/os-release && echo "$PRETTY_NAME")."
    if command -v nvidia-smi > /dev/null; then
        echo "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)."
    fi
    [ -z "$note" ] || echo "$note"
    echo
    echo "Command: \`bench/cache_bench.sh $name$(printf ' --backend %s' "${backends[@]}")\` ($(date -u +%F)):"
    echo "every figure is the median of $runs fresh processes; inputs are $n f32 elements in [-1, 1]"
    echo "and every first result is checked against the interpreter.  \"Empty\" gives each process"
    echo "fresh, empty cache directories (kfuse's, and PoCL's and NVIDIA's own kernel caches);"
    echo "\"warm\" processes share directories one earlier process filled.  First calls are"
    echo "kf_compile + kf_run + sync, timed after kf_context_create returned (\"beyond context"
    echo "creation\").  Repeats are host time per call on 256 elements, enqueueing only (batches"
    echo "of 50, synchronised between batches; the CPU backend runs such small launches on the"
    echo "calling thread, so there it includes the kernel): kf_compile of an equal graph (answered"
    echo "by the plan cache) + kf_run, a plain kf_run of the compiled program, and on CUDA"
    echo "cuLaunchKernel of a hand-written x5 kernel (NVRTC, dlopen'd libcuda, same primary context)."
} > "$scratch/head.md"

for be in "${backends[@]}"; do
    {
        first="" repeat=""
        for e in "x5 examples/x5.kir" "chain40 bench/chain40.kir"; do
            read -r g file <<< "$e"
            cold=$scratch/$be-$g.cold warm=$scratch/$be-$g.warm
            : > "$cold"
            : > "$warm"
            for _ in $(seq "$runs"); do
                d=$(mktemp -d -p "$scratch")
                one "$d" --backend "$be" "$file" "$g" >> "$cold" || fail "$be $g: cache_bench failed"
                rm -rf "$d"
            done
            mkdir "$scratch/w-$be-$g"
            one "$scratch/w-$be-$g" --backend "$be" "$file" "$g" > /dev/null || fail "$be $g: cache_bench failed"
            for _ in $(seq "$runs"); do
                one "$scratch/w-$be-$g" --backend "$be" "$file" "$g" >> "$warm" || fail "$be $g: cache_bench failed"
            done
            # the empty cache compiled and the warm one did not
            [ "$(val compiles < "$cold" | grep -c '^0$')" = 0 ] || fail "$be $g: an empty-cache process compiled nothing"
            [ "$(val compiles < "$warm" | grep -vc '^0$')" = 0 ] || fail "$be $g: a warm-cache process compiled"
            device=$(sed -n 's/^device: //p' "$cold" | head -1)
            ctx=$(cat "$cold" "$warm" | val ctx_ms | median)
            fc=$(val first_ms < "$cold" | median)
            fw=$(val first_ms < "$warm" | median)
            comp=$(val compile_ms < "$cold" | median)
            rep=$(cat "$cold" "$warm" | val repeat_us | median)
            run=$(cat "$cold" "$warm" | val run_us | median)
            bare=$(cat "$cold" "$warm" | val bare_us | median)
            first+="| $g | $(fmt "$ctx" 2) | $(fmt "$fc" 2) | $(fmt "$comp" 2) | $(fmt "$fw" 3) | $(below "$fw" 0.3) |"$'\n'
            if awk -v b="$bare" 'BEGIN { exit !(b >= 0) }'; then
                floor=$bare bare_s=$(fmt "$bare" 2)
            else
                floor=$run bare_s="none"
            fi
            added=$(awk -v r="$rep" -v f="$floor" 'BEGIN { print r - f }')
            lookup=$(awk -v r="$rep" -v p="$run" 'BEGIN { print r - p }')
            repeat+="| $g | $(fmt "$rep" 2) | $(fmt "$run" 2) | $bare_s | $(fmt "$lookup" 2) | $(fmt "$added" 2) | $(below "$added" 1) |"$'\n'
        done
        echo
        echo "## $be: $device"
        echo
        echo "First call, ms:"
        echo
        echo "| expression | (a) context creation | (b) empty cache: first call beyond context | (e) of it, device compile | (c) warm cache, new process: first call beyond context | target (c) < 0.3 ms |"
        echo "| --- | ---: | ---: | ---: | ---: | --- |"
        printf '%s' "$first"
        echo
        echo "(d) Repeat in process, µs of host time per call:"
        echo
        echo "| expression | kf_compile (plan cache) + kf_run | plain kf_run | bare cuLaunchKernel | plan cache lookup (repeat - kf_run) | repeat over the bare launch$([ "$be" = cuda ] || echo ' (none here: over kf_run)') | target < 1 µs |"
        echo "| --- | ---: | ---: | ---: | ---: | ---: | --- |"
        printf '%s' "$repeat"
    } > "$scratch/$be.md"
done

: > "$scratch/peers.md"
if printf '%s\n' "${backends[@]}" | grep -qx cuda; then
    {
        echo
        echo "## CuPy (cupy.fuse), same expressions"
        echo
        if "$py" -c "import cupy" 2> /dev/null; then
            "$py" bench/cache_peers.py --runs "$runs" --n "$n" || fail "cache_peers.py failed"
        else
            echo "CuPy is not installed for $py: not measured."
        fi
    } > "$scratch/peers.md"
fi

{
    cat "$scratch/head.md"
    for be in "${backends[@]}"; do cat "$scratch/$be.md"; done
    cat "$scratch/peers.md"
    echo
    echo "Targets: a warm-cache first call in a new process under 0.3 ms beyond context creation;"
    echo "an in-process repeat under 1 µs over a bare launch.  The run took $((SECONDS - start)) s."
} > "$out"
cat "$out"
