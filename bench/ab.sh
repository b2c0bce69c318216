#!/usr/bin/env bash
# A/B of a change on the GPU machine: kfbench of a baseline tree against
# this tree, in alternating rounds (one process's timings drift by 2-3%
# from the next's, so a single pair of runs cannot settle a few percent:
# bench/results/h100-2026-11-22-s11-analysis.md), optionally with a peer
# (bench/peers.py) in each round too.  Prints a table of the medians of the
# rounds' medians with their min-max; CSVs and the table go to $OUT.
#
# BASE is a source tree of the baseline, e.g. on this machine
#   mkdir -p exp/base && git archive HEAD | tar -x -C exp/base
# carried to the GPU machine (exp/ is ignored by git: name it in carry).
#
# Usage: [ROUNDS=3] [BACKENDS=cuda,opencl] [WORKLOADS=bench/workloads.kir] [CL_MATCH=nvidia (the OpenCL device)] [PEERS="--systems torch.compile"]
#        [KFBENCH_ARGS="--fast-math" (more kfbench options, both sides)]
#        bash bench/ab.sh BASE SIZES REPS GRAPH...
set -uo pipefail
base=$(cd "$1" && pwd) || exit 1
sizes=$2 reps=$3
shift 3
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=${ROUNDS:-3}
backends=${BACKENDS:-cuda,opencl}
OUT=${OUT:-/tmp/kfuse-out}
mkdir -p "$OUT/ab"
# both trees build kfbench the same way (each its own gpu_env.sh, build/gpu)
[ -d "$base/.deps" ] || cp -r "$here/.deps" "$base/"
for tree in "$base" "$here"; do
    (OUT=$OUT/ab KFUSE_GPU_TARGET=kfbench source "$tree/bench/gpu_env.sh" >/dev/null)
    [ -x "$tree/build/gpu/kfbench" ] || { echo "ab: kfbench of $tree did not build"; exit 1; }
done
export LD_LIBRARY_PATH=/opt/kfuse-deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}   # gpu_env.sh's prefix
cd "$here" || exit 1
cl=$(build/gpu/kfbench --list --backend opencl 2>/dev/null | grep -i "${CL_MATCH:-nvidia}" | head -1)
for r in $(seq 1 "$rounds"); do
    for b in ${backends//,/ }; do
        dev=0
        if [ "$b" = opencl ]; then
            [ -n "$cl" ] || continue
            dev=${cl%%:*}
        fi
        for side in base new; do
            tree=$here
            [ $side = base ] && tree=$base
            # shellcheck disable=SC2086
            "$tree/build/gpu/kfbench" --backend "$b" --device "$dev" --sizes "$sizes" --reps "$reps" \
                --csv "$OUT/ab/$side-$b-$r.csv" ${KFBENCH_ARGS:-} "${WORKLOADS:-$here/bench/workloads.kir}" "$@" >/dev/null ||
                echo "ab: kfbench $side $b round $r failed"
        done
    done
    if [ -n "${PEERS:-}" ]; then
        # shellcheck disable=SC2086
        python3 bench/peers.py "${WORKLOADS:-bench/workloads.kir}" $PEERS --sizes "$sizes" --reps "$reps" \
            --csv "$OUT/ab/peers-$r.csv" "$@" >/dev/null 2>&1 || echo "ab: peers round $r failed"
    fi
    echo "ab: round $r done"
done
python3 - "$OUT/ab" <<'EOF' | tee "$OUT/ab.txt"
import csv, glob, os, statistics, sys
d = sys.argv[1]
rows = {}   # (side, system, workload, n) -> [us per round]
for f in sorted(glob.glob(os.path.join(d, "*.csv"))):
    side = os.path.basename(f).split("-")[0]
    for r in csv.DictReader(open(f)):
        if r["workload"] in ("copy", "launch") or not r["ms"]:
            continue
        rows.setdefault((side, r["system"], r["workload"], int(r["n"])), []).append(float(r["ms"]) * 1000)
def fmt(v):
    return "%.3f (%.3f-%.3f)" % (statistics.median(v), min(v), max(v))
print("| system | workload | N | base us (min-max of rounds) | new us | new/base | peer us | new/peer |")
print("|---|---|---|---|---|---|---|---|")
for (side, system, w, n), new in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][3])):
    if side != "new":
        continue
    base = rows.get(("base", system, w, n))
    peers = [(s, v) for (sd, s, ww, nn), v in rows.items() if sd == "peers" and ww == w and nn == n]
    peer = min(peers, key=lambda sv: statistics.median(sv[1])) if peers else None
    print("| %s | %s | 2^%d | %s | %s | %s | %s | %s |" % (
        system, w, n.bit_length() - 1, fmt(base) if base else "-", fmt(new),
        "%.3f" % (statistics.median(new) / statistics.median(base)) if base else "-",
        "%s %s" % (peer[0], fmt(peer[1])) if peer else "-",
        "%.3f" % (statistics.median(new) / statistics.median(peer[1])) if peer else "-"))
EOF
