#!/usr/bin/env python3
"""The workloads of bench/workloads.kir in kfuse's peers, timed the way
bench/kfbench.c times kfuse: CuPy (eager and cupy.fuse), PyTorch (eager and
torch.compile) and JAX (jit).  Each graph is read from the .kir file and
evaluated op by op with the library's own functions, so every system runs the
same expressions.  Same sizes, inputs (uniform in [-2, 2]; the gather's
two-scale permutation), input rotation, warm-up and median as kfbench; each
peer is checked against NumPy in float64 at N = 2^12 before it is timed.
Writes CSV rows system,workload,n,ms,gbps,copy_gbps,ratio,kernels (kernels
left empty) beside a device-to-device copy of its own (torch copy_, else
CuPy).  A library that fails to import is skipped with the reason.
Usage: peers.py WORKLOADS.kir [--sizes 12,20,26,28] [--reps 50] [--csv FILE]
                [--systems cupy,cupy.fuse,torch,torch.compile,jax] [--launch] [GRAPH...]
bench/README.md says what is counted."""
import argparse
import os
import re
import statistics
import sys
import time

import numpy as np

ROTATE_BYTES = 256 << 20     # input sets in rotation: over 4x the L2 of an H100/H200
COPY_BYTES = 1 << 30
CHECK_N = 1 << 12
ROW_BUDGET_MS = 2000.0
SPACER_MAX_MS = 250.0        # at most this much copying queued ahead of a row's launches
LAUNCH_N, LAUNCH_CALLS, LAUNCH_LOOPS = 4096, 10000, 7
# The size table of kfbench.c (README "Sizes"): fixed symbols; every other
# symbol is N divided by their product.
SIZE_MAP = {"discount": {"t": 16, "k": 256}, "rowmax": {"n": 1024}, "rowsum": {"n": 1024}}
UNARY = ("tanh", "sin", "cos", "exp", "log", "sqrt", "abs")
SYSTEMS = ["cupy", "cupy.fuse", "torch", "torch.compile", "jax"]


def log(msg):
    print(msg, flush=True)


# -- The .kir subset that workloads.kir uses -----------------------------------

def split_top(s):
    """Split s at the commas outside brackets and parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return parts + [cur.strip()] if cur.strip() else parts


def parse_type(s):
    """'f32' -> ('f32', None); 'f32[m,k]' -> ('f32', ['m', 'k'])."""
    m = re.fullmatch(r"(\w+)(?:\[(.*)\])?", s.strip())
    dims = None if m[2] is None else [d.strip() for d in m[2].split(",") if d.strip()]
    return m[1], [int(d) if d.isdigit() else d for d in dims] if dims is not None else None


def parse_expr(s):
    """'op a, (op b, c), axes=[1]' -> (op, [args], {kw}); an arg is a name,
    a float, a nested expression or a type."""
    s = s.strip()
    op, _, rest = s.partition(" ")
    args, kw = [], {}
    for a in split_top(rest):
        if a.startswith("("):
            args.append(parse_expr(a[1:-1]))
        elif re.fullmatch(r"\w+=.*", a):
            k, v = a.split("=", 1)
            kw[k] = [int(x) for x in v.strip("[]").split(",")] if v.startswith("[") else int(v)
        elif re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", a):
            args.append(float(a))
        elif "[" in a:
            args.append(("type",) + parse_type(a))
        else:
            args.append(a)
    return op, args, kw


def parse_kir(path):
    graphs, g = {}, None
    for line in open(path):
        line = line.split("#", 1)[0].strip()
        m = re.fullmatch(r"graph (\w+)\((.*)\) -> \((.*)\) \{", line)
        if m:
            params = [(p.split(":")[0].strip(),) + parse_type(p.split(":")[1]) for p in split_top(m[2])]
            g = {"name": m[1], "params": params, "outputs": [o.strip() for o in m[3].split(",")], "stmts": []}
        elif line == "}":
            graphs[g["name"]] = g
        elif g and "=" in line:
            name, expr = line.split("=", 1)
            g["stmts"].append((name.strip(), parse_expr(expr)))
    return graphs


def sym_sizes(g, n):
    fixed = SIZE_MAP.get(g["name"], {})
    rest = n // int(np.prod(list(fixed.values()) or [1]))
    return {s: fixed.get(s, rest) for _, _, dims in g["params"] for s in dims or [] if isinstance(s, str)}


class Ops:
    """The ops of the graphs on a NumPy-like module; subclasses adapt torch.
    float_dtype overrides every float dtype (the float64 reference)."""

    def __init__(self, xp, float_dtype=None):
        self.xp, self.float_dtype = xp, float_dtype

    def dtype(self, name):
        if self.float_dtype is not None and name.startswith("f"):
            return self.float_dtype
        return getattr(self.xp, {"f32": "float32", "f64": "float64", "i32": "int32", "i64": "int64"}[name])

    def call(self, op, args, kw):
        xp = self.xp
        if op in ("add", "sub", "mul", "div"):
            a, b = args
            return {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b, "div": lambda: a / b}[op]()
        if op in ("max", "min") and len(args) == 2:
            return self.binary_minmax(op, *args)
        if op in ("max", "sum"):
            axes = tuple(kw["axes"]) if "axes" in kw else None
            return self.reduce(op, args[0], axes)
        if op == "fma":
            return args[0] * args[1] + args[2]
        if op == "take":
            return self.take(*args)
        if op in UNARY:
            return getattr(xp, op)(args[0])
        raise ValueError(f"op '{op}' is not in peers.py's subset of .kir")

    def binary_minmax(self, op, a, b):
        return (self.xp.maximum if op == "max" else self.xp.minimum)(a, b)

    def reduce(self, op, a, axes):
        return (self.xp.sum if op == "sum" else self.xp.max)(a, axis=axes)

    def take(self, v, idx):
        return v[idx]

    def iota(self, dtype, shape, axis):
        xp = self.xp
        i = xp.arange(shape[axis], dtype=self.dtype(dtype))
        view = [1] * len(shape)
        view[axis] = shape[axis]
        return xp.broadcast_to(i.reshape(view), tuple(shape))


class TorchOps(Ops):
    def __init__(self, torch, device):
        super().__init__(torch)
        self.device = device

    def binary_minmax(self, op, a, b):
        t = self.xp
        if isinstance(a, float) or isinstance(b, float):  # torch.maximum takes tensors only
            x, c = (b, a) if isinstance(a, float) else (a, b)
            return t.clamp(x, min=c) if op == "max" else t.clamp(x, max=c)
        return (t.maximum if op == "max" else t.minimum)(a, b)

    def reduce(self, op, a, axes):
        t = self.xp
        if axes is None:
            return t.sum(a) if op == "sum" else t.amax(a)
        return t.sum(a, dim=axes) if op == "sum" else t.amax(a, dim=axes)

    def take(self, v, idx):
        return self.xp.index_select(v, 0, idx)

    def iota(self, dtype, shape, axis):
        t = self.xp
        i = t.arange(shape[axis], dtype=self.dtype(dtype), device=self.device)
        view = [1] * len(shape)
        view[axis] = shape[axis]
        return i.reshape(view).expand(*shape)


class Shape:
    """A value's dtype and shape, nothing computed: for the byte floor."""

    def __init__(self, dtype, shape):
        self.dtype, self.shape = np.dtype(dtype), tuple(shape)

    def _broadcast(self, other):
        return Shape(self.dtype, np.broadcast_shapes(self.shape, getattr(other, "shape", ())))

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _broadcast

    def __getitem__(self, index):  # take
        return Shape(self.dtype, index.shape)

    @property
    def nbytes(self):
        return self.dtype.itemsize * int(np.prod(self.shape))


class ShapeOps(Ops):
    def __init__(self):
        super().__init__(np)

    def call(self, op, args, kw):
        return args[0] if op in UNARY else super().call(op, args, kw)

    def binary_minmax(self, op, a, b):
        return a + b

    def reduce(self, op, a, axes):
        return Shape(a.dtype, [] if axes is None else [d for i, d in enumerate(a.shape) if i not in axes])

    def iota(self, dtype, shape, axis):
        return Shape(self.dtype(dtype), shape)


def byte_floor(g, inputs):
    """Bytes of every input read once and every output written once."""
    shapes = [Shape(x.dtype, x.shape) if isinstance(x, np.ndarray) else x for x in inputs]
    return sum(x.nbytes for x in shapes if isinstance(x, Shape)) + sum(o.nbytes for o in graph_fn(g, ShapeOps())(*shapes))


def input_sets(inputs, floor, free_bytes, share):
    """Input sets in rotation, as kfbench.c counts them: as many as make
    ROTATE_BYTES of inputs (the arrays alone: outputs are written to one
    place), within share of free_bytes at floor bytes a set (README, "Input
    rotation")."""
    inb = sum(x.nbytes for x in inputs if isinstance(x, np.ndarray))
    return max(1, min(-(-ROTATE_BYTES // max(inb, 1)), 10000, int(free_bytes / share // floor)))


def graph_fn(g, ops):
    """A function of the graph's inputs (in order) returning its outputs as a
    tuple, evaluated with ops.  Symbols come from the input shapes."""

    def names(e):
        if isinstance(e, str):
            yield e
        elif isinstance(e, tuple) and e[0] != "iota":
            for a in e[1]:
                yield from names(a)

    # last_use[i]: the statement results no statement after i reads
    last = {}
    for i, (name, e) in enumerate(g["stmts"]):
        last[name] = i
        for n in names(e):
            last[n] = i
    last_use = {}
    stmt_names = {name for name, _ in g["stmts"]}
    for n, i in last.items():
        if n in stmt_names and n not in g["outputs"]:
            last_use.setdefault(i, []).append(n)

    def fn(*inputs):
        env = dict(zip([p[0] for p in g["params"]], inputs))

        def size(sym):  # only iota asks (cupy.fuse's arguments have no shape)
            for (_, _, dims), x in zip(g["params"], inputs):
                if sym in (dims or []):
                    return x.shape[dims.index(sym)]
            return sym

        def ev(e):
            if isinstance(e, str):
                return env[e]
            if isinstance(e, float):
                return e
            op, args, kw = e
            if op == "iota":
                _, dt, dims = args[0]
                return ops.iota(dt, [size(d) for d in dims], kw.get("axis", 0))
            return ops.call(op, [ev(a) for a in args], kw)

        for i, (name, e) in enumerate(g["stmts"]):
            env[name] = ev(e)
            for dead in last_use.get(i, ()):  # eager libraries: free temporaries as a program would
                del env[dead]
        return tuple(env[o] for o in g["outputs"])

    return fn


# -- Inputs ----------------------------------------------------------------------

def make_inputs(g, n, seed):
    """Input set 0 on the host: floats uniform in [-2, 2] (scalars too), the
    take index the two-scale permutation of kfbench.c's fill_perm."""
    rng = np.random.default_rng(seed)
    sizes = sym_sizes(g, n)
    takes = {a[1] for _, (op, a, _) in g["stmts"] if op == "take"}
    out = []
    for name, dt, dims in g["params"]:
        if dims is None:
            out.append(float(rng.uniform(-2, 2)))
            continue
        shape = tuple(sizes.get(d, d) for d in dims)
        if name in takes:
            count = int(np.prod(shape))
            b = 4096 if count % 4096 == 0 else count
            perm = (rng.permutation(count // b)[:, None] * b + rng.permutation(b)[None, :]).reshape(shape)
            out.append(perm.astype(np.int32 if dt == "i32" else np.int64))
        else:
            a = rng.random(shape, dtype=np.float32 if dt == "f32" else np.float64)
            out.append(a * 4 - 2)
    return out


def reference(g, inputs):
    ref = [x.astype(np.float64) if isinstance(x, np.ndarray) and x.dtype.kind == "f" else x for x in inputs]
    return graph_fn(g, Ops(np, np.float64))(*ref)


def check(got, want, dtype):
    """Every element within tolerance of the float64 reference, as
    tools/common/kfsample.h's rt_compare: tol * (|want| + largest |want|)."""
    got = np.asarray(got, dtype=np.float64).reshape(np.shape(want))
    tol = 2e-4 if np.dtype(dtype) == np.float32 else 1e-9
    scale = np.max(np.abs(want)) if np.size(want) else 0
    err = np.abs(got - want)
    return bool(np.all(err <= tol * (np.abs(want) + scale))), float(np.max(err)) if np.size(err) else 0.0


# -- Systems ---------------------------------------------------------------------

class Lib:
    """One array library on the GPU: its variants (eager, fused or compiled),
    device arrays, events and memory."""

    def rotate(self, inputs, nsets):
        """Device copies of set 0: one tuple of arguments per set."""
        sets = [[] for _ in range(nsets)]
        for x in inputs:
            if not isinstance(x, np.ndarray):
                for s in sets:
                    s.append(x)
                continue
            for s, v in zip(sets, self.replicate(self.to_device(x), nsets)):
                s.append(v)
        return [tuple(s) for s in sets]


class TorchLib(Lib):
    variants = ("torch", "torch.compile")

    def __init__(self):
        import torch
        self.t = torch
        self.dev = torch.device("cuda")
        torch.zeros(1, device=self.dev)
        self.name_gpu = torch.cuda.get_device_name()
        self.ops = TorchOps(torch, self.dev)
        # every graph's function shares one code object (graph_fn's fn), and
        # each graph and shape is a recompile of it: past Dynamo's default
        # limit of 8 it would silently run eager
        for knob in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit",
                     "accumulated_cache_size_limit"):
            if hasattr(torch._dynamo.config, knob):
                setattr(torch._dynamo.config, knob, 4096)

    def fn(self, variant, g):
        f = graph_fn(g, self.ops)
        # dynamic=False: a kernel specialised to each shape.  By default the
        # second shape a function sees (the 2^12 check, then the size
        # measured) makes Dynamo recompile it for dynamic shapes, and that
        # dot ran 45 us at 2^20 where the specialised one runs 10
        return self.t.compile(f, dynamic=False) if variant == "torch.compile" else f

    def to_device(self, x):
        return self.t.from_numpy(np.ascontiguousarray(x)).to(self.dev)

    def replicate(self, x, nsets):
        all_ = self.t.empty((nsets,) + tuple(x.shape), dtype=x.dtype, device=self.dev)
        all_[:] = x
        return list(all_)

    def to_host(self, x):
        return x.cpu().numpy()

    def event(self):
        return self.t.cuda.Event(enable_timing=True)

    def elapsed(self, start, end):
        return start.elapsed_time(end)

    def sync(self, out=None):
        self.t.cuda.synchronize()

    def free_memory(self):
        return self.t.cuda.mem_get_info()[0]

    def release(self):
        self.t.cuda.empty_cache()

    def buffers(self, nbytes):
        return self.t.empty(nbytes // 4, device=self.dev), self.t.ones(nbytes // 4, device=self.dev)  # dst, src

    def copy(self, dst, src):
        dst.copy_(src)


class CupyLib(Lib):
    variants = ("cupy", "cupy.fuse")

    def __init__(self):
        import cupy
        self.cp = cupy
        self.name_gpu = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
        self.ops = Ops(cupy)

    def fn(self, variant, g):
        f = graph_fn(g, self.ops)
        return self.cp.fuse(f) if variant == "cupy.fuse" else f

    def to_device(self, x):
        return self.cp.asarray(x)

    def replicate(self, x, nsets):
        all_ = self.cp.empty((nsets,) + x.shape, dtype=x.dtype)
        all_[...] = x
        return list(all_)

    def to_host(self, x):
        return self.cp.asnumpy(x)

    def event(self):
        return self.cp.cuda.Event()

    def elapsed(self, start, end):
        return self.cp.cuda.get_elapsed_time(start, end)

    def sync(self, out=None):
        self.cp.cuda.get_current_stream().synchronize()

    def free_memory(self):
        return self.cp.cuda.runtime.memGetInfo()[0]

    def release(self):
        self.cp.get_default_memory_pool().free_all_blocks()

    def buffers(self, nbytes):
        return self.cp.empty(nbytes // 4, dtype=self.cp.float32), self.cp.ones(nbytes // 4, dtype=self.cp.float32)

    def copy(self, dst, src):
        self.cp.copyto(dst, src)


class JaxLib(Lib):
    """No events: a loop of launches between block_until_ready calls."""
    variants = ("jax",)

    def __init__(self):
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # share the GPU with torch and CuPy
        import jax
        jax.config.update("jax_enable_x64", True)  # f64 workloads stay f64
        import jax.numpy as jnp
        self.jax, self.jnp = jax, jnp
        self.dev = jax.devices("gpu")[0]
        self.name_gpu = self.dev.device_kind
        self.ops = Ops(jnp)

    def fn(self, variant, g):
        return self.jax.jit(graph_fn(g, self.ops))

    def to_device(self, x):
        return self.jax.device_put(x, self.dev)

    def replicate(self, x, nsets):
        all_ = self.jnp.broadcast_to(x, (nsets,) + x.shape) + self.jnp.zeros((), x.dtype)  # materialised
        sets = [all_[k] for k in range(nsets)]
        self.jax.block_until_ready(sets)
        return sets

    def to_host(self, x):
        return np.asarray(x)

    def free_memory(self):
        stats = self.dev.memory_stats() or {}
        return stats.get("bytes_limit", 16 << 30) - stats.get("bytes_in_use", 0)

    def sync(self, out=None):
        self.jax.block_until_ready(out)

    def release(self):
        pass


def load_libs(wanted):
    libs = []
    for cls, mod in ((CupyLib, "cupy"), (TorchLib, "torch"), (JaxLib, "jax")):
        if not any(v in wanted for v in cls.variants):
            continue
        try:
            lib = cls()
            libs.append(lib)
            log(f"# {mod}: {getattr(sys.modules.get(mod), '__version__', '?')} on {lib.name_gpu}")
        except Exception as e:  # missing module, no GPU, broken install
            log(f"# {mod}: skipped ({type(e).__name__}: {e})")
    return libs


# -- Timing ----------------------------------------------------------------------

def time_events(lib, fn, sets, first, reps, spacer):
    """Median device ms per launch: each launch between two events, behind
    copies long enough that the host has queued every launch before the
    device reaches the first (kfbench.c's time_launches)."""
    ev = [lib.event() for _ in range(reps + 1)]
    for _ in range(spacer):
        lib.copy(*lib.copy_pair)
    ev[0].record()
    t0 = time.perf_counter()
    for k in range(reps):
        fn(*sets[(first + k) % len(sets)])
        ev[k + 1].record()
    lib.host_ms = (time.perf_counter() - t0) * 1e3 / reps
    ev[-1].synchronize()
    return statistics.median(lib.elapsed(ev[k], ev[k + 1]) for k in range(reps))


def time_jax(lib, fn, sets, first, reps):
    """Median ms per launch over groups of 10 launches, host clock around
    each group (block_until_ready on its last result)."""
    per, k = [], first
    for _ in range(max(5, reps // 10)):
        t0 = time.perf_counter()
        for _ in range(10):
            out = fn(*sets[k % len(sets)])
            k += 1
        lib.jax.block_until_ready(out)
        per.append((time.perf_counter() - t0) * 1e3 / 10)
    return statistics.median(per)


def time_row(lib, fn, sets, reps):
    """Median ms and the reps it took: one untimed call (a compile for a new
    shape), a few launches to see how long one takes, then reps of them or
    as many as ROW_BUDGET_MS allows."""
    lib.sync(fn(*sets[0]))
    if isinstance(lib, JaxLib):
        one = time_jax(lib, fn, sets, 1, 5)
        reps = reps if one * reps <= ROW_BUDGET_MS else max(5, int(ROW_BUDGET_MS / one))
        return time_jax(lib, fn, sets, 6, reps), reps
    one = time_events(lib, fn, sets, 1, 3, 0)
    reps = reps if one * reps <= ROW_BUDGET_MS else max(5, int(ROW_BUDGET_MS / one))
    reps = min(reps, max(5, int(SPACER_MAX_MS / 2 / max(lib.host_ms, 1e-3))))
    for attempt in range(3):
        # copies covering twice the host time per launch seen last (at least 20 us)
        spacer = int(min(max(0.02, 2 * lib.host_ms) * reps, SPACER_MAX_MS) / lib.copy_ms) + 1
        ms = time_events(lib, fn, sets, 4, reps, spacer)
        if lib.host_ms * reps <= spacer * lib.copy_ms:
            break
        # The device may have waited for the host, and its times be the
        # host's.  Again with a spacer from this host time, where one can
        # cover it; a system whose calls wait for the device (eager chain40)
        # takes longer the longer the spacer, and keeps its figure.
        again = attempt < 2 and 2 * lib.host_ms * reps <= SPACER_MAX_MS
        log(f"host-bound row ({lib.host_ms * 1e3:.1f} us per launch on the host, {spacer} copies ahead): "
            + ("timed again" if again else "kept"))
        if not again:
            break
    return ms, reps


def measure_copy(lib):
    """GB/s of bytes read plus bytes written, as kfbench's kf_copy figure."""
    nbytes = min(COPY_BYTES, lib.free_memory() // 16) // (1 << 20) << 20
    lib.copy_pair = lib.buffers(nbytes)
    lib.copy_ms = 0
    fn = lambda: lib.copy(*lib.copy_pair)
    time_events(lib, fn, [()], 0, 2, 0)
    lib.copy_ms = time_events(lib, fn, [()], 0, 20, 0)
    return nbytes, 2 * nbytes / lib.copy_ms / 1e6


def launch_overhead(lib, variant, g):
    """Host us per call of x5 at n = 4096, LAUNCH_CALLS calls queued without
    a sync (the median of LAUNCH_LOOPS loops after one untimed loop)."""
    fn = lib.fn(variant, g)
    x = lib.to_device(np.linspace(-2, 2, LAUNCH_N, dtype=np.float32))
    loops = []
    for _ in range(LAUNCH_LOOPS + 1):
        t0 = time.perf_counter()
        for _ in range(LAUNCH_CALLS):
            fn(x)
        loops.append((time.perf_counter() - t0) * 1e6 / LAUNCH_CALLS)
        lib.sync()
    return statistics.median(loops[1:])


def self_test(graphs, names, seed):
    """What runs without a GPU: the .kir reader, the inputs, the byte floor
    and the check, with NumPy in the graphs' own dtypes as the peer."""
    failed = 0
    for name in names:
        g = graphs[name]
        host = make_inputs(g, CHECK_N, seed)
        got = graph_fn(g, Ops(np))(*host)
        results = [check(o, w, o.dtype) for o, w in zip(got, reference(g, host))]
        ok = all(r for r, _ in results)
        failed += not ok
        log(f"{name:15s} {len(g['stmts']):3d} statements, byte floor {byte_floor(g, host):8d} at N=2^12, outputs "
            f"{[(str(o.dtype), o.shape) for o in got]}: {'ok' if ok else 'WRONG'}, "
            f"largest error {max(e for _, e in results):.3g}")
    return 1 if failed else 0


# -- Main -----------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("kir")
    ap.add_argument("graphs", nargs="*")
    ap.add_argument("--sizes", default="12,20,26,28")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--csv")
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--launch", action="store_true")
    ap.add_argument("--seed", type=int, default=20240607)
    ap.add_argument("--copy-gbps", type=float, help="the copy reference measured by an earlier run (for JAX alone)")
    ap.add_argument("--self-test", action="store_true", help="no GPU: NumPy float32 against the reference")
    a = ap.parse_intermixed_args()
    graphs = parse_kir(a.kir)
    names = a.graphs or list(graphs)
    if set(names) - set(graphs):
        ap.error(f"{a.kir} has no graph {', '.join(sorted(set(names) - set(graphs)))}")
    if a.self_test:
        return self_test(graphs, names, a.seed)
    wanted = a.systems.split(",")
    libs = load_libs(wanted)
    if not libs:
        log("peers.py: no peer library could be loaded")
        return 1
    csv = open(a.csv, "w") if a.csv else None
    if csv:
        csv.write("system,workload,n,ms,gbps,copy_gbps,ratio,kernels\n")

    def row(system, workload, n, ms, gbps=None, copy=None):
        if csv:
            rest = f"{gbps:.4g},{copy:.4g},{gbps / copy:.4f}," if gbps else ",,,"
            csv.write(f"{system},{workload},{n},{ms:.6g},{rest}\n")
            csv.flush()

    # the reference copy: torch's copy_ where torch is there, else CuPy's
    copy_gbps = None
    for lib in sorted((l for l in libs if not isinstance(l, JaxLib)), key=lambda l: not isinstance(l, TorchLib)):
        nbytes, gbps = measure_copy(lib)
        log(f"copy: {lib.variants[0]} device-to-device copy of {nbytes >> 20} MiB: {lib.copy_ms:.4f} ms, "
            f"{gbps:.1f} GB/s (read + written)")
        if copy_gbps is None:
            copy_gbps = gbps
            row("peers", "copy", nbytes, lib.copy_ms, gbps, gbps)
    copy_gbps = a.copy_gbps or copy_gbps  # one reference for every process of a run
    if copy_gbps is None:
        log("peers.py: no copy reference (JAX has no events): add torch or cupy, or give --copy-gbps")
        return 1

    if a.launch and "x5" in graphs:
        for lib in libs:
            for v in lib.variants:
                if v in wanted and v in ("cupy.fuse", "torch.compile"):
                    us = launch_overhead(lib, v, graphs["x5"])
                    log(f"launch: x5 at n={LAUNCH_N}, {LAUNCH_CALLS} calls queued: {v} {us:.2f} us per call (host)")
                    row(v, "launch", LAUNCH_N, us / 1e3)

    # compile and check each variant once, at N = 2^12, against NumPy float64
    fns = {}
    for name in names:
        g = graphs[name]
        host = make_inputs(g, CHECK_N, a.seed)
        want = reference(g, host)
        for lib in libs:
            args = lib.rotate(host, 1)[0]
            for v in (v for v in lib.variants if v in wanted):
                try:
                    fn = lib.fn(v, g)
                    got = [lib.to_host(o) for o in fn(*args)]
                    results = [check(o, w, o.dtype) for o, w in zip(got, want)]
                except Exception as e:  # a library that cannot express the graph
                    log(f"{v}: {name}: skipped ({type(e).__name__}: {str(e).splitlines()[0][:200]})")
                    continue
                if all(ok for ok, _ in results):
                    fns[v, name] = (lib, fn)
                else:
                    log(f"{v}: {name}: WRONG at N=2^12 (largest error {max(e for _, e in results):.3g}), not timed")

    for lg in [int(s) for s in a.sizes.split(",")]:
        n = 1 << lg
        for name in names:
            g = graphs[name]
            t0 = time.perf_counter()
            host = make_inputs(g, n, a.seed + lg)
            floor = byte_floor(g, host)
            for lib in libs:
                variants = [v for v in lib.variants if (v, name) in fns]
                if not variants:
                    continue
                nsets = input_sets(host, floor, lib.free_memory(), 2)
                if floor > lib.free_memory() / 2:
                    log(f"{lib.variants[0]}: {name} 2^{lg} skipped: {floor / 2**30:.2f} GiB does not fit")
                    continue
                sets = lib.rotate(host, nsets)
                for v in variants:
                    fn = fns[v, name][1]
                    try:
                        ms, reps = time_row(lib, fn, sets, a.reps)
                    except Exception as e:  # out of memory at 2^28 (torch eager chain40, session 14)
                        log(f"{v}: {name} 2^{lg} skipped ({type(e).__name__}: {str(e).splitlines()[0][:200]})")
                        ms = None
                    if ms is None:
                        lib.release()  # here, once the exception's frames are gone
                        continue
                    gbps = floor / ms / 1e6
                    log(f"{v:14s} {name:15s} 2^{lg:<2d} {ms:10.4f} ms {gbps:9.1f} GB/s {gbps / copy_gbps:6.3f} of copy"
                        f"  ({reps} reps, {nsets} sets; {time.perf_counter() - t0:.1f} s)")
                    row(v, name, n, ms, gbps, copy_gbps)
                del sets
                lib.release()
    return 0


if __name__ == "__main__":
    sys.exit(main())
