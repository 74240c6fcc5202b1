"""cute.math on the GPU: throughput of each function, accurate (default) and fastmath, in a kernel that applies it
16 times per element to 64 Mi f32 values (so that arithmetic, not memory, is timed). Prints one line per function;
`--json PATH` also writes the figures.

    python3 benchmarks/python/bench_math.py [--functions exp,exp2,...] [--json out.json]
"""
from __future__ import annotations

import argparse
import json

import torch
from bench_common import median_ms  # also puts the package on sys.path

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

N = 1 << 26
REPEAT = 16


def program(name: str, fastmath: bool):
    fn = getattr(cute.math, name)

    @cute.kernel
    def kernel(gA: cute.Tensor, gB: cute.Tensor):
        bidx, _, _ = cute.arch.block_idx()
        tidx, _, _ = cute.arch.thread_idx()
        i = bidx * 256 + tidx
        x = gA[i]
        for _ in cutlass.range_constexpr(REPEAT):
            x = fn(x, fastmath=fastmath) * 0.5   # keeps the values in every function's domain
        gB[i] = x

    @cute.jit
    def host(a, b):
        kernel(a, b).launch(grid=[N // 256, 1, 1], block=[256, 1, 1])

    return host


def throughput(c, a, b) -> float:
    """Function evaluations per second: the median CUDA-event time of a launch."""
    args = (from_dlpack(a), from_dlpack(b))
    return N * REPEAT / (median_ms(lambda: c(*args), torch) * 1e-3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--functions", default="exp,exp2,log,log2,sqrt,rsqrt,sin,cos,tanh,erf")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    a = torch.rand(N, device="cuda") + 0.5
    b = torch.empty_like(a)
    rows = []
    for name in args.functions.split(","):
        row = {"function": name}
        for fast in (False, True):
            c = cute.compile(program(name, fast), from_dlpack(a), from_dlpack(b))
            row["fastmath" if fast else "accurate"] = throughput(c, a, b) / 1e9
        rows.append(row)
        print(f"{name:6s} accurate {row['accurate']:8.1f} G/s   fastmath {row['fastmath']:8.1f} G/s   "
              f"x{row['fastmath'] / row['accurate']:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
