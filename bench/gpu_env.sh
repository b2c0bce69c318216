# Sourced by bench/gpu_check.sh and bench/gpu_bench.sh on the GPU machine
# (nothing can be installed there): unpack the carried Debian packages
# (.deps/: xxhash, SQLite, the OpenCL ICD loader and headers) into a private
# prefix, register NVIDIA's OpenCL driver, and build kfuse with CUDA and
# OpenCL in build/gpu (every target, or only $KFUSE_GPU_TARGET when set).
# Leaves the shell in the repository root with OUT set (default
# /tmp/kfuse-out); exits when the build fails.
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
OUT=${OUT:-/tmp/kfuse-out}
mkdir -p "$OUT"
deps=/opt/kfuse-deps
mkdir -p $deps
for f in .deps/*.deb; do dpkg -x "$f" $deps; done
multi=$deps/usr/lib/x86_64-linux-gnu
# the -dev packages' .so links point at the runtime packages' files
export PKG_CONFIG_PATH=$multi/pkgconfig:$deps/usr/share/pkgconfig
sed -i "s|^prefix=.*|prefix=$deps/usr|" $multi/pkgconfig/*.pc 2>/dev/null
export LD_LIBRARY_PATH=$multi:${LD_LIBRARY_PATH:-}
# NVIDIA's OpenCL: register its ICD for the loader (the library's own
# search is left alone; this is the machine's set-up, not kfuse's)
nvcl=$(ldconfig -p | awk '/libnvidia-opencl.so.1/{print $NF; exit}')
[ -z "$nvcl" ] && nvcl=$(find / -name 'libnvidia-opencl.so.1' 2>/dev/null | head -1)
if [ -n "$nvcl" ] && grep -qs nvidia-opencl /etc/OpenCL/vendors/*.icd; then
    echo "NVIDIA OpenCL ICD: already registered ($(grep -ls nvidia-opencl /etc/OpenCL/vendors/*.icd | tr '\n' ' '))"
elif [ -n "$nvcl" ]; then
    mkdir -p /etc/OpenCL/vendors && echo "$nvcl" > /etc/OpenCL/vendors/nvidia.icd
    echo "NVIDIA OpenCL ICD: $nvcl"
else
    echo "NVIDIA OpenCL ICD: not found"
fi
gcc --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
# -Werror is CI's job (Debian's gcc); this machine's compiler differs: show its warnings
cmake -S . -B build/gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKFUSE_WERROR=OFF \
    -DOpenCL_INCLUDE_DIR=$deps/usr/include -DOpenCL_LIBRARY=$multi/libOpenCL.so.1 \
    -DSQLite3_INCLUDE_DIR=$deps/usr/include -DSQLite3_LIBRARY=$multi/libsqlite3.so.0 \
    -DCUDAToolkit_ROOT=/usr/local/cuda 2>&1 | tee "$OUT/configure.txt" | grep -E "backend|kfuse|Error" 
cmake --build build/gpu -j 16 ${KFUSE_GPU_TARGET:+--target $KFUSE_GPU_TARGET} > "$OUT/build.txt" 2>&1 ||
    { tail -20 "$OUT/build.txt"; exit 1; }
# (a build without warnings is a success: callers may run under pipefail)
grep -A3 "warning:" "$OUT/build.txt" | head -40 || true
