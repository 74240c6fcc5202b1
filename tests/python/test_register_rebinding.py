"""A register tensor variable that dynamic control flow binds to a new register tensor of the same element type
and layout (a helper packing values into a fresh fragment each trip: MoE's scheduler writes its work tile through
`rmem = info.to_rmem_tensor()`) keeps its registers: the new values are copied in at the region's end, so the
variable after the region and in the next trip holds them. Another layout or element type, or a tensor of another
memory, is still refused at the user's line."""
import os

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu, target

THIS = os.path.abspath(__file__)


def packed(a, b, shape=(2,), dtype=cutlass.Int32):
    r = cute.make_rmem_tensor(shape, dtype)
    r[0] = a
    r[1] = b
    return r


def _host(body):
    """A jit function launching one thread of a kernel that runs body(gA, n)."""
    @cute.kernel
    def k(gA: cute.Tensor, n: cutlass.Int32):
        body(gA, n)

    @cute.jit
    def h(a: cute.Tensor, n: cutlass.Int32):
        k(a, n).launch(grid=[1, 1, 1], block=[1, 1, 1])

    return h


def _compile(body):
    with target("sm_90a"):
        return cute.compile(_host(body), from_dlpack(np.zeros(4, np.int32)), 3).info["ptx"]


@cute.jit
def last_trip(gA, n):
    rmem = packed(cutlass.Int32(-1), cutlass.Int32(-2))
    i = cutlass.Int32(0)
    while i < n:
        rmem = packed(i, i * 2)
        i += 1
    gA[0] = rmem[0]   # the last trip's values (the first ones without a trip)
    gA[1] = rmem[1]


def test_a_fresh_fragment_each_trip_keeps_the_variable():
    ptx = _compile(last_trip)
    # registers only: the copies into the variable's fragment need no local memory
    assert "st.local" not in ptx and "ld.local" not in ptx and ".local" not in ptx.split("{", 1)[1]


def test_in_a_branch_too():
    @cute.jit
    def body(gA, n):
        rmem = packed(cutlass.Int32(1), cutlass.Int32(2))
        if n > 2:
            rmem = packed(n, n + 1)
        gA[0] = rmem[0] + rmem[1]

    assert "st.global" in _compile(body)


@pytest.mark.parametrize("shape,dtype", [((3,), cutlass.Int32), ((2,), cutlass.Float32)])
def test_another_layout_or_type_is_refused_at_the_users_line(shape, dtype):
    @cute.jit
    def body(gA, n):
        rmem = packed(cutlass.Int32(1), cutlass.Int32(2))
        i = cutlass.Int32(0)
        while i < n:
            rmem = packed(i, i, shape, dtype)   # not the variable's fragment: it cannot hold these
            i += 1
        gA[0] = cutlass.Int32(rmem[0])

    with pytest.raises(TypeError, match="'rmem' is reassigned inside the dynamic") as e:
        _compile(body)
    assert THIS in str(e.value) or "test_register_rebinding.py" in str(e.value)


@requires_gpu
@pytest.mark.parametrize("n", [0, 1, 5])
def test_the_variable_holds_the_last_trips_values(n):
    import torch

    a = torch.zeros(4, dtype=torch.int32, device="cuda")
    _host(last_trip)(from_dlpack(a), n)
    torch.cuda.synchronize()
    assert a[:2].tolist() == ([-1, -2] if n == 0 else [n - 1, 2 * (n - 1)])


@cute.jit
def loaded_where_work(gA, n):
    frag = packed(n, n + 1)
    vals = cute.zeros_like(frag)          # a TensorSSA of zeros...
    if n > 2:
        vals = frag.load()                # ...or the fragment's values, where there is work
    gA[0] = vals[0] + vals[1]


def test_a_tensor_ssa_assigned_in_a_branch_is_carried():
    ptx = _compile(loaded_where_work)
    assert "st.global" in ptx and ".local" not in ptx.split("{", 1)[1]


@requires_gpu
@pytest.mark.parametrize("n", [1, 4])
def test_the_carried_values_are_the_branchs(n):
    import torch

    a = torch.zeros(4, dtype=torch.int32, device="cuda")
    _host(loaded_where_work)(from_dlpack(a), n)
    torch.cuda.synchronize()
    assert a[0].item() == (2 * n + 1 if n > 2 else 0)
