"""Host cost of one call with three torch tensors (the elementwise add of frontend_python/examples, 128 x 128 fp32),
in the same process, on the GPU:

| path | what runs per call |
| --- | --- |
| compiled, views | JitCompiledFunction(a, b, c) on from_dlpack views (the generated fast call) |
| compiled, torch | JitCompiledFunction(a, b, c) on the torch tensors (a view made at each call) |
| TVM FFI | cute.compile(..., options="--enable-tvm-ffi") called on the torch tensors |
| raw, ctypes | cuLaunchKernel through ctypes, arguments packed once |
| raw, C | cuLaunchKernel in a C loop, arguments packed once: the driver's own cost, the floor |
| torch.add | torch.add(a, b, out=c) |

    python benchmarks/python/bench_launch_overhead.py [--calls 20000] [--json out.json]

Prints microseconds per call and each path's ratio to the raw launch from C (the goal for TVM FFI: at most 1.3x).
Needs a C compiler (the C loop and the TVM FFI entry are built with it) and apache-tvm-ffi.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "frontend_python", "examples"))
from bench_common import per_call_us  # noqa: E402

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

    def c_loop_us(self, n) -> float:
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
        lib.ww_launch_loop(entry, self.fn, self.grid, self.block, self.args_ptr, 200)  # warm-up
        samples = []
        for _ in range(5):
            us = lib.ww_launch_loop(entry, self.fn, self.grid, self.block, self.args_ptr, n // 5)
            assert us >= 0, "cuLaunchKernel failed in the C loop"
            self.cuda.cuCtxSynchronize()
            samples.append(us)
        return sorted(samples)[2]


def measure(calls: int) -> dict:
    import torch

    import elementwise_add as ew
    import warpweave.cute as cute
    from warpweave.cute.runtime import from_dlpack

    a = torch.randn(128, 128, device="cuda")
    b, c = torch.randn_like(a), torch.empty_like(a)
    views = [from_dlpack(t).mark_layout_dynamic() for t in (a, b, c)]
    compiled = cute.compile(ew.elementwise_add, *views)
    ffi = cute.compile(ew.elementwise_add, *[from_dlpack(t, enable_tvm_ffi=True).mark_layout_dynamic()
                                             for t in (a, b, c)], options="--enable-tvm-ffi")
    out = {}
    for name, fn in [("compiled_views_us", lambda: compiled(*views)), ("compiled_torch_us", lambda: compiled(a, b, c)),
                     ("tvm_ffi_us", lambda: ffi(a, b, c)), ("tvm_ffi_function_us", lambda: ffi.function(a, b, c)),
                     ("torch_add_us", lambda: torch.add(a, b, out=c))]:
        out[name] = per_call_us(fn, torch, calls)
        torch.cuda.synchronize()
    c.zero_()
    ffi(a, b, c)
    torch.cuda.synchronize()
    torch.testing.assert_close(c, a + b)  # the TVM FFI path computed the sum
    raw = RawLaunch(compiled, compiled.prepare(*views)[0])
    out["raw_ctypes_us"] = per_call_us(raw, torch, calls)
    out["raw_c_us"] = raw.c_loop_us(calls)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    r = measure(args.calls)
    floor = r["raw_c_us"]
    print(f"{'path':<28} {'us/call':>8} {'x raw C':>8}")
    for k, label in [("raw_c_us", "raw cuLaunchKernel, C loop"), ("raw_ctypes_us", "raw cuLaunchKernel, ctypes"),
                     ("tvm_ffi_function_us", "TVM FFI (tvm_ffi.Function)"), ("tvm_ffi_us", "TVM FFI (compiled obj)"),
                     ("compiled_views_us", "compiled, from_dlpack views"), ("compiled_torch_us", "compiled, torch"),
                     ("torch_add_us", "torch.add")]:
        print(f"{label:<28} {r[k]:8.2f} {r[k] / floor:8.2f}")
    r["ratios_to_raw_c"] = {k: v / floor for k, v in r.items() if k.endswith("_us")}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
