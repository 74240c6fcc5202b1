"""CuTe DSL's public example programs through `python -m warpweave run --compile-only`, for each target, with a
pass/fail table; and, with --surface, which of the names they use warpweave has, by module.

    python benchmarks/python/cutedsl_examples.py /path/to/cutlass [--archs sm_80,sm_90a] [--python PY] [--surface]

The programs are read from the given checkout (examples/python/CuTeDSL/...); nothing of them is copied here. A
program passes for a target when it runs to its end or to its first kernel launch (which a compile-only run does
not make) with every kernel it asked for compiled; a notebook passes when every code cell runs. PY must have
warpweave, numpy, torch and cuda-bindings importable (scripts/cutedsl_examples.sh makes such an environment).
"""
from __future__ import annotations

import argparse
import ast
import importlib
import json
import os
import re
import subprocess
import sys
import time
from collections import defaultdict

BASE = "examples/python/CuTeDSL/cute"
HOPPER = f"{BASE}/hopper/kernel/dense_gemm"
# SASS the Hopper GEMMs must hold (opcode prefixes; none of them may use local memory).
HGMMA_TMA = ("HGMMA", "UTMALDG", "SYNCS", "UTMASTG", "STSM")
BLACKWELL = f"{BASE}/blackwell/kernel"
UTCQMMA_TMA = ("UTCQMMA", "UTMALDG", "UTMASTG", "SYNCS", "LDTM", "STTM")
UTCHMMA_TMA = ("UTCHMMA", "UTMALDG", "UTMASTG", "SYNCS", "LDTM", "UTCBAR")
PROGRAMS = [
    ("elementwise_add", f"{BASE}/ampere/kernel/elementwise/elementwise_add.py", ["--M", "256", "--N", "512"]),
    ("elementwise_apply", f"{BASE}/ampere/kernel/elementwise/elementwise_apply.py", []),
    ("sgemm", f"{BASE}/ampere/kernel/dense_gemm/sgemm.py", []),
    ("tensorop_gemm", f"{BASE}/ampere/kernel/dense_gemm/tensorop_gemm.py", []),
    ("hello_world.ipynb", f"{BASE}/notebooks/hello_world.ipynb", []),
    ("tensor.ipynb", f"{BASE}/notebooks/tensor.ipynb", []),
    ("cute_layout_algebra.ipynb", f"{BASE}/notebooks/cute_layout_algebra.ipynb", []),
    ("data_types.ipynb", f"{BASE}/notebooks/data_types.ipynb", []),
    ("print.ipynb", f"{BASE}/notebooks/print.ipynb", []),
    ("tensorssa.ipynb", f"{BASE}/notebooks/tensorssa.ipynb", []),
    ("composed_layout.ipynb", f"{BASE}/notebooks/composed_layout.ipynb", []),
    ("elementwise_add.ipynb", f"{BASE}/notebooks/elementwise_add.ipynb", []),
    ("async_pipeline.ipynb", f"{BASE}/notebooks/async_pipeline.ipynb", []),
    ("benchmark_autotune.ipynb", f"{BASE}/notebooks/benchmark_autotune.ipynb", []),
    ("cuda_graphs.ipynb", f"{BASE}/notebooks/cuda_graphs.ipynb", []),
    ("tour_to_sol_gemm.ipynb", f"{BASE}/notebooks/tour_to_sol_gemm.ipynb", [], ("sm_100a",)),
    # (name, path, args, targets the program is for, SASS it must hold there)
    ("hopper_dense_gemm", f"{HOPPER}/dense_gemm.py", [], ("sm_90a",), HGMMA_TMA),
    ("hopper_dense_gemm_2x1", f"{HOPPER}/dense_gemm.py", ["--cluster_shape_mn", "2,1"], ("sm_90a",),
     HGMMA_TMA + ("UTMALDG.3D.MULTICAST",)),
    ("hopper_dense_gemm_128x256_1x2", f"{HOPPER}/dense_gemm.py", ["--tile_shape_mn", "128,256", "--cluster_shape_mn",
                                                              "1,2"], ("sm_90a",), HGMMA_TMA + ("UTMALDG.3D.MULTICAST",)),
    ("hopper_dense_gemm_persistent", f"{HOPPER}/dense_gemm_persistent.py", [], ("sm_90a",),
     HGMMA_TMA + ("USETMAXREG",)),
    ("hopper_dense_gemm_persistent_2x1", f"{HOPPER}/dense_gemm_persistent.py", ["--cluster_shape_mn", "2,1"],
     ("sm_90a",), HGMMA_TMA + ("USETMAXREG", "UTMALDG.3D.MULTICAST")),
    # fp8 promoted into a second fp32 accumulator every few k-blocks (its default cluster is 1x2: A multicast); fp8
    # wgmma is QGMMA. At its default 128x128 tile one warpgroup holds 2 x 128 fp32 accumulators a thread, more than
    # the 255 registers a thread has, so some spill; 128x64 fits.
    ("hopper_dense_gemm_fp8_2xacc", f"{HOPPER}/dense_gemm_fp8_2xacc.py", ["--tile_shape_mn", "128,64"], ("sm_90a",),
     ("QGMMA", "UTMALDG.3D.MULTICAST", "SYNCS", "UTMASTG", "STSM", "USETMAXREG")),
    ("hopper_dense_gemm_fp8_gelu_persistent", f"{HOPPER}/dense_gemm_fp8_gelu_persistent.py", [], ("sm_90a",),
     ("QGMMA", "UTMALDG", "SYNCS", "UTMASTG", "STSM", "USETMAXREG")),
    # A layer norm over CTA-wide reductions (warp shuffles, shared memory), called through TVM FFI.
    ("hopper_cta_norm", f"{BASE}/hopper/kernel/cta_norm/cta_norm.py", [], ("sm_90a",), ("SHFL", "LDG", "STG")),
    # Blackwell's grouped fp8 GEMMs with blockwise scales: fp8 tcgen05.mma (UTCQMMA), TMA loads and stores, the
    # accumulator read from tensor memory (LDTM) and the scaled partial sums written back to it (STTM).
    ("blackwell_contiguous_grouped_gemm", f"{BLACKWELL}/blockwise_gemm/contiguous_grouped_gemm.py", [], ("sm_100a",),
     UTCQMMA_TMA),
    ("blackwell_masked_grouped_gemm", f"{BLACKWELL}/blockwise_gemm/masked_grouped_gemm.py", [], ("sm_100a",),
     UTCQMMA_TMA),
    # Dense GEMMs whose epilogue the program writes as a Python function (epilogue fusion): f16 tcgen05.mma, TMA in
    # and out, the accumulators read from tensor memory.
    ("blackwell_efc_custom", f"{BASE}/blackwell/efc/custom_epilogue_dense_gemm.py", [], ("sm_100a",), UTCHMMA_TMA),
    ("blackwell_efc_activation", f"{BASE}/blackwell/efc/activation_custom_epilogue_dense_gemm.py", [], ("sm_100a",),
     UTCHMMA_TMA),
    ("blackwell_efc_synthetic", f"{BASE}/blackwell/efc/synthetic_custom_epilogue_dense_gemm.py", [], ("sm_100a",),
     UTCHMMA_TMA),
    # Mixed-input kernels whose warp roles run at their register ceilings (CuTe DSL's builds have no local memory
    # there either): an int4 (and an int8) operand converted to bf16 in registers before the tensor core reads it, a
    # persistent tile scheduler in every role; the attention decode converts int8 K/V into tensor memory.
    ("blackwell_mixed_input_gemm", f"{BLACKWELL}/mixed_input_gemm/mixed_input_gemm.py", [], ("sm_100a",),
     ("UTCHMMA", "UTMALDG", "SYNCS", "LDTM", "UTCBAR")),
    ("blackwell_mixed_input_gemm_int8", f"{BLACKWELL}/mixed_input_gemm/mixed_input_gemm.py",
     ["--a_dtype", "Int8", "--scale_granularity_m", "0", "--scale_granularity_k", "0"], ("sm_100a",),
     ("UTCHMMA", "UTMALDG", "SYNCS", "LDTM", "UTCBAR")),
    ("blackwell_mixed_input_fmha_decode", f"{BLACKWELL}/attention/mixed_input_fmha/mixed_input_fmha_decode.py", [],
     ("sm_100a",), UTCHMMA_TMA),
]


def sass_check(dump_dir: str, required) -> tuple[bool, str]:
    """Whether the kept SASS holds every required opcode prefix and no local-memory access (LDL/STL)."""
    import glob

    text = "".join(open(f, encoding="utf-8", errors="replace").read()
                   for f in glob.glob(os.path.join(dump_dir, "**", "*.sass"), recursive=True))
    if not text or "no SASS" in text[:200]:
        return False, "no SASS kept (nvdisasm missing? set WARPWEAVE_NVDISASM)"
    ops = set(re.findall(r"\b([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\b", text))
    missing = [r for r in required if not any(o == r or o.startswith(r + ".") for o in ops)]
    local = sorted(o for o in ops if o.split(".")[0] in ("LDL", "STL"))
    if missing or local:
        why = ([f"SASS lacks {', '.join(missing)}"] if missing else []) + \
            ([f"local memory: {', '.join(local)}"] if local else [])
        return False, "; ".join(why)
    return True, "SASS " + " ".join(required)


def program_env(python: str) -> dict:
    """The environment a program runs in: this one, with `python`'s virtual environment activated where it has one
    (VIRTUAL_ENV, its bin first on PATH), as a user runs an example, so that the tools a program calls find that
    environment's packages (the FFI tutorial's CMake finds nanobind through the environment's Python)."""
    env = dict(os.environ)
    bindir = os.path.dirname(os.path.abspath(python))
    root = os.path.dirname(bindir)
    if os.path.isfile(os.path.join(root, "pyvenv.cfg")):
        env["VIRTUAL_ENV"] = root
        env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    return env


def run_one(python: str, path: str, args: list[str], arch: str, timeout: int, sass=()) -> tuple[bool, str, float]:
    import tempfile

    cmd = [python, "-m", "warpweave", "run", "--compile-only", "--arch", arch]
    if path.endswith(".ipynb"):
        cmd.append("--keep-going")
    env = program_env(python)
    dump = tempfile.mkdtemp(prefix="ww_sass_") if sass else None
    if dump:
        env.update(WARPWEAVE_KEEP="sass", WARPWEAVE_DUMP_DIR=dump, WARPWEAVE_DISABLE_CACHE="1")
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd + [path] + args, capture_output=True, text=True, timeout=timeout,
                           cwd=os.path.dirname(path), env=env)
    except subprocess.TimeoutExpired:
        return False, f"timed out after {timeout} s", time.perf_counter() - t0
    dt = time.perf_counter() - t0
    out = r.stdout + r.stderr
    m = re.search(r"compile-only: (\d+) compiled function\(s\), (\d+) launching", out)
    compiled = int(m.group(1)) if m else 0
    # A program that only loads functions exported earlier compiles nothing: it passes when it reaches their call.
    compiled = compiled or (1 if m and int(m.group(2)) and "exported function" in out else 0)
    nb = re.search(r"notebook: (\d+) code cell\(s\) run, (\d+) without error(?: \(\d+ ended at a launch not "
                   r"made\))?(?:; checks after launches not made: ([^;\n]*))?(; failed: (.*))?", out)
    if r.returncode == 0 and (compiled > 0 or nb):
        detail = f"{compiled} compiled" + (f", {nb.group(2)}/{nb.group(1)} cells" if nb else "")
        nc = re.search(r"(\d+) host result\(s\) not computed", out)
        if nc:
            detail += f" ({nc.group(1)} host results not computed: no CPU kernel, NaN)"
        if nb and nb.group(3):
            detail += f" (results unchecked in {nb.group(3).count('cell')}: their launches were not made)"
        if dump:
            ok, what = sass_check(dump, sass)
            return ok, f"{detail}; {what}", dt
        return True, detail, dt
    errors = [l for l in out.splitlines() if re.match(r"^[\w.]+(Error|Exception)\b", l)]
    detail = errors[0] if errors else (out.strip().splitlines() or ["no output"])[-1]
    if nb:
        detail = f"cells {nb.group(2)}/{nb.group(1)} ({nb.group(5)}): " + detail
    return False, detail[:160], dt


# --- the names the programs use -----------------------------------------------------------------------------------

def _program_source(path: str) -> str:
    if path.endswith(".ipynb"):
        with open(path, encoding="utf-8") as f:
            nb = json.load(f)
        cells = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
                 for c in nb["cells"] if c.get("cell_type") == "code"]
        return "\n".join("\n".join(l for l in c.splitlines() if not l.lstrip().startswith(("%", "!")))
                         for c in cells)
    with open(path, encoding="utf-8") as f:
        return f.read()


def uses(path: str):
    """(full dotted name, count) of every cutlass name the program uses: imports, and attribute chains on
    names bound by `import cutlass...` / `from cutlass... import ...`."""
    tree = ast.parse(_program_source(path))
    alias: dict[str, str] = {}
    counts: dict[str, int] = defaultdict(int)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "cutlass" or a.name.startswith("cutlass."):
                    alias[a.asname or a.name.split(".")[0]] = a.name if a.asname else "cutlass"
        elif isinstance(node, ast.ImportFrom) and node.module and (node.module == "cutlass" or
                                                                   node.module.startswith("cutlass.")):
            for a in node.names:
                if a.name == "*":  # a star import uses the module itself
                    counts[node.module] += 1
                    continue
                full = f"{node.module}.{a.name}"
                alias[a.asname or a.name] = full
                counts[full] += 1
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain = []
            n = node
            while isinstance(n, ast.Attribute):
                chain.append(n.attr)
                n = n.value
            if isinstance(n, ast.Name) and n.id in alias:
                counts[".".join([alias[n.id]] + list(reversed(chain)))] += 1
    # An attribute chain also counts its prefixes (cute.nvgpu.warp.X uses cute.nvgpu): keep the longest only.
    names = sorted(counts)
    return {k: v for k, v in counts.items() if not any(o.startswith(k + ".") for o in names)}


def resolve(full: str):
    """(the module that should hold it, the first absent name or None) for a dotted cutlass name, with the alias
    installed: cutlass.cute.experimental.foo is absent at cutlass.cute's `experimental`."""
    parts = full.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except Exception:  # noqa: BLE001 - not a module: an attribute further up
            continue
        holder, rest = ".".join(parts[:i]), parts[i:]
        break
    else:
        return "cutlass", parts[0]
    for attr in rest:
        try:
            obj = getattr(obj, attr)
        except Exception:  # noqa: BLE001 - absent (AttributeError, or a clear ImportError of a missing name)
            return holder, attr
        if isinstance(obj, type(sys)):
            holder = obj.__name__.replace("warpweave", "cutlass", 1)
        elif isinstance(obj, type):
            holder = f"{holder}.{attr}"
        else:
            break  # a value's attributes (an instance's, an enum member's) are not module surface
    return holder, None


# Where an absent name belongs: a backend's (architecture-specific), CuTe DSL's internals (its MLIR bindings and
# other frontends), or the architecture-neutral surface (cute.*, cutlass.*, utils.*, ...).
ARCH_MODULES = ("cutlass.cute.nvgpu.tcgen05", "cutlass.cute.nvgpu.warpgroup", "cutlass.cute.nvgpu.cpasync",
                "cutlass.cute.nvgpu.warp", "cutlass.utils.blackwell_helpers", "cutlass.utils.hopper_helpers",
                "cutlass.utils.sm90", "cutlass.utils.sm100", "cutlass.utils.sm120", "cutlass.utils.blockscaled_layout",
                "cutlass.utils.mixed_input_helpers", "cutlass.utils.distributed", "cutlass.utils.gemm",
                "cutlass.pipeline", "cutlass.cute.prefetch")  # prefetch: of TMA atoms
ARCH_WORDS = re.compile(r"tmem|tma|umma|wgmma|clc|tcgen05|blockscaled|sm1\d\d|cluster|dsmem|Tensormap|TensorMap|"
                        r"_SF[AB]|SF[AB]$|ldmatrix|LdMatrix|fp4|F4|F6|MX", re.I)
INTERNAL = {"_mlir", "_mlir_helpers", "cutlass_dsl", "base_dsl", "extract_mlir_values", "new_from_mlir_values",
            "mlir_type", "experimental", "nvvm_wrappers", "for_generate", "yield_out", "_pack_shape", "_pack_tile"}


def kind_of(holder: str, name: str) -> str:
    if name in INTERNAL:
        return "internal"
    if f"{holder}.{name}".startswith(ARCH_MODULES) or ARCH_WORDS.search(name):
        return "arch"
    return "neutral"


def surface(root: str, all_examples: bool, rank: int = 0, exclude: tuple = ()) -> None:
    from warpweave import migrate

    paths = sorted({os.path.join(root, p[1]) for p in PROGRAMS})
    if all_examples:
        base = os.path.join(root, "examples/python/CuTeDSL")
        paths = [os.path.join(d, f) for d, _, fs in os.walk(base) for f in fs if f.endswith((".py", ".ipynb"))
                 and not os.path.relpath(os.path.join(d, f), base).startswith(exclude)]
    total: dict[str, int] = defaultdict(int)
    users: dict[str, set] = defaultdict(set)  # dotted name -> the programs that use it
    for p in paths:
        try:
            for k, v in uses(p).items():
                total[k] += v
                users[k].add(p)
        except SyntaxError:
            continue
    absent: dict[str, dict] = defaultdict(lambda: defaultdict(int))  # module -> absent name -> uses
    absent_users: dict[tuple, set] = defaultdict(set)                  # (module, absent name) -> programs
    present_uses = all_uses = present_names = 0
    with migrate.cutlass_alias():
        for name, n in sorted(total.items()):
            holder, missing = resolve(name)
            all_uses += n
            if missing is None:
                present_uses += n
                present_names += 1
            else:
                absent[holder][missing] += n
                absent_users[(holder, missing)] |= users[name]
    n_absent = sum(len(v) for v in absent.values())
    print(f"\nNames of cutlass used by {len(paths)} program(s): {len(total)} distinct dotted names, {all_uses} uses; "
          f"{present_names} present ({present_uses} uses, {100.0 * present_uses / max(all_uses, 1):.0f}%); "
          f"{n_absent} absent names, by module (uses):")
    for mod in sorted(absent):
        items = sorted(absent[mod].items(), key=lambda x: (-x[1], x[0]))
        print(f"  {mod}: {len(items)}: " + ", ".join(f"{k} ({c})" for k, c in items))
    if rank:
        ranked = sorted(absent_users, key=lambda k: (-len(absent_users[k]), -absent[k[0]][k[1]], k))
        by_kind = defaultdict(list)
        for k in ranked:
            by_kind[kind_of(*k)].append(k)
        print(f"\nAbsent names by the number of programs that use them ({len(paths)} programs; "
              + ", ".join(f"{kd}: {len(v)} names" for kd, v in sorted(by_kind.items())) + "):")
        for kd in ("neutral", "arch", "internal"):
            print(f"  {kd}:")
            for holder, name in by_kind[kd][:rank]:
                print(f"    {len(absent_users[(holder, name)]):4d} programs {absent[holder][name]:5d} uses  "
                      f"{holder}.{name}")


ALL_ROOT = "examples/python/CuTeDSL"
# Arguments a program of the set is run with (--all, compiled and for real, under warpweave and the reference
# alike) where its defaults contradict its own checks: the Lamport all-reduce GEMM defaults to --all_reduce Lamport
# without --use_tma_store, which its __call__ asserts it needs (every command of its docstring passes it), so that
# with no arguments it stops at that assertion under CuTe DSL too.
ALL_ARGS = {
    "cute/blackwell/kernel/distributed/distributed_gemm_all_reduce_lamport_blackwell.py": ["--use_tma_store"],
}


def program_target(rel: str, source: str = "") -> str:
    """The target a program of the set is for, from its folder (what CuTe DSL's examples assume of the device),
    or, for the folders of every architecture (tutorials), from what its source uses: tcgen05 is Blackwell's,
    a program that asks for Hopper or Blackwell (programmatic dependent launch) runs on sm_90a."""
    parts = rel.split("/")
    if parts[0] in ("dsl_tutorials", "utils") or "tutorial" in parts:
        if "tcgen05" in source:
            return "sm_100a"
        if "Hopper" in source or "warpgroup" in source:
            return "sm_90a"
    if "blackwell_geforce" in parts:
        return "sm_120a"
    if "sm103" in rel:
        return "sm_103a"
    if "blackwell" in parts or "experimental" in parts or "distributed" in parts:
        return "sm_100a"
    if "hopper" in parts:
        return "sm_90a"
    return "sm_80"


def all_programs(root: str, under: str = "") -> list[str]:
    """Every program of the set (a .py file with a __main__), relative to examples/python/CuTeDSL, sorted."""
    base = os.path.join(root, ALL_ROOT)
    found = []
    for d, _, files in os.walk(base):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(d, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    if "__main__" in fh.read():
                        found.append(os.path.relpath(path, base))
    prefixes = tuple(x.strip("/") + "/" for x in under.split(",") if x)
    return sorted(p for p in found if not prefixes or p.startswith(prefixes))


def run_real(python: str, path: str, timeout: int, pythonpath: str | None = None,
             args: list[str] = ()) -> tuple[bool, str, float]:
    """The program run for real on the GPU: under warpweave (`python -m warpweave run`) or, with pythonpath, under
    the implementation found there (`python prog.py`). Passes when it exits 0."""
    env = program_env(python)
    cmd = [python, "-m", "warpweave", "run", path, *args]
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
        cmd = [python, path, *args]
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=os.path.dirname(path), env=env)
    except subprocess.TimeoutExpired:
        return False, f"timed out after {timeout} s", time.perf_counter() - t0
    out = r.stdout + r.stderr
    errors = [l for l in out.splitlines() if re.match(r"^[\w.]+(Error|Exception)\b", l)]
    detail = "exit 0" if r.returncode == 0 else (errors[-1] if errors else (out.strip().splitlines() or ["?"])[-1])
    return r.returncode == 0, detail[:140], time.perf_counter() - t0


def _target_of(root: str, rel: str) -> str:
    with open(os.path.join(root, ALL_ROOT, rel), encoding="utf-8", errors="replace") as f:
        return program_target(rel, f.read())


def real_programs(root: str, progs: list, real: str, real_also: str = "") -> list:
    """The programs a --real run runs: those whose target is one of `real` (comma-separated), and every program
    under the folders of `real_also`, whatever its folder's target says (the experimental APIs' programs are for
    sm_100a as a folder, many fit any sm_90 GPU): the reference column tells which fit the GPU, and only those
    count in the summary."""
    targets = set(real.split(","))
    also = tuple(x.strip("/") + "/" for x in real_also.split(",") if x)
    return [p for p in progs if _target_of(root, p) in targets or (also and p.startswith(also))]


def run_all(root: str, ns) -> int:
    """--all: each program of the set compiled for its target; a pass/fail line each, then counts by folder.
    With --real, each program whose target the GPU runs is run for real instead, under warpweave and (with
    --reference-pythonpath) under the reference implementation: both columns."""
    from concurrent.futures import ThreadPoolExecutor

    progs = all_programs(root, ns.under)
    if ns.only:  # programs named by their path under the set, or by their file name
        only = set(ns.only.split(","))
        progs = [p for p in progs if p in only or os.path.basename(p) in only]
    if ns.real:
        progs = real_programs(root, progs, ns.real, ns.real_also)
        rows = []

        def both(rel):
            path = os.path.join(root, ALL_ROOT, rel)
            args = ALL_ARGS.get(rel, [])
            ref = run_real(ns.python, path, ns.timeout, ns.reference_pythonpath, args) if ns.reference_pythonpath \
                else None
            return rel, run_real(ns.python, path, ns.timeout, args=args), ref

        with ThreadPoolExecutor(max(1, ns.jobs)) as pool:  # the programs share the GPU; each checks its own result
            results = list(pool.map(both, progs))
        for rel, ww, ref in results:
            rows.append((rel, ww, ref))
            print(f"{rel} | warpweave {'pass' if ww[0] else 'FAIL'} ({ww[2]:.0f} s) {ww[1]} | reference "
                  + (f"{'pass' if ref[0] else 'FAIL'} ({ref[2]:.0f} s) {ref[1]}" if ref else "-"), flush=True)
        print("\n| program | warpweave | reference |\n|---|---|---|")
        for rel, ww, ref in rows:
            print(f"| {rel} | {'pass' if ww[0] else 'FAIL: ' + ww[1]} | "
                  f"{('pass' if ref[0] else 'FAIL: ' + ref[1]) if ref else '-'} |")
        both = sum(1 for _, ww, ref in rows if ref and ref[0])
        kept = sum(1 for _, ww, ref in rows if ref and ref[0] and ww[0])
        print(f"\n{sum(ww[0] for _, ww, _ in rows)} of {len(rows)} pass under warpweave; of the {both} that pass "
              f"under the reference, {kept} pass under warpweave")
        return 0

    def one(rel):
        arch = _target_of(root, rel)
        ok, detail, dt = run_one(ns.python, os.path.join(root, ALL_ROOT, rel), ALL_ARGS.get(rel, []), arch, ns.timeout)
        return rel, arch, ok, detail, dt

    by_folder: dict = defaultdict(lambda: [0, 0])
    passed = 0
    with ThreadPoolExecutor(max(1, ns.jobs)) as pool:
        for rel, arch, ok, detail, dt in pool.map(one, progs):
            passed += ok
            top = "/".join(rel.split("/")[:2]) if rel.startswith(("cute/", "experimental/")) else rel.split("/")[0]
            by_folder[top][0] += ok
            by_folder[top][1] += 1
            print(f"{'pass' if ok else 'FAIL'} | {rel} | {arch} | {dt:.0f} s | {detail}", flush=True)
    print("\n| folder | compile |\n|---|---|")
    for top, (k, n) in sorted(by_folder.items()):
        print(f"| {top} | {k}/{n} |")
    print(f"\n{passed} of {len(progs)} programs compiled")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("cutlass", help="a checkout of NVIDIA/cutlass (holds examples/python/CuTeDSL)")
    p.add_argument("--archs", default="sm_80,sm_90a")
    p.add_argument("--python", default=sys.executable, help="the interpreter to run the programs with")
    p.add_argument("--timeout", type=int, default=600)
    p.add_argument("--only", help="comma-separated program names (with --all: paths under the set, or file names)")
    p.add_argument("--all", action="store_true",
                   help="every program of examples/python/CuTeDSL (a file with a __main__), each for the target its "
                        "folder is for, with its default arguments; a table by folder")
    p.add_argument("--under", default="", help="--all: only programs under these comma-separated folders")
    p.add_argument("--jobs", type=int, default=1, help="--all: programs compiled at once")
    p.add_argument("--real", default="", metavar="TARGETS",
                   help="--all: run the programs for these targets (e.g. sm_80,sm_90a) for real, on the GPU")
    p.add_argument("--real-also", default="", metavar="FOLDERS",
                   help="--real: also run the programs under these comma-separated folders (e.g. experimental), "
                        "whatever their target")
    p.add_argument("--reference-pythonpath", default=None,
                   help="--real: also run each program as `python prog.py` with this PYTHONPATH (CuTe DSL's packages)")
    p.add_argument("--surface", action="store_true", help="also report the names the programs use that are absent")
    p.add_argument("--surface-all", action="store_true", help="the same over every CuTe DSL example")
    p.add_argument("--exclude", default="", help="--surface-all: comma-separated folders of examples/python/CuTeDSL "
                                                 "to leave out (e.g. experimental)")
    p.add_argument("--rank", type=int, default=0, metavar="N",
                   help="with --surface(-all): the N absent names of each kind (architecture-neutral, "
                        "architecture-specific, CuTe DSL internals) used by the most programs")
    ns = p.parse_args(argv)
    root = os.path.abspath(ns.cutlass)
    if not os.path.isdir(os.path.join(root, BASE)):
        p.error(f"{root} holds no {BASE}")
    if ns.all:
        return run_all(root, ns)
    archs = ns.archs.split(",")
    chosen = [x for x in PROGRAMS if not ns.only or x[0] in ns.only.split(",")]
    rows, failures = [], 0
    for name, rel, args, *rest in chosen:
        row = [name]
        targets, sass = (rest + [None, ()])[:2]
        for arch in archs:
            if targets and arch not in targets:
                row.append("n/a")   # a program for other targets (e.g. Hopper's, sm_90a only)
                continue
            ok, detail, dt = run_one(ns.python, os.path.join(root, rel), args, arch, ns.timeout, sass)
            failures += not ok
            row.append(("pass" if ok else "FAIL") + f" ({dt:.0f} s) {detail}")
        rows.append(row)
        print(" | ".join(row), flush=True)
    print("\n| program | " + " | ".join(archs) + " |\n|---|" + "---|" * len(archs))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    runs = sum(1 for row in rows for cell in row[1:] if cell != "n/a")
    print(f"\n{runs - failures} passed, {failures} failed")
    if ns.surface or ns.surface_all:
        surface(root, ns.surface_all, ns.rank, tuple(x for x in ns.exclude.split(",") if x))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
