#!/usr/bin/env bash
# s22 call 7: kf_stream_wrap: the GPU suite (test_codegen and fuzz excepted: codegen is s21's, checked then),
# then kfuse on its own stream and on the legacy default stream against torch.compile, one process.
set -uo pipefail
source bench/gpu_env.sh
date -u
(cd build/gpu && ctest -V -j 4 -E "fuzz|test_codegen" 2>&1) > "$OUT/ctest.txt"
grep -E "^[0-9]+/[0-9]+ Test|tests passed|tests failed|graphs \(corpus|correct on|CHECK failed" "$OUT/ctest.txt" | tail -50
date -u
timeout 75 python3 exp/stream3_exp.py 12 5 > $OUT/w1.log 2>&1; grep "^|" $OUT/w1.log
date -u
