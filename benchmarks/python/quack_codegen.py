"""One of QuACK's kernels, in the configuration bench_quack.py times, compiled for sm_90a under CuTe DSL and under
warpweave without a GPU, and their machine code side by side: each entry's name, registers, stack and spills (one
ptxas -v over each side's PTX) and the SASS opcode counts (each side's cubin through the same disassembler).

    python benchmarks/python/quack_codegen.py --quack-src DIR --warpweave-python PY_WW --cutedsl-python PY_REF \\
        [--kernel rmsnorm_bwd] [--shape 32768x8192] [--keep DIR] [--torch-site SITE]

PY_WW reaches warpweave as `cutlass` (the alias) and torch; PY_REF reaches CuTe DSL, and torch through --torch-site
(a site-packages folder appended to its path) when it has none. Each side runs this file with --inner in a process
of its own: QuACK's own compile entry for the kernel (unwrapped from its disk cache), with QUACK_ARCH set, under
warpweave's compile-only mode. Run from the checkout whose warpweave is measured (PY_WW sees it first on its path).
"""
from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
KERNELS = ("rmsnorm_bwd", "layernorm_bwd", "rmsnorm_fwd", "layernorm_fwd", "cross_entropy_bwd")


def _compile(kind: str, M: int, N: int):
    """QuACK's compile entry for bench_quack.py's call of `kind` (bf16 rows, an f32 weight)."""
    import importlib

    import cutlass
    bf16, f32 = cutlass.BFloat16, cutlass.Float32
    rms = importlib.import_module("quack.rmsnorm")
    if kind in ("rmsnorm_bwd", "layernorm_bwd"):
        # N, x, dout, dx, weight, has db, dresidual, dresidual out, has dW (partial, in f32), per head
        return rms._compile_rmsnorm_bwd.__wrapped__(N, bf16, bf16, bf16, f32, False, None, None, True, False,
                                                    T_hint=rms._bucket_T_hint(M), is_layernorm=kind == "layernorm_bwd")
    if kind in ("rmsnorm_fwd", "layernorm_fwd"):
        # x, out, residual, weight, bias, residual out, N, has rstd, has mean, is layernorm, per head
        ln = kind == "layernorm_fwd"
        return rms._compile_rmsnorm_fwd.__wrapped__(bf16, bf16, None, f32, None, None, N, True, ln, ln, False)
    ce = importlib.import_module("quack.cross_entropy")
    return ce.CrossEntropyBackward.compile.__wrapped__(bf16, cutlass.Int64, N, None)


def inner(ns) -> int:
    sys.path.insert(0, ns.quack_src)
    import cutlass
    impl = cutlass.__spec__.name
    try:
        import torch  # noqa: F401 - QuACK imports it at module level
    except ImportError:
        if not ns.torch_site:
            raise
        sys.path.append(ns.torch_site)
    M, N = (int(v) for v in ns.shape.split("x"))
    if impl == "warpweave":
        from warpweave._dsl.registry import compile_only
        with compile_only.compile_only():
            _compile(ns.kernel, M, N)
    else:
        _compile(ns.kernel, M, N)
    return 0


def side(name: str, py: str, ns, dump: str) -> dict:
    os.makedirs(dump, exist_ok=True)  # CuTe DSL keeps nothing in a folder that does not exist
    env = dict(os.environ, QUACK_ARCH="sm_90a", PYTHONDONTWRITEBYTECODE="1")
    if name == "warpweave":
        env.update(WARPWEAVE_ARCH="sm_90a", WARPWEAVE_KEEP="ptx,cubin", WARPWEAVE_DUMP_DIR=dump,
                   WARPWEAVE_DISABLE_CACHE="1",
                   PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "frontend_python"), os.path.join(ROOT, "pipelines")]
                                              + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])))
    else:
        env.update(CUTE_DSL_ARCH="sm_90a", CUTE_DSL_KEEP="ptx,cubin", CUTE_DSL_DUMP_DIR=dump)
    cmd = [py, os.path.abspath(__file__), "--inner", "--quack-src", ns.quack_src, "--kernel", ns.kernel,
           "--shape", ns.shape] + (["--torch-site", ns.torch_site] if ns.torch_site else [])
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if p.returncode != 0:
        raise SystemExit(f"{name}: exit {p.returncode}: {(p.stderr or p.stdout)[-2000:]}")
    ptx, cubin = (sorted(glob.glob(os.path.join(dump, "**", f"*.{e}"), recursive=True)) for e in ("ptx", "cubin"))
    if len(ptx) != 1 or len(cubin) != 1:
        raise SystemExit(f"{name}: expected one kernel's PTX and cubin under {dump}, found {ptx} and {cubin}")
    return dict(ptx=ptx[0], cubin=cubin[0])


def report(sides: dict) -> dict:
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(ROOT, "frontend_python"))
    from bench_resources import ptxas_resources
    from bench_same_source import parse_sass
    from warpweave import _core
    out = {}
    for name, s in sides.items():
        ((entry, res),) = ptxas_resources(s["ptx"], "sm_90a")
        ops = collections.Counter()
        if _core.sass_tool_available():
            with open(s["cubin"], "rb") as f:
                sass = _core.disassemble_sass(f.read())
            ops.update(op for insns in parse_sass(sass).values() for _, op, _, _ in insns)
        out[name] = dict(entry=entry, **res, instructions=sum(ops.values()), ops=dict(ops))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quack-src", required=True)
    p.add_argument("--warpweave-python", default=sys.executable)
    p.add_argument("--cutedsl-python")
    p.add_argument("--kernel", default="rmsnorm_bwd", choices=KERNELS)
    p.add_argument("--shape", default="32768x8192")
    p.add_argument("--torch-site")
    p.add_argument("--keep", help="a folder for both sides' PTX and cubins (a temporary one otherwise)")
    p.add_argument("--json")
    p.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    ns = p.parse_args(argv)
    ns.quack_src = os.path.abspath(ns.quack_src)
    if ns.inner:
        return inner(ns)
    keep = ns.keep or tempfile.mkdtemp(prefix="quack_codegen_")
    sides = {}
    for name, py in (("cutedsl", ns.cutedsl_python), ("warpweave", ns.warpweave_python)):
        if py:
            sides[name] = side(name, py, ns, os.path.join(keep, name))
    rows = report(sides)
    names = list(rows)
    print(f"{ns.kernel} {ns.shape} (sm_90a); files under {keep}")
    for key in ("entry", "registers", "stack", "spill_stores", "spill_loads", "instructions"):
        print(f"  {key:14s} " + "  ".join(f"{name}={rows[name][key]}" for name in names))
    every = sorted({op for r in rows.values() for op in r["ops"]},
                   key=lambda op: -max(r["ops"].get(op, 0) for r in rows.values()))
    print("  opcode" + "".join(f"{name:>12s}" for name in names))
    for op in every:
        counts = [rows[name]["ops"].get(op, 0) for name in names]
        mark = "" if len(set(counts)) == 1 else "   *"
        print(f"  {op:28s}" + "".join(f"{c:>12d}" for c in counts) + mark)
    if ns.json:
        with open(ns.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
