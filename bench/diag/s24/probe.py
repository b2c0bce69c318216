# Session 24: rowsum of [M, 1024] f32 (the benchmark's rows) in ONE process
# with torch.compile (s15's harness through s18's cases): kfuse's `warpv`
# as emitted (8 rows a 256-thread block) against copies with 1, 2 and 4
# rows a block (kernels.sh's rowsum_w.cubin); then torch.compile's kernels
# for the benchmark's reductions and small calls, with their grids and
# blocks (torch.profiler's trace).
# Usage: python3 bench/diag/s24/probe.py CUBIN_DIR [ROUNDS] [REPS]
import json, os, sys, tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "s18"))
import probe as s18   # s18's cases (s15's harness); takes CUBIN_DIR, ROUNDS, REPS from sys.argv
import torch

sp = s18.sp
print(torch.cuda.get_device_name(), torch.__version__, "rounds", sp.ROUNDS, "reps", sp.REPS)
for M in (4, 1024, 4096, 16384):
    case = s18.rows_case(M, 1024)
    args = lambda k, a=case[4]: a(k, [1, 4096])   # one chunk
    rows = [("kfuse warpv (8 rows a block)", sp.kf_launcher(sp.kernel("rowsum.cubin", s18.ROWSUM + "warpv"),
                                                           (M + 7) // 8, 256, args))]
    rows += [("warpv, %d row%s a block" % (w, "s" * (w > 1)),
              sp.kf_launcher(sp.kernel("rowsum_w.cubin", s18.ROWSUM + "warpv_w%d" % w), (M + w - 1) // w, 32 * w,
                             args)) for w in (4, 2, 1)]
    s18.run(case, rows)


def configs(title, fn, *args):
    """torch.compile's kernels for fn(*args): name, grid, block, registers, shared memory"""
    tc = torch.compile(fn, dynamic=False)
    for _ in range(3):
        tc(*args)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        tc(*args)
        torch.cuda.synchronize()
    path = os.path.join(tempfile.mkdtemp(), "trace.json")
    prof.export_chrome_trace(path)
    for e in json.load(open(path))["traceEvents"]:
        if e.get("cat") == "kernel":
            a = e.get("args", {})
            print("%-22s %-40s grid %s block %s registers %s shared %s" % (
                title, e["name"][:40], a.get("grid"), a.get("block"), a.get("registers per thread"),
                a.get("shared memory")))


r = lambda *s: torch.rand(*s, device=sp.dev)
for M in (4, 1024, 4096):
    configs("rowsum [%d, 1024]" % M, lambda t: t.sum(dim=1), r(M, 1024))
    configs("rowmax [%d, 1024]" % M, lambda t: t.amax(dim=1), r(M, 1024))
for e in (12, 20):
    configs("dot 2^%d" % e, lambda a, b: (a * b).sum(), r(1 << e), r(1 << e))
configs("discount 2^12", lambda a, b: a * b, torch.rand(1, 256, device=sp.dev, dtype=torch.float64),
        torch.rand(16, 1, 256, device=sp.dev, dtype=torch.float64))
