#!/usr/bin/env bash
# session 15 call 5: GPU suite on b64's chunked walk, kfbench A/B against the div32 commit (exp/base2)
set -uo pipefail
export OUT=${OUT:-/tmp/kfuse-out}
R=/tmp/s15e; mkdir -p $R
date -u | tee $R/date.txt
bash bench/gpu_check.sh -E fuzz > $R/check.txt 2>&1; cp $OUT/ctest.txt $R/ 2>/dev/null; grep -E "tests passed|Failed|CHECK failed|correct on|graphs \(" $R/check.txt | head -20
ROUNDS=2 OUT=$R bash bench/ab.sh exp/base2 12,20,22,24,26,28 100 discount 2>&1 | tail -16
tar czf /tmp/s15e.tgz -C $R . && find $OUT -mindepth 1 -delete; mv /tmp/s15e.tgz $OUT/
