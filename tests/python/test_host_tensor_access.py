"""The host side of @cute.jit functions reads and writes tensor elements at each call (host_values.py): element
access, whole-tensor load/store/fill, TensorSSA arithmetic, math, slicing, broadcasting and reductions, host
register tensors, pointers to host memory; with the call's data, in program order, with the element types'
rounding and wrap-around."""
import ctypes
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base.errors import DSLError
from warpweave.cute.runtime import from_dlpack, make_ptr

from dsl_helpers import requires_gpu


@pytest.fixture(autouse=True)
def _target(monkeypatch):
    monkeypatch.setenv("WARPWEAVE_ARCH", "sm_80")  # host-only functions: a target to trace for, no GPU needed


def rng(seed):
    return np.random.default_rng(seed)


@cute.jit
def axpy_elements(a: cute.Tensor, b: cute.Tensor, alpha: cutlass.Float32):
    for i in range(4):
        for j in range(3):
            a[i, j] = alpha * a[i, j] + b[i, j]


def test_element_writes_compute_with_each_calls_data():
    for seed in range(3):
        r = rng(seed)
        a, b = r.standard_normal((4, 3)).astype(np.float32), r.standard_normal((4, 3)).astype(np.float32)
        alpha = np.float32(r.standard_normal())
        want = alpha * a + b  # float32 arithmetic, as the DSL's Float32 rounds each step
        axpy_elements(from_dlpack(a), from_dlpack(b), cutlass.Float32(float(alpha)))
        np.testing.assert_array_equal(a, want)


@cute.jit
def read_write_order(a: cute.Tensor):
    before = a[1]
    a[1] = 7.0
    after = a[1]
    cute.printf("{} {}", before, after)
    a[0] = before + after


def test_reads_see_the_writes_before_them_only(capsys):
    a = np.array([1.5, 2.5, 3.5], np.float32)
    read_write_order(from_dlpack(a))
    assert capsys.readouterr().out.splitlines()[-1] == "2.500000 7.000000"
    np.testing.assert_array_equal(a, [9.5, 7.0, 3.5])
    b = np.array([0.0, -1.0, 0.0], np.float32)  # a second call: its own values
    read_write_order(from_dlpack(b))
    assert capsys.readouterr().out.splitlines()[-1] == "-1.000000 7.000000"
    np.testing.assert_array_equal(b, [6.0, 7.0, 0.0])


@cute.jit
def fused(res: cute.Tensor, a: cute.Tensor, b: cute.Tensor):
    x, y = a.load(), b.load()
    res.store(cute.math.fma(x, y, x) - y / x)


def test_tensorssa_arithmetic_is_float32_elementwise():
    r = rng(7)
    a = (r.random((6, 5)) + 0.5).astype(np.float32)
    b = r.standard_normal((6, 5)).astype(np.float32)
    res = np.zeros_like(a)
    fused(from_dlpack(res), from_dlpack(a), from_dlpack(b))
    want = (a.astype(np.float64) * b + a).astype(np.float32) - b / a  # fma rounds once
    np.testing.assert_array_equal(res, want)


@cute.jit
def int_ops(res: cute.Tensor, a: cute.Tensor, b: cute.Tensor):
    x, y = a.load(), b.load()
    res.store((x * y) ^ (x + y))


def test_integer_arithmetic_wraps_as_int32():
    r = rng(3)
    a = r.integers(-2**31, 2**31, 40, dtype=np.int64).astype(np.int32)
    b = r.integers(-2**31, 2**31, 40, dtype=np.int64).astype(np.int32)
    res = np.zeros_like(a)
    int_ops(from_dlpack(res), from_dlpack(a), from_dlpack(b))
    with np.errstate(over="ignore"):
        want = (a * b) ^ (a + b)
    np.testing.assert_array_equal(res, want)


@cute.jit
def math_ops(res: cute.Tensor, a: cute.Tensor):
    x = a.load()
    res.store(cute.math.sqrt(x) + cute.math.exp2(x) * cute.math.sin(x))


def test_math_functions_against_float64():
    a = (rng(5).random(32) * 4).astype(np.float32)
    res = np.zeros_like(a)
    math_ops(from_dlpack(res), from_dlpack(a))
    x = a.astype(np.float64)
    np.testing.assert_allclose(res, np.sqrt(x) + np.exp2(x) * np.sin(x), rtol=2e-6, atol=1e-6)


@cute.jit
def compare_select(res: cute.Tensor, a: cute.Tensor, b: cute.Tensor):
    for i in range(8):
        res[i] = a[i] > b[i]


def test_comparisons_store_booleans():
    r = rng(11)
    a, b = r.standard_normal(8).astype(np.float32), r.standard_normal(8).astype(np.float32)
    res = np.zeros(8, np.bool_)
    compare_select(from_dlpack(res), from_dlpack(a), from_dlpack(b))
    np.testing.assert_array_equal(res, a > b)


@cute.jit
def reduce_modes(rows: cute.Tensor, cols: cute.Tensor, total: cute.Tensor, a: cute.Tensor):
    v = a.load()
    rows.store(v.reduce(cute.ReductionOp.ADD, 0.0, reduction_profile=(None, 1)))
    cols.store(v.reduce(cute.ReductionOp.MAX, -1e30, reduction_profile=(1, None)))
    total[0] = v.reduce(cute.ReductionOp.ADD, 0.0, reduction_profile=0)


def test_reductions_over_profiles():
    a = rng(2).integers(-8, 8, (3, 4)).astype(np.float32)  # small integers: sums are exact in any order
    rows, cols, total = np.zeros(3, np.float32), np.zeros(4, np.float32), np.zeros(1, np.float32)
    reduce_modes(from_dlpack(rows), from_dlpack(cols), from_dlpack(total), from_dlpack(a))
    np.testing.assert_array_equal(rows, a.sum(axis=1))
    np.testing.assert_array_equal(cols, a.max(axis=0))
    assert total[0] == a.sum()


@cute.jit
def slice_and_broadcast(out_slice: cute.Tensor, out_sum: cute.Tensor, a: cute.Tensor, row: cute.Tensor,
                        col: cute.Tensor, k: cutlass.Constexpr):
    out_slice.store(a.load()[(None, k, None)])
    out_sum.store(row.load() + col.load())


def test_tensorssa_slices_and_broadcasts_like_numpy():
    a = rng(4).standard_normal((4, 2, 3)).astype(np.float32)
    row = rng(5).standard_normal((1, 3)).astype(np.float32)
    col = rng(6).standard_normal((4, 1)).astype(np.float32)
    for k in (0, 1):
        out_slice, out_sum = np.zeros((4, 3), np.float32), np.zeros((4, 3), np.float32)
        slice_and_broadcast(from_dlpack(out_slice), from_dlpack(out_sum), from_dlpack(a), from_dlpack(row),
                            from_dlpack(col), k)
        np.testing.assert_array_equal(out_slice, a[:, k, :])
        np.testing.assert_array_equal(out_sum, row + col)


@cute.jit
def registers_each_call(out: cute.Tensor, x: cute.Tensor):
    r = cute.make_rmem_tensor((2, 3), cutlass.Float32)
    for i in range(6):
        r[i] = r[i] + x[i]  # starts from the zeros of each call, not from the previous call's values
    out.store(r.load())
    cute.print_tensor(r)


def test_host_register_tensors_are_fresh_each_call(capsys):
    for seed in range(2):
        x = rng(seed).standard_normal(6).astype(np.float32)
        out = np.zeros((2, 3), np.float32, order="F")
        registers_each_call(from_dlpack(out), from_dlpack(x))
        np.testing.assert_array_equal(out.ravel(order="F"), x)
    rows = [l for l in capsys.readouterr().out.splitlines() if l.startswith("  [")][-2:]
    got = [[float(v) for v in re.findall(r"-?\d+\.\d+", l)] for l in rows]
    np.testing.assert_allclose(got, x.reshape(2, 3, order="F"), atol=1e-6)


@cute.jit
def fill_through_pointer(ptr: cute.Pointer, value: cutlass.Float32):
    t = cute.make_tensor(ptr, cute.make_layout((3, 4), stride=(4, 1)))
    t.fill(value)
    t[1, 2] = t[1, 2] * 2.0


def test_pointer_to_host_memory():
    a = np.zeros((3, 4), np.float32)
    fill_through_pointer(make_ptr(cutlass.Float32, a.ctypes.data), cutlass.Float32(1.25))
    want = np.full((3, 4), 1.25, np.float32)
    want[1, 2] = 2.5
    np.testing.assert_array_equal(a, want)
    assert ctypes.c_float.from_address(a.ctypes.data + 6 * 4).value == 2.5


@requires_gpu
def test_pointer_to_device_memory_is_refused():
    torch = pytest.importorskip("torch", reason="torch is not installed in this environment")
    t = torch.full((12,), 3.0, device="cuda")
    with pytest.raises(DSLError, match="points to device memory"):
        fill_through_pointer(make_ptr(cutlass.Float32, t.data_ptr()), cutlass.Float32(1.25))
    assert torch.equal(t.cpu(), torch.full((12,), 3.0))  # nothing was written


def test_writes_are_visible_in_torch_tensors():
    torch = pytest.importorskip("torch", reason="torch is not installed in this environment")
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    want = t.clone() * 2 + 1

    @cute.jit
    def double_plus_one(a: cute.Tensor):
        a.store(a.load() * 2.0 + 1.0)

    double_plus_one(from_dlpack(t))
    assert torch.equal(t, want)


@cute.kernel
def consume(x: cutlass.Float32):
    cute.printf("{}", x)


@cute.jit
def host_value_to_kernel(a: cute.Tensor):
    consume(a[0]).launch(grid=[1, 1, 1], block=[1, 1, 1])  # the line the error names


def test_host_values_cannot_be_passed_to_kernels():
    with pytest.raises(DSLError, match="cannot be passed to a kernel launch") as e:
        host_value_to_kernel(from_dlpack(np.zeros(2, np.float32)))
    assert "test_host_tensor_access.py" in str(e.value)


@cute.jit
def branch_on_element(a: cute.Tensor):
    if cutlass.const_expr(bool(a[0])):
        a[1] = 1.0


def test_python_cannot_branch_on_host_values():
    with pytest.raises(DSLError, match="no Python truth value"):
        branch_on_element(from_dlpack(np.zeros(2, np.float32)))


@cute.jit
def out_of_range(a: cute.Tensor, i: cutlass.Int32):
    a[i] = 1.0


def test_out_of_range_offset_is_an_error_naming_the_line():
    a = np.zeros(4, np.float32)
    out_of_range(from_dlpack(a), cutlass.Int32(3))
    assert a[3] == 1.0
    with pytest.raises(DSLError, match="outside the memory") as e:
        out_of_range(from_dlpack(a), cutlass.Int32(4))
    assert "test_host_tensor_access.py" in str(e.value)
