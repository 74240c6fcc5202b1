"""Cold compile of the Hopper and Blackwell GEMM examples, side by side with CuTe DSL's examples of the same names,
each in a fresh process with an empty JIT cache, and the SASS each produces (instructions, registers).

    python benchmarks/python/bench_compile_gemm.py [--reps 3] [--warmups 1] [--cases hopper_dense,...]
        [--cutedsl-python /work/cutedsl-venv/bin/python] [--cutedsl-examples DIR] [--ptxas] [--no-warmup] [--json out.json]

The cases (fp16 A and B, K-major, fp16 C N-major, fp32 accumulation, runtime M, N, K, L):
  hopper_dense       warpweave examples/hopper/dense_gemm.py HopperDenseGemm 128x256, cluster 2x1, for sm_90a;
                     CuTe DSL cute/hopper/kernel/dense_gemm/dense_gemm.py HopperWgmmaGemmKernel((128, 256), (2, 1)).
  hopper_persistent  examples/hopper/dense_gemm_persistent.py HopperPersistentDenseGemm 128x256, cluster 2x1;
                     CuTe DSL's dense_gemm_persistent.py HopperWgmmaGemmPersistentKernel((128, 256), (2, 1), 1,
                     raster along M), 66 active clusters (an H100/H200's 132 SMs over 2) for both.
  blackwell_dense    examples/blackwell/dense_gemm.py BlackwellDenseGemm 1-CTA 128x256, cluster 1x1, for sm_100a;
                     CuTe DSL cute/blackwell/kernel/dense_gemm/dense_gemm.py DenseGemmKernel(1-CTA, (128, 256),
                     (1, 1), TMA store).

No GPU is needed: both compile for the case's architecture (WARPWEAVE_ARCH / CUTE_DSL_ARCH) with fake tensors.
Every figure is the median and the minimum over --reps fresh processes after --warmups discarded ones; each
process gets a new, empty warpweave cache directory. What lives beside Python's bytecode is kept, for both
projects: each one's .pyc files, and warpweave's preprocessor results (_dsl/tracing/rewrite_cache.py), which the warm-up
process writes. warpweave warms its compiler up in a thread while it traces (_dsl/call/compile_warmup.py): the wall
figures have that overlap, the CPU figures count the thread's work too; --no-warmup turns it off. Besides wall time, each child reports the CPU time of its
compile (process time of all its threads plus any tool it waited for): on a shared machine the wall figures carry
the other load, the CPU figures much less. The SASS (nvdisasm) and the register count (the cubin's
EIATTR_REGCOUNT) come from one more, untimed compile of each. With --ptxas, warpweave's compiles are repeated
with a ptxas subprocess (-O3) as the cubin tool instead of nvJitLink.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import struct
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_startup as bs  # noqa: E402  (fresh-process runner, tree snapshot, SASS counts)

# One child: times import, argument set-up and compile (wall and CPU), then optionally writes the cubin.
CHILD = r'''
import time, os, resource
t0 = time.perf_counter()
import json, sys
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
{save}
print(json.dumps({{"import_ms": (t1 - t0) * 1e3, "setup_ms": (t2 - t1) * 1e3, "compile_ms": (t3 - t2) * 1e3,
                  "compile_cpu_ms": (p3 - p2 + tools) * 1e3, "total_ms": (t3 - t0) * 1e3, "extra": {extra}}}))
'''

WW_IMPORTS = "import warpweave as cutlass\nimport warpweave.cute as cute"
CD_IMPORTS = ("import cutlass\nimport cutlass.cute as cute\n"
              "from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream")

# CuTe DSL's fake (mode0, mode1, L) tensor with mode 1 contiguous (K-major A and B, N-major C), runtime extents.
CD_FAKE = r'''
def fake(dtype):
    shape = (cute.sym_int(), cute.sym_int(divisibility=8), cute.sym_int())
    return make_fake_compact_tensor(dtype, shape, stride_order=(1, 0, 2), assumed_align=16)
'''

CASES = {
    "hopper_dense": {
        "arch": "sm_90a",
        "ww_dir": "hopper", "ww_setup": r'''
import dense_gemm as ex
gemm = ex.HopperDenseGemm(cutlass.Float32, (128, 256), (2, 1))
''', "ww_compile": "c = ex.compile_only(gemm, 'k', 'k', 'n', cutlass.Float16, cutlass.Float16)",
        "cd_dir": "cute/hopper/kernel/dense_gemm", "cd_setup": CD_FAKE + r'''
import dense_gemm as ex
gemm = ex.HopperWgmmaGemmKernel(cutlass.Float32, (128, 256), (2, 1))
args = (fake(cutlass.Float16), fake(cutlass.Float16), fake(cutlass.Float16), make_fake_stream())
''', "cd_compile": "c = cute.compile(gemm, *args)", "cd_name": "HopperWgmmaGemmKernel",
    },
    "hopper_persistent": {
        "arch": "sm_90a",
        "ww_dir": "hopper", "ww_setup": r'''
import dense_gemm_persistent as ex
gemm = ex.HopperPersistentDenseGemm(cutlass.Float32, (128, 256), (2, 1), 1, True, max_active_clusters=66)
''', "ww_compile": "c = ex.compile_only(gemm, 'k', 'k', 'n', cutlass.Float16, cutlass.Float16)",
        "cd_dir": "cute/hopper/kernel/dense_gemm", "cd_setup": CD_FAKE + r'''
import dense_gemm_persistent as ex
gemm = ex.HopperWgmmaGemmPersistentKernel(cutlass.Float32, (128, 256), (2, 1), 1, True)
args = (fake(cutlass.Float16), fake(cutlass.Float16), fake(cutlass.Float16), 66, make_fake_stream())
''', "cd_compile": "c = cute.compile(gemm, *args)", "cd_name": "HopperWgmmaGemmPersistentKernel",
    },
    "blackwell_dense": {
        "arch": "sm_100a",
        "ww_dir": "blackwell", "ww_setup": r'''
import dense_gemm as ex
gemm = ex.BlackwellDenseGemm(cutlass.Float32, False, (128, 256), (1, 1))
''', "ww_compile": "c = ex.compile_only(gemm, 'k', 'k', 'n', cutlass.Float16, cutlass.Float16)",
        "cd_dir": "cute/blackwell/kernel/dense_gemm", "cd_setup": CD_FAKE + r'''
import dense_gemm as ex
gemm = ex.DenseGemmKernel(cutlass.Float32, False, (128, 256), (1, 1), True)
args = (fake(cutlass.Float16), fake(cutlass.Float16), fake(cutlass.Float16), make_fake_stream())
''', "cd_compile": "c = cute.compile(gemm, *args)", "cd_name": "DenseGemmKernel",
    },
}

WW_EXTRA = '{"timings": c.info.get("timings"), "trace_ms": c.timings["trace_s"] * 1e3, "cache": c.info.get("cache")}'


def ww_child(case, paths, cubin_path=None):
    c = CASES[case]
    save = f"open({cubin_path!r}, 'wb').write(c.cubin)" if cubin_path else ""
    return CHILD.format(paths=paths, imports=WW_IMPORTS, setup=c["ww_setup"], compile=c["ww_compile"], save=save,
                        extra=WW_EXTRA)


def cd_child(case, paths):
    c = CASES[case]
    return CHILD.format(paths=paths, imports=CD_IMPORTS, setup=c["cd_setup"], compile=c["cd_compile"], save="",
                        extra="{}")


def register_counts(cubin: bytes) -> dict:
    """{kernel symbol index: registers} from the cubin's .nv.info sections (attribute EIATTR_REGCOUNT, 0x2f: a
    32-bit symbol index and a 32-bit count)."""
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2:
        raise ValueError("not a 64-bit ELF cubin")
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    names_off = sections[shstrndx][4]

    def name(off, base):
        end = cubin.index(b"\0", base + off)
        return cubin[base + off:end].decode()

    out = {}
    for s in sections:
        sname = name(s[0], names_off)
        if sname != ".nv.info" and not sname.startswith(".nv.info."):
            continue
        data = cubin[s[4]:s[4] + s[5]]
        i = 0
        while i + 2 <= len(data):
            fmt, attr = data[i], data[i + 1]
            if fmt == 0x04:                      # EIFMT_SVAL: a 16-bit size, then the value
                size, = struct.unpack_from("<H", data, i + 2)
                if attr == 0x2F and size >= 8:
                    sym, count = struct.unpack_from("<II", data, i + 4)
                    out[sym] = count
                i += 4 + size
            elif fmt == 0x03:                    # EIFMT_HVAL: a 16-bit value
                i += 4
            else:                                # EIFMT_NVAL (0x01) and EIFMT_BVAL (0x02): no value / one byte
                i += 2 if fmt == 0x01 else 4
    return out


def sass_figures(cubin: bytes) -> dict:
    out = bs.sass_instructions(cubin)
    regs = register_counts(cubin)
    out["registers"] = max(regs.values()) if regs else None
    return out


def stats(samples, key):
    vals = [s[key] for s in samples if s.get(key) is not None]
    return {"median": statistics.median(vals), "min": min(vals)} if vals else None


def measure(python, code, env, cwd, reps, warmups, cache_root=None):
    samples = []
    for i in range(warmups + reps):
        e = dict(env)
        if cache_root is not None:                # a new, empty cache for every process
            shutil.rmtree(cache_root, ignore_errors=True)
            os.makedirs(cache_root)
            e["WARPWEAVE_CACHE_DIR"] = cache_root
        s = bs.run_child(python, code, e, cwd)
        if i >= warmups:
            samples.append(s)
    out = {"samples": samples}
    for k in ("import_ms", "setup_ms", "compile_ms", "compile_cpu_ms", "total_ms", "process_ms"):
        out[k] = stats(samples, k)
    return out


def bench_case(case, args, work):
    c = CASES[case]
    res = {}
    wdir = os.path.join(work, "warpweave")
    os.makedirs(wdir, exist_ok=True)
    paths = [wdir, args.tree, os.path.join(args.tree, "examples", c["ww_dir"])]
    env = bs.base_env("warpweave", c["arch"])
    env.pop("WARPWEAVE_DISABLE_CACHE", None)
    if args.no_warmup:
        env["WARPWEAVE_COMPILER_WARMUP"] = "0"
    ww = measure(sys.executable, ww_child(case, paths), env, wdir, args.reps, args.warmups,
                 cache_root=os.path.join(work, "ww-cache"))
    stages = {}
    for s in ww["samples"]:
        for k, v in (s["extra"].get("timings") or {}).items():
            stages.setdefault(k, []).append(v)
        stages.setdefault("trace_ms", []).append(s["extra"]["trace_ms"])
    ww["stages"] = {k: statistics.median(v) for k, v in stages.items()}
    if args.ptxas:   # the same compile with a ptxas subprocess instead of nvJitLink (its CPU is counted too)
        px = measure(sys.executable, ww_child(case, paths), dict(env, WARPWEAVE_CUBIN_TOOL="ptxas"), wdir,
                     args.reps, args.warmups, cache_root=os.path.join(work, "ww-cache"))
        px["cubin_ms"] = stats([s["extra"]["timings"] or {} for s in px["samples"]], "cubin_ms")
        ww["ptxas"] = px
        ww["cubin_ms"] = stats([s["extra"]["timings"] or {} for s in ww["samples"]], "cubin_ms")
    cubin_path = os.path.join(wdir, case + ".cubin")
    bs.run_child(sys.executable, ww_child(case, paths, cubin_path), dict(env, WARPWEAVE_DISABLE_CACHE="1"), wdir)
    with open(cubin_path, "rb") as f:
        ww["sass"] = sass_figures(f.read())
    res["warpweave"] = ww
    if args.cutedsl_python:
        cdir = os.path.join(work, "cutedsl", case)
        os.makedirs(cdir, exist_ok=True)
        ex_dir = os.path.join(args.cutedsl_examples, c["cd_dir"])
        cenv = bs.base_env("cutedsl", c["arch"])
        try:
            cd = measure(args.cutedsl_python, cd_child(case, [cdir, ex_dir]), cenv, cdir, args.reps, args.warmups)
            dump = os.path.join(cdir, "dump")
            os.makedirs(dump, exist_ok=True)
            bs.run_child(args.cutedsl_python, cd_child(case, [cdir, ex_dir]),
                         dict(cenv, CUTE_DSL_KEEP="cubin", CUTE_DSL_DUMP_DIR=dump), cdir)
            cubins = sorted(f for f in os.listdir(dump) if f.endswith(".cubin") and c["cd_name"] in f)
            if cubins:
                with open(os.path.join(dump, cubins[-1]), "rb") as f:
                    cd["sass"] = sass_figures(f.read())
            res["cutedsl"] = cd
        except RuntimeError as e:
            print(f"warning: CuTe DSL's {case} did not compile: {str(e)[-600:]}", file=sys.stderr)
    return res


def fmt(x):
    return f"{x['median']:.0f} ({x['min']:.0f})" if x else "—"


def table(results, args):
    rows = []
    for case, r in results.items():
        ww, cd = r.get("warpweave"), r.get("cutedsl")
        for key, label in (("compile_ms", "cold cute.compile, wall"), ("compile_cpu_ms", "cold cute.compile, CPU"),
                           ("process_ms", "whole process, wall")):
            w, c = ww[key], cd[key] if cd else None
            rows.append((f"{case}: {label}", fmt(c), fmt(w), f"{w['median'] / c['median']:.2f}" if w and c else "—"))
        if ww.get("ptxas"):
            for label, x in (("cold cute.compile, CPU, ptxas -O3", ww["ptxas"]["compile_cpu_ms"]),
                             ("cubin step (wall), nvJitLink", ww["cubin_ms"]),
                             ("cubin step (wall), ptxas -O3", ww["ptxas"]["cubin_ms"])):
                rows.append((f"{case}: {label}", "—", fmt(x), "—"))
        for key, label in (("instructions", "SASS instructions"), ("registers", "registers")):
            w, c = ww["sass"].get(key), (cd or {}).get("sass", {}).get(key)
            rows.append((f"{case}: {label}", "—" if c is None else str(c), str(w), f"{w / c:.2f}" if w and c else "—"))
    w0 = max(len(r[0]) for r in rows)
    lines = [f"| {'figure (ms, median (min))':<{w0}} | CuTe DSL | warpweave | ww / CuTe DSL |",
             f"| {'-' * w0} | --- | --- | --- |"]
    lines += [f"| {r[0]:<{w0}} | {r[1]} | {r[2]} | {r[3]} |" for r in rows]
    stage_lines = []
    for case, r in results.items():
        st = r["warpweave"]["stages"]
        stage_lines.append(f"{case}: warpweave stages (wall ms, median): "
                           + ", ".join(f"{k[:-3] if k.endswith('_ms') else k} {v:.0f}" for k, v in st.items()))
    return "\n".join(lines + [""] + stage_lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--warmups", type=int, default=1)
    p.add_argument("--cases", default=",".join(CASES), help="comma-separated, of: " + ", ".join(CASES))
    p.add_argument("--cutedsl-python", default=None, help="python of an environment with nvidia-cutlass-dsl")
    p.add_argument("--cutedsl-examples", default="/work/cutedsl/examples/python/CuTeDSL",
                   help="CuTe DSL's public examples directory")
    p.add_argument("--ptxas", action="store_true", help="also compile with a ptxas subprocess instead of nvJitLink")
    p.add_argument("--no-warmup", action="store_true",
                   help="warpweave without its compiler warm-up during the trace (WARPWEAVE_COMPILER_WARMUP=0)")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        p.error(f"unknown case(s) {unknown}; the cases are {list(CASES)}")
    results = {}
    with tempfile.TemporaryDirectory(prefix="ww-bench-compile-gemm-") as work:
        args.tree = bs.snapshot(work)
        sys.path.insert(0, args.tree)
        for case in cases:
            results[case] = bench_case(case, args, work)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": results, "reps": args.reps, "warmups": args.warmups}, f, indent=2)
    print(f"\n== cold compile of the GEMM examples, {args.reps} fresh processes per figure after {args.warmups} "
          f"warm-up, load average {os.getloadavg()[0]:.1f}, warpweave's compiler warm-up "
          f"{'off' if args.no_warmup else 'on'} ==")
    print(table(results, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
