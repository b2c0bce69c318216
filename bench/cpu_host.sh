#!/usr/bin/env bash
# The CPU backend benchmark on a host without LLVM 15 (the GPU machine's
# 16-core host, where nothing can be installed).
#   bash bench/cpu_host.sh pack   here: build cpu_bench and example_cost (every
#                                 backend), bundle them with the shared libraries
#                                 they need (not NVRTC: the GPU machine has its
#                                 own) and a numexpr wheel into .cpubundle.tar.xz
#   bash bench/cpu_host.sh run    there: unpack the bundle, run cpu_bench and
#                                 cpu_bench.py (NumPy, numexpr) with every core,
#                                 and example_cost (CPU against GPU)
# Output goes to stdout and $OUT/cpu_host.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
pack)
    b=$(mktemp -d) d=$(mktemp -d)
    cmake -S . -B "$b" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$b" -j "$(nproc)" --target cpu_bench example_cost >/dev/null
    mkdir -p "$d/lib" "$d/wheels"
    cp "$b/cpu_bench" "$b/tests/example_cost" "$d/" && cp -L "$b/libkfuse.so.0" "$d/lib/"
    # everything ldd finds except the C library, what any Linux has and NVRTC
    ldd "$b/cpu_bench" | awk '$3 ~ /^\// {print $3}' |
        grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|libz|liblzma|libnvrtc[^/]*|ld-linux[^/]*)\.so' |
        xargs -I{} cp -L {} "$d/lib/"
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
        --platform manylinux_2_28_x86_64 numexpr -d "$d/wheels"
    tar -C "$d" -cJf .cpubundle.tar.xz . && rm -rf "$b" "$d"
    ls -la .cpubundle.tar.xz
    ;;
run)
    OUT=${OUT:-/tmp/kfuse-out} && mkdir -p "$OUT"
    d=/opt/kfuse-cpu && mkdir -p $d && tar -C $d -xJf .cpubundle.tar.xz
    python3 -m pip install -q --no-deps --target $d/py $d/wheels/*.whl
    t=$(nproc)
    {
        echo "# $(date -u +%F) $(lscpu | sed -n 's/^Model name: *//p'), $t cores, $(free -g | awk '/Mem:/{print $2}') GiB"
        LD_LIBRARY_PATH=$d/lib $d/cpu_bench --threads "$t"
        PYTHONPATH=$d/py python3 bench/cpu_bench.py --threads "$t"
        echo "# example_cost, every backend built (the GPU machine's own NVRTC)"
        LD_LIBRARY_PATH=$d/lib:${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64 $d/example_cost
    } 2>&1 | tee "$OUT/cpu_host.txt"
    ;;
*)
    echo "usage: $0 pack|run" >&2
    exit 2
    ;;
esac
