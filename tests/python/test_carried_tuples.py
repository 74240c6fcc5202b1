"""Tuples through dynamic control flow: a tuple holding a DSL number (a coordinate such as (None, None, k, stage),
as CuTe DSL's GEMM mainloops reassign one every iteration) is carried number by number; its other elements and its
nesting must stay; tuples of Python values must stay unchanged. IR on the CPU; values on a GPU."""
import os

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import line_in, requires_gpu, target

THIS = os.path.abspath(__file__)


def line_of(text: str) -> int:
    return line_in(THIS, text)


def dyn(n, dtype=np.int32):
    return from_dlpack(np.zeros(n, dtype=dtype)).mark_layout_dynamic()


@cute.kernel
def carry_kernel(gOut: cute.Tensor, n: cutlass.Int32):
    tile = (4, 8)                                  # Python values: unchanged, stays static
    crd = (None, (cutlass.Int32(1), 3))            # nested, with a Python int that becomes dynamic
    for i in cutlass.range(n, unroll=1):
        crd = (None, (crd[1][0] * 2 + i, crd[1][1] + 1))
    if n > 2:
        crd = (None, (crd[1][0] + 100, crd[1][1]))
    gOut[0] = crd[1][0]
    gOut[1] = crd[1][1] * tile[0]
    gOut[2] = cute.size(tile)


@cute.jit
def carry(out, n: cutlass.Int32):
    carry_kernel(out, n).launch(grid=[1, 1, 1], block=[1, 1, 1])


def expected(n):
    a, b = 1, 3
    for i in range(n):
        a, b = a * 2 + i, b + 1
    if n > 2:
        a += 100
    return [a, b * 4, 32]


def test_tuple_numbers_are_loop_and_branch_results():
    with target("sm_80"):
        c = cute.compile(carry, dyn(4), 5)
    ir = c.ir
    # The loop carries the tuple's two numbers (i32 each); the if yields them too.
    assert ir.count('"scf.for"') == 1 and ir.count('"scf.if"') == 1
    assert "(i32, i32, i32, i32, i32) -> (i32, i32)" in ir
    assert c.cubin[:4] == b"\x7fELF"


@requires_gpu
@pytest.mark.parametrize("n", [0, 1, 2, 3, 7])
def test_tuple_numbers_carried_values(n):
    import torch

    out = torch.zeros(4, dtype=torch.int32, device="cuda")
    carry(from_dlpack(out), n)
    torch.cuda.synchronize()
    assert out[:3].tolist() == expected(n)


@cute.kernel
def profile_change_kernel(gOut: cute.Tensor, n: cutlass.Int32):
    crd = (cutlass.Int32(0), cutlass.Int32(1))
    for i in cutlass.range(n, unroll=1):
        crd = (crd[0], crd[1], i)  # the tuple grows: refused
    gOut[0] = crd[0]


@cute.jit
def profile_change(out, n: cutlass.Int32):
    profile_change_kernel(out, n).launch(grid=[1, 1, 1], block=[1, 1, 1])


@cute.kernel
def element_change_kernel(gOut: cute.Tensor, n: cutlass.Int32):
    crd = (None, cutlass.Int32(1))
    for i in cutlass.range(n, unroll=1):
        crd = (gOut, crd[1] + i)  # None becomes a tensor: refused
    gOut[0] = crd[1]


@cute.jit
def element_change(out, n: cutlass.Int32):
    element_change_kernel(out, n).launch(grid=[1, 1, 1], block=[1, 1, 1])


@cute.kernel
def static_tuple_change_kernel(gOut: cute.Tensor, n: cutlass.Int32):
    tile = (4, 8)
    for i in cutlass.range(n, unroll=1):
        gOut[i] = tile[1]  # (read in the trip: its value entering the trip matters)
        tile = (4, 16)  # a tuple of Python values changes: refused
    gOut[0] = tile[0]


@cute.jit
def static_tuple_change(out, n: cutlass.Int32):
    static_tuple_change_kernel(out, n).launch(grid=[1, 1, 1], block=[1, 1, 1])


@pytest.mark.parametrize("fn,message,marker", [
    (profile_change, "from a tuple (_, _) to (_, _, _)", "crd = (crd[0], crd[1], i)  # the tuple grows"),
    (element_change, "element 0 of the tuple 'crd'", "crd = (gOut, crd[1] + i)  # None becomes"),
    (static_tuple_change, "'tile' is reassigned", "tile = (4, 16)  # a tuple of Python values"),
])
def test_tuple_changes_that_cannot_be_carried_name_the_line(fn, message, marker):
    with target("sm_80"), pytest.raises(cutlass.DSLError) as info:
        cute.compile(fn, dyn(4), 3)
    assert message in str(info.value) and isinstance(info.value, TypeError)
    # The line of the assignment that changed it.
    assert info.value.location == (THIS, line_of(marker))


@cute.kernel
def rebound_tuple_kernel(gOut: cute.Tensor, n: cutlass.Int32):
    tile = (4, 8)
    for i in cutlass.range(n, unroll=1):
        tile = (4, 16)  # set by each trip before any read
        gOut[i] = tile[1]
    gOut[0] = tile[0]  # the rebound tuple read after the loop


@cute.jit
def rebound_tuple(out, n: cutlass.Int32):
    rebound_tuple_kernel(out, n).launch(grid=[1, 1, 1], block=[1, 1, 1])


def test_a_tuple_each_trip_sets_before_reading_it_is_refused_only_where_read_after_the_loop():
    with target("sm_80"), pytest.raises(cutlass.DSLError) as info:
        cute.compile(rebound_tuple, dyn(4), 3)
    assert "'tile' is not usable after the dynamic loop" in str(info.value) and "'tile' is reassigned" in str(
        info.value)
    assert info.value.location == (THIS, line_of("gOut[0] = tile[0]  # the rebound tuple read after"))
