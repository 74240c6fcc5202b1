"""Host cost of one call with three torch tensors (the elementwise add of frontend_python/examples, 128 x 128 fp32),
in the same process, on the GPU:

| path | what runs per call |
| --- | --- |
| compiled, views | JitCompiledFunction(a, b, c) on from_dlpack views (the native fast call, _core.FastCall) |
| compiled, torch | JitCompiledFunction(a, b, c) on the torch tensors (read through torch's DLPack exchange table) |
| compiled, host program | a function whose host code branches on the extent and scales a Float32 at each call |
| compiled, tuple | a function taking its problem as a tuple of Python numbers, `((m, n), alpha)`, read at each call |
| Python fast path | the generated Python fast call on the views (what a call took before the native one) |
| Python fast path, tuple | the generated Python fast call of the tuple function (what such calls took before) |
| TVM FFI | cute.compile(..., options="--enable-tvm-ffi") called on the torch tensors |
| raw, ctypes | cuLaunchKernel through ctypes, arguments packed once |
| raw Launcher | the kernel's _core.Launcher called with its parameters packed once: the floor of a call from Python |
| raw, C | cuLaunchKernel in a C loop, arguments packed once: the driver's own cost, the floor |
| torch.add | torch.add(a, b, out=c) |

The paths are timed round-robin (each round times every path in turn; a figure is the median over the rounds), in
runs of 4,000 calls and of 100 calls in a row (the GPU's queue short), so that drift of the host's speed moves every
path alike.

    python benchmarks/python/bench_launch_overhead.py [--calls 20000] [--json out.json]
    python benchmarks/python/bench_launch_overhead.py --stub    # without a GPU: everything but the driver call

Prints microseconds per call and each path's ratio to the raw launch from C (goals: the compiled call at most 1.2x,
with views and with torch tensors; TVM FFI at most 1.3x). Needs a C compiler (the C loop and the TVM FFI entry are
built with it) and apache-tvm-ffi. --stub runs on any machine against the stand-in driver of
tests/python/data/mock_libcuda.c, whose cuLaunchKernel returns at once: the host side of the compiled call (and of
TVM FFI's, torch CPU tensors, where installed), compiled for WARPWEAVE_ARCH (default sm_90a).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "frontend_python", "examples"))

_LOOP_C = r"""
#include <time.h>
typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                         void **, void **);
double ww_launch_loop(launch_fn launch, void *f, unsigned gx, unsigned bx, void **args, int n) {
  struct timespec t0, t1;
  int i;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (i = 0; i < n; ++i)
    if (launch(f, gx, 1, 1, bx, 1, 1, 0, (void *)0, args, (void **)0) != 0) return -1.0;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n / 1e3;
}
"""


def host_program_function():
    """A @cute.jit function whose host side computes at each call (host_program.py): elements per thread chosen
    by a branch on the runtime extent, the grid from it, and a scale computed from a Float32 argument."""
    import warpweave as cutlass
    import warpweave.cute as cute

    @cute.kernel
    def axpy_kernel(gA: cute.Tensor, gB: cute.Tensor, gC: cute.Tensor, alpha: cutlass.Float32,
                    per_thread: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        n = cute.size(gA)
        for k in range(per_thread):
            i = (bidx * per_thread + k) * 128 + tidx
            if i < n:
                gC[i] = alpha * gA[i] + gB[i]

    @cute.jit
    def host_axpy(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, alpha: cutlass.Float32):
        n = cute.size(mA)
        per_thread = 1
        if n > 8192:
            per_thread = 2
        blocks = (n + 128 * per_thread - 1) // (128 * per_thread)
        axpy_kernel(mA, mB, mC, alpha * 0.5, per_thread).launch(grid=(blocks, 1, 1), block=(128, 1, 1))

    return host_axpy


def tuple_function():
    """A @cute.jit function taking its problem as a tuple of Python numbers, `((m, n), alpha)`: each number a runtime
    value read from the tuple at each call (call/arg_tensor.py's TreeArg), the grid computed from two of them."""
    import warpweave as cutlass
    import warpweave.cute as cute

    @cute.kernel
    def scale_kernel(gA: cute.Tensor, gC: cute.Tensor, alpha: cutlass.Float32, n: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        i = bidx * 128 + tidx
        if i < n:
            gC[i] = alpha * gA[i]

    @cute.jit
    def tuple_scale(mA: cute.Tensor, mC: cute.Tensor, problem):
        (m, n), alpha = problem
        scale_kernel(mA, mC, alpha, m * n).launch(grid=((m * n + 127) // 128, 1, 1), block=(128, 1, 1))

    return tuple_scale


class RawLaunch:
    """The compiled kernel loaded through libcuda with ctypes, its parameters packed once."""

    def __init__(self, compiled, launch):
        self.cuda = ctypes.CDLL(os.environ.get("WARPWEAVE_LIBCUDA") or "libcuda.so.1", mode=ctypes.RTLD_GLOBAL)
        f, grid, block, cluster, smem, stream, params, offsets = launch[:8]
        assert not cluster and smem == 0 and grid[1:] == [1, 1] and block[1:] == [1, 1]
        self.grid, self.block = grid[0], block[0]
        mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
        self.image = ctypes.create_string_buffer(compiled.cubin, len(compiled.cubin))
        assert self.cuda.cuModuleLoadData(ctypes.byref(mod), self.image) == 0
        assert self.cuda.cuModuleGetFunction(ctypes.byref(fn), mod, compiled.launches[0].kernel.encode()) == 0
        self.fn = fn
        self.buf = ctypes.create_string_buffer(bytes(params), len(params))
        base = ctypes.addressof(self.buf)
        self.args = (ctypes.c_void_p * len(offsets))(*[base + o for o in offsets])
        self.args_ptr = ctypes.cast(self.args, ctypes.c_void_p)
        self.launch = self.cuda.cuLaunchKernel
        self.launch.restype = ctypes.c_int
        self.launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p, ctypes.c_void_p,
                                                                          ctypes.c_void_p]

    def __call__(self):
        self.launch(self.fn, self.grid, 1, 1, self.block, 1, 1, 0, None, self.args_ptr, None)

    def c_loop(self):
        """timed(n): microseconds per launch of n cuLaunchKernel calls made in a C loop (no interpreter between
        them)."""
        cc = os.environ.get("CC", "cc")
        with tempfile.TemporaryDirectory() as tmp:
            src, so = os.path.join(tmp, "loop.c"), os.path.join(tmp, "loop.so")
            with open(src, "w") as f:
                f.write(_LOOP_C)
            subprocess.run([cc, "-O2", "-shared", "-fPIC", src, "-o", so], check=True)
            lib = ctypes.CDLL(so)
        lib.ww_launch_loop.restype = ctypes.c_double
        lib.ww_launch_loop.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint,
                                       ctypes.c_void_p, ctypes.c_int]
        entry = ctypes.cast(self.launch, ctypes.c_void_p)

        def timed(n):
            us = lib.ww_launch_loop(entry, self.fn, self.grid, self.block, self.args_ptr, n)
            assert us >= 0, "cuLaunchKernel failed in the C loop"
            return us
        return timed


def python_loop(fn):
    """timed(n): microseconds per call of n calls of fn from a Python loop."""
    def timed(n):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        return (time.perf_counter() - t0) / n * 1e6
    return timed


def round_robin(paths: dict, sync, long_calls: int, rounds: int = 7, short_calls: int = 100) -> dict:
    """{name: (long, short)}, microseconds per call: each round times every path in turn over long_calls calls in a
    row, then over five runs of short_calls (the GPU's queue short), synchronizing after each; a figure is the
    median over the rounds. Drift of the host's speed between rounds moves every path alike, so the ratios hold."""
    for timed in paths.values():  # warm-up
        timed(200)
        sync()
    samples = {k: ([], []) for k in paths}
    for _ in range(rounds):
        for k, timed in paths.items():
            samples[k][0].append(timed(long_calls))
            sync()
            shorts = []
            for _ in range(5):
                shorts.append(timed(short_calls))
                sync()
            samples[k][1].append(statistics.median(shorts))
    return {k: (statistics.median(lo), statistics.median(sh)) for k, (lo, sh) in samples.items()}


def measure(calls: int) -> dict:
    import torch

    import elementwise_add as ew
    import warpweave.cute as cute
    from warpweave import _core
    from warpweave.cute.runtime import from_dlpack

    a = torch.randn(128, 128, device="cuda")
    b, c = torch.randn_like(a), torch.empty_like(a)
    views = [from_dlpack(t).mark_layout_dynamic() for t in (a, b, c)]
    va, vb, vc = views
    compiled = cute.compile(ew.elementwise_add, *views)
    ffi = cute.compile(ew.elementwise_add, *[from_dlpack(t, enable_tvm_ffi=True).mark_layout_dynamic()
                                             for t in (a, b, c)], options="--enable-tvm-ffi")
    compiled(*views)
    c.zero_()
    ffi(a, b, c)
    torch.cuda.synchronize()
    torch.testing.assert_close(c, a + b)  # the TVM FFI path computed the sum
    for call in (lambda: compiled(a, b, c), lambda: compiled(*views)):  # and the native call, both ways
        c.zero_()
        call()
        torch.cuda.synchronize()
        torch.testing.assert_close(c, a + b)
    python_fast = compiled._fast_omitting if compiled._constexprs else compiled._fast
    flat = [from_dlpack(t.view(-1)).mark_layout_dynamic() for t in (a, b, c)]
    fa, fb, fc = flat
    hosted = cute.compile(host_program_function(), *flat, cutlass_f32(2.0))
    c.zero_()
    hosted(fa, fb, fc, cutlass_f32(2.0))
    hosted(fa, fb, fc, cutlass_f32(2.0))  # the second call: the native path, which runs the host program
    torch.cuda.synchronize()
    torch.testing.assert_close(c, a + b)  # 2.0 * 0.5 * a + b
    problem = ((128, 128), 3.0)
    tupled = cute.compile(tuple_function(), fa, fc, problem)
    tupled(fa, fc, problem)
    tupled(fa, fc, problem)  # the second call: the native path (a tuple of numbers read in C++)
    torch.cuda.synchronize()
    torch.testing.assert_close(c, 3.0 * a)
    raw = RawLaunch(compiled, compiled.prepare(*views)[0])
    # The floor of any call made from Python: the kernel's Launcher (cuLaunchKernel) called with its parameters
    # packed once, from the same timing loop as the compiled call.
    f, grid, block, cluster, smem, stream, params, offsets = compiled.prepare(*views)[0][:8]
    launcher = _core.Launcher(f, list(block), list(cluster), int(smem), list(offsets))
    gx, gy, gz = grid
    paths = {"raw_c_us": raw.c_loop(), "raw_ctypes_us": python_loop(raw),
             "raw_python_us": python_loop(lambda: launcher(gx, gy, gz, stream, params)),
             "compiled_views_us": python_loop(lambda: compiled(va, vb, vc)),
             "compiled_torch_us": python_loop(lambda: compiled(a, b, c)),
             "compiled_host_program_us": python_loop(lambda: hosted(fa, fb, fc, 2.0)),
             "compiled_python_views_us": python_loop(lambda: python_fast(va, vb, vc)),
             "compiled_tuple_us": python_loop(lambda: tupled(fa, fc, problem)),
             "compiled_python_tuple_us": python_loop(lambda: tupled._fast(fa, fc, problem)),
             "tvm_ffi_us": python_loop(lambda: ffi(a, b, c)),
             "tvm_ffi_function_us": python_loop(lambda: ffi.function(a, b, c)),
             "torch_add_us": python_loop(lambda: torch.add(a, b, out=c)),
             "empty_call_us": python_loop(lambda: None)}  # the timing loop's own cost
    stats0 = compiled._native.stats if compiled._native else (0, 0)
    tstats0 = tupled._native.stats if tupled._native else (0, 0)
    hstats0 = hosted._native.stats if hosted._native else (0, 0)
    out = {}
    for k, (lo, sh) in round_robin(paths, torch.cuda.synchronize, max(calls // 5, 100)).items():
        out[k], out["short_" + k] = lo, sh
    stats = compiled._native.stats if compiled._native else (0, 0)
    out["native_calls"], out["native_fallbacks"] = stats[0] - stats0[0], stats[1] - stats0[1]
    hstats = hosted._native.stats if hosted._native else (0, 0)
    out["host_program_native_calls"] = hstats[0] - hstats0[0]
    out["host_program_fallbacks"] = hstats[1] - hstats0[1]
    tstats = tupled._native.stats if tupled._native else (0, 0)
    out["tuple_native_calls"], out["tuple_fallbacks"] = tstats[0] - tstats0[0], tstats[1] - tstats0[1]
    return out


def cutlass_f32(x):
    import warpweave as cutlass

    return cutlass.Float32(x)


def measure_stub(calls: int) -> dict:
    """Without a GPU, against the stand-in driver of tests/python/data/mock_libcuda.c (WW_MOCK_QUIET: its
    cuLaunchKernel returns at once): the whole compiled call but the driver's own work, microseconds per call,
    best of 5 batches; the Python fast path and TVM FFI's call (apache-tvm-ffi installed) in the same run."""
    import numpy as np

    import elementwise_add as ew
    import warpweave.cute as cute
    from warpweave.cute.runtime import from_dlpack

    arrays = [np.zeros((128, 128), np.float32) for _ in range(3)]
    views = [from_dlpack(x).mark_layout_dynamic() for x in arrays]
    compiled = cute.compile(ew.elementwise_add, *views)
    compiled(*views)  # the general path (loads the module through the stand-in), then the fast paths are built
    python_fast = compiled._fast_omitting if compiled._constexprs else compiled._fast

    def best(fn):
        return best_per_call(fn, calls, time.perf_counter, warmup=1000)

    from warpweave import _core

    f, grid, block, cluster, smem, stream, params, offsets = compiled.prepare(*views)[0][:8]
    launcher = _core.Launcher(f, list(block), list(cluster), int(smem), list(offsets))
    gx, gy, gz = grid
    va, vb, vc = views
    flat = [from_dlpack(x.reshape(-1)).mark_layout_dynamic() for x in arrays]
    fa, fb, fc = flat
    hosted = cute.compile(host_program_function(), *flat, cutlass_f32(2.0))
    hosted(fa, fb, fc, 2.0)
    problem = ((128, 128), 3.0)
    tupled = cute.compile(tuple_function(), fa, fc, problem)
    tupled(fa, fc, problem)
    r = {"compiled_views_us": best(lambda: compiled(va, vb, vc)),
         "compiled_host_program_us": best(lambda: hosted(fa, fb, fc, 2.0)),
         "compiled_python_views_us": best(lambda: python_fast(va, vb, vc)),
         "compiled_tuple_us": best(lambda: tupled(fa, fc, problem)),
         "compiled_python_tuple_us": best(lambda: tupled._fast(fa, fc, problem)),
         "empty_call_us": best(lambda: None),
         "raw_python_us": best(lambda: launcher(gx, gy, gz, stream, params))}
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        ts = [torch.zeros(128, 128) for _ in range(3)]
        ta, tb, tc = ts
        r["compiled_torch_us"] = best(lambda: compiled(ta, tb, tc))
        r["compiled_python_torch_us"] = best(lambda: python_fast(ta, tb, tc))
    try:
        import tvm_ffi
    except ImportError:
        tvm_ffi = None
    if tvm_ffi is not None:
        sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "python"))
        from test_tvm_ffi import CudaLike

        ffi = cute.compile(ew.elementwise_add, *[from_dlpack(x, enable_tvm_ffi=True).mark_layout_dynamic()
                                                 for x in arrays], options="--enable-tvm-ffi")
        t = [tvm_ffi.from_dlpack(CudaLike(1 << 32, (128, 128))) for _ in range(3)]
        t0, t1, t2 = t
        r["tvm_ffi_us"] = best(lambda: ffi(t0, t1, t2))
    r["native_calls"], r["native_fallbacks"] = compiled._native.stats
    r["host_program_native_calls"], r["host_program_fallbacks"] = hosted._native.stats if hosted._native else (0, 0)
    r["tuple_native_calls"], r["tuple_fallbacks"] = tupled._native.stats if tupled._native else (0, 0)
    return r


def best_per_call(fn, calls: int, clock, warmup: int) -> float:
    """The best of 5 rounds of calls // 5 calls of fn, in microseconds a call by clock, after warmup calls."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(5):
        t0 = clock()
        for _ in range(calls // 5):
            fn()
        out.append((clock() - t0) / (calls // 5) * 1e6)
    return min(out)


def rerun_on_stand_in(script: str, calls: int, json_path):
    """The exit code of `script --stub` run again in a process of its own whose driver is the stand-in (built here
    with the C compiler); None in that process itself, which then measures."""
    if os.environ.get("WW_MOCK_QUIET"):
        return None
    sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "python"))
    import aot_helpers

    with tempfile.TemporaryDirectory() as tmp:
        mock = aot_helpers.build_mock_driver(tmp)
        env = dict(os.environ, WW_MOCK_QUIET="1", WARPWEAVE_LIBCUDA=os.path.join(mock, "libcuda.so.1"))
        env.setdefault("WARPWEAVE_ARCH", "sm_90a")
        cmd = [sys.executable, os.path.abspath(script), "--stub", "--calls", str(calls)]
        return subprocess.run(cmd + (["--json", json_path] if json_path else []), env=env).returncode


def run_stub(calls: int, json_path) -> int:
    """measure_stub in a process of its own whose driver is the stand-in (built here with the C compiler)."""
    rc = rerun_on_stand_in(__file__, calls, json_path)
    if rc is not None:
        return rc
    report_stub(measure_stub(calls * 10), json_path)
    return 0


def report_stub(r: dict, json_path) -> None:
    """A stand-in run's figures, printed and written to json_path."""
    print(f"{'host side, stand-in driver':<28} {'us/call':>8}")
    for k, v in r.items():
        print(f"{k:<28} {v:8.3f}" if isinstance(v, float) else f"{k:<28} {v:8d}")
    if json_path:
        with open(json_path, "w") as f:
            json.dump(r, f, indent=1)


def parse_args(doc: str, argv):
    """The launch benchmarks' arguments: calls per figure, a JSON file, and --stub (no GPU)."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--json", default=None)
    p.add_argument("--stub", action="store_true", help="no GPU: the host side only, the driver call left out")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(__doc__, argv)
    if args.stub:
        return run_stub(args.calls, args.json)
    r = measure(args.calls)
    floor, short_floor = r["raw_c_us"], r["short_raw_c_us"]
    print(f"{'path':<28} {'us/call':>8} {'x raw C':>8} {'short':>8} {'x raw C':>8}   (short: 100 calls in a row)")
    for k, label in [("raw_c_us", "raw cuLaunchKernel, C loop"), ("raw_ctypes_us", "raw cuLaunchKernel, ctypes"),
                     ("raw_python_us", "raw Launcher call, packed"),
                     ("tvm_ffi_function_us", "TVM FFI (tvm_ffi.Function)"), ("tvm_ffi_us", "TVM FFI (compiled obj)"),
                     ("compiled_views_us", "compiled, from_dlpack views"), ("compiled_torch_us", "compiled, torch"),
                     ("compiled_host_program_us", "compiled, host program"),
                     ("compiled_python_views_us", "Python fast path, views"),
                     ("compiled_tuple_us", "compiled, tuple"),
                     ("compiled_python_tuple_us", "Python fast path, tuple"),
                     ("torch_add_us", "torch.add"), ("empty_call_us", "empty Python call")]:
        lo, sh = r[k], r["short_" + k]
        print(f"{label:<28} {lo:8.2f} {lo / floor:8.2f} {sh:8.2f} {sh / short_floor:8.2f}")
    print(f"native calls {r['native_calls']}, fallbacks {r['native_fallbacks']}; tuple function: native calls "
          f"{r['tuple_native_calls']}, fallbacks {r['tuple_fallbacks']}")
    r["ratios_to_raw_c"] = {k: v / (short_floor if k.startswith("short_") else floor) for k, v in r.items()
                            if k.endswith("_us")}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
