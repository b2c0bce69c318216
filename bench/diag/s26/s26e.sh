#!/usr/bin/env bash
# s26 call 5: torch.compile's discount kernel at 2^21 and 2^23 (Inductor's source and autotuned config);
# b64 with 1, 2 (the rule) or 4 vectors a thread (KF_EXP_VECS, exp-vecs.patch) on discount at 2^21-2^28
# against torch.compile in one process (variant_exp.py).
set -uo pipefail
t0=$(date +%s); step() { echo "== [$(($(date +%s) - t0)) s] $*"; }
rm -rf /tmp/ind && TORCHINDUCTOR_CACHE_DIR=/tmp/ind timeout 120 python3 - <<'PY'
import torch
f = torch.compile(lambda mb, d: mb * d, dynamic=False)
for m in (512, 2048):
    mb = torch.randn(m, 256, dtype=torch.float64, device="cuda")
    d = torch.randn(16, m, 256, dtype=torch.float64, device="cuda")
    f(mb, d); torch.cuda.synchronize()
PY
for k in $(grep -rl "def triton_" /tmp/ind --include=*.py | head -4); do echo "--- $k"; sed -n '/@triton_heuristics/,/tl.store/p' $k; done > $OUT/inductor.txt
find /tmp/ind -name "*.best_config" -exec sh -c 'echo "--- $1"; cat "$1"; echo' _ {} \; >> $OUT/inductor.txt
grep -n "XBLOCK\|num_warps\|eviction\|xnumel =\|best_config\|pointwise" $OUT/inductor.txt | head -40
step inductor
rm -rf /tmp/expt && mkdir -p /tmp/expt && tar --exclude=./build -cf - . | (cd /tmp/expt && tar xf -)
(cd /tmp/expt && patch -p1 < bench/diag/s26/exp-vecs.patch && KFUSE_GPU_TARGET=kfbench_inproc source bench/gpu_env.sh >/dev/null)
step "experiment build"
cd /tmp/expt
ENV=KF_EXP_VECS timeout 240 python3 bench/diag/s25/variant_exp.py 21,22,23,24,26,28 3 discount:2+4+1 > $OUT/vecs.txt 2>&1; echo "rc=$?"; grep "^|" $OUT/vecs.txt
step done
