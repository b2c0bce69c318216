#!/usr/bin/env bash
# session 15 call 2: GPU suite on the committed b64 change, kfbench A/B of discount, launch, Triton's rowsum source
set -uo pipefail
export OUT=${OUT:-/tmp/kfuse-out}
R=/tmp/s15b; mkdir -p $R
date -u | tee $R/date.txt
bash bench/gpu_check.sh -E fuzz > $R/check.txt 2>&1; cp $OUT/ctest.txt $R/ 2>/dev/null; grep -E "tests passed|Failed|CHECK failed|correct on|graphs" $R/check.txt | head -20
ROUNDS=3 PEERS="--systems torch.compile" OUT=$R bash bench/ab.sh exp/base 12,20,22,26,28 100 discount 2>&1 | tail -30
export LD_LIBRARY_PATH=/opt/kfuse-deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
for r in 1 2 3; do build/gpu/kfbench --backend cuda --launch --sizes 12 --reps 20 bench/workloads.kir x5 2>&1 | grep "^launch" | tee -a $R/launch.txt; done
TORCHINDUCTOR_CACHE_DIR=/tmp/ind timeout 120 python3 bench/peers.py bench/workloads.kir rowsum discount saxpy --systems torch.compile --sizes 20 --reps 5 > $R/ind-run.txt 2>&1
mkdir -p $R/ind; grep -l "triton.jit\|@triton" -r /tmp/ind --include=*.py | while read f; do cp "$f" $R/ind/; done; ls $R/ind | head
find /tmp/ind -name "*.best_config" -exec sh -c 'echo "$1: $(cat "$1")"' _ {} \; > $R/ind/best_configs.txt 2>/dev/null
tar czf /tmp/s15b.tgz -C $R . && find $OUT -mindepth 1 -delete; mv /tmp/s15b.tgz $OUT/
