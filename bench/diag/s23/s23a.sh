#!/usr/bin/env bash
# s23 call 1: test_wrap's foreign-context check on CUDA (test_runtime cuda, corpus "runtime", no random graphs),
# then kfuse on its own stream and on the legacy default stream against torch.compile in 4 processes
# (2^12, 2^20), then kfbench --launch on each stream, alternated.
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
KFUSE_GPU_TARGET="test_runtime kfbench_inproc kfbench" source bench/gpu_env.sh
step built
(cd tests && KFUSE_TEST_RANDOM=20 KFUSE_TEST_CORPUS=runtime,fuse timeout 120 ../build/gpu/tests/test_runtime cuda) > $OUT/rt.txt 2>&1
echo "test_runtime cuda: rc=$?"; tail -5 $OUT/rt.txt; grep -i "fail\|CHECK" $OUT/rt.txt | head
step "inproc"
for i in 1 2 3 4; do
  timeout 130 python3 bench/inproc.py bench/workloads.kir --sizes 12,20 --stream both --rounds 5 --reps 100 \
      --csv $OUT/p$i.csv > $OUT/p$i.log 2>&1; echo "process $i rc=$?"; grep "^| x5\|^| dot" $OUT/p$i.log
  step "process $i done"
done
step "launch"
for s in own legacy own legacy; do
  timeout 40 build/gpu/kfbench --backend cuda --sizes 12 --reps 20 --launch --stream $s bench/workloads.kir x5 2>&1 | grep -i "launch" | sed "s/^/$s: /"
done
step done
cd $OUT && tar czf s23a.tgz *.csv *.log rt.txt build.txt 2>/dev/null; ls $OUT
