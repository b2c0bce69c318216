#!/usr/bin/env bash
# kfuse quick start for a fresh Debian 12 machine (run as root):
#   ./quickstart.sh demo   install what is missing, build, run the main demo
#   ./quickstart.sh test   install what is missing, build (warnings as errors)
#                          and run the whole test suite: normal, ASan+UBSan,
#                          TSan (threads and capture), fuzz
# Installing is idempotent and silent when everything is there already.
set -euo pipefail
cd "$(dirname "$0")"

# Everything kfuse builds against, from Debian.  The CUDA toolkit (NVRTC and
# headers) is NVIDIA's, at /usr/local/cuda; without it the CUDA backend is
# off and the configure summary says so.
PACKAGES=(build-essential cmake pkg-config clang libclang-rt-14-dev
          libxxhash-dev libsqlite3-dev llvm-15-dev
          ocl-icd-opencl-dev opencl-headers pocl-opencl-icd)

install_missing() {
    local missing=()
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "quickstart: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

jobs=$(nproc)
build() {  # build PRESET
    cmake --preset "$1" >/dev/null
    cmake --build --preset "$1" -j "$jobs"
}

case "${1:-}" in
demo)
    install_missing
    build dev
    ./build/dev/kfuse_demo examples/x5.kir
    ;;
test)
    install_missing
    build dev
    ctest --preset dev -j "$jobs"
    build asan
    ctest --preset asan -j "$jobs"
    build tsan    # ThreadSanitizer: the thread, capture and API tests only
    ctest --preset tsan -j "$jobs"
    build fuzz
    ctest --preset fuzz -j "$jobs"   # one fuzzer a core
    ;;
*)
    echo "usage: $0 demo|test" >&2
    exit 2
    ;;
esac
