"""Names CuTe DSL's Blackwell programs use around their kernels: cute.FastDivmodDivisor (division by a run-time
divisor with a multiply-high), cutlass.target_version (the CUDA version the compiler's cubin tool has),
cutlass.Float8E4M3 (the IEEE-style E4M3, apart from E4M3FN), a tensor's `.iterator` as a pointer argument, and None
for an optional cute.Tensor argument."""
import random

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base.cuda_version import cuda_version
from warpweave._dsl.values import fp8
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu, target

_DIVISORS = [1, 2, 3, 5, 7, 8, 9, 64, 100, 641, 1000, 12345, (1 << 30), (1 << 30) + 1, (1 << 31) - 1]


@pytest.mark.parametrize("d", _DIVISORS + random.Random(0).sample(range(1, 1 << 31), 20))
def test_fast_divmod_is_floor_division_for_non_negative_int32(d):
    # Static numbers run the kernel's formula (multiplier, shift from the leading zeros) in Python.
    f = cute.fast_divmod_create_divisor(d)
    xs = [0, 1, d - 1, d, d + 1, (1 << 31) - 1, (1 << 31) - 2] + random.Random(d).sample(range(1 << 31), 30)
    for x in xs:
        q, r = divmod(cutlass.Int32(x), f)
        assert (q.value, r.value) == divmod(x, d), (x, d)
        assert (cutlass.Int32(x) // f).value == x // d and (cutlass.Int32(x) % f).value == x % d
    assert f.divisor.value == d and isinstance(f, cute.FastDivmodDivisor)


def test_fast_divmod_refuses_non_positive_divisors_at_the_users_line():
    with pytest.raises(ValueError, match="positive 32-bit integer, got 0") as info:
        cute.FastDivmodDivisor(0)  # the user's line
    assert "test_fast_divmod_and_versions.py" in str(info.value)


def _kernel_ptx():
    @cute.kernel
    def k(fdd: cute.FastDivmodDivisor, x: cutlass.Int32, out: cute.Tensor):
        q, r = divmod(x, fdd)
        out[0] = q
        out[1] = r
        out[2] = fdd.divisor

    @cute.jit
    def h(a: cute.Tensor, x: cutlass.Int32, out: cute.Tensor):
        # made on the host from a runtime extent, carried to the kernel as one value
        k(cute.fast_divmod_create_divisor(a.shape[0]), x, out).launch(grid=[1, 1, 1], block=[32, 1, 1])

    a, out = from_dlpack(np.zeros(7, np.float32)).mark_layout_dynamic(), from_dlpack(np.zeros(3, np.int32))
    with target("sm_90a"):
        return cute.compile(h, a, 100, out).info["ptx"], h, a, out


def test_fast_divmod_in_a_kernel_divides_with_a_multiply_high_not_a_divide():
    ptx = _kernel_ptx()[0]
    assert "mul." in ptx
    assert "div.u32" not in ptx and "div.s32" not in ptx and "rem.s32" not in ptx and "rem.u32" not in ptx
    assert "clz.b32" in ptx


def test_one_divisor_divides_in_several_branches_of_a_kernel():
    # warp roles each divide by the same divisor: what one branch unpacks is not defined in the next
    @cute.kernel
    def k(n: cutlass.Int32, x: cutlass.Int32, out: cute.Tensor):
        f = cute.fast_divmod_create_divisor(n)
        tidx, _, _ = cute.arch.thread_idx()
        if tidx == 0:
            out[0] = x // f
        if tidx == 1:
            out[1] = x % f

    @cute.jit
    def h(n: cutlass.Int32, x: cutlass.Int32, out: cute.Tensor):
        k(n, x, out).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_90a"):
        ptx = cute.compile(h, 7, 100, from_dlpack(np.zeros(2, np.int32))).info["ptx"]
    # each branch unpacks the divisor itself (a shift from leading zeros) and stores its result
    assert ptx.count("clz.b32") >= 2 and ptx.count("st.global") == 2
    assert "div.s32" not in ptx.split("clz.b32", 1)[1] and "rem." not in ptx


@requires_gpu
def test_fast_divmod_host_made_divisor_divides_in_the_kernel():
    import torch
    _, h, _, _ = _kernel_ptx()
    for n, x in [(7, 100), (1, 12345), (3, (1 << 31) - 1), (1000, 999)]:
        a = torch.zeros(n, device="cuda")
        out = torch.zeros(3, dtype=torch.int32, device="cuda")
        ta = from_dlpack(a).mark_layout_dynamic()
        cute.compile(h, ta, x, from_dlpack(out))(ta, x, from_dlpack(out))
        torch.cuda.synchronize()
        assert out.tolist() == [x // n, x % n, n]


def test_target_version_compares_the_cubin_tools_cuda_version():
    major, minor = cuda_version()
    have = f"{major}.{minor}"
    assert cutlass.target_version(exact_version=have)
    assert cutlass.target_version(min_version=have) and cutlass.target_version(max_version=have)
    assert not cutlass.target_version(min_version=f"{major}.{minor + 1}")
    assert not cutlass.target_version(max_version=f"{major - 1}.9")
    assert cutlass.target_version(min_version=f"{major - 1}.0", max_version=f"{major + 1}.0")
    assert major >= 13  # the core binds nvJitLink's CUDA 13 entry points
    # QuACK's nvfp4 helpers import it from cutlass.cutlass_dsl: the same function
    from warpweave.cutlass_dsl import target_version
    assert target_version is cutlass.target_version


def test_cuda_version_object_is_the_cubin_tools_version_by_fields():
    # cutlass.CUDA_VERSION: .major / .minor of the same toolchain, ordered as versions are
    major, minor = cuda_version()
    v = cutlass.CUDA_VERSION
    assert (v.major, v.minor) == (major, minor) and str(v) == f"{major}.{minor}"
    assert type(v)(major, minor + 1) > v > type(v)(major - 1, 9) and v == type(v)(major, minor)


def test_cuda_version_is_the_chosen_cubin_tools(monkeypatch):
    # target_version answers for the tool that assembles this process's cubins, in the core's order of choice
    from warpweave._dsl.base import cuda_version as module
    found = {name: tool() for name, tool in module._TOOLS.items()}
    assert any(found.values())
    try:
        for name, version in found.items():
            if version is None:
                continue
            monkeypatch.setenv("WARPWEAVE_CUBIN_TOOL", name)
            module.cuda_version.cache_clear()
            assert module.cuda_version() == version
        monkeypatch.delenv("WARPWEAVE_CUBIN_TOOL")
        module.cuda_version.cache_clear()
        assert module.cuda_version() == next(v for v in found.values() if v is not None)
    finally:
        module.cuda_version.cache_clear()


@pytest.mark.parametrize("kwargs, message", [
    ({}, "give exact_version"),
    ({"exact_version": "13.0", "min_version": "12.0"}, "exclude each other"),
    ({"min_version": "13.2", "max_version": "13.1"}, "above max_version"),
    ({"min_version": 13}, "must be a version string"),
    ({"max_version": "thirteen"}, "is not a version"),
])
def test_target_version_refuses_bad_requests_at_the_users_line(kwargs, message):
    with pytest.raises(Exception, match=message) as info:
        cutlass.target_version(**kwargs)  # the user's line
    assert "test_fast_divmod_and_versions.py" in str(info.value)


def test_float8_e4m3_is_the_ieee_style_format_apart_from_e4m3fn():
    e4m3 = cutlass.Float8E4M3
    assert e4m3 is not cutlass.Float8E4M3FN and e4m3.width == 8 and e4m3.is_float
    assert cutlass.dtype("Float8E4M3") is e4m3 is cute.Float8E4M3
    # the top exponent holds infinity and NaN; the largest finite value is 240 (E4M3FN's is 448)
    assert fp8.decode_static(e4m3, 0x78) == float("inf") and fp8.decode_static(e4m3, 0xF8) == float("-inf")
    assert np.isnan(fp8.decode_static(e4m3, 0x79))
    assert fp8.decode_static(e4m3, 0x77) == 240.0 and fp8.encode_static(e4m3, 1e6) == 0x77
    for code in range(256):
        v = fp8.decode_static(e4m3, code)
        if np.isfinite(v):
            assert fp8.decode_static(e4m3, fp8.encode_static(e4m3, v)) == v


def test_tensor_iterator_is_a_pointer_argument_to_its_first_element():
    buf = np.zeros(64, np.float32)
    t = from_dlpack(buf, assumed_align=16)
    p = t.iterator
    assert p.address == buf.ctypes.data and p.element_type is cutlass.Float32 and p.assumed_align == 16
    seen = {}

    @cute.jit
    def h(ptr: cute.Pointer):
        seen["dtype"] = ptr.dtype

    with target("sm_90a"):
        cute.compile(h, p)
    assert seen["dtype"] is cutlass.Float32


def test_none_for_a_tensor_argument_is_a_compile_time_absence():
    seen = []

    @cute.jit
    def h(a: cute.Tensor, workspace: cute.Tensor):
        seen.append(workspace is None)

    a = from_dlpack(np.zeros(4, np.float32))
    with target("sm_90a"):
        cute.compile(h, a, None)
        cute.compile(h, a, a)
    assert seen == [True, False]
    with pytest.raises(TypeError, match="annotated cute.Tensor but is a int"):
        cute.compile(h, a, 3)


def test_a_runtime_tensor_is_a_cute_tensor_to_user_code():
    # CuTe DSL's epilogue fusion programs sort their arguments into tensors and scalars with isinstance.
    t = from_dlpack(np.zeros((4, 8), np.float32))
    assert isinstance(t, cute.Tensor) and not isinstance(3.0, cute.Tensor)
    assert not isinstance(t.iterator, cute.Tensor) and not isinstance(t, cute.TensorSSA)
