# s30: boxplus f32 against torch.compile in one process (s15's harness), the cubins bp.sh builds.
# PROBE=f64 (call 1): divchk first (__fdiv_rn against kf_div_f64, kdiv.h, bit for bit on random bit
# patterns and special values); then at 2^19-2^26 the emitted c64 / h64 / b64 with __fdiv_rn and with
# kf_div_f64 (each pair's outputs compared bit for bit on inputs in [-40, 40]) and c64 with approximate
# math.  PROBE=nf (call 2): at 2^19-2^22 c64 / h64 with __fdiv_rn, with its fast path alone (kdivf.h,
# no slow path), with __fdividef, and with all-approximate math.
# Usage (repository root): PROBE=f64|nf python3 bench/diag/s30/bp_probe.py CUBIN_DIR [ROUNDS] [REPS]
import ctypes, os, sys
sys.path.insert(0, "bench/diag/s15")   # run from the repository root
import same_process as sp   # takes CUBIN_DIR, ROUNDS, REPS from sys.argv
import torch

probe = os.environ.get("PROBE", "f64")
print(torch.cuda.get_device_name(), torch.__version__, "probe", probe, "rounds", sp.ROUNDS, "reps", sp.REPS)
if probe == "f64":
    # -- division, bit for bit
    n = 1 << 25
    g = torch.Generator(device=sp.dev); g.manual_seed(30)
    ab = torch.randint(-2**31, 2**31 - 1, (2, n), device=sp.dev, dtype=torch.int32, generator=g)
    spec = torch.tensor([0, -2**31, 1, -2**31 + 1, 0x7fffff, 0x800000, 0x7f7fffff, 0x7f800000, -8388608, 0x7fc00000,
                         0x3f800000, -1082130432, 0x400000, 0x7f000000, 0x3f7fffff, 0x3f800001, 0x00000003, 0x0b000000],
                        device=sp.dev, dtype=torch.int32)
    k = spec.numel()
    ab[0, :k * k] = spec.repeat_interleave(k); ab[1, :k * k] = spec.repeat(k)
    # exponents near the ends of the range on both sides
    m = n // 4
    ab[0, k * k:m] = (ab[0, k * k:m] & -2139095041) | (torch.randint(0, 12, (m - k * k,), device=sp.dev, dtype=torch.int32) << 23)
    ab[1, m:2 * m] = (ab[1, m:2 * m] & -2139095041) | (torch.randint(0, 12, (m,), device=sp.dev, dtype=torch.int32) << 23)
    ab[1, 2 * m:3 * m] = (ab[1, 2 * m:3 * m] & -2139095041) | (torch.randint(242, 255, (m,), device=sp.dev, dtype=torch.int32) << 23)
    ab[1, 3 * m:] = (ab[0, 3 * m:] & -8388608) | (ab[1, 3 * m:] & 0x7fffff)
    a, b = ab[0].view(torch.float32), ab[1].view(torch.float32)
    o0 = torch.full((n,), float("nan"), device=sp.dev); o1 = o0.clone()
    f = sp.kernel("divchk.cubin", "divchk")
    args = [sp.ptr(a.data_ptr()), sp.ptr(b.data_ptr()), sp.ptr(o0.data_ptr()), sp.ptr(o1.data_ptr()), ctypes.c_uint32(n)]
    sp.kf_launcher(f, (n + 255) // 256, 256, lambda _: args)(0)
    torch.cuda.synchronize()
    same = (o0.view(torch.int32) == o1.view(torch.int32)) | (torch.isnan(o0) & torch.isnan(o1))
    ref = a / b   # torch's IEEE division
    same_t = (o0.view(torch.int32) == ref.view(torch.int32)) | (torch.isnan(o0) & torch.isnan(ref))
    print("divchk: %d of %d quotients differ between __fdiv_rn and kf_div_f64; %d between __fdiv_rn and torch" % (
        (~same).sum().item(), n, (~same_t).sum().item()))
    bad = (~same).nonzero().flatten()[:8].tolist()
    for i in bad:
        print("  a %r b %r: __fdiv_rn %r kf_div_f64 %r" % (a[i].item(), b[i].item(), o0[i].item(), o1[i].item()))
    del ab, o0, o1, ref, same, same_t


def kern(cubin, var):
    return sp.kernel(cubin + ".cubin", "boxplus_k0_3cdfd6ed_" + var)


for lg in ((19, 20, 22, 24, 26) if probe == "f64" else (19, 20, 21, 22)):
    n = 1 << lg
    mk = lambda: (torch.rand(n, device=sp.dev) * 4 - 2, torch.rand(n, device=sp.dev) * 4 - 2)
    sets = sp.rotate(mk, 12 * n)
    out = torch.empty(n, device=sp.dev)
    args = lambda k: [sp.ptr(sets[k][0].data_ptr()), sp.ptr(sets[k][1].data_ptr()), sp.ptr(out.data_ptr()),
                      sp.meta_of([n, n, 1, 1, 1, 0, 0, 0])]
    grids = {"c64": (n // 4 + 255) // 256, "h64": (n // 2 + 255) // 256, "b64": (n // 4 + 511) // 512}
    launcher = lambda cub, var: sp.kf_launcher(kern(cub, var), grids[var], 256, args)
    if probe == "f64":
        rows = [(var + tag, launcher(cub, var)) for var in ("c64", "h64", "b64") for cub, tag in (("bp", ""), ("bp_d", " d"))]
        rows.append(("c64 fast", launcher("bp_fast", "c64")))
        # each pair bit for bit, on inputs that reach far (+-40: exp over- and underflows)
        keep = sets[0]
        sets[0] = (torch.rand(n, device=sp.dev) * 80 - 40, torch.rand(n, device=sp.dev) * 80 - 40)
        for var in ("c64", "h64", "b64"):
            got = []
            for cub in ("bp", "bp_d"):
                launcher(cub, var)(0)
                torch.cuda.synchronize()
                got.append(out.clone())
            u, v = got
            d = ((u.view(torch.int32) != v.view(torch.int32)) & ~(torch.isnan(u) & torch.isnan(v))).sum().item()
            print("boxplus 2^%d %s: %d of %d outputs differ between __fdiv_rn and kf_div_f64 (inputs in [-40, 40])" % (lg, var, d, n))
        sets[0] = keep
    else:
        rows = [(var + " " + cub, launcher(cub, var)) for cub in ("bp", "bp_nf", "bp_fd", "bp_fast") for var in ("c64", "h64")]
    sp.run("boxplus 2^%d" % lg, sets, lambda a, b: torch.log((1 + torch.exp(a + b)) / (torch.exp(a) + torch.exp(b))),
           out, rows, False)
    del sets
    torch.cuda.empty_cache()
