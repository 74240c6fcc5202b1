"""Per-kernel resources of CuTe DSL's public example programs, compiled by warpweave and by CuTe DSL, without a GPU.

    python benchmarks/python/bench_resources.py /path/to/cutlass --cutedsl-python /path/to/cutedsl/bin/python \
        [--set geforce|blackwell|hopper|all] [--only prog1.py,prog2.py] [--json out.json] [--keep DIR]

Each program runs unmodified, at its target (sm_90a, sm_100a, sm_103a or sm_120a), with the arguments of its command
line (defaults unless the list below gives some), on both sides:
  * warpweave: `python -m warpweave run --compile-only --arch A prog.py ARGS` (--ww-python, an interpreter with torch),
    its modules kept (WARPWEAVE_KEEP=ptx), assembled by ptxas (WARPWEAVE_CUBIN_TOOL=ptxas, unless set): the
    assembler that measures both sides, so that a program's choices by `cutlass.target_version` (register splits
    tuned per assembler generation) are made for it, as CuTe DSL's are made for its own (older) toolchain;
  * CuTe DSL: the same program under CuTe DSL's interpreter (--cutedsl-python) with CUTE_DSL_ARCH=A and
    CUTE_DSL_KEEP=ptx,cubin,ir, through HOST_DEVICE below: PyTorch's "cuda" tensors made in host memory (DLPack
    says they are on the GPU, so that CuTe DSL types them as global memory), the device queries answered for the
    target, and the program stopped where it would first launch (loading the module fails without a driver, after
    the artefacts are written). PyTorch comes from --torch-site (CuTe DSL's own environment may have none),
    appended after CuTe DSL's packages.

Per kernel and side: registers, stack frame (local memory), spill stores/loads, static shared memory (ptxas -v of
the side's PTX, the same ptxas for both, so that the numbers differ only by the PTX), and the dynamic shared memory
the launch asks for: warpweave's from its compile-only summary, CuTe DSL's from its kept IR (the kernel's shared
allocations laid end to end at their alignments). The ratio column is warpweave / CuTe DSL registers. Kernels are
paired in the order the program compiles them.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from bench_same_source import ww_env

EXAMPLES = "examples/python/CuTeDSL"

# (program under examples/python/CuTeDSL, target, arguments)
_SM120_BLOCKSCALED = "cute/blackwell_geforce/kernel/blockscaled_gemm/dense_blockscaled_gemm_persistent_"
# The block-scaled GEMMs' operand pairs beyond their default (NVFP4): MXF8 and the mixed FP4 x FP8 both ways round.
_MX = ["--sf_dtype", "Float8E8M0FNU", "--sf_vec_size", "32"]
_PAIRS = [["--a_dtype", a, "--b_dtype", b] + _MX for a, b in (("Float8E4M3FN", "Float8E4M3FN"),
                                                             ("Float4E2M1FN", "Float8E4M3FN"),
                                                             ("Float8E5M2", "Float4E2M1FN"))]
# The mixed-input GEMMs with 8-bit A and no scales (convert only); their default is 4-bit A with scales.
_INT8_A = ["--a_dtype", "Int8", "--scale_granularity_m", "0", "--scale_granularity_k", "0"]
GEFORCE = [("cute/blackwell_geforce/kernel/dense_gemm/dense_gemm.py", "sm_120a", [])] + [
    (_SM120_BLOCKSCALED + kind + ".py", "sm_120a", args) for kind in ("pingpong", "cooperative")
    for args in [[]] + _PAIRS]
BLACKWELL = [
    ("cute/blackwell/kernel/dense_gemm/dense_gemm.py", "sm_100a", []),
    ("cute/blackwell/kernel/dense_gemm/dense_gemm_persistent.py", "sm_100a", []),
    ("cute/blackwell/kernel/dense_gemm/dense_gemm_persistent_dynamic.py", "sm_100a", []),
    ("cute/blackwell/kernel/dense_gemm/dense_gemm_persistent_prefetch.py", "sm_100a", []),
    ("cute/blackwell/kernel/dense_gemm/dense_gemm_alpha_beta_persistent.py", "sm_100a", []),
    ("cute/blackwell/kernel/dense_gemm/dense_gemm_software_pipeline.py", "sm_100a", []),
    ("cute/blackwell/kernel/blockwise_gemm/blockwise_gemm.py", "sm_100a", []),
    ("cute/blackwell/kernel/grouped_gemm/grouped_gemm.py", "sm_100a", []),
    ("cute/blackwell/kernel/blockwise_gemm/contiguous_grouped_gemm.py", "sm_100a", []),
    ("cute/blackwell/kernel/blockwise_gemm/masked_grouped_gemm.py", "sm_100a", []),
    ("cute/blackwell/kernel/blockscaled_gemm/dense_blockscaled_gemm_persistent_prefetch.py", "sm_100a", []),
    ("cute/blackwell/kernel/blockscaled_gemm/sm103_dense_blockscaled_gemm_persistent.py", "sm_103a", []),
    ("cute/blackwell/kernel/attention/fmha/fmha.py", "sm_100a", []),
    ("cute/blackwell/kernel/attention/mla/mla_decode_fp16.py", "sm_100a", []),
    ("cute/blackwell/kernel/attention/mla/mla_decode_fp8.py", "sm_100a", []),
    ("cute/blackwell/efc/custom_epilogue_dense_gemm.py", "sm_100a", []),
    # TMA of block-scaled operands' scale factors (multicast to a CTA pair; hierarchical tensor modes)
    ("cute/blackwell/tutorial/tutorial_gemm/nvfp4_gemm_1.py", "sm_100a", []),
    ("cute/blackwell/kernel/attention/mixed_input_fmha/mixed_input_fmha_decode.py", "sm_100a", []),
    ("cute_ext/blackwell/dense_block_scaled_gemm.py", "sm_100a", []),
    ("cute/blackwell/kernel/moe/torch_grouped_mm.py", "sm_100a", []),
    ("cute/blackwell/kernel/moe/torch_scaled_grouped_mm.py", "sm_100a", []),
    ("cute/blackwell/kernel/mixed_input_gemm/mixed_input_gemm.py", "sm_100a", []),
    ("cute/blackwell/kernel/mixed_input_gemm/mixed_input_gemm.py", "sm_100a", _INT8_A),
    ("cute/blackwell/kernel/mixed_input_gemm/mixed_input_gemm.py", "sm_100a", _INT8_A + ["--a_major", "k"]),
    ("cute/blackwell/kernel/mixed_input_gemm/grouped_mixed_input_gemm.py", "sm_100a", []),
    ("cute/blackwell/kernel/mixed_input_gemm/grouped_mixed_input_gemm.py", "sm_100a", _INT8_A),
    ("cute/blackwell/kernel/mixed_input_gemm/grouped_mixed_input_gemm_acc_scale.py", "sm_100a", []),
    ("cute/blackwell/kernel/attention/mixed_input_fmha/mixed_input_fmha_prefill_d512.py", "sm_100a", []),
    # the remaining single-GPU GEMM and attention programs of the set
    ("cute/blackwell/kernel/attention/mixed_input_fmha/mixed_input_fmha_prefill_d256.py", "sm_100a", []),
    ("cute/blackwell/kernel/attention/fmha/fmha_bwd.py", "sm_100a", []),
    ("cute/blackwell/kernel/attention/mamba2_ssd/mamba2_ssd.py", "sm_100a", []),
    ("cute/blackwell/kernel/blockscaled_gemm/dense_blockscaled_gemm_persistent.py", "sm_100a", []),
    ("cute/blackwell/kernel/blockscaled_gemm/dense_blockscaled_gemm_persistent_amax.py", "sm_100a", []),
    ("cute/blackwell/kernel/blockscaled_grouped_gemm/grouped_blockscaled_gemm.py", "sm_100a", []),
    ("cute/blackwell/kernel/blockscaled_grouped_gemm/sm103_grouped_blockscaled_gemm.py", "sm_103a", []),
    ("cute/blackwell/efc/activation_custom_epilogue_dense_gemm.py", "sm_100a", []),
    ("cute/blackwell/efc/synthetic_custom_epilogue_dense_gemm.py", "sm_100a", []),
] + [("cute/blackwell/tutorial/tutorial_gemm/" + name + ".py", "sm_100a", [])
     for name in ("fp16_gemm_0", "fp16_gemm_1", "fp16_gemm_2", "fp16_gemm_3", "fp16_gemm_3_1", "fp16_gemm_4",
                  "fp16_gemm_5", "fp16_gemm_6", "nvfp4_gemm_0")]
# the Hopper GEMMs timed by the same-source runs (same_source_benchmark_calls.py)
HOPPER = [("cute/hopper/kernel/dense_gemm/" + name + ".py", "sm_90a", [])
          for name in ("dense_gemm", "dense_gemm_persistent", "dense_gemm_fp8_gelu_persistent")]
SETS = {"geforce": GEFORCE, "blackwell": BLACKWELL, "hopper": HOPPER, "all": GEFORCE + BLACKWELL + HOPPER}

# Runs inside CuTe DSL's interpreter: argv = [this, program, args...]; env SHIM_CC="major,minor", SHIM_TORCH_SITE.
HOST_DEVICE = r'''
import contextlib, ctypes, os, runpy, sys
sys.path.append(os.environ["SHIM_TORCH_SITE"])
import torch
from torch.overrides import TorchFunctionMode

CC = tuple(int(x) for x in os.environ["SHIM_CC"].split(","))
SMS = 132

def is_cuda(d):
    if isinstance(d, torch.device):
        return d.type == "cuda"
    return isinstance(d, str) and (d == "cuda" or d.startswith("cuda:"))

def aligned(t):
    # cudaMalloc's 256-byte alignment, which programs promise of their tensors (assumed_align)
    if not isinstance(t, torch.Tensor) or t.device.type != "cpu" or t.untyped_storage().data_ptr() % 256 == 0:
        return t
    st = t.untyped_storage()
    n = st.nbytes()
    raw = torch.empty(n + 256, dtype=torch.uint8)
    off = -raw.data_ptr() % 256
    home = torch.frombuffer(memoryview(raw[off:off + n].numpy()), dtype=torch.uint8) if n else raw[:0]
    home.copy_(torch.empty(0, dtype=torch.uint8).set_(st))
    return torch.empty(0, dtype=t.dtype).set_(home.untyped_storage(), t.storage_offset(), t.shape, t.stride())

import importlib.util
spec = importlib.util.spec_from_file_location("host_ops_on_meta", os.environ["SHIM_META"])
meta = importlib.util.module_from_spec(spec)
spec.loader.exec_module(meta)

class NotComputed:
    def note_not_computed(self, op, results, loc):
        print("HOST_RESULT_NOT_COMPUTED", op, results, loc)

class HostForCuda(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func is torch.Tensor.cuda:
            return aligned(args[0])
        was = "device" in kwargs and is_cuda(kwargs["device"])
        if was:
            kwargs["device"] = "cpu"
        if func is torch.Tensor.to:
            was = was or any(is_cuda(a) for a in args)
            args = tuple("cpu" if is_cuda(a) else a for a in args)
        try:
            out = func(*args, **kwargs)
        except NotImplementedError as e:
            if not meta.lacks_cpu_kernel(e):
                raise
            return meta.answer_on_meta(torch, func, args, kwargs, e, NotComputed(), lambda _, t: aligned(t))
        return aligned(out) if was else out

class Stream:
    cuda_stream = 0
    device = "cuda:0"
    def synchronize(self): pass
    def wait_stream(self, other): pass

class Props:
    name = "host stand-in"
    major, minor = CC
    multi_processor_count = SMS
    L2_cache_size = 50 << 20
    shared_memory_per_block_optin = 101376 if CC[0] == 12 else 232448
    total_memory = 0

for k, v in {"is_available": lambda: True, "device_count": lambda: 1, "current_device": lambda: 0,
             "get_device_properties": lambda d=None: Props(), "get_device_capability": lambda d=None: CC,
             "current_stream": lambda d=None: Stream(), "default_stream": lambda d=None: Stream(),
             "synchronize": lambda d=None: None, "init": lambda: None,
             "Stream": lambda *a, **k: Stream()}.items():
    setattr(torch.cuda, k, v)

# DLPack: the tensors are host memory, but the capsule says CUDA device 0 (a DLTensor's device type follows its data
# pointer; the versioned form has version, context, deleter and flags before the DLTensor).
get_ptr = ctypes.pythonapi.PyCapsule_GetPointer
get_ptr.restype, get_ptr.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
get_name = ctypes.pythonapi.PyCapsule_GetName
get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
plain_dlpack = torch.Tensor.__dlpack__

def cuda_dlpack(self, *args, **kwargs):
    kwargs.pop("dl_device", None)
    kwargs.pop("stream", None)
    cap = plain_dlpack(self, *args, **kwargs)
    name = get_name(cap)
    ctypes.c_int32.from_address(get_ptr(cap, name) + (8 if name == b"dltensor" else 40)).value = 2
    return cap

torch.Tensor.__dlpack__ = cuda_dlpack
torch.Tensor.__dlpack_device__ = lambda self: (2, 0)

# the profiler of the programs that time their kernels under it profiles the host alone (no CUDA activity)
plain_profile = torch.profiler.profile

class HostProfile(plain_profile):
    def __init__(self, *args, activities=None, **kwargs):
        if activities is not None:
            cpu = torch.profiler.ProfilerActivity.CPU
            activities = [a for a in activities if a != torch.profiler.ProfilerActivity.CUDA] or [cpu]
        super().__init__(*args, activities=activities, **kwargs)

torch.profiler.profile = HostProfile

import cuda.bindings.driver as driver
driver.cuInit = lambda flags=0: (driver.CUresult.CUDA_SUCCESS,)
driver.cuDeviceGetCount = lambda: (driver.CUresult.CUDA_SUCCESS, 1)

import cutlass.utils

class HardwareInfo:
    def __init__(self, *args, **kwargs): pass
    def get_device_multiprocessor_count(self): return SMS
    def get_l2_cache_size_in_bytes(self): return 50 << 20
    def get_max_active_clusters(self, cluster_size): return SMS // cluster_size

cutlass.utils.HardwareInfo = HardwareInfo
import cutlass.utils.hardware_info
cutlass.utils.hardware_info.HardwareInfo = HardwareInfo

# A launch. CuTe DSL's helpers (the tensor conversions of cutlass.torch and cute.testing) are skipped, and the
# modules they compiled listed in helpers.txt, so that the program goes on to its own kernels; so are the program's
# host-only functions (no module of its own with kernels yet). The program's first launch of its own kernels ends
# the run, as warpweave's compile-only run stops there.
import importlib, inspect
PKG = os.path.dirname(os.path.abspath(cutlass.__file__))
RUNTIME = tuple(os.path.join(PKG, d) + os.sep for d in ("base_dsl", "cutlass_dsl"))
DUMP = os.environ["CUTE_DSL_DUMP_DIR"]
helpers = set()

class LaunchReached(BaseException):
    pass

def skip_or_stop(self, *args, **kwargs):
    frames = [os.path.abspath(f.filename) for f in inspect.stack()[1:]]
    inside = []
    for f in frames:
        if not f.startswith(PKG + os.sep):
            break
        inside.append(f)
    ptx = {f for f in os.listdir(DUMP) if f.endswith(".ptx")}
    if any(not f.startswith(RUNTIME) for f in inside):
        helpers.update(ptx)
        with open(os.path.join(DUMP, "helpers.txt"), "w") as out:
            out.write("\n".join(sorted(helpers)))
        return None
    if ptx - helpers:
        raise LaunchReached("the program's first launch")
    return None

for name in ("cutlass.base_dsl.jit_executor", "cutlass.cutlass_dsl.cuda_jit_executor",
             "cutlass.cutlass_dsl.cutlass_function"):
    for cls in vars(importlib.import_module(name)).values():
        if inspect.isclass(cls) and "run_compiled_program" in vars(cls):
            cls.run_compiled_program = skip_or_stop

prog = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(prog))
with HostForCuda():
    try:
        runpy.run_path(prog, run_name="__main__")
    except BaseException as e:  # the first launch, without a driver: what was compiled is kept
        print("HOST_DEVICE_STOPPED", type(e).__name__, str(e).strip()[:300].replace("\n", " "))
'''


# The PyTorch operations without a CPU kernel (a reference's CUDA-only grouped GEMM) are answered on CuTe DSL's side
# as in warpweave's compile-only run: that module (standalone: it imports nothing of warpweave) is loaded by path.
_HOST_OPS_ON_META = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "frontend_python",
                                 "warpweave", "_dsl", "registry", "host_ops_on_meta.py")


def ptxas_resources(ptx_path: str, arch: str):
    """[(kernel, dict(registers, stack, spill_stores, spill_loads, static_smem))] from ptxas -v, in PTX order."""
    ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    p = subprocess.run([ptxas, f"-arch={arch}", "-v", ptx_path, "-o", os.devnull], capture_output=True, text=True,
                       timeout=900)
    out, cur = [], None
    for line in (p.stdout + p.stderr).splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            cur = dict(registers=None, stack=0, spill_stores=0, spill_loads=0, static_smem=0)
            out.append((m.group(1), cur))
            continue
        if cur is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            cur["stack"], cur["spill_stores"], cur["spill_loads"] = map(int, m.groups())
        m = re.search(r"Used (\d+) registers", line)
        if m:
            cur["registers"] = int(m.group(1))
        m = re.search(r"(\d+) bytes smem", line)
        if m:
            cur["static_smem"] = int(m.group(1))
    if p.returncode != 0:
        raise RuntimeError(f"ptxas failed on {ptx_path}: {(p.stdout + p.stderr)[-1000:]}")
    # ptxas reports a module's kernels in an order of its own (the last first): put them in the PTX's, which is
    # the order they were compiled and launched in, the order their dynamic shared memory is paired by
    text = open(ptx_path).read()
    return sorted(out, key=lambda k: text.find(f".entry {k[0]}("))


def _by_mtime(paths):
    return sorted(paths, key=lambda f: (os.path.getmtime(f), f))


def run_warpweave(prog_path, arch, args, python, dump, timeout, root=None):
    env = ww_env({"WARPWEAVE_KEEP": "ptx", "WARPWEAVE_DUMP_DIR": dump, "WARPWEAVE_DISABLE_CACHE": "1",
                  "WARPWEAVE_CUBIN_TOOL": os.environ.get("WARPWEAVE_CUBIN_TOOL") or "ptxas"}, root)
    t = time.perf_counter()
    p = subprocess.run([python, "-m", "warpweave", "run", "--compile-only", "--arch", arch, prog_path, *args],
                       cwd=os.path.dirname(prog_path), env=env, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        return dict(error=(p.stdout + p.stderr).strip()[-1500:])
    # the launches' dynamic shared memory, in compilation order ("kernel (N bytes dynamic shared memory)")
    smem = [int(x) for x in re.findall(r"\((\d+) bytes dynamic shared memory\)", p.stdout)]
    kernels = []
    for ptx in _by_mtime(glob.glob(os.path.join(dump, "*.ptx"))):
        kernels += ptxas_resources(ptx, arch)
    for i, (_, k) in enumerate(kernels):
        k["dynamic_smem"] = smem[i] if i < len(smem) else None
    return dict(wall_s=wall, kernels=kernels)


_BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "f16": 16, "bf16": 16, "f32": 32, "tf32": 32, "f64": 64}


def storage_bytes(mlir_text: str):
    """Per kernel (in the IR's order), the shared memory its allocations take: each shared memref allocation
    (`!t = !cute.memref<T, smem, align<A>, "N:1">`) placed after the previous one at its alignment, as one dynamic
    block. None for a kernel with an allocation of another form."""
    types = {}
    for m in re.finditer(r'^(!\S+) = !cute\.memref<(\w+), smem, align<(\d+)>, "(\d+):1">', mlir_text, re.M):
        bits = _BITS.get(m.group(2))
        types[m.group(1)] = (int(m.group(3)), int(m.group(4)) * bits // 8) if bits else None
    out = []
    for line in mlir_text.splitlines():
        if re.search(r"\b(cuda|gpu)\.(kernel|func)\b", line) and "cute.kernel" in line:
            out.append(0)
            continue
        m = re.search(r"cute\.memref\.alloca\(.*: (!memref_smem\S*)\s*$", line)
        if m and out and out[-1] is not None:
            t = types.get(m.group(1))
            if t is None:
                out[-1] = None
                continue
            align, size = t
            out[-1] = -(-out[-1] // align) * align + size
    return out


def run_cutedsl(prog_path, arch, args, python, torch_site, dump, timeout):
    os.makedirs(dump, exist_ok=True)
    fd, drv = tempfile.mkstemp(suffix=".py", prefix="host_device_")
    with os.fdopen(fd, "w") as f:
        f.write(HOST_DEVICE)
    cc = re.match(r"sm_(\d+)(\d)", arch).groups()
    env = dict(os.environ, CUTE_DSL_ARCH=arch, CUTE_DSL_KEEP="ptx,cubin,ir", CUTE_DSL_DUMP_DIR=dump,
               SHIM_CC=",".join(cc), SHIM_TORCH_SITE=torch_site, SHIM_META=_HOST_OPS_ON_META)
    env.pop("PYTHONPATH", None)  # CuTe DSL's own environment: nothing of warpweave on its path
    t = time.perf_counter()
    try:
        p = subprocess.run([python, drv, prog_path, *args], cwd=os.path.dirname(prog_path), env=env,
                           capture_output=True, text=True, timeout=timeout)
    finally:
        os.unlink(drv)
    wall = time.perf_counter() - t
    helpers = os.path.join(dump, "helpers.txt")
    helpers = set(open(helpers).read().split()) if os.path.exists(helpers) else set()
    ptxs = _by_mtime(f for f in glob.glob(os.path.join(dump, "*.ptx")) if os.path.basename(f) not in helpers)
    if not ptxs:
        return dict(error=(p.stdout + p.stderr).strip()[-1500:])
    kernels = []
    for ptx in ptxs:
        ks = ptxas_resources(ptx, arch)
        irs = glob.glob(os.path.join(dump, "*" + os.path.basename(ptx).rsplit(".", 2)[0] + "*.mlir"))
        smem = storage_bytes(open(irs[0]).read()) if irs else []
        for i, (_, k) in enumerate(ks):
            k["dynamic_smem"] = smem[i] if i < len(smem) else None
        kernels += ks
    return dict(wall_s=wall, kernels=kernels)


def _fmt(k):
    if k is None:
        return f"{'-':>4} {'-':>6} {'-':>11} {'-':>6} {'-':>7}"
    spill = f"{k['spill_stores']}/{k['spill_loads']}"
    dyn = "?" if k["dynamic_smem"] is None else k["dynamic_smem"]
    return f"{k['registers']:>4} {k['stack']:>6} {spill:>11} {k['static_smem']:>6} {dyn:>7}"


def print_table(rows, out=sys.stdout):
    head = f"{'regs':>4} {'stack':>6} {'spill st/ld':>11} {'smem':>6} {'dynsmem':>7}"
    print(f"{'program':62} {'#':>2} | CuTe DSL: {head} | warpweave: {head} | regs ww/CD", file=out)
    for r in rows:
        name = (r["program"].split("/")[-1][:-3][:36] + " " + r["arch"] + " " +
                " ".join(a.replace("Float", "") for a in r["args"] if not a.startswith("--"))[:16]).strip()
        ww, cd = r["warpweave"], r["cutedsl"]
        if "error" in ww or "error" in cd:
            side = "warpweave" if "error" in ww else "CuTe DSL"
            msg = (ww.get("error") or cd.get("error")).splitlines()[-1][:110]
            print(f"{name:62}    | {side} ERROR: {msg}", file=out)
            continue
        for i in range(max(len(ww["kernels"]), len(cd["kernels"]))):
            a = cd["kernels"][i][1] if i < len(cd["kernels"]) else None
            b = ww["kernels"][i][1] if i < len(ww["kernels"]) else None
            ratio = f"{b['registers'] / a['registers']:.2f}" if a and b and a["registers"] else "-"
            print(f"{name if i == 0 else '':62} {i:>2} |           {_fmt(a)} |            {_fmt(b)} | {ratio:>5}",
                  file=out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cutlass", help="a checkout of NVIDIA/cutlass (its examples/python/CuTeDSL)")
    ap.add_argument("--cutedsl-python", required=True, help="an interpreter with CuTe DSL (its own environment)")
    ap.add_argument("--ww-python", default=sys.executable, help="an interpreter with torch for warpweave's side")
    ap.add_argument("--torch-site", default=None,
                    help="a site-packages holding torch for CuTe DSL's side (default: --ww-python's)")
    ap.add_argument("--set", default="all", choices=sorted(SETS))
    ap.add_argument("--only", default=None, help="comma-separated substrings of program paths")
    ap.add_argument("--json", default=None)
    ap.add_argument("--keep", default=None, help="keep each side's artefacts under this folder")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--ww-root", default=None, help="the warpweave checkout to measure (default: this one)")
    args = ap.parse_args(argv)

    torch_site = args.torch_site or subprocess.run(
        [args.ww_python, "-c", "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))"],
        capture_output=True, text=True, check=True).stdout.strip()
    programs = SETS[args.set]
    if args.only:
        wanted = [w.strip() for w in args.only.split(",") if w.strip()]
        programs = [p for p in programs if any(w in " ".join([p[0]] + p[2]) for w in wanted)]
        if not programs:
            ap.error(f"--only {args.only!r} matches none of the set {args.set!r}")
    work = args.keep or tempfile.mkdtemp(prefix="resources_")
    rows = []
    for rel, arch, pargs in programs:
        path = os.path.join(args.cutlass, EXAMPLES, rel)
        tag = re.sub(r"[^\w]+", "_", " ".join([rel[:-3]] + pargs))
        for side in ("warpweave", "cutedsl"):
            shutil.rmtree(os.path.join(work, tag, side), ignore_errors=True)
        try:
            ww = run_warpweave(path, arch, pargs, args.ww_python, os.path.join(work, tag, "warpweave"), args.timeout,
                               args.ww_root)
        except subprocess.TimeoutExpired:
            ww = dict(error=f"timed out after {args.timeout} s")
        try:
            cd = run_cutedsl(path, arch, pargs, args.cutedsl_python, torch_site, os.path.join(work, tag, "cutedsl"),
                             args.timeout)
        except subprocess.TimeoutExpired:
            cd = dict(error=f"timed out after {args.timeout} s")
        rows.append(dict(program=rel, arch=arch, args=pargs, warpweave=ww, cutedsl=cd))
        print_table(rows[-1:])
        sys.stdout.flush()
    print()
    print_table(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
