"""The same CuTe DSL program compiled by CuTe DSL and by warpweave: what each makes of it, side by side.

    python benchmarks/python/bench_same_source.py /path/to/cutlass --cutedsl-python /path/to/cutedsl/bin/python \
        [--programs tensorop_gemm_fp16,sgemm] [--arch sm_80] [--json out.json] [--keep DIR] [--compile-time N]

The programs are CuTe DSL's own example files, read from the given checkout (examples/python/CuTeDSL/...), never
copied here. CuTe DSL runs in its own interpreter (--cutedsl-python, an environment with CuTe DSL; warpweave never
imports it); warpweave runs under this interpreter (or --ww-python).

Compile-time half (any machine; CuTe DSL compiles without a GPU when CUTE_DSL_ARCH is set):
  * warpweave: `python -m warpweave run --compile-only --arch A prog.py ARGS`, the unmodified program, its kernels
    kept (WARPWEAVE_KEEP=ptx,sass);
  * CuTe DSL: a driver that imports the program as a module and compiles its entry point on fake tensors of the
    types the program gives it (CuTe DSL's environment has no torch, and the programs want a GPU to build their
    tensors): the same dtypes, majors, static and dynamic modes and divisibilities as the program's own
    from_dlpack / mark_*_dynamic calls, with the problem size of ARGS;
  * per side, per kernel: registers (the cubin's), spills and static shared memory (ptxas -v on the side's PTX),
    the SASS of the main loop (the innermost loop, found by its backward branch, with the most instructions): its
    instruction count and mix (opcodes without modifiers), the kernel's whole instruction count, and the wall time of
    the compiling process (interpreter start and imports included).

Compile time alone (--compile-time N; any machine, no GPU used): each side's compile call of the program (the CuTe
DSL driver's, above, run under each interpreter: warpweave's through `python -m warpweave run --compile-only`), timed
inside N fresh processes a side after one warm-up process, alternating, wall and CPU time, medians; both sides' disk
caches off (WARPWEAVE_DISABLE_CACHE, CUTE_DSL_DISABLE_FILE_CACHING), both run from bytecode (the checkout's is
written first, as installing a package does). The figure is the first compile of a process (no interpreter start or
imports in it). The ratios to CuTe DSL are of the medians and, more robust on a loaded machine, the median of each
round's ratio (`pair`). warpweave's rows add its stages (trace, parse, lower, llvm, codegen, cubin). --ww-root A,B
times several checkouts side by side (before / after).

Every program of the example set that times itself (--benchmark-calls; a GPU): same_source_benchmark_calls.py.

GPU half (when torch.cuda is available here and --no-gpu is not given): each side times the compiled function in its
own process with the same timer (timing_driver below, the same text for both): CUDA events around 20 back-to-back
calls, operands alternating between two sets, median of 10, after warm-up; the table gains each side's time and the
ratio warpweave speed / CuTe DSL speed. CuTe DSL's interpreter then needs torch too.

Adding a program: an entry in PROGRAMS with its file, the ARGS of its command line, the CuTe DSL compile driver
(fake tensors) and the GPU setup (real tensors), both as source text run inside the side's interpreter.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter

BASE = "examples/python/CuTeDSL/cute"
DENSE = f"{BASE}/ampere/kernel/dense_gemm"

# --- the programs ---------------------------------------------------------------------------------------------------
# Each: name -> dict(path, args, arch, cd_compile (source: builds fake tensors, compiles, for CuTe DSL on the CPU),
# gpu_setup (source: defines setup(mod, torch) -> (fn, [args_set_0, args_set_1], work) for both sides on a GPU;
# `work` is the FLOPs of one call, or None to report time only)).

_TENSOROP_COMPILE = """
import cutlass, cutlass.cute as cute
from cutlass.cute.runtime import make_fake_compact_tensor
m, n, k, l = {mnkl}
dt = cutlass.{dtype}
# What tensorop_gemm.run builds with its default majors (A m-major, B n-major, C n-major): torch (L, M, K),
# (L, K, N), (L, M, N) tensors, 16-byte aligned, each with its contiguous mode dynamic (divisible by 8).
a = make_fake_compact_tensor(dt, (l, cute.sym_int(divisibility=8), k), stride_order=(2, 0, 1), assumed_align=16)
b = make_fake_compact_tensor(dt, (l, k, cute.sym_int(divisibility=8)), stride_order=(2, 1, 0), assumed_align=16)
c = make_fake_compact_tensor(dt, (l, m, cute.sym_int(divisibility=8)), stride_order=(2, 1, 0), assumed_align=16)
mod.compile_bmm((m, n, k, l), a, b, c, dt, dt, cutlass.Float32, (2, 2, 1))
"""

_TENSOROP_GPU = """
def setup(mod, torch):
    import cutlass
    m, n, k, l = {mnkl}
    dt = cutlass.{dtype}
    sets = []
    for _ in range(2):
        a, b, c, a32, b32, c32 = mod.prepare_tensors((m, n, k, l), dt, dt, "m", "n", "n")
        sets.append(mod.mark_dynamic_layout(a, b, c, 1, 2, 2, dt, dt, a32, b32, c32))
    fn = mod.compile_bmm((m, n, k, l), *sets[0], dt, dt, cutlass.Float32, (2, 2, 1))
    import cuda.bindings.driver as cuda
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    return fn, [tuple(s) + (stream,) for s in sets], 2.0 * m * n * k * l
"""

_SGEMM_COMPILE = """
import cutlass, cutlass.cute as cute
from cutlass.cute.runtime import make_fake_tensor, make_fake_stream
M, N, K = {mnk}
f32 = cutlass.Float32
# sgemm.run's default (A m-major and static, B k-major, C n-major): B and C from mark_layout_dynamic then
# mark_compact_shape_dynamic on the contiguous mode, divisible by its extent.
a = make_fake_tensor(f32, (M, K), stride=(1, M), assumed_align=16)
b = make_fake_tensor(f32, (cute.sym_int(), cute.sym_int(divisibility=K)), stride=(cute.sym_int64(divisibility=K), 1),
                     assumed_align=16)
c = make_fake_tensor(f32, (cute.sym_int(), cute.sym_int(divisibility=N)), stride=(cute.sym_int64(divisibility=N), 1),
                     assumed_align=16)
cute.compile[cute.GenerateLineInfo](mod.SGemm(), a, b, c, stream=make_fake_stream())
"""

_SGEMM_GPU = """
def setup(mod, torch):
    import cutlass.cute as cute
    from cutlass.cute.runtime import from_dlpack
    M, N, K = {mnk}
    def one():
        a = torch.randn(K, M, device="cuda").permute(1, 0)
        b = torch.randn(N, K, device="cuda")
        c = torch.zeros(M, N, device="cuda")
        at = from_dlpack(a, assumed_align=16)
        bt = from_dlpack(b, assumed_align=16).mark_layout_dynamic(leading_dim=1).mark_compact_shape_dynamic(
            mode=1, divisibility=K)
        ct = from_dlpack(c, assumed_align=16).mark_layout_dynamic(leading_dim=1).mark_compact_shape_dynamic(
            mode=1, divisibility=N)
        return (at, bt, ct)
    sets = [one(), one()]
    import cuda.bindings.driver as cuda
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    fn = cute.compile(mod.SGemm(), *sets[0], stream=stream)
    return fn, sets, 2.0 * M * N * K
"""

_ELEMENTWISE_COMPILE = """
import cutlass, cutlass.cute as cute
from cutlass.cute.runtime import make_fake_tensor
M, N = {mn}
# The program's own run (what warpweave's side compiles) is Float32; the timed half below uses Float16 on both sides.
dt = cutlass.Float32
# from_dlpack(t).mark_layout_dynamic() of a row-major (M, N) tensor: shape and leading stride dynamic.
def t():
    return make_fake_tensor(dt, (cute.sym_int(), cute.sym_int()), stride=(cute.sym_int64(), 1))
cute.compile(mod.elementwise_add, t(), t(), t(), options="--generate-line-info")
"""

_ELEMENTWISE_GPU = """
def setup(mod, torch):
    import cutlass.cute as cute
    from cutlass.cute.runtime import from_dlpack
    M, N = {mn}
    def one():
        ts = [torch.randn(M, N, device="cuda", dtype=torch.float16) for _ in range(2)]
        ts.append(torch.zeros(M, N, device="cuda", dtype=torch.float16))
        return tuple(from_dlpack(x).mark_layout_dynamic() for x in ts)
    sets = [one(), one()]
    fn = cute.compile(mod.elementwise_add, *sets[0])
    return fn, sets, None
"""

_HOPPER_COMPILE = """
import cutlass, cutlass.cute as cute
from cutlass.cute.runtime import make_fake_tensor, make_fake_stream
dt = cutlass.Float16
# dense_gemm.run's default (A, B k-major, C n-major): (M, K, L), (N, K, L), (M, N, L) views of torch tensors, each
# from mark_layout_dynamic(leading_dim=1): every extent and the non-unit strides dynamic.
def t():
    return make_fake_tensor(dt, (cute.sym_int(), cute.sym_int(), cute.sym_int()),
                            stride=(cute.sym_int64(divisibility=8), 1, cute.sym_int64(divisibility=8)),
                            assumed_align=16)
g = mod.HopperWgmmaGemmKernel(cutlass.Float32, (128, 256), (1, 1))
cute.compile(g, t(), t(), t(), make_fake_stream())
"""

_HOPPER_GPU = """
def setup(mod, torch):
    import cutlass, cutlass.cute as cute
    from cutlass.cute.runtime import from_dlpack
    m, n, k, l = {mnkl}
    def operand(rows, cols):
        # (rows, cols, l), k-major (A, B) or n-major (C): torch (l, rows, cols) permuted, as dense_gemm.run does.
        t = torch.randn(l, rows, cols, device="cuda", dtype=torch.float16).permute(1, 2, 0)
        return from_dlpack(t, assumed_align=16).mark_layout_dynamic(leading_dim=1)
    sets = [(operand(m, k), operand(n, k), operand(m, n)) for _ in range(2)]
    import cuda.bindings.driver as cuda
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    g = mod.HopperWgmmaGemmKernel(cutlass.Float32, (128, 256), {cluster})
    fn = cute.compile(g, *sets[0], stream)
    return fn, [s + (stream,) for s in sets], 2.0 * m * n * k * l
"""


_BLACKWELL_COMPILE = """
import cutlass, cutlass.cute as cute
from cutlass.cute.runtime import make_fake_tensor, make_fake_stream
dt = cutlass.TFloat32
# dense_gemm.py's defaults (TFloat32 A, B k-major, Float32 C n-major, 128x128 tile, 1x1 cluster, one-CTA MMA, no TMA
# store): (M, K, L), (N, K, L), (M, N, L) views made with is_dynamic_layout=True, i.e. mark_layout_dynamic(
# leading_dim=1): every extent and the non-unit strides dynamic, 16-byte aligned.
def t(dtype):
    return make_fake_tensor(dtype, (cute.sym_int(), cute.sym_int(), cute.sym_int()),
                            stride=(cute.sym_int64(divisibility=4), 1, cute.sym_int64(divisibility=4)),
                            assumed_align=16)
g = mod.DenseGemmKernel(cutlass.Float32, False, (128, 128), (1, 1), False)
cute.compile(g, t(dt), t(dt), t(cutlass.Float32), make_fake_stream())
"""


def _program(path, args, arch, cd_compile, gpu_setup, **fmt):
    return dict(path=path, args=args, arch=arch, cd_compile=cd_compile.format(**fmt),
                gpu_setup=gpu_setup.format(**fmt) if gpu_setup else None)


PROGRAMS = {
    "tensorop_gemm_fp16": _program(f"{DENSE}/tensorop_gemm.py", ["--mnkl", "4096,4096,4096,1"], "sm_80",
                                   _TENSOROP_COMPILE, _TENSOROP_GPU, mnkl=(4096, 4096, 4096, 1), dtype="Float16"),
    "tensorop_gemm_bf16": _program(f"{DENSE}/tensorop_gemm.py", ["--mnkl", "4096,4096,4096,1", "--ab_dtype",
                                                                  "BFloat16", "--c_dtype", "BFloat16"], "sm_80",
                                   _TENSOROP_COMPILE, _TENSOROP_GPU,
                                   mnkl=(4096, 4096, 4096, 1), dtype="BFloat16"),
    "sgemm": _program(f"{DENSE}/sgemm.py", ["--mnk", "4096,4096,4096"], "sm_80", _SGEMM_COMPILE, _SGEMM_GPU,
                      mnk=(4096, 4096, 4096)),
    "elementwise_add": _program(f"{BASE}/ampere/kernel/elementwise/elementwise_add.py", ["--M", "8192", "--N", "8192"],
                                "sm_80", _ELEMENTWISE_COMPILE, _ELEMENTWISE_GPU, mn=(8192, 8192)),
    "hopper_dense_gemm": _program(f"{BASE}/hopper/kernel/dense_gemm/dense_gemm.py",
                                  ["--mnkl", "4096,4096,4096,1", "--tile_shape_mn", "128,256"], "sm_90a",
                                  _HOPPER_COMPILE, _HOPPER_GPU, mnkl=(4096, 4096, 4096, 1), cluster=(1, 1)),
    "hopper_dense_gemm_2x1": _program(f"{BASE}/hopper/kernel/dense_gemm/dense_gemm.py",
                                      ["--mnkl", "4096,4096,4096,1", "--tile_shape_mn", "128,256",
                                       "--cluster_shape_mn", "2,1"], "sm_90a",
                                      _HOPPER_COMPILE.replace("(128, 256), (1, 1)", "(128, 256), (2, 1)"),
                                      _HOPPER_GPU, mnkl=(4096, 4096, 4096, 1), cluster=(2, 1)),
    # Compile-time half only (no timed GPU half: it needs a Blackwell GPU).
    "blackwell_dense_gemm": _program(f"{BASE}/blackwell/kernel/dense_gemm/dense_gemm.py", [], "sm_100a",
                                     _BLACKWELL_COMPILE, None),
}

# --- SASS -----------------------------------------------------------------------------------------------------------
_INSN = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?);")
_LABEL = re.compile(r"^\s*(\.L_x_\d+):")
_TARGET = re.compile(r"`\((\.L_x_\d+)\)")
_KERNEL = re.compile(r"^\s*\.text\.([A-Za-z_$][\w$]*):")


def parse_sass(text: str):
    """{kernel: [(address, opcode, operands, label_target or None)]} from nvdisasm's text."""
    kernels, cur, labels, pending = {}, None, {}, []
    for line in text.splitlines():
        m = _KERNEL.match(line)
        if m:
            cur = kernels.setdefault(m.group(1), [])
            continue
        m = _LABEL.match(line)
        if m:
            pending.append(m.group(1))
            continue
        m = _INSN.search(line)
        if m and cur is not None:
            addr = int(m.group(1), 16)
            body = re.sub(r"^@!?U?P[T0-9]\s+", "", m.group(2).strip())
            op = body.split()[0] if body else ""
            t = _TARGET.search(body)
            for name in pending:
                labels[name] = addr
            pending = []
            cur.append((addr, op, body, t.group(1) if t else None))
    return {k: [(a, op, body, labels.get(t) if t else None) for a, op, body, t in v] for k, v in kernels.items()}


# Loops shorter than this are waits (an mbarrier's try-wait retried, the spin after EXIT), not the main loop, and
# do not make a loop around them an outer one.
MIN_LOOP = 16
# The instructions a GEMM's main loop is for: matrix and fused multiply-adds.
MATH = ("HMMA", "HGMMA", "QGMMA", "IMMA", "UTCHMMA", "UTCQMMA", "UTCOMMA", "FFMA", "DFMA", "HFMA2")


def main_loop(insns):
    """The innermost loop (a backward branch whose range holds no other, waits aside) with the most math
    (MATH opcodes), then the most instructions: (start, end) addresses, or None."""
    def size(r):
        return sum(1 for a, *_ in insns if r[0] <= a <= r[1])

    def math(r):
        return sum(1 for a, op, *_ in insns if r[0] <= a <= r[1] and opcode(op) in MATH)
    # Branches placed after the kernel's last EXIT are out-of-line retries (an mbarrier wait's) jumping back into
    # the code, not loops.
    last_exit = max((a for a, op, *_ in insns if op.startswith("EXIT")), default=None)
    loops = [(tgt, a) for a, op, _, tgt in insns if tgt is not None and tgt <= a and op.startswith("BRA")
             and (last_exit is None or a < last_exit)]
    loops = [r for r in loops if size(r) >= MIN_LOOP]
    inner = [(s, e) for s, e in loops if not any((s2, e2) != (s, e) and s <= s2 and e2 <= e for s2, e2 in loops)]
    return max(inner, key=lambda r: (math(r), size(r))) if inner else None


def opcode(op: str) -> str:
    return op.split(".")[0]


def sass_summary(sass_text: str):
    out = {}
    for name, insns in parse_sass(sass_text).items():
        insns = [i for i in insns if i[1] != "NOP"]
        loop = main_loop(insns)
        body = [i for i in insns if loop and loop[0] <= i[0] <= loop[1]]
        bars = [i for i, (_, op, _, _) in enumerate(body) if opcode(op) == "BAR"]
        # Shared loads after the loop's last barrier: software-pipelined loads of the next iteration's fragments
        # (none when a compiler moved them to the loop's top, where the first instruction using them waits).
        after = sum(1 for _, op, _, _ in body[bars[-1] + 1:] if opcode(op) in ("LDS", "LDSM")) if bars else None
        out[name] = dict(instructions=len(insns), loop_instructions=len(body) if loop else None,
                         loop_loads_after_barrier=after,
                         loop_mix=dict(Counter(opcode(op) for _, op, _, _ in body).most_common()),
                         loop_forms=dict(Counter(op for _, op, _, _ in body if opcode(op) in
                                                 ("LDS", "LDSM", "LDGSTS", "STS", "LDG", "STG", "HMMA")).most_common()))
    return out


def registers_of(sass_text: str):
    regs = {}
    cur = None
    for line in sass_text.splitlines():
        m = re.match(r"^\s*\.section\s+\.text\.([A-Za-z_$][\w$]*),", line)
        if m:
            cur = m.group(1)
        m = re.search(r"SHI_REGISTERS=(\d+)", line)
        if m and cur:
            regs[cur] = int(m.group(1))
    return regs


def ptxas_report(ptx_path: str, arch: str):
    """{kernel: [spill stores, spill loads, static smem bytes, registers]} from ptxas -v of the PTX."""
    ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    p = subprocess.run([ptxas, f"-arch={arch}", "-v", ptx_path, "-o", os.devnull], capture_output=True, text=True,
                       timeout=600)
    out, cur = {}, None
    for line in (p.stdout + p.stderr).splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line) or re.search(r"Function properties for (\S+)", line)
        if m:
            cur = m.group(1)
            out.setdefault(cur, [0, 0, 0, None])
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and cur:
            out[cur][0], out[cur][1] = int(m.group(1)), int(m.group(2))
        m = re.search(r"(\d+) bytes smem", line)
        if m and cur:
            out[cur][2] = int(m.group(1))
        m = re.search(r"Used (\d+) registers", line)
        if m and cur:
            out[cur][3] = int(m.group(1))
    return out


def find_nvdisasm(python: str):
    found = os.environ.get("WARPWEAVE_NVDISASM") or shutil.which("nvdisasm")
    if found:
        return found
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True).stdout.strip()
    for c in glob.glob(os.path.join(site, "nvidia", "*", "bin", "nvdisasm")):
        return c
    raise SystemExit("no nvdisasm: put a CUDA toolkit's bin on PATH or pip install nvidia-cuda-nvdisasm")


# --- the two sides, compile-only ------------------------------------------------------------------------------------
WW_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def ww_env(extra=None, root=None):
    """This environment with the warpweave checkout `root` (this one by default) first on the path."""
    env = dict(os.environ)
    root = root or WW_ROOT
    paths = [os.path.join(root, d) for d in ("frontend_python", "conformance", "pipelines")]
    env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(extra or {})
    return env


def compile_warpweave(cutlass, prog, python, dump, timeout, root=None):
    path = os.path.join(cutlass, prog["path"])
    env = ww_env({"WARPWEAVE_KEEP": "ptx,sass", "WARPWEAVE_DUMP_DIR": dump, "WARPWEAVE_DISABLE_CACHE": "1"}, root)
    t = time.perf_counter()
    p = subprocess.run([python, "-m", "warpweave", "run", "--compile-only", "--arch", prog["arch"], path, *prog["args"]],
                       cwd=os.path.dirname(path), env=env, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        return dict(error=(p.stdout + p.stderr)[-2000:])
    sass = "\n".join(open(f).read() for f in sorted(glob.glob(os.path.join(dump, "*.sass"))))
    ptx = sorted(glob.glob(os.path.join(dump, "*.ptx")))
    return dict(wall_s=wall, sass=sass, ptx=ptx)


def compile_cutedsl(cutlass, prog, python, dump, nvdisasm, timeout):
    path = os.path.join(cutlass, prog["path"])
    driver = textwrap.dedent(f"""
        import importlib.util, sys
        sys.path.insert(0, {os.path.dirname(path)!r})
        spec = importlib.util.spec_from_file_location("prog", {path!r})
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        """) + prog["cd_compile"]
    os.makedirs(dump, exist_ok=True)
    fd, drv = tempfile.mkstemp(suffix=".py", dir=dump)
    with os.fdopen(fd, "w") as f:
        f.write(driver)
    env = dict(os.environ, CUTE_DSL_ARCH=prog["arch"], CUTE_DSL_KEEP="ptx,cubin", CUTE_DSL_DUMP_DIR=dump)
    env.pop("PYTHONPATH", None)  # CuTe DSL's own environment only: nothing of warpweave on its path
    t = time.perf_counter()
    p = subprocess.run([python, drv], cwd=os.path.dirname(path), env=env, capture_output=True, text=True,
                       timeout=timeout)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        return dict(error=(p.stdout + p.stderr)[-2000:])
    sass = []
    for cubin in sorted(glob.glob(os.path.join(dump, "*.cubin"))):
        d = subprocess.run([nvdisasm, "-c", cubin], capture_output=True, text=True, timeout=300)
        sass.append(d.stdout)
    return dict(wall_s=wall, sass="\n".join(sass), ptx=sorted(glob.glob(os.path.join(dump, "*.ptx"))))


# --- compile time alone: the compile call of each side, in fresh processes ------------------------------------------
# One driver for both sides: the program's module imported, the fake tensors of cd_compile made, then its last line
# (the compile call) timed in wall and CPU time (process_time: the process's threads; both compile in process).
# Interpreter start, imports and the program's import are outside the figure; the first compile of the process is
# inside it, with whatever it sets up on first use. Under warpweave the driver also prints the stages of the
# functions the call compiled (compile-only session), summed: trace (Python), and the core's parse, lower, llvm
# (LLVM's optimisation), codegen (NVPTX) and cubin (the assembler).
COMPILE_TIMER = """
import time as _time
_cpu, _wall = _time.process_time(), _time.perf_counter()
{last}
print("WW_COMPILE_TIME", (_time.perf_counter() - _wall) * 1e3, (_time.process_time() - _cpu) * 1e3)
if "warpweave" in sys.modules:
    from warpweave._dsl.registry import compile_only as _co
    _stages = dict(trace=0.0, parse=0.0, lower=0.0, llvm=0.0, codegen=0.0, cubin=0.0)
    for _c in (_co.current().compiled if _co.current() is not None else ()):
        _stages["trace"] += (_c.timings or {{}}).get("trace_s", 0.0) * 1e3
        _t = (_c.info or {{}}).get("timings") or {{}}
        for _k, _n in (("parse", "parse_ms"), ("lower", "lower_ms"), ("llvm", "llvm_opt_ms"), ("codegen", "codegen_ms"),
                       ("cubin", "cubin_ms")):
            _stages[_k] += _t.get(_n, 0.0)
    print("WW_COMPILE_STAGES", " ".join(f"{{_k}}={{_v:.3f}}" for _k, _v in _stages.items()))
"""
STAGES = ("trace", "parse", "lower", "llvm", "codegen", "cubin")


def _compile_driver(cutlass, prog):
    path = os.path.join(cutlass, prog["path"])
    lines = prog["cd_compile"].strip().splitlines()
    return textwrap.dedent(f"""
        import importlib.util, sys
        sys.path.insert(0, {os.path.dirname(path)!r})
        spec = importlib.util.spec_from_file_location("prog", {path!r})
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        """) + "\n".join(lines[:-1]) + COMPILE_TIMER.format(last=lines[-1])


def ww_sources(root=None):
    """The folders of a warpweave checkout's Python code (the frontend, the backends' python/ folders)."""
    root = root or WW_ROOT
    return [os.path.join(root, "frontend_python", "warpweave")] + sorted(
        glob.glob(os.path.join(root, "backends", "*", "python")))


def compile_bytecode(python, root=None, timeout=900):
    """Writes the bytecode (.pyc) of a checkout's Python code, as installing a package does. CuTe DSL's installed
    package has its bytecode; a checkout run with PYTHONDONTWRITEBYTECODE (or never run before) has none, and its
    first compile would then also compile the frontend's and backends' sources that it imports on first use."""
    subprocess.run([python, "-m", "compileall", "-q", *ww_sources(root)], check=True, capture_output=True,
                   timeout=timeout)


def time_compiles(cutlass, prog, cd_python, ww_python, reps, timeout, roots=(None,)):
    """{side: [(wall ms, cpu ms, {stage: ms})]}: `reps` fresh processes a side, the sides alternating (so that a
    machine's other load falls on all alike); one warpweave side per checkout in `roots` (None: this one), named
    "warpweave" for one, else "warpweave:<folder name>". No disk cache on either side: warpweave's is off
    (WARPWEAVE_DISABLE_CACHE: compiled kernels, traced functions and the preprocessor's rewrites), CuTe DSL's file
    cache too (CUTE_DSL_DISABLE_FILE_CACHING). Each side's first process is a warm-up, not counted (the OS's file
    cache then holds both sides' libraries)."""
    fd, drv = tempfile.mkstemp(suffix=".py")
    with os.fdopen(fd, "w") as f:
        f.write(_compile_driver(cutlass, prog))
    cwd = os.path.dirname(os.path.join(cutlass, prog["path"]))
    cd_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    cd_env.update(CUTE_DSL_ARCH=prog["arch"], CUTE_DSL_DISABLE_FILE_CACHING="1")
    sides = {"cutedsl": ([cd_python, drv], cd_env)}
    for root in roots:
        name = "warpweave" if len(roots) == 1 else f"warpweave:{os.path.basename(os.path.abspath(root or WW_ROOT))}"
        sides[name] = ([ww_python, "-m", "warpweave", "run", "--compile-only", "--arch", prog["arch"], drv],
                       ww_env({"WARPWEAVE_DISABLE_CACHE": "1"}, root))
    out = {side: [] for side in sides}
    try:
        for rep in range(reps + 1):
            for side, (cmd, env) in sides.items():
                p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
                line = next((l for l in p.stdout.splitlines() if l.startswith("WW_COMPILE_TIME ")), None)
                if line is None:
                    raise RuntimeError(f"{side}: {(p.stdout + p.stderr)[-1500:]}")
                wall, cpu = map(float, line.split()[1:])
                stages = next((dict((kv.split("=")[0], float(kv.split("=")[1])) for kv in l.split()[1:])
                               for l in p.stdout.splitlines() if l.startswith("WW_COMPILE_STAGES ")), {})
                if rep:
                    out[side].append((wall, cpu, stages))
    finally:
        os.unlink(drv)
    return out


def print_compile_times(times):
    """Medians of each side's wall and CPU time, their ratios to CuTe DSL's, and the median of the ratios of the
    runs made one after the other (`pair`: a machine whose load drifts slows both runs of a round alike)."""
    sides = [s for s in next(iter(times.values()))]
    ww_sides = [s for s in sides if s != "cutedsl"]
    head = f"{'program':22} {'side':20} {'wall':>7} {'cpu':>7} {'wall/CD':>7} {'cpu/CD':>6} {'pair':>5}  " + \
        " ".join(f"{s:>7}" for s in STAGES)
    print(head + "   (ms, medians; /CD and pair: warpweave / CuTe DSL; stages: warpweave's, wall)")
    for name, t in times.items():
        med = {side: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v)) for side, v in t.items()}
        cw, cc = med["cutedsl"]
        print(f"{name:22} {'CuTe DSL':20} {cw:7.0f} {cc:7.0f}")
        for side in ww_sides:
            ww, wc = med[side]
            pair = statistics.median(w[0] / c[0] for w, c in zip(t[side], t["cutedsl"]))
            st = " ".join(f"{statistics.median(r[2].get(s, 0.0) for r in t[side]):7.0f}" for s in STAGES)
            print(f"{'':22} {side:20} {ww:7.0f} {wc:7.0f} {ww / cw:7.2f} {wc / cc:6.2f} {pair:5.2f}  {st}")


def side_report(res, arch):
    if "error" in res:
        return res
    summ = sass_summary(res["sass"])
    regs = registers_of(res["sass"])
    ptxas = {}
    for ptx in res["ptx"]:
        ptxas.update(ptxas_report(ptx, arch))
    kernels = {}
    for name, s in summ.items():
        spill = ptxas.get(name, [None, None, None, None])
        # The cubin's own count where nvdisasm shows it (not for every target), else ptxas's of the PTX.
        kernels[name] = dict(s, registers=regs.get(name) or spill[3], spill_stores=spill[0], spill_loads=spill[1],
                             static_smem=spill[2])
    return dict(wall_s=round(res["wall_s"], 2), kernels=kernels)


def main_kernel(rep):
    """The kernel with the largest main loop (else the largest)."""
    ks = rep.get("kernels") or {}
    if not ks:
        return None, None
    name = max(ks, key=lambda k: (ks[k]["loop_instructions"] or 0, ks[k]["instructions"]))
    return name, ks[name]


MIX_COLUMNS = ("HMMA", "HGMMA", "QGMMA", "UTCHMMA", "FFMA", "SYNCS", "UTMALDG", "LDSM", "LDS", "STS", "LDGSTS", "LDG", "STG", "BAR", "DEPBAR", "IMAD", "IADD3", "LOP3",
               "SHF", "LEA", "ISETP", "MOV", "S2R")


def print_compile_table(rows):
    print(f"{'program':22} {'side':9} {'regs':>4} {'spill':>7} {'smem':>6} {'insns':>6} {'loop':>5} {'ld>bar':>6} "
          f"{'wall s':>7}  loop mix")
    for name, both in rows.items():
        for side in ("cutedsl", "warpweave"):
            rep = both[side]
            if "error" in rep:
                print(f"{name:22} {side:9} ERROR: {rep['error'].strip().splitlines()[-1][:90]}")
                continue
            _, k = main_kernel(rep)
            if k is None:
                print(f"{name:22} {side:9} no kernel")
                continue
            mix = " ".join(f"{op}:{n}" for op, n in k["loop_mix"].items() if op in MIX_COLUMNS)
            spill = f"{k['spill_stores']}/{k['spill_loads']}" if k["spill_stores"] is not None else "-"
            print(f"{name:22} {side:9} {k['registers'] or '-':>4} {spill:>7} {k['static_smem'] or 0:>6} "
                  f"{k['instructions']:>6} {k['loop_instructions'] or '-':>5} "
                  f"{'-' if k['loop_loads_after_barrier'] is None else k['loop_loads_after_barrier']:>6} "
                  f"{rep['wall_s']:>7}  {mix}")


# --- the GPU half ---------------------------------------------------------------------------------------------------
# One timer for both sides: this text runs in each side's interpreter (CuTe DSL's, or warpweave's under
# `python -m warpweave run`), with the program's gpu_setup appended.
TIMING_DRIVER = """
import importlib.util, json, statistics, sys
import torch
sys.path.insert(0, {dir!r})
spec = importlib.util.spec_from_file_location("prog", {path!r})
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
{setup}
fn, sets, work = setup(mod, torch)
for s in sets:
    fn(*s)
torch.cuda.synchronize()
times = []
for _ in range({reps}):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for i in range({calls}):
        fn(*sets[i % 2])
    end.record()
    torch.cuda.synchronize()
    times.append(start.elapsed_time(end) / {calls})
ms = statistics.median(times)
print("WW_TIMING " + json.dumps(dict(ms=ms, tflops=(work / ms / 1e9) if work else None)))
"""


def side_command(python: str, script: str, args, warpweave: bool, root=None):
    """(command, environment) of one side running `script ARGS`: CuTe DSL's interpreter with nothing of warpweave on
    its path, or warpweave's through `python -m warpweave run` with the checkout `root` (this one by default)
    first."""
    if warpweave:
        return [python, "-m", "warpweave", "run", script, *args], ww_env(root=root)
    return [python, script, *args], {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def time_side(cutlass, prog, python, warpweave, reps=10, calls=20, timeout=900, root=None):
    path = os.path.join(cutlass, prog["path"])
    text = TIMING_DRIVER.format(dir=os.path.dirname(path), path=path, setup=prog["gpu_setup"], reps=reps, calls=calls)
    fd, drv = tempfile.mkstemp(suffix=".py")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    try:
        cmd, env = side_command(python, drv, [], warpweave, root)
        p = subprocess.run(cmd, cwd=os.path.dirname(path), env=env, capture_output=True, text=True, timeout=timeout)
    finally:
        os.unlink(drv)
    for line in p.stdout.splitlines():
        if line.startswith("WW_TIMING "):
            return json.loads(line[len("WW_TIMING "):])
    return dict(error=(p.stdout + p.stderr)[-2000:])


def gpu_available(python):
    p = subprocess.run([python, "-c", "import torch; print(torch.cuda.is_available())"], capture_output=True, text=True)
    return p.stdout.strip() == "True"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cutlass", help="a checkout of NVIDIA/cutlass (its examples/python/CuTeDSL)")
    ap.add_argument("--cutedsl-python", required=True, help="an interpreter with CuTe DSL (its own environment)")
    ap.add_argument("--ww-python", default=sys.executable, help="an interpreter with torch for warpweave's side")
    ap.add_argument("--programs", default=",".join(PROGRAMS), help=f"comma-separated, of {', '.join(PROGRAMS)}")
    ap.add_argument("--arch", default=None, help="compile for this target instead of each program's own")
    ap.add_argument("--no-gpu", action="store_true", help="the compile-time half only, even with a GPU")
    ap.add_argument("--json", default=None)
    ap.add_argument("--keep", default=None, help="keep each side's PTX, cubin and SASS under this folder")
    ap.add_argument("--timeout", type=int, default=None,
                    help="seconds per process (default 900; with --benchmark-calls, 150 per program and side)")
    ap.add_argument("--benchmark-calls", action="store_true",
                    help="instead: every example program that calls cute.testing.benchmark (sm_80, sm_90a), run by "
                         "each side with its benchmark calls timed by one shared timer "
                         "(same_source_benchmark_calls.py)")
    ap.add_argument("--only", default="", help="--benchmark-calls: comma-separated programs (file names or paths)")
    ap.add_argument("--budget", type=float, default=None, help="--benchmark-calls: seconds for the whole run")
    ap.add_argument("--rounds", type=int, default=1, help="--benchmark-calls: runs of each side, the order "
                                                          "alternating; each call's time the median of its rounds'")
    ap.add_argument("--compile-time", type=int, default=0, metavar="N",
                    help="only time each side's compile call, in N fresh processes a side (medians of wall and CPU "
                         "time); no SASS, no GPU half")
    ap.add_argument("--ww-root", default=None, help="the warpweave checkout to measure (default: this one), e.g. "
                                                    "another worktree for a before/after comparison; with "
                                                    "--compile-time, several (comma-separated) are timed side by "
                                                    "side, alternating")
    args = ap.parse_args(argv)
    if args.benchmark_calls:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import same_source_benchmark_calls
        return same_source_benchmark_calls.run(args.cutlass, args.cutedsl_python, args.ww_python, args.only,
                                               args.timeout or 150, args.budget, args.json, args.ww_root,
                                               args.rounds)
    args.timeout = args.timeout or 900

    names = [n.strip() for n in args.programs.split(",") if n.strip()]
    unknown = [n for n in names if n not in PROGRAMS]
    if unknown:
        ap.error(f"unknown programs {unknown}; known: {', '.join(PROGRAMS)}")
    if args.compile_time:
        roots = tuple(args.ww_root.split(",")) if args.ww_root else (None,)
        for root in roots:
            compile_bytecode(args.ww_python, root, args.timeout)
        times = {}
        for name in names:
            prog = dict(PROGRAMS[name])
            if args.arch:
                prog["arch"] = args.arch
            times[name] = time_compiles(args.cutlass, prog, args.cutedsl_python, args.ww_python, args.compile_time,
                                        args.timeout, roots)
        print_compile_times(times)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(times, f, indent=1)
        return 0
    nvdisasm = find_nvdisasm(args.ww_python)
    work = args.keep or tempfile.mkdtemp(prefix="same_source_")
    rows = {}
    for name in names:
        prog = dict(PROGRAMS[name])
        if args.arch:
            prog["arch"] = args.arch
        ww = compile_warpweave(args.cutlass, prog, args.ww_python, os.path.join(work, name, "warpweave"),
                               args.timeout, args.ww_root)
        cd = compile_cutedsl(args.cutlass, prog, args.cutedsl_python, os.path.join(work, name, "cutedsl"), nvdisasm,
                             args.timeout)
        rows[name] = dict(arch=prog["arch"], warpweave=side_report(ww, prog["arch"]),
                          cutedsl=side_report(cd, prog["arch"]))
    print_compile_table(rows)

    if not args.no_gpu and gpu_available(args.ww_python):
        print(f"\n{'program':22} {'CuTe DSL':>12} {'warpweave':>12} {'ww speed / CuTe DSL':>20}")
        ratios = []
        for name in names:
            prog = PROGRAMS[name]
            if not prog["gpu_setup"]:
                continue
            cd = time_side(args.cutlass, prog, args.cutedsl_python, warpweave=False)
            ww = time_side(args.cutlass, prog, args.ww_python, warpweave=True, root=args.ww_root)
            rows[name]["gpu"] = dict(cutedsl=cd, warpweave=ww)
            if "error" in cd or "error" in ww:
                print(f"{name:22} error: {(cd.get('error') or ww.get('error')).strip().splitlines()[-1][:80]}")
                continue
            r = cd["ms"] / ww["ms"]
            ratios.append(r)

            def fmt(t):
                return f"{t['tflops']:.1f} TF/s" if t["tflops"] else f"{t['ms'] * 1e3:.1f} us"
            print(f"{name:22} {fmt(cd):>12} {fmt(ww):>12} {r:>20.2f}")
        if ratios:
            print(f"geomean {statistics.geometric_mean(ratios):.3f}")
    elif not args.no_gpu:
        print("\n(no GPU here: the timed half is left out)")
    if args.json:
        for both in rows.values():
            for side in ("cutedsl", "warpweave"):
                both[side].pop("sass", None)
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
