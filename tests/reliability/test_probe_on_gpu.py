"""The new-surfaces probe's cases whose outcome only a GPU shows (test_probe_new_surfaces.py compiles only): the
values kernels compute from host-side dynamic values, and calls that launch. Skipped without a GPU."""
import os
import warnings

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._mlir.dialects import arith
from warpweave.cute.runtime import from_dlpack
from warpweave.cutlass_dsl import T

from dsl_helpers import line_in, requires_gpu

THIS = os.path.abspath(__file__)
pytestmark = requires_gpu


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")


def cuda(a):
    import torch

    return torch.as_tensor(a).cuda()


@cute.kernel
def store_n(a: cute.Tensor, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    a[tidx] = n


@cute.jit
def divide_by_argument(a: cute.Tensor, d: cutlass.Int32):
    store_n(a, 1024 // d).launch(grid=[1, 1, 1], block=[32, 1, 1])  # DIVIDE


@cute.jit
def modulo_by_argument(a: cute.Tensor, n: cutlass.Int32, d: cutlass.Int32):
    store_n(a, n % d).launch(grid=[1, 1, 1], block=[32, 1, 1])


@pytest.mark.parametrize("d", [-3, -1024, 7, 1025])
def test_floor_division_by_a_signed_argument_is_pythons(d):
    import torch

    a = cuda(np.zeros(32, np.int32))
    divide_by_argument(from_dlpack(a), cutlass.Int32(d))
    torch.cuda.synchronize()
    assert a.cpu().tolist() == [1024 // d] * 32


@pytest.mark.parametrize("n, d", [(-7, 3), (7, -3), (-7, -3), (7, 3)])
def test_modulo_of_signed_arguments_is_pythons(n, d):
    import torch

    a = cuda(np.zeros(32, np.int32))
    modulo_by_argument(from_dlpack(a), cutlass.Int32(n), cutlass.Int32(d))
    torch.cuda.synchronize()
    assert a.cpu().tolist() == [n % d] * 32


def test_a_zero_divisor_at_a_call_is_refused_at_the_division_both_ways():
    a = from_dlpack(cuda(np.zeros(32, np.int32)))
    c = cute.compile(divide_by_argument, a, cutlass.Int32(4))
    c(a, cutlass.Int32(4))
    for call in (lambda: c(a, cutlass.Int32(0)), lambda: divide_by_argument(a, cutlass.Int32(0))):
        with pytest.raises(cutlass.DSLError, match="integer division by zero") as e:
            call()
        assert e.value.location == (THIS, line_in(THIS, "# DIVIDE"))


@cute.kernel
def fill(a: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    a[tidx] = 1


@cute.jit
def grid_by_extents(a: cute.Tensor, b: cute.Tensor):
    fill(a).launch(grid=[a.shape[0] // (b.shape[0] - 4), 1, 1], block=[32, 1, 1])  # GRID


def test_a_grid_without_a_value_at_a_call_names_the_launch_on_every_path():
    dyn = lambda n: from_dlpack(cuda(np.zeros(n, np.int32))).mark_layout_dynamic()  # noqa: E731
    c = cute.compile(grid_by_extents, dyn(32), dyn(8))
    c(dyn(32), dyn(8))
    c(dyn(32), dyn(8))  # the fast paths are built
    for _ in range(2):
        with pytest.raises(cutlass.DSLError, match="has no grid for these arguments: division by zero") as e:
            c(dyn(32), dyn(4))
        assert e.value.location == (THIS, line_in(THIS, "# GRID"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c(dyn(32), dyn(8))  # and the function still launches


@cute.jit
def wide_extent_as_int32(a: cute.Tensor):
    store_n(a, a.shape[0] * 1000000000000).launch(grid=[1, 1, 1], block=[32, 1, 1])


def test_a_64_bit_extent_expression_passed_as_int32_wraps_as_a_conversion_does():
    import torch

    a = cuda(np.zeros(32, np.int32))
    wide_extent_as_int32(from_dlpack(a).mark_layout_dynamic())
    torch.cuda.synchronize()
    assert a.cpu().tolist() == [int(np.array(32 * 10**12).astype(np.int32))] * 32


@cute.kernel
def branch_on_ir_value(a: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    if arith.cmpi(arith.CmpIPredicate.slt, cutlass.Int32(tidx).ir_value(), arith.constant(T.i32(), 16)):
        a[tidx] = 1
    else:
        a[tidx] = 2


@cute.jit
def launch_branch(a: cute.Tensor):
    branch_on_ir_value(a).launch(grid=[1, 1, 1], block=[32, 1, 1])


def test_an_if_on_an_ir_value_branches_at_run_time():
    import torch

    a = cuda(np.zeros(32, np.int32))
    launch_branch(from_dlpack(a))
    torch.cuda.synchronize()
    assert a.cpu().tolist() == [1] * 16 + [2] * 16
