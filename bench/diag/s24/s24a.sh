#!/usr/bin/env bash
# s24 call 1: build; rowsum warpv rows-a-block probe + torch.compile's configs; OpenCL profiling queue
# experiment (clqueue.c); then the GPU suite (all but fuzz) at HEAD.
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
source bench/gpu_env.sh
step built
mkdir -p $OUT/logs
bash bench/diag/s24/kernels.sh build/gpu/fusec /tmp/s24k > $OUT/logs/kernels.txt 2>&1 || echo "kernels FAILED"
cp /tmp/s24k/res.txt $OUT/logs/ 2>/dev/null
step kernels
timeout 150 python3 bench/diag/s24/probe.py /tmp/s24k 7 300 > $OUT/logs/probe.txt 2>&1; echo "probe rc=$?"
grep -v "^\s*$" $OUT/logs/probe.txt | grep -v Warning | tail -40
step probe
cc -O2 -I/opt/kfuse-deps/usr/include -o /tmp/clqueue bench/diag/s24/clqueue.c /opt/kfuse-deps/usr/lib/x86_64-linux-gnu/libOpenCL.so.1 &&
  timeout 100 /tmp/clqueue /tmp/s24k/x5.cl x5_k0_d5aae514_c64 200 20 22 24 > $OUT/logs/clqueue.txt 2>&1; echo "clqueue rc=$?"
cat $OUT/logs/clqueue.txt | tail -40
step clqueue
(cd build/gpu && timeout 300 ctest -V -j 6 -E fuzz 2>&1) > "$OUT/logs/ctest.txt"
grep -E "^[0-9]+/[0-9]+ Test|tests passed|tests failed|graphs \(corpus|correct on|CHECK failed|b64 launches|NVRTC:|foreign" "$OUT/logs/ctest.txt" | tail -70
step suite
(cd $OUT && tar czf logs.tgz logs && rm -rf logs)
step done
