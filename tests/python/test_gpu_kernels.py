"""Kernels on the GPU: numerics against a higher-precision reference on fresh random data, outputs poisoned first.
Skipped (with the reason) on machines without a GPU; the GPU machine runs them."""
import math
import os

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu

pytestmark = requires_gpu
EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "frontend_python", "examples")


@pytest.fixture(scope="module")
def torch():
    import torch as t

    t.manual_seed(int.from_bytes(os.urandom(4), "little"))
    return t


@pytest.fixture(scope="module")
def ew():
    import importlib.util

    spec = importlib.util.spec_from_file_location("elementwise_add", os.path.join(EXAMPLES, "elementwise_add.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("shape", [(3, 12), (1000, 1003), (1024, 1024), (17, 129), (1, 1)])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_elementwise_add(torch, ew, shape, dtype):
    td = getattr(torch, dtype)
    a = torch.randn(shape, device="cuda", dtype=td)
    b = torch.randn(shape, device="cuda", dtype=td)
    c = torch.full_like(a, float("nan"))
    # row-major: said, as a (1, 1) tensor's leading dimension cannot be deduced (both strides are 1)
    args = [from_dlpack(t).mark_layout_dynamic(leading_dim=1) for t in (a, b, c)]
    compiled = cute.compile(ew.elementwise_add, *args)
    compiled(*args)
    torch.cuda.synchronize()
    ref = (a.double() + b.double()).to(td)
    assert not torch.isnan(c).any()
    assert torch.equal(c, ref)


def test_one_compilation_serves_other_sizes(torch, ew):
    a = torch.randn(64, 64, device="cuda")
    args = [from_dlpack(t).mark_layout_dynamic() for t in (a, a.clone(), torch.empty_like(a))]
    compiled = cute.compile(ew.elementwise_add, *args)
    # Any extents; row strides at least as divisible as the compiled one (64: 16-element multiples).
    for m, n in [(128, 256), (47, 1024), (3, 16), (1, 4096)]:
        x, y = torch.randn(m, n, device="cuda"), torch.randn(m, n, device="cuda")
        z = torch.full_like(x, float("nan"))
        compiled(*[from_dlpack(t).mark_layout_dynamic() for t in (x, y, z)])
        torch.cuda.synchronize()
        assert torch.equal(z, x + y)
    # A row stride of 4 elements breaks the 16-element alignment the kernel relied on: compiled again for it
    # (once), or, where the function may not compile again, refused, not run.
    _a_narrower_stride_compiles_again_or_is_refused(torch, compiled)


def test_calls_after_the_first_take_the_fast_path(torch, ew):
    # The launch's hot path is a generated function; a compiled call must reach it also when it leaves out
    # trailing parameters that have defaults (elementwise_add's Constexpr), and it must still check its arguments.
    a = torch.randn(64, 96, device="cuda")
    args = [from_dlpack(t).mark_layout_dynamic() for t in (a, a.clone(), torch.empty_like(a))]
    compiled = cute.compile(ew.elementwise_add, *args)
    compiled(*args)
    assert callable(compiled._fast), compiled._fast
    x, y = torch.randn(40, 32, device="cuda"), torch.randn(40, 32, device="cuda")
    z = torch.full_like(x, float("nan"))
    compiled(*[from_dlpack(t).mark_layout_dynamic() for t in (x, y, z)])
    torch.cuda.synchronize()
    assert torch.equal(z, x + y)
    _a_narrower_stride_compiles_again_or_is_refused(torch, compiled)


def _a_narrower_stride_compiles_again_or_is_refused(torch, compiled):
    x, y = torch.randn(16, 4, device="cuda"), torch.randn(16, 4, device="cuda")
    z = torch.full_like(x, float("nan"))
    again = compiled.compile_again
    compiled.compile_again = None
    with pytest.raises(ValueError, match="does not match the compiled specialisation"):
        compiled(*[from_dlpack(t).mark_layout_dynamic() for t in (x, y, z)])
    assert torch.isnan(z).all()
    compiled.compile_again = again
    compiled(*[from_dlpack(t).mark_layout_dynamic() for t in (x, y, z)])
    torch.cuda.synchronize()
    assert torch.equal(z, x + y) and len(compiled._siblings) == 1


def test_implicit_compile_and_torch_tensors_directly(torch, ew):
    a, b = torch.randn(300, 200, device="cuda"), torch.randn(300, 200, device="cuda")
    c = torch.full_like(a, float("nan"))
    ew.elementwise_add(a, b, c)  # torch tensors: dynamic layouts; compiled on first call
    torch.cuda.synchronize()
    assert torch.equal(c, a + b)


def test_static_layout(torch, ew):
    a, b = torch.randn(40, 64, device="cuda"), torch.randn(40, 64, device="cuda")
    c = torch.full_like(a, float("nan"))
    args = [from_dlpack(t) for t in (a, b, c)]  # static: extents and strides compiled in
    compiled = cute.compile(ew.elementwise_add, *args)
    assert "?" not in str(compiled.launches[0].grid)
    compiled(*args)
    torch.cuda.synchronize()
    assert torch.equal(c, a + b)


@cute.kernel
def control_flow_kernel(gA: cute.Tensor, gB: cute.Tensor, n: cutlass.Int32, alpha: cutlass.Float32):
    tidx, _, _ = cute.arch.thread_idx()
    acc = cutlass.Float32(0.0)
    count = 0
    for i in range(n):
        acc = acc + gA[i] * alpha
        count += 1
    j = tidx
    while j < 10:
        j = j + 4
    if tidx == 0 and n > 3:
        gB[0] = acc
    else:
        gB[tidx] = cutlass.Float32(count) + j
    gB[tidx + 32] = acc if tidx > 2 else alpha


@cute.jit
def control_flow(mA, mB, n: cutlass.Int32, alpha: float):
    control_flow_kernel(mA, mB, n, alpha).launch(grid=[1, 1, 1], block=[32, 1, 1])


def test_control_flow_numerics(torch):
    a = torch.randn(64, device="cuda")
    b = torch.full((64,), float("nan"), device="cuda")
    n, alpha = 7, 1.5
    control_flow(a, b, n, alpha)
    torch.cuda.synchronize()
    acc = float((a[:n].double() * alpha).sum())
    got = b.cpu().double()
    assert math.isclose(got[0].item(), acc, rel_tol=1e-5)
    for t in range(1, 32):
        j = t
        while j < 10:
            j += 4
        assert got[t].item() == n + j
        assert math.isclose(got[t + 32].item(), acc if t > 2 else alpha, rel_tol=1e-5)


@cute.kernel
def int_ops_kernel(gA: cute.Tensor, gB: cute.Tensor, gOut: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    a = gA[tidx]
    b = gB[tidx]
    gOut[tidx, 0] = a // b
    gOut[tidx, 1] = a % b
    gOut[tidx, 2] = (a << 2) ^ (b & 7)
    gOut[tidx, 3] = a >> 1
    gOut[tidx, 4] = cutlass.Int32(cutlass.Float32(a) * 0.5)
    gOut[tidx, 5] = a if a < b else b
    gOut[tidx, 6] = -a + abs(b)


@cute.jit
def int_ops(mA, mB, mOut):
    int_ops_kernel(mA, mB, mOut).launch(grid=[1, 1, 1], block=[64, 1, 1])


def test_integer_semantics_match_python(torch):
    a = torch.randint(-1000, 1000, (64,), device="cuda", dtype=torch.int32)
    b = torch.randint(1, 50, (64,), device="cuda", dtype=torch.int32) * torch.where(
        torch.rand(64, device="cuda") < 0.5, -1, 1).to(torch.int32)
    out = torch.full((64, 7), -12345, device="cuda", dtype=torch.int32)
    int_ops(a, b, out)
    torch.cuda.synchronize()
    got = out.cpu().tolist()
    for t, (x, y) in enumerate(zip(a.cpu().tolist(), b.cpu().tolist())):
        want = [x // y, x % y, ((x << 2) ^ (y & 7)), x >> 1, int(x * 0.5), min(x, y), -x + abs(y)]
        want = [((w + 2 ** 31) % 2 ** 32) - 2 ** 31 for w in want]
        assert got[t] == want, (t, x, y)


@cute.kernel
def fp8_kernel(gX: cute.Tensor, gE4: cute.Tensor, gE5: cute.Tensor, gBack4: cute.Tensor, gBack5: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * 256 + tidx
    x = gX[i]
    e4 = cutlass.Float8E4M3FN(x)
    e5 = cutlass.Float8E5M2(x)
    gE4[i] = e4
    gE5[i] = e5
    gBack4[i] = cutlass.Float32(gE4[i])
    gBack5[i] = cutlass.Float32(gE5[i])


@cute.jit
def fp8_convert(mX, mE4, mE5, mB4, mB5):
    fp8_kernel(mX, mE4, mE5, mB4, mB5).launch(grid=[cute.size(mX) // 256, 1, 1], block=[256, 1, 1])


def test_fp8_conversions_match_torch(torch):
    n = 4096
    x = torch.cat([torch.randn(n - 256, device="cuda") * 30,
                   torch.tensor([0.0, -0.0, 448.0, 500.0, 1e-9, 57344.0, 1e6, float("nan")] * 32, device="cuda")])
    e4 = torch.zeros(n, device="cuda", dtype=torch.float8_e4m3fn)
    e5 = torch.zeros(n, device="cuda", dtype=torch.float8_e5m2)
    b4 = torch.full((n,), float("inf"), device="cuda")
    b5 = torch.full((n,), float("inf"), device="cuda")
    fp8_convert(x, e4, e5, b4, b5)
    torch.cuda.synchronize()
    finite = ~torch.isnan(x)
    # warpweave saturates (PTX's .satfinite); torch's cast maps out-of-range values to NaN: compare where in range.
    in4 = finite & (x.abs() <= 448)
    in5 = finite & (x.abs() <= 57344)
    assert torch.equal(e4.view(torch.uint8)[in4], x[in4].to(torch.float8_e4m3fn).view(torch.uint8))
    assert torch.equal(e5.view(torch.uint8)[in5], x[in5].to(torch.float8_e5m2).view(torch.uint8))
    assert torch.equal(b4[finite], e4.float()[finite]) and torch.isnan(b4[~finite]).all()
    assert torch.equal(b5[finite], e5.float()[finite]) and torch.isnan(b5[~finite]).all()
    assert (e4.float()[finite & (x.abs() > 448)].abs() == 448).all()  # saturated


@cute.kernel
def printf_kernel(gA: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    if tidx == 1:
        cute.printf("warpweave says {} and {} at {}", tidx, gA[tidx], (tidx, 7))


@cute.jit
def say(mA):
    printf_kernel(mA).launch(grid=[1, 1, 1], block=[4, 1, 1])


def test_printf_reaches_stdout(torch, capfd):
    a = torch.tensor([0.0, 2.5, 0.0, 0.0], device="cuda")
    say(a)
    torch.cuda.synchronize()
    out = capfd.readouterr().out
    assert "warpweave says 1 and 2.500000 at (1,7)" in out


@cute.jit
def add_on_stream(mA, mB, mC, stream):
    add_kernel(mA, mB, mC).launch(grid=[cute.size(mA) // 128, 1, 1], block=[128, 1, 1], stream=stream)


@cute.kernel
def add_kernel(gA: cute.Tensor, gB: cute.Tensor, gC: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * 128 + tidx
    gC[i] = gA[i] + gB[i]


def test_launch_on_a_torch_stream(torch):
    s = torch.cuda.Stream()
    a, b = torch.randn(1 << 20, device="cuda"), torch.randn(1 << 20, device="cuda")
    c = torch.full_like(a, float("nan"))
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        add_on_stream(a, b, c, s)
    s.synchronize()
    assert torch.equal(c, a + b)


@cute.jit
def launch_with_threads(mA, mB, mC, nthreads: cutlass.Int32):
    add_kernel(mA, mB, mC).launch(grid=[1, 1, 1], block=[nthreads, 1, 1])


def test_driver_errors_raise_exceptions(torch):
    a = torch.randn(4096, device="cuda")
    with pytest.raises(RuntimeError) as info:
        launch_with_threads(a, a, a, 4096)  # more threads than a block may have
    assert "cuLaunchKernel" in str(info.value)
    # The process and the context survive: a correct launch still works.
    b = torch.randn(1 << 12, device="cuda")
    c = torch.full_like(b, float("nan"))
    add_on_stream(b, b, c, torch.cuda.current_stream())
    torch.cuda.synchronize()
    assert torch.equal(c, b + b)


@cute.kernel
def bf16_kernel(gA: cute.Tensor, gB: cute.Tensor, gC: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    x = gA[tidx]
    y = gB[tidx]
    gC[tidx] = cutlass.BFloat16(cutlass.Float32(x) * cutlass.Float32(y) + 1.0)


@cute.jit
def bf16_fma(mA, mB, mC):
    bf16_kernel(mA, mB, mC).launch(grid=[1, 1, 1], block=[256, 1, 1])


def test_bfloat16_conversions(torch):
    a = torch.randn(256, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(256, device="cuda", dtype=torch.bfloat16)
    c = torch.full_like(a, float("nan"))
    bf16_fma(a, b, c)
    torch.cuda.synchronize()
    assert torch.equal(c, (a.float() * b.float() + 1.0).to(torch.bfloat16))


@cute.kernel
def scale_kernel(gA: cute.Tensor, gC: cute.Tensor, op: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * 128 + tidx
    gC[i] = op(gA[i])


@cute.jit
def scale_on_stream(mA, mC, op: cutlass.Constexpr = lambda x: x * 2.0, stream=None):
    scale_kernel(mA, mC, op).launch(grid=[cute.size(mA) // 128, 1, 1], block=[128, 1, 1], stream=stream)


def test_compiled_calls_without_their_constexpr_arguments(torch):
    # CuTe DSL programs call a compiled function without its Constexpr arguments (sgemm: compiled(a, b, c,
    # stream) of a function taking (a, b, c, epilogue_op, stream)); every call, the fast ones after the first too,
    # must read the stream as the stream.
    a = torch.randn(1 << 12, device="cuda")
    compiled = cute.compile(scale_on_stream, from_dlpack(a), from_dlpack(torch.empty_like(a)),
                            stream=torch.cuda.current_stream())
    s = torch.cuda.Stream()
    for k in range(3):
        x = torch.randn(1 << 12, device="cuda")
        c = torch.full_like(x, float("nan"))
        torch.cuda.synchronize()
        with torch.cuda.stream(s):
            compiled(from_dlpack(x), from_dlpack(c), s)
        s.synchronize()
        assert torch.equal(c, x * 2.0), k
    assert callable(compiled._fast)
