"""Calls through Apache TVM FFI (cute.compile(..., options="--enable-tvm-ffi"), from_dlpack(enable_tvm_ffi=True)).

Without a GPU: the option parses and leaves the ordinary path alone; the entry reads DLPack tensors in C and refuses
host memory, wrong element types, ranks, compiled-in extents and argument counts with Python exceptions; through a
stand-in driver (in a subprocess) it makes the launches the ordinary call makes for the same arguments, on the
given stream or, for None, on TVM FFI's current stream. With a GPU: torch tensors and torch's current stream
directly, checked against torch, and capture into a CUDA graph of both call paths.
"""
import ctypes
import os
import subprocess
import sys

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base.compile_options import CompileOptions, merge
from warpweave._dsl.call.compiled_function import JitCompiledFunction
from warpweave.cute.runtime import from_dlpack, make_fake_stream, make_fake_tensor

import aot_helpers as aot
from dsl_helpers import requires_gpu, target
from test_export import axpy

tvm_ffi = pytest.importorskip("tvm_ffi")


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _DLManaged(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class CudaLike:
    """A DLPack producer that claims CUDA memory at a made-up address (nothing reads it without a GPU)."""
    _keep = []

    def __init__(self, addr, shape, code=2, bits=32, device_type=2, device_id=0, strides=None, lanes=1):
        self.shape = (ctypes.c_int64 * len(shape))(*shape)
        self.strides = (ctypes.c_int64 * len(shape))(*strides) if strides else None
        self.m = _DLManaged()
        t = self.m.dl_tensor
        t.data, t.device, t.ndim = addr, _DLDevice(device_type, device_id), len(shape)
        t.dtype, t.shape, t.strides, t.byte_offset = _DLDataType(code, bits, lanes), self.shape, self.strides, 0
        CudaLike._keep.append(self)

    def __dlpack_device__(self):
        return (self.m.dl_tensor.device.device_type, self.m.dl_tensor.device.device_id)

    def __dlpack__(self, stream=None, **kw):
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self.m), b"dltensor", None)


def compiled_axpy(env_stream=False, **kw):
    with target("sm_80"):
        t = make_fake_tensor(cutlass.Float32, (cute.sym_int(),), (1,), assumed_align=16)
        return cute.compile(axpy, t, t, 1, 1.0, make_fake_stream(use_tvm_ffi_env_stream=env_stream), **kw)


def test_option_parses_and_the_ordinary_path_is_unchanged():
    assert merge(CompileOptions(), "--enable-tvm-ffi").tvm_ffi is True
    assert merge(CompileOptions(), cute.EnableTVMFFI).tvm_ffi and not merge(CompileOptions(), cute.EnableTVMFFI(False)).tvm_ffi
    plain = compiled_axpy()
    assert isinstance(plain, JitCompiledFunction)
    ffi = compiled_axpy(options="--enable-tvm-ffi")
    assert isinstance(ffi.function, tvm_ffi.Function) and ffi.cubin == plain.cubin
    assert type(ffi).__dict__["__call__"].__func__ is ffi.function  # called with no Python frame in between
    a = np.zeros(8, np.float32)
    assert from_dlpack(a, enable_tvm_ffi=True).spec() == from_dlpack(a).spec()


def test_entry_refuses_bad_arguments():
    f = compiled_axpy(options="--enable-tvm-ffi")
    host = tvm_ffi.from_dlpack(np.zeros(16, np.float32))
    with pytest.raises(ValueError, match="argument x is not in CUDA memory"):
        f(host, host, 16, 1.0, None)
    with pytest.raises(TypeError, match=r"axpy\(\) takes 5 arguments"):
        f(host)
    x = tvm_ffi.from_dlpack(CudaLike(1 << 32, (64,)))
    with pytest.raises(TypeError, match="argument y must be a tensor"):
        f(x, 3, 16, 1.0, None)
    with pytest.raises(TypeError, match="argument y must be a Float32 tensor"):
        f(x, tvm_ffi.from_dlpack(CudaLike(1 << 32, (64,), code=2, bits=16)), 16, 1.0, None)
    with pytest.raises(ValueError, match="argument y must have rank 1"):
        f(x, tvm_ffi.from_dlpack(CudaLike(1 << 32, (8, 8))), 16, 1.0, None)
    with pytest.raises(ValueError, match="argument y is on another CUDA device"):
        f(x, tvm_ffi.from_dlpack(CudaLike(1 << 32, (64,), device_id=1)), 16, 1.0, None)
    with pytest.raises(ValueError, match="does not fit the 32-bit integer"):
        f(x, x, 1 << 40, 1.0, None)
    with pytest.raises(TypeError, match="alpha must be a number"):
        f(x, x, 16, "one", None)
    if not __import__("dsl_helpers").has_gpu():  # a valid call without a driver: an exception, not an abort
        with pytest.raises(RuntimeError, match="no CUDA driver"):
            f(x, x, 16, 1.0, None)


_SCRIPT = r"""
import sys
sys.path.insert(0, sys.argv[1])
import tvm_ffi
from test_tvm_ffi import CudaLike, compiled_axpy
f = compiled_axpy(options="--enable-tvm-ffi")
x = tvm_ffi.from_dlpack(CudaLike(0x30000000, (1000,)))
y = tvm_ffi.from_dlpack(CudaLike(0x70000000, (1000,)))
f(x, y, 1000, 2.5, 4096)
with tvm_ffi.use_raw_stream(tvm_ffi.device("cuda:0"), 8192):
    f(x, y, 7, -1.0, None)
try:
    f(x, tvm_ffi.from_dlpack(CudaLike(0x70000004, (1000,))), 7, 1.0, None)
except ValueError as e:
    print("refused", e)
"""


_ENV_STREAM_SCRIPT = r"""
import sys
sys.path.insert(0, sys.argv[1])
import tvm_ffi
from test_tvm_ffi import CudaLike, compiled_axpy
f = compiled_axpy(env_stream=True, options="--enable-tvm-ffi")
x = tvm_ffi.from_dlpack(CudaLike(0x30000000, (1000,)))
y = tvm_ffi.from_dlpack(CudaLike(0x70000000, (1000,)))
with tvm_ffi.use_raw_stream(tvm_ffi.device("cuda:0"), 8192):
    f(x, y, 1000, 2.5)
"""


def test_a_stream_compiled_for_the_environment_is_no_parameter_of_the_entry(tmp_path):
    """make_fake_stream(use_tvm_ffi_env_stream=True): the TVM FFI function takes the other arguments only and
    launches on TVM FFI's environment stream (torch's current stream where torch sets it)."""
    f = compiled_axpy(env_stream=True, options="--enable-tvm-ffi")
    host = tvm_ffi.from_dlpack(np.zeros(16, np.float32))
    with pytest.raises(TypeError, match=r"axpy\(\) takes 4 arguments \(x, y, n, alpha\)"):
        f(host, host, 16, 1.0, None)
    plain = compiled_axpy()
    mock = aot.build_mock_driver(str(tmp_path))
    sizes = ",".join(str(__import__("struct").calcsize("=" + p.fmt)) for p in plain.launches[0].params)
    env = dict(os.environ, WARPWEAVE_LIBCUDA=os.path.join(mock, "libcuda.so.1"), WW_MOCK_PARAM_SIZES=sizes)
    p = subprocess.run([sys.executable, "-c", _ENV_STREAM_SCRIPT, os.path.dirname(__file__)], capture_output=True,
                       text=True, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    from warpweave._dsl.values.runtime import RuntimeTensor

    out = aot.parse_mock_output(p.stdout + "\nrc call 0\n")
    x = RuntimeTensor(None, 0x30000000, (1000,), (1,), cutlass.Float32, "cuda", 16).mark_layout_dynamic()
    y = RuntimeTensor(None, 0x70000000, (1000,), (1,), cutlass.Float32, "cuda", 16).mark_layout_dynamic()
    assert [{k: v for k, v in l.items() if k != "attrs"} for l in out["calls"][0][2]] == \
        aot.python_launches(plain, x, y, 1000, 2.5, 8192)


def test_entry_launches_as_the_ordinary_call_does(tmp_path):
    from warpweave._dsl.values.runtime import RuntimeTensor

    plain = compiled_axpy()
    mock = aot.build_mock_driver(str(tmp_path))
    sizes = ",".join(str(__import__("struct").calcsize("=" + p.fmt)) for p in plain.launches[0].params)
    env = dict(os.environ, WARPWEAVE_LIBCUDA=os.path.join(mock, "libcuda.so.1"), WW_MOCK_PARAM_SIZES=sizes)
    p = subprocess.run([sys.executable, "-c", _SCRIPT, os.path.dirname(__file__)], capture_output=True, text=True,
                       env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    out = aot.parse_mock_output(p.stdout + "\nrc call 0\n")
    x = RuntimeTensor(None, 0x30000000, (1000,), (1,), cutlass.Float32, "cuda", 16).mark_layout_dynamic()
    y = RuntimeTensor(None, 0x70000000, (1000,), (1,), cutlass.Float32, "cuda", 16).mark_layout_dynamic()
    expected = aot.python_launches(plain, x, y, 1000, 2.5, 4096) + aot.python_launches(plain, x, y, 7, -1.0, 8192)
    assert [{k: v for k, v in l.items() if k != "attrs"} for l in out["calls"][0][2]] == expected
    assert "refused" in p.stdout and "y: data is not aligned to 16 bytes" in p.stdout


_GEMM_SCRIPT = r"""
import sys
sys.path.insert(0, sys.argv[1])
import tvm_ffi
import warpweave as cutlass
from test_tvm_ffi import CudaLike
from test_export import _dense_gemm_module
from dsl_helpers import target
dg = _dense_gemm_module()
gemm = dg.HopperDenseGemm(cutlass.Float32, (128, 128), (2, 1))
with target("sm_90a"):
    f = dg.compile_only(gemm, "k", "k", "n", cutlass.Float16, cutlass.Float16, options="--enable-tvm-ffi")
M, N, K, L = 384, 256, 192, 2
t = lambda m0, m1, addr: tvm_ffi.from_dlpack(CudaLike(addr, (m0, m1, L), code=2, bits=16,
                                                      strides=(m1, 1, m0 * m1)))
f(t(M, K, 0x10000000), t(N, K, 0x50000000), t(M, N, 0x90000000))
"""


def test_hopper_gemm_through_tvm_ffi_encodes_its_tma_descriptors(tmp_path, monkeypatch):
    """The TVM FFI entry of a function with per-call host arguments (the Hopper GEMM's TMA descriptors, encoded in
    C) launches what the ordinary call launches."""
    from warpweave._dsl.values.runtime import RuntimeTensor
    from warpweave.backends.hopper import tma

    from test_export import _dense_gemm_module, _tma_pattern

    dg = _dense_gemm_module()
    gemm = dg.HopperDenseGemm(cutlass.Float32, (128, 128), (2, 1))
    with target("sm_90a"):
        plain = dg.compile_only(gemm, "k", "k", "n", cutlass.Float16, cutlass.Float16)
    monkeypatch.setattr(tma.ext, "host_call", lambda backend, hook, attrs, size: _tma_pattern(attrs))
    M, N, K, L = 384, 256, 192, 2

    def t(m0, m1, addr):
        rt = RuntimeTensor(None, addr, (m0, m1, L), (m1, 1, m0 * m1), cutlass.Float16, "cuda", 16)
        return dg._mark(rt, False, cutlass.Float16)

    expected = aot.python_launches(plain, t(M, K, 0x10000000), t(N, K, 0x50000000), t(M, N, 0x90000000))
    mock = aot.build_mock_driver(str(tmp_path))
    sizes = ",".join(str(__import__("struct").calcsize("=" + p.fmt)) for p in plain.launches[0].params)
    env = dict(os.environ, WARPWEAVE_LIBCUDA=os.path.join(mock, "libcuda.so.1"), WW_MOCK_PARAM_SIZES=sizes)
    p = subprocess.run([sys.executable, "-c", _GEMM_SCRIPT, os.path.dirname(__file__)], capture_output=True,
                       text=True, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    out = aot.parse_mock_output(p.stdout + "\nrc call 0\n")
    assert len(out["tensormaps"]) == len(plain.host_arguments) == 3
    got = [{k: v for k, v in l.items() if k != "attrs"} for l in out["calls"][0][2]]
    assert got == expected and got[0]["cluster"] == [2, 1, 1]


def test_views_made_for_tvm_ffi_are_passed_as_the_tensors_they_view():
    """A call may pass the from_dlpack views it compiled with: the entry reads the tensor each one views (here host
    memory, which the entry then refuses as not CUDA memory: it read it as a tensor), and a fake one is refused."""
    f = compiled_axpy(options="--enable-tvm-ffi")
    a = np.zeros(16, np.float32)
    view = from_dlpack(a, enable_tvm_ffi=True).mark_layout_dynamic()
    with pytest.raises(ValueError, match="argument x is not in CUDA memory"):
        f(view, view, 16, 1.0, None)
    fake = make_fake_tensor(cutlass.Float32, (16,), (1,))
    with pytest.raises(TypeError, match="fake tensor has no memory"):
        f(fake, view, 16, 1.0, None)


def test_pointers_are_passed_to_tvm_ffi_as_their_address():
    p = cute.runtime.make_ptr(cutlass.Float32, 0x1000, cute.AddressSpace.gmem, assumed_align=16)
    assert p.__tvm_ffi_opaque_ptr__() == p._pointer == 0x1000
    echo = tvm_ffi.convert(lambda x: x)
    assert echo(p).value == 0x1000  # TVM FFI's opaque pointer, read back


@requires_gpu
def test_views_compiled_with_run_on_the_gpu():
    import torch

    n = 1000
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    ref = 2.0 * x + y
    tx, ty = (from_dlpack(t, enable_tvm_ffi=True).mark_layout_dynamic() for t in (x, y))
    f = cute.compile(axpy, tx, ty, n, 2.0, torch.cuda.current_stream(), options="--enable-tvm-ffi")
    f(tx, ty, n, 2.0, None)
    torch.cuda.synchronize()
    torch.testing.assert_close(y, ref)


@requires_gpu
def test_torch_tensors_and_current_stream_on_the_gpu():
    import torch

    n = 100_003
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    ref = 2.5 * x + y
    tx, ty = (from_dlpack(t, enable_tvm_ffi=True).mark_layout_dynamic() for t in (x, y))
    f = cute.compile(axpy, tx, ty, n, 2.5, torch.cuda.current_stream(), options="--enable-tvm-ffi")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        f(x, y, n, 2.5, None)  # torch's current stream, s
    s.synchronize()
    torch.testing.assert_close(y, ref)


@requires_gpu
@pytest.mark.parametrize("tvm", [False, True])
def test_cuda_graph_capture(tvm):
    import torch

    n = 4096
    x, y = torch.randn(n, device="cuda"), torch.zeros(n, device="cuda")
    tx, ty = (from_dlpack(t).mark_layout_dynamic() for t in (x, y))
    opts = {"options": "--enable-tvm-ffi"} if tvm else {}
    f = cute.compile(axpy, tx, ty, n, 1.0, torch.cuda.current_stream(), **opts)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):  # warm-up outside the capture (loads the module)
        f(x, y, n, 1.0, None) if tvm else f(tx, ty, n, 1.0, s.cuda_stream)
    torch.cuda.synchronize()
    y.zero_()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        if tvm:
            f(x, y, n, 1.0, None)
        else:
            f(tx, ty, n, 1.0, torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    assert torch.count_nonzero(y) == 0  # captured, not run
    for k in range(3):
        g.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(y, 3 * x)


@pytest.mark.parametrize("on_launch", ["stop", "skip"])
def test_compile_only_runs_build_the_entry_but_do_not_launch(on_launch):
    # CuTe DSL programs compiled with --enable-tvm-ffi under `python -m warpweave run --compile-only`: the call is
    # the session's (as any compiled function's), not the TVM FFI entry's, which would launch.
    from warpweave._dsl.registry import compile_only

    with compile_only.compile_only(on_launch=on_launch) as session:
        f = compiled_axpy(options="--enable-tvm-ffi")
        assert "TVM FFI" in repr(f)
        x = CudaLike(0x1000, (16,))
        if on_launch == "stop":
            with pytest.raises(compile_only.LaunchSkipped, match="would launch"):
                f(x, x, 16, 1.0, None)
        else:
            assert f(x, x, 16, 1.0, None) is None
        assert len(session.skipped) == 1 and session.skipped[0][1].startswith(os.path.abspath(__file__))
        # the entry's count of arguments is checked there too, as the entry would on a GPU
        with pytest.raises(TypeError, match=r"takes 5 arguments \(.*\), got 4"):
            f(x, x, 16, 1.0)
        assert len(session.skipped) == 1


_AOT_SCRIPT = r"""
import os, subprocess, sys
sys.path.insert(0, sys.argv[1])
import tvm_ffi
import warpweave.cute as cute
from test_tvm_ffi import CudaLike, compiled_axpy
out = sys.argv[2]
f = compiled_axpy(options="--enable-tvm-ffi")
f.export_to_c(os.path.join(out, "axpy.o"), function_name="axpy")
libs = cute.runtime.find_runtime_libraries(enable_tvm_ffi=True)
if sys.argv[3] == "so":
    subprocess.run(["cc", "-shared", "-o", os.path.join(out, "axpy.so"), os.path.join(out, "axpy.o"), *libs],
                   check=True)
mod = cute.runtime.load_module(os.path.join(out, "axpy." + sys.argv[3]), enable_tvm_ffi=True)
x = tvm_ffi.from_dlpack(CudaLike(0x30000000, (1000,)))
y = tvm_ffi.from_dlpack(CudaLike(0x70000000, (1000,)))
mod.axpy(x, y, 1000, 2.5, 4096)
try:
    mod.axpy(x, tvm_ffi.from_dlpack(CudaLike(0x70000004, (1000,))), 7, 1.0, None)
except ValueError as e:
    print("refused", e)
"""


@pytest.mark.parametrize("loaded", ["so", "o"])
def test_an_aot_tvm_ffi_export_loads_back_and_launches_as_the_call_does(tmp_path, loaded):
    # export_to_c(object, function_name=) of a --enable-tvm-ffi function writes `__tvm_ffi_<name>`; linked with
    # find_runtime_libraries(enable_tvm_ffi=True), or the object itself (as QuACK's kernel cache loads it in later
    # processes), loaded with load_module(enable_tvm_ffi=True), it launches what the compiled call launches
    # (against the stand-in driver) and refuses what it refuses.
    from warpweave._dsl.values.runtime import RuntimeTensor

    plain = compiled_axpy()
    mock = aot.build_mock_driver(str(tmp_path))
    sizes = ",".join(str(__import__("struct").calcsize("=" + p.fmt)) for p in plain.launches[0].params)
    env = dict(os.environ, WARPWEAVE_LIBCUDA=os.path.join(mock, "libcuda.so.1"), WW_MOCK_PARAM_SIZES=sizes)
    env["WARPWEAVE_CACHE_DIR"] = str(tmp_path / "cache")  # the object's linked library, built afresh
    p = subprocess.run([sys.executable, "-c", _AOT_SCRIPT, os.path.dirname(__file__), str(tmp_path), loaded],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    out = aot.parse_mock_output(p.stdout + "\nrc call 0\n")
    x = RuntimeTensor(None, 0x30000000, (1000,), (1,), cutlass.Float32, "cuda", 16).mark_layout_dynamic()
    y = RuntimeTensor(None, 0x70000000, (1000,), (1,), cutlass.Float32, "cuda", 16).mark_layout_dynamic()
    expected = aot.python_launches(plain, x, y, 1000, 2.5, 4096)
    assert [{k: v for k, v in l.items() if k != "attrs"} for l in out["calls"][0][2]] == expected
    assert "refused" in p.stdout and "y: data is not aligned to 16 bytes" in p.stdout


@cute.kernel
def _fp4_kernel(x: cute.Tensor):
    pass


@cute.jit
def _fp4_sizes(x: cute.Tensor):
    _fp4_kernel(x).launch(grid=(1, 1, 1), block=(32, 1, 1))


_FP4_SCRIPT = r"""
import sys
sys.path.insert(0, sys.argv[1])
import tvm_ffi
import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import make_fake_compact_tensor
from test_tvm_ffi import CudaLike, _fp4_sizes
from dsl_helpers import target
with target("sm_80"):
    fake = make_fake_compact_tensor(cutlass.Float4E2M1FN, (cute.sym_int(), cute.sym_int(divisibility=2)),
                                    stride_order=(1, 0), assumed_align=16)
    f = cute.compile(_fp4_sizes, fake, options="--enable-tvm-ffi")
# torch's float4_e2m1fn_x2 (lanes 2, its shape counting bytes), then the same memory as packed fp4 elements
f(tvm_ffi.from_dlpack(CudaLike(0x40000000, (6, 8), code=17, bits=4, lanes=2)))
f(tvm_ffi.from_dlpack(CudaLike(0x40000000, (6, 16), code=17, bits=4, lanes=1)))
try:
    f(tvm_ffi.from_dlpack(CudaLike(0x40000000, (6, 16), code=17, bits=4, lanes=4)))
except TypeError as e:
    print("refused", e)
"""


def test_fp4_pairs_through_tvm_ffi_are_the_tensor_of_their_elements(tmp_path):
    mock = aot.build_mock_driver(str(tmp_path))
    env = dict(os.environ, WARPWEAVE_LIBCUDA=os.path.join(mock, "libcuda.so.1"), WW_MOCK_PARAM_SIZES="8,4,4,4")
    script = tmp_path / "fp4.py"
    script.write_text(_FP4_SCRIPT)
    p = subprocess.run([sys.executable, str(script), os.path.dirname(__file__)], capture_output=True, text=True,
                       env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    (first, second), = [c[2] for c in aot.parse_mock_output(p.stdout + "\nrc call 0\n")["calls"]]
    assert first["params"] == second["params"]
    assert "refused" in p.stdout and "must be a Float4E2M1FN tensor" in p.stdout


@cute.jit
def _prints_only(t: cute.Tensor):
    print(t)  # host code only: no kernel


def test_a_function_that_launches_nothing_compiles_for_tvm_ffi_and_its_call_does_nothing(capsys):
    with target("sm_80"):
        f = cute.compile(_prints_only, make_fake_tensor(cutlass.Float16, (3, cute.sym_int32(divisibility=8)),
                                                        (8, 1)), options="--enable-tvm-ffi")
    assert not f.launches and "tensor<" in capsys.readouterr().out
    assert f(tvm_ffi.from_dlpack(CudaLike(1 << 32, (3, 8), code=2, bits=16))) is None


def test_the_runtime_libraries_name_the_driver_the_loader_finds_wherever_it_lives(tmp_path):
    # A driver outside the usual folders (containers mount it under /usr/local/nvidia/lib64 and the like) is the one
    # named, not the CUDA toolkit's stub: libraries load these RTLD_GLOBAL before loading exports, and a stub loaded
    # so answers every later driver call of the process with CUDA_ERROR_STUB_LIBRARY.
    mock = aot.build_mock_driver(str(tmp_path))
    env = {k: v for k, v in os.environ.items() if k != "WARPWEAVE_LIBCUDA"}
    env["LD_LIBRARY_PATH"] = mock + os.pathsep + env.get("LD_LIBRARY_PATH", "")
    script = "import warpweave.cute as cute; print(cute.runtime.find_runtime_libraries()[0])"
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert os.path.realpath(p.stdout.strip()) == os.path.realpath(os.path.join(mock, "libcuda.so.1"))


@requires_gpu
def test_a_tvm_ffi_call_runs_after_the_runtime_libraries_are_loaded_globally():
    # As FlashAttention's kernel cache does before loading kernels: every library of find_runtime_libraries()
    # loaded with RTLD_GLOBAL, then a function compiled for TVM FFI called (its driver calls bind then).
    script = r"""
import ctypes, sys
sys.path.insert(0, sys.argv[1])
import warpweave.cute as cute
for lib in cute.runtime.find_runtime_libraries(enable_tvm_ffi=False):
    ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
import torch
from warpweave.cute.runtime import from_dlpack
from test_export import axpy
x = torch.randn(1000, device="cuda")
y = torch.randn(1000, device="cuda")
expected = 2.5 * x.double() + y.double()
tx, ty = (from_dlpack(t, enable_tvm_ffi=True).mark_layout_dynamic() for t in (x, y))
f = cute.compile(axpy, tx, ty, 1000, 2.5, torch.cuda.current_stream(), options="--enable-tvm-ffi")
f(x, y, 1000, 2.5, None)
torch.cuda.synchronize()
assert torch.allclose(y.double(), expected, rtol=1e-6, atol=1e-6), (y.double() - expected).abs().max()
print("ok")
"""
    p = subprocess.run([sys.executable, "-c", script, os.path.dirname(__file__)], capture_output=True, text=True)
    assert p.returncode == 0 and "ok" in p.stdout, p.stdout + p.stderr


def test_a_stub_driver_answering_is_named_as_such(tmp_path):
    # The toolkit's stub answers cuInit with CUDA_ERROR_STUB_LIBRARY and names no errors: the call's exception says
    # what answered, instead of "unknown error (34)".
    mock = aot.build_mock_driver(str(tmp_path))
    script = r"""
import sys
sys.path.insert(0, sys.argv[1])
import tvm_ffi
from test_tvm_ffi import CudaLike, compiled_axpy
f = compiled_axpy(options="--enable-tvm-ffi")
x = tvm_ffi.from_dlpack(CudaLike(0x30000000, (1000,)))
try:
    f(x, x, 1000, 2.5, None)
except RuntimeError as e:
    print("raised", e)
"""
    env = dict(os.environ, WARPWEAVE_LIBCUDA=os.path.join(mock, "libcuda.so.1"), WW_MOCK_STUB="1",
               WARPWEAVE_CACHE_DIR=str(tmp_path / "cache"))
    p = subprocess.run([sys.executable, "-c", script, os.path.dirname(__file__)], capture_output=True, text=True,
                       env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "raised ww_fn: cuInit failed: CUDA_ERROR_STUB_LIBRARY: the CUDA toolkit's stub" in p.stdout, p.stdout
