#!/usr/bin/env python3
"""The GPU benchmark's report: reads the CSVs of kfbench (kfuse on CUDA, and
on OpenCL when present) and of peers.py, and writes OUT_DIR/GPU-DATE.md (one
table per workload, launch overhead, the targets met or missed) and
OUT_DIR/GPU-DATE.png (GB/s against size, one panel per workload) when
matplotlib is there.
Usage: report.py --gpu h200 --date 2026-11-22 [--name NAME] [--out-dir bench/results] CSV..."""
import argparse
import csv
import math
import os
import statistics
import sys

# The targets of issue #7 (bench/README.md).
COPY_TARGETS = [(("x5", "gelu", "boxplus", "poly"), 0.92), (("dot", "rowmax", "rowsum"), 0.90)]
LAUNCH_TARGET_US = 3.0
OPENCL_TARGET = 0.9
COPY_AT = 1 << 28       # the fraction-of-copy targets hold at this size
PEER_FROM = 1 << 20     # kfuse >= the best peer at every size from here
SMALL = 1 << 12         # kfuse faster than every peer here


def load(paths):
    """rows[system][workload][n] = row (its numbers as numbers); launch[system]
    = host us per call, one per run in the CSVs' order; copies[system] = the
    copy reference in GB/s.  Where several CSVs (rounds: gpu_bench.sh's
    ROUNDS) hold the same row, it is the round with the median time, and
    row["rounds"] lists every round's ms; copy figures are the runs' median."""
    runs, launches, copy_runs = {}, {}, {}
    for p in paths:
        for r in csv.DictReader(open(p)):
            n, ms = int(r["n"]), float(r["ms"])
            if r["workload"] == "launch":
                launches.setdefault(r["system"], []).append(ms * 1e3)
            elif r["workload"] == "copy":
                copy_runs.setdefault(r["system"], []).append(float(r["gbps"]))
            else:
                r.update(n=n, ms=ms, gbps=float(r["gbps"]), ratio=float(r["ratio"]))
                runs.setdefault(r["system"], {}).setdefault(r["workload"], {}).setdefault(n, []).append(r)
    rows = {}
    for s, ws in runs.items():
        for w, ns in ws.items():
            for n, rs in ns.items():
                rs.sort(key=lambda r: r["ms"])
                mid = dict(rs[(len(rs) - 1) // 2], rounds=[r["ms"] for r in rs])
                rows.setdefault(s, {}).setdefault(w, {})[n] = mid
    copies = {s: statistics.median(v) for s, v in copy_runs.items()}
    return rows, launches, copies


def spread(r):
    """' (3 rounds: 7.9-8.0 us)' for a row of several rounds, else ''."""
    t = r["rounds"]
    return f" ({len(t)} rounds: {t[0] * 1e3:.2f}-{t[-1] * 1e3:.2f} us)" if len(t) > 1 else ""


def size(n):
    return f"2^{int(math.log2(n))}" if n & (n - 1) == 0 else str(n)


def best_peer(rows, peers, w, n):
    """(system, GB/s) of the fastest peer at workload w, size n, or None."""
    got = [(s, rows[s][w][n]["gbps"]) for s in peers if n in rows[s].get(w, {})]
    return max(got, key=lambda x: x[1]) if got else None


def tables(rows, kfuse, peers, workloads):
    out = []
    systems = sorted(s for s in rows if s.startswith("kfuse")) + peers
    for w in workloads:
        sizes = sorted({n for s in systems for n in rows[s].get(w, {})})
        kern = next((r["kernels"] for s in systems for r in rows[s].get(w, {}).values() if r.get("kernels")), "?")
        out += [f"### {w} ({kfuse}: {kern} kernel{'s' if kern != '1' else ''})", ""]
        head = ["N"] + [f"{s} GB/s (of copy)" for s in systems] + ["best peer", f"{kfuse} / best peer"]
        out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for n in sizes:
            cells = [size(n)]
            for s in systems:
                r = rows[s].get(w, {}).get(n)
                cells.append(f"{r['gbps']:.1f} ({r['ratio']:.2f})" if r else "-")
            bp = best_peer(rows, peers, w, n)
            k = rows.get(kfuse, {}).get(w, {}).get(n)
            cells.append(f"{bp[0]} {bp[1]:.1f}" if bp else "-")
            cells.append(f"{k['gbps'] / bp[1]:.2f}" if bp and k else "-")
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return out


def targets(rows, launch, kfuse, peers, workloads):
    """One line per target: met, missed or no data, with the figures."""
    k = rows.get(kfuse, {})
    lines = []

    def verdict(name, misses, seen, detail=""):
        state = "no data" if not seen else "missed" if misses else "met"
        lines.append(f"| {name} | **{state}** | {'; '.join(misses) or detail} |")

    for group, want in COPY_TARGETS:
        misses, seen, worst = [], 0, []
        for w in group:
            if COPY_AT not in k.get(w, {}):
                continue
            seen += 1
            r = k[w][COPY_AT]["ratio"]
            worst.append(f"{w} {r:.3f}")
            if r < want:
                misses.append(f"{w} {r:.3f}")
        verdict(f"{'/'.join(group)} at {size(COPY_AT)} >= {want} of copy", misses, seen, ", ".join(worst))
    misses, seen = [], 0
    for w in workloads:
        for n, r in sorted(k.get(w, {}).items()):
            bp = best_peer(rows, peers, w, n)
            if n >= PEER_FROM and bp:
                seen += 1
                if r["gbps"] < bp[1]:
                    misses.append(f"{w} {size(n)}: {r['gbps']:.0f}{spread(r)} < {bp[0]} {bp[1]:.0f} GB/s"
                                  f"{spread(rows[bp[0]][w][n])}")
    verdict(f"kfuse >= best peer at every size from {size(PEER_FROM)}", misses, seen, f"{seen} rows")
    misses, seen = [], 0
    for w in workloads:
        r = k.get(w, {}).get(SMALL)
        peer = min((rows[s][w][SMALL] for s in peers if SMALL in rows[s].get(w, {})), key=lambda p: p["ms"],
                   default=None)
        if r and peer:
            seen += 1
            if r["ms"] >= peer["ms"]:
                misses.append(f"{w}: {r['ms'] * 1e3:.2f} us{spread(r)} vs {peer['system']} "
                              f"{peer['ms'] * 1e3:.2f} us{spread(peer)}")
    verdict(f"kfuse faster than every peer at {size(SMALL)}", misses, seen, f"{seen} workloads")
    runs = launch.get(kfuse)
    us = statistics.median(runs) if runs else None
    # three decimals: 3.003 is a miss that 3.00 would hide
    got = f"{us:.3f} us" + (f" (median of {len(runs)} runs, {min(runs):.2f}-{max(runs):.2f})" if runs and len(runs) > 1
                             else "") if runs else ""
    verdict(f"launch overhead <= {LAUNCH_TARGET_US:g} us", [got] if us and us > LAUNCH_TARGET_US else [], runs, got)
    cl = rows.get("kfuse-opencl", {})
    misses, seen, lo = [], 0, None
    for w in workloads:
        for n, r in cl.get(w, {}).items():
            c = k.get(w, {}).get(n)
            if c and n >= PEER_FROM and kfuse != "kfuse-opencl":
                seen += 1
                q = r["gbps"] / c["gbps"]
                lo = q if lo is None else min(lo, q)
                if q < OPENCL_TARGET:
                    misses.append(f"{w} {size(n)}: {q:.2f}")
    verdict(f"OpenCL / CUDA >= {OPENCL_TARGET} at every size from {size(PEER_FROM)}", misses, seen,
            f"lowest {lo:.2f}" if lo is not None else "")
    return ["| target | result | figures |", "|---|---|---|"] + lines


def plot(rows, workloads, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report.py: matplotlib is not installed: no plot")
        return False
    cols = 4
    nrow = -(-len(workloads) // cols)
    fig, axes = plt.subplots(nrow, cols, figsize=(4 * cols, 3.2 * nrow), squeeze=False)
    for ax, w in zip(axes.flat, workloads):
        for s in rows:
            pts = sorted(rows[s].get(w, {}).items())
            if pts:
                ax.plot([n for n, _ in pts], [r["gbps"] for _, r in pts], marker="o", label=s,
                        linewidth=2.5 if s.startswith("kfuse") else 1.2)
        ax.set_xscale("log", base=2)
        ax.set_title(w)
        ax.set_xlabel("N (elements)")
        ax.set_ylabel("GB/s")
        ax.grid(True, alpha=0.3)
    for ax in list(axes.flat)[len(workloads):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels))
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--date", required=True)
    ap.add_argument("--name", help="the output files' name, without .md (default GPU-DATE)")
    ap.add_argument("--out-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    ap.add_argument("csv", nargs="+")
    a = ap.parse_args()
    rows, launch, copies = load(a.csv)
    kfuse = "kfuse-cuda" if "kfuse-cuda" in rows else next((s for s in rows if s.startswith("kfuse")), None)
    if not kfuse:
        print("report.py: no kfbench rows (system kfuse-*) in the CSVs")
        return 1
    peers = [s for s in rows if not s.startswith("kfuse")]
    workloads = list(dict.fromkeys(w for s in rows for w in rows[s]))
    base = os.path.join(a.out_dir, a.name or f"{a.gpu}-{a.date}")
    os.makedirs(a.out_dir, exist_ok=True)
    md = [f"# kfuse against its peers: {a.gpu}, {a.date}", "",
          "Device time per launch (median of CUDA events), GB/s of the byte floor (each input read once, each "
          "output written once) and, in brackets, its fraction of a device-to-device copy measured in the same "
          "run (bytes read + written).  How it was measured: bench/README.md.", ""]
    nr = max(len(r["rounds"]) for ws in rows.values() for ns in ws.values() for r in ns.values())
    if nr > 1:
        md += [f"Sizes measured in up to {nr} rounds (one process per system a round, the systems alternated) show "
               "the round with the median time; the targets below give the rounds' range.", ""]
    if "kfuse-cuda-fast" in rows:
        md += ["kfuse-cuda-fast is kfuse on CUDA with kf_context_options.fast_math (approximate f32 exp, log, sin, "
               "cos, division, ...: docs/codegen.md, \"Fast math\"), on the workloads it changes; the targets judge "
               f"{kfuse}, the default kernels.", ""]
    md += ["Copy reference: " + ", ".join(f"{s} {v:.0f} GB/s" for s, v in copies.items()) + ".", "", "## Targets", ""]
    md += targets(rows, launch, kfuse, peers, workloads) + ["", "## Launch overhead", ""]
    md += ["Host microseconds per call, x5 at n=4096, 10,000 calls queued on one stream: the median of the runs "
           "(every round's process measures it) and their range.  In each run kfbench interleaves kfuse's loops "
           "with the bare cuLaunchKernel's, so both see the driver's drift alike.", "",
           "| system | us per call | runs |", "|---|---|---|"]
    md += [f"| {s} | {statistics.median(v):.2f} | {len(v)}: {min(v):.2f}-{max(v):.2f} |" for s, v in launch.items()]
    k, bare = launch.get("kfuse-cuda", []), launch.get("cuda-bare", [])
    if k and len(k) == len(bare):   # kfbench measures both in each run
        d = [a - b for a, b in zip(k, bare)]
        md += ["", f"kfuse adds {statistics.median(d):.2f} us per call to a bare cuLaunchKernel (median of the runs' "
               f"differences: {', '.join(f'{x:.2f}' for x in d)})."]
    md += ["", "## Workloads", ""] + tables(rows, kfuse, peers, workloads)
    if plot(rows, workloads, base + ".png"):
        md += [f"![GB/s against size]({os.path.basename(base)}.png)", ""]
    with open(base + ".md", "w") as f:
        f.write("\n".join(md))
    print(f"report.py: wrote {base}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
