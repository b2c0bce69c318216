#!/usr/bin/env bash
# s22 call 4: the GPU suite with m32, then discount before/after against torch.compile in one process.
set -uo pipefail
source bench/gpu_env.sh
date -u
(cd build/gpu && ctest -V -j 4 -E fuzz 2>&1) > "$OUT/ctest.txt"
grep -E "^[0-9]+/[0-9]+ Test|tests passed|tests failed|graphs \(corpus|correct on|SKIP|CHECK failed" "$OUT/ctest.txt" | tail -60
date -u
deps=/opt/kfuse-deps; multi=$deps/usr/lib/x86_64-linux-gnu
cmake -S exp/old -B exp/old/build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKFUSE_WERROR=OFF \
    -DOpenCL_INCLUDE_DIR=$deps/usr/include -DOpenCL_LIBRARY=$multi/libOpenCL.so.1 \
    -DSQLite3_INCLUDE_DIR=$deps/usr/include -DSQLite3_LIBRARY=$multi/libsqlite3.so.0 \
    -DCUDAToolkit_ROOT=/usr/local/cuda > $OUT/old-configure.txt 2>&1
cmake --build exp/old/build -j 16 --target kfbench_inproc > $OUT/old-build.txt 2>&1 || tail -5 $OUT/old-build.txt
for run in 1 2; do
    sz=12,16,20; [ $run = 2 ] && sz=12,16
    timeout 100 python3 exp/ab_inproc.py $sz 7 discount exp/old/build/libkfbench_inproc.so > $OUT/ab$run.log 2>&1
    grep "^|" $OUT/ab$run.log | tail -3
done
date -u
cd $OUT && tar czf s22d.tgz *.txt *.log
