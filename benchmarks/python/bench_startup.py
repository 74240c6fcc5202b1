"""Start-up and compile speed, each figure from fresh processes: import, the first cute.compile of a small 2-D
elementwise add (cold, cache disabled), a warm cache hit in a new process (the call and the whole process), the
tensorop_gemm example's cold compile, and the GEMM's cubin step with nvJitLink against a ptxas subprocess.

    python benchmarks/python/bench_startup.py [--reps 7] [--warmups 1] [--arch sm_80]
        [--cutedsl-python /work/cutedsl-venv/bin/python] [--cutedsl-examples DIR] [--json out.json]

With --cutedsl-python (an interpreter of a separate environment that has nvidia-cutlass-dsl), the same figures are
taken there in the same run, and the ratios (warpweave / CuTe DSL) printed: the elementwise add is the kernel
below, given to both; the GEMM is each project's own tensorop_gemm example (CuTe DSL's from --cutedsl-examples,
its public examples directory, imported there at run time). Nothing of CuTe DSL is imported in this process.

No GPU is needed: every compile is for --arch (WARPWEAVE_ARCH / CUTE_DSL_ARCH) with fake tensors. Each figure is
the median and the minimum of --reps processes after --warmups discarded ones (which also write the bytecode
caches: the children run with bytecode caching on, as an installed package would). Each compile is timed in wall
time and in CPU time (the process's threads and any tool it waited for): on a shared machine the wall figures
carry the other load, the CPU figures much less.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

# The benchmark's kernel: C = A + B over a 2-D tensor, each thread block taking one (4, 128)-element tile as 32x4
# threads by 4 contiguous elements (one 128-bit access), elements outside the tensor masked by their coordinates.
# It uses only the CuTe API both projects share; the imports come from IMPORTS below.
ADD_KERNEL = r'''
{imports}


@cute.kernel
def add_tile_kernel(a: cute.Tensor, b: cute.Tensor, out: cute.Tensor, coords: cute.Tensor, extent: cute.Shape,
                    threads: cute.Layout, values: cute.Layout):
    thread, _, _ = cute.arch.thread_idx()
    tile, _, _ = cute.arch.block_idx()
    here = ((None, None), tile)
    load = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), a.element_type)
    store = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), out.element_type)
    mine = cute.make_tiled_copy_tv(load, threads, values).get_slice(thread)
    mine_out = cute.make_tiled_copy_tv(store, threads, values).get_slice(thread)
    src_a = mine.partition_S(a[here])
    src_b = mine.partition_S(b[here])
    dst = mine_out.partition_D(out[here])
    where = mine_out.partition_S(coords[here])
    inside = cute.make_rmem_tensor(where.shape, cutlass.Boolean)
    for k in cutlass.range_constexpr(cute.size(inside)):
        inside[k] = cute.elem_less(where[k], extent)
    reg_a = cute.make_fragment_like(src_a)
    reg_b = cute.make_fragment_like(src_b)
    reg_out = cute.make_fragment_like(dst)
    cute.copy(load, src_a, reg_a, pred=inside)
    cute.copy(load, src_b, reg_b, pred=inside)
    reg_out.store(reg_a.load() + reg_b.load())
    cute.copy(store, reg_out, dst, pred=inside)


@cute.jit
def add_2d(a: cute.Tensor, b: cute.Tensor, out: cute.Tensor):
    per_access = 128 // a.element_type.width
    threads = cute.make_ordered_layout((4, 32), order=(1, 0))
    values = cute.make_ordered_layout((1, per_access), order=(1, 0))
    tile, tv = cute.make_layout_tv(threads, values)
    tiled = [cute.zipped_divide(t, tile) for t in (a, b, out)]
    coords = cute.zipped_divide(cute.make_identity_tensor(out.shape), tiler=tile)
    add_tile_kernel(tiled[0], tiled[1], tiled[2], coords, out.shape, threads, values).launch(
        grid=[cute.size(tiled[2], mode=[1]), 1, 1], block=[cute.size(tv, mode=[0]), 1, 1])
'''

IMPORTS = {
    "warpweave": "import warpweave as cutlass\nimport warpweave.cute as cute",
    "cutedsl": "import cutlass\nimport cutlass.cute as cute",
}

# Fake (M, N) row-major float32 tensors with runtime extents and a runtime row stride, in each project's words.
FAKE_2D = {
    "warpweave": ("from warpweave.cute.runtime import make_fake_tensor\n"
                  "def fake():\n"
                  "    m, n, ld = cute.sym_int(), cute.sym_int(divisibility=4), cute.sym_int(divisibility=4)\n"
                  "    return make_fake_tensor(cutlass.Float32, (m, n), stride=(ld, 1), assumed_align=16)\n"),
    "cutedsl": ("from cutlass.cute.runtime import make_fake_compact_tensor\n"
                "def fake():\n"
                "    m, n = cute.sym_int(), cute.sym_int(divisibility=4)\n"
                "    return make_fake_compact_tensor(cutlass.Float32, (m, n), stride_order=(1, 0), assumed_align=16)\n"),
}

# The GEMM: fp16 inputs, f32 accumulation, fp16 output, 2x2x1 MMA atoms, K-major A and B, N-major C, runtime
# M, N, K (the contiguous extents multiples of 8).
GEMM = {
    "warpweave": r'''
import tensorop_gemm as tg
from warpweave.cute.runtime import make_fake_tensor
def fake(mode0, mode1):
    t = make_fake_tensor(cutlass.Float16, (mode0, mode1, 1), (mode1, 1, mode0 * mode1), assumed_align=16)
    return t.mark_layout_dynamic(leading_dim=1).mark_compact_shape_dynamic(mode=1, stride_order=(2, 0, 1),
                                                                           divisibility=8)
args = (tg.TensorOpGemm(cutlass.Float16, cutlass.Float16, cutlass.Float32, (2, 2, 1)),
        fake(512, 256), fake(384, 256), fake(512, 384))
''',
    "cutedsl": r'''
import tensorop_gemm as tg
from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream
def fake(contiguous_div):
    shape = (cute.sym_int(), cute.sym_int(divisibility=contiguous_div), 1)
    return make_fake_compact_tensor(cutlass.Float16, shape, stride_order=(1, 0, 2), assumed_align=16)
args = (tg.TensorOpGemm(cutlass.Float16, cutlass.Float16, cutlass.Float32, (2, 2, 1)),
        fake(8), fake(8), fake(8), make_fake_stream())
''',
}

# One child process: imports, makes its arguments, compiles, and prints its timings (perf_counter from the
# script's first line) as JSON.
CHILD = r'''
import time
t0 = time.perf_counter()
import json, sys, resource
sys.path[:0] = {paths!r}
{imports}
t1 = time.perf_counter()
{setup}
t2 = time.perf_counter()
p2 = time.process_time(); k2 = resource.getrusage(resource.RUSAGE_CHILDREN)
{compile}
t3 = time.perf_counter()
p3 = time.process_time(); k3 = resource.getrusage(resource.RUSAGE_CHILDREN)
tools = (k3.ru_utime + k3.ru_stime) - (k2.ru_utime + k2.ru_stime)
print(json.dumps({{"import_ms": (t1 - t0) * 1e3, "setup_ms": (t2 - t1) * 1e3, "compile_ms": (t3 - t2) * 1e3,
                  "compile_cpu_ms": (p3 - p2 + tools) * 1e3, "total_ms": (t3 - t0) * 1e3,
                  "process_cpu_ms": time.process_time() * 1e3, "extra": {extra}}}))
'''


def child_code(project, kind, paths):
    imports = IMPORTS[project]
    if kind == "import":
        return CHILD.format(paths=paths, imports=imports, setup="", compile="", extra="{}")
    if kind == "add":
        setup = "import bench_add_kernel as k\n" + FAKE_2D[project] + "args = [fake() for _ in range(3)]"
        extra = ('{"cache": c.info.get("cache"), "level": c.info.get("level")}' if project == "warpweave"
                 else "{}")
        return CHILD.format(paths=paths, imports=imports, setup=setup, compile="c = cute.compile(k.add_2d, *args)",
                            extra=extra)
    if kind == "gemm":
        extra = ('{"cubin_ms": c.info.get("timings", {}).get("cubin_ms"), "tool": c.info.get("cubin_tool"), '
                 '"timings": c.info.get("timings")}' if project == "warpweave" else "{}")
        return CHILD.format(paths=paths, imports=imports, setup=GEMM[project], compile="c = cute.compile(*args)",
                            extra=extra)
    raise ValueError(kind)


def run_child(python, code, env, cwd):
    t = time.perf_counter()
    r = subprocess.run([python, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    wall = (time.perf_counter() - t) * 1e3
    if r.returncode != 0:
        raise RuntimeError(f"{python} failed:\n{r.stderr[-4000:]}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["process_ms"] = wall
    return out


def measure(python, code, env, cwd, reps, warmups, prepare=None):
    """Median and minimum of each timing over `reps` fresh processes, after `warmups` discarded ones."""
    samples = []
    for i in range(warmups + reps):
        if prepare:
            prepare()
        s = run_child(python, code, env, cwd)
        if i >= warmups:
            samples.append(s)
    out = {"samples": samples}
    for k in ("import_ms", "setup_ms", "compile_ms", "compile_cpu_ms", "total_ms", "process_ms", "process_cpu_ms"):
        vals = [s[k] for s in samples]
        out[k] = {"median": statistics.median(vals), "min": min(vals)}
    out["extra"] = samples[-1]["extra"]
    return out


def base_env(project, arch):
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its bytecode compiled
    for k in ("WARPWEAVE_KEEP", "WARPWEAVE_DISABLE_CACHE", "WARPWEAVE_CUBIN_TOOL", "CUTE_DSL_KEEP"):
        env.pop(k, None)
    env["WARPWEAVE_ARCH" if project == "warpweave" else "CUTE_DSL_ARCH"] = arch
    return env


def snapshot(work) -> str:
    """A copy of frontend_python (the package with its core library and plugins, and the examples) that the
    children import: what they measure cannot change under them while the tree is rebuilt."""
    import shutil

    dst = os.path.join(work, "tree", "frontend_python")
    for attempt in range(30):
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(os.path.join(ROOT, "frontend_python"), dst, ignore=shutil.ignore_patterns("__pycache__"))
        probe = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                                "from warpweave import _core", dst], capture_output=True, text=True)
        if probe.returncode == 0:
            return dst
        time.sleep(10)  # a build is writing the core library: try again
    raise RuntimeError(f"the copied warpweave does not import: {probe.stderr[-2000:]}")


def bench_warpweave(args, work):
    python = sys.executable
    tree = args.tree
    paths = [work, tree, os.path.join(tree, "examples")]
    env = base_env("warpweave", args.arch)
    cold_env = dict(env, WARPWEAVE_DISABLE_CACHE="1")
    res = {}
    res["import"] = measure(python, child_code("warpweave", "import", paths), env, work, args.reps, args.warmups)
    res["add_cold"] = measure(python, child_code("warpweave", "add", paths), cold_env, work, args.reps, args.warmups)
    cache = os.path.join(work, "ww-cache")
    warm_env = dict(env, WARPWEAVE_CACHE_DIR=cache)
    run_child(python, child_code("warpweave", "add", paths), warm_env, work)  # fills the cache
    res["add_warm"] = measure(python, child_code("warpweave", "add", paths), warm_env, work, args.reps, args.warmups)
    if res["add_warm"]["extra"].get("level") != "function":
        print(f"warning: the warm compile was not a hit before tracing: {res['add_warm']['extra']}", file=sys.stderr)
    if not args.skip_gemm:
        res["gemm_cold"] = measure(python, child_code("warpweave", "gemm", paths), cold_env, work, args.reps,
                                   args.warmups)
        res["gemm_ptxas"] = measure(python, child_code("warpweave", "gemm", paths),
                                    dict(cold_env, WARPWEAVE_CUBIN_TOOL="ptxas"), work, args.reps, args.warmups)
        res["gemm_nvjitlink"] = measure(python, child_code("warpweave", "gemm", paths),
                                        dict(cold_env, WARPWEAVE_CUBIN_TOOL="nvjitlink"), work, args.reps,
                                        args.warmups)
        for k in ("gemm_ptxas", "gemm_nvjitlink"):
            cubin = [s["extra"]["cubin_ms"] for s in res[k]["samples"] if s["extra"].get("cubin_ms") is not None]
            res[k]["cubin_ms"] = {"median": statistics.median(cubin), "min": min(cubin)} if cubin else None
    return res


def bench_cutedsl(args, work):
    python = args.cutedsl_python
    gemm_dir = os.path.join(args.cutedsl_examples, "cute", "ampere", "kernel", "dense_gemm")
    paths = [work, gemm_dir]
    env = base_env("cutedsl", args.arch)
    res = {}
    res["import"] = measure(python, child_code("cutedsl", "import", paths), env, work, args.reps, args.warmups)
    res["add_cold"] = measure(python, child_code("cutedsl", "add", paths), env, work, args.reps, args.warmups)
    if not args.skip_gemm:
        if not os.path.isfile(os.path.join(gemm_dir, "tensorop_gemm.py")):
            print(f"warning: no tensorop_gemm.py under {gemm_dir}: CuTe DSL's GEMM is left out", file=sys.stderr)
        else:
            res["gemm_cold"] = measure(python, child_code("cutedsl", "gemm", paths), env, work, args.reps,
                                       args.warmups)
    return res


def sass_instructions(cubin: bytes) -> dict:
    """Instruction count, runtime integer divisions and vector accesses of a cubin's SASS (nvdisasm)."""
    import re

    from warpweave import _core

    sass = _core.disassemble_sass(cubin)
    ops = re.findall(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)", sass, re.M)
    return {"instructions": len(ops), "divisions": sum(1 for o in ops if o.startswith("I2F") and "F16" not in o),
            "vector_accesses": sum(1 for o in ops if o.startswith(("LDG", "STG")) and o.endswith(".128")),
            "scalar_accesses": sum(1 for o in ops if o in ("LDG.E", "STG.E"))}


def add_sass(args, work):
    """The 2-D add's SASS from each project, compiled once more (not timed)."""
    out = {}
    wdir = os.path.join(work, "warpweave")
    paths = [wdir, args.tree]
    code = child_code("warpweave", "add", paths).replace(
        '"extra": {"cache"', '"extra": {"cubin": c.cubin.hex(), "cache"')
    r = run_child(sys.executable, code, dict(base_env("warpweave", args.arch), WARPWEAVE_DISABLE_CACHE="1"), wdir)
    out["warpweave"] = sass_instructions(bytes.fromhex(r["extra"]["cubin"]))
    if args.cutedsl_python:
        cdir = os.path.join(work, "cutedsl")
        dump = os.path.join(cdir, "dump")
        os.makedirs(dump, exist_ok=True)
        env = dict(base_env("cutedsl", args.arch), CUTE_DSL_KEEP="cubin", CUTE_DSL_DUMP_DIR=dump)
        run_child(args.cutedsl_python, child_code("cutedsl", "add", [cdir]), env, cdir)
        cubins = [f for f in os.listdir(dump) if f.endswith(".cubin") and "add_2d" in f]
        if cubins:
            with open(os.path.join(dump, sorted(cubins)[-1]), "rb") as f:
                out["cutedsl"] = sass_instructions(f.read())
    return out


def fmt(x):
    return f"{x['median']:.1f} ({x['min']:.1f})" if x else "—"


def table(ww, cd, sass=None):
    rows = []

    def row(name, w, c):
        ratio = f"{w['median'] / c['median']:.2f}" if w and c else "—"
        rows.append((name, fmt(c) if c else "—", fmt(w) if w else "—", ratio))

    g = lambda r, k, f: r.get(k, {}).get(f) if r else None  # noqa: E731
    row("import (in process)", g(ww, "import", "import_ms"), g(cd, "import", "import_ms"))
    row("import (whole process)", g(ww, "import", "process_ms"), g(cd, "import", "process_ms"))
    row("2-D add: first cute.compile, cold", g(ww, "add_cold", "compile_ms"), g(cd, "add_cold", "compile_ms"))
    row("2-D add: first cute.compile, cold, CPU", g(ww, "add_cold", "compile_cpu_ms"),
        g(cd, "add_cold", "compile_cpu_ms"))
    row("2-D add: cold, import+fakes+compile", g(ww, "add_cold", "total_ms"), g(cd, "add_cold", "total_ms"))
    row("2-D add: cold, whole process", g(ww, "add_cold", "process_ms"), g(cd, "add_cold", "process_ms"))
    row("2-D add: warm hit, new process: cute.compile", g(ww, "add_warm", "compile_ms"), None)
    row("2-D add: warm hit, import+fakes+compile", g(ww, "add_warm", "total_ms"), None)
    row("2-D add: warm hit, whole process", g(ww, "add_warm", "process_ms"), None)
    row("2-D add: warm hit, whole process, CPU", g(ww, "add_warm", "process_cpu_ms"),
        None)
    row("tensorop_gemm: cold cute.compile", g(ww, "gemm_cold", "compile_ms"), g(cd, "gemm_cold", "compile_ms"))
    row("tensorop_gemm: cold cute.compile, CPU", g(ww, "gemm_cold", "compile_cpu_ms"),
        g(cd, "gemm_cold", "compile_cpu_ms"))
    if ww and ww.get("gemm_ptxas"):
        row("tensorop_gemm: cold compile, nvJitLink", ww["gemm_nvjitlink"]["compile_ms"], None)
        row("tensorop_gemm: cold compile, ptxas -O3", ww["gemm_ptxas"]["compile_ms"], None)
        row("tensorop_gemm: cubin step, nvJitLink", ww["gemm_nvjitlink"]["cubin_ms"], None)
        row("tensorop_gemm: cubin step, ptxas -O3", ww["gemm_ptxas"]["cubin_ms"], None)
    for k, label in (("instructions", "2-D add SASS instructions (count)"),
                     ("divisions", "2-D add SASS runtime integer divisions"),
                     ("vector_accesses", "2-D add SASS 128-bit accesses"),
                     ("scalar_accesses", "2-D add SASS scalar accesses")):
        if sass and "warpweave" in sass:
            w, c = sass["warpweave"][k], sass.get("cutedsl", {}).get(k)
            rows.append((label, "—" if c is None else str(c), str(w), f"{w / c:.2f}" if c else "—"))
    w0 = max(len(r[0]) for r in rows)
    lines = [f"| {'figure (ms, median (min))':<{w0}} | CuTe DSL | warpweave | ww / CuTe DSL |",
             f"| {'-' * w0} | --- | --- | --- |"]
    lines += [f"| {r[0]:<{w0}} | {r[1]} | {r[2]} | {r[3]} |" for r in rows]
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--warmups", type=int, default=1)
    p.add_argument("--arch", default="sm_80")
    p.add_argument("--cutedsl-python", default=None, help="python of an environment with nvidia-cutlass-dsl")
    p.add_argument("--cutedsl-examples", default="/work/cutedsl/examples/python/CuTeDSL",
                   help="CuTe DSL's public examples directory (its tensorop_gemm example is compiled there)")
    p.add_argument("--skip-gemm", action="store_true")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ww-bench-startup-") as work:
        args.tree = snapshot(work)
        sys.path.insert(0, args.tree)
        for project in ("warpweave", "cutedsl"):
            os.makedirs(os.path.join(work, project), exist_ok=True)
            with open(os.path.join(work, project, "bench_add_kernel.py"), "w") as f:
                f.write(ADD_KERNEL.format(imports=IMPORTS[project]))
        ww = bench_warpweave(args, os.path.join(work, "warpweave"))
        cd = bench_cutedsl(args, os.path.join(work, "cutedsl")) if args.cutedsl_python else None
        sass = add_sass(args, work)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"warpweave": ww, "cutedsl": cd, "sass": sass, "arch": args.arch, "reps": args.reps}, f,
                      indent=2)
    print(f"\n== start-up and compile, {args.arch}, {args.reps} fresh processes per figure after {args.warmups} "
          "warm-up ==")
    print(table(ww, cd, sass))
    return 0


if __name__ == "__main__":
    sys.exit(main())
