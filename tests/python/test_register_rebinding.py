"""A register tensor variable that dynamic control flow binds to a new register tensor of the same element type
and layout (a helper packing values into a fresh fragment each trip: MoE's scheduler writes its work tile through
`rmem = info.to_rmem_tensor()`) keeps its registers: the new values are copied in at the region's end, so the
variable after the region and in the next trip holds them. A variable bound again to a view of its own registers
(`view = cute.filter_zeros(frag)` each trip, as the sm_120 block-scaled GEMMs do with their scale-factor fragments)
copies nothing: the copy would store the elements back in wider pieces, which ties a fragment's bytes into vectors
carried whole around the loop, and the GEMMs spilled. Another layout or element type, or a tensor of another memory,
is still refused at the user's line."""
import os

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu, target
from test_gemm_examples import ptxas_report

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


# A k-blocked loop as the sm_120 block-scaled GEMMs' main loop has it: a fragment of 8-bit values, one per row and
# k-block, each row's k-blocks adjacent; each trip binds `view` to the fragment again (a view of the same registers),
# and each k-block loads the next k-block's values through it and uses its own. 1024 threads leave 64 registers.
_ROWS, _THREADS = 16, 1024


@cute.kernel
def _k_blocked(gS: cute.Tensor, gOut: cute.Tensor, n: cutlass.Int32):
    tid = cute.arch.thread_idx()[0]
    frag = cute.make_rmem_tensor(cute.make_layout((_ROWS, 4), stride=(4, 1)), cutlass.Int8)
    acc = cute.make_rmem_tensor((_ROWS,), cutlass.Float32)
    for r in cutlass.range_constexpr(_ROWS):
        acc[r] = cutlass.Float32(0)
        frag[r, 0] = gS[0, r, tid]
    view = cute.filter_zeros(frag)
    for t in range(n):
        view = cute.filter_zeros(frag)
        for kb in cutlass.range_constexpr(4):
            for r in cutlass.range_constexpr(_ROWS):
                view[r, (kb + 1) % 4] = gS[(kb + 1) % 4, r, tid + t]
            for r in cutlass.range_constexpr(_ROWS):
                acc[r] = acc[r] * cutlass.Float32(view[r, kb]) + cutlass.Float32(1)
    for r in cutlass.range_constexpr(_ROWS):
        gOut[tid, r] = acc[r]


@cute.jit
def _k_blocked_host(s: cute.Tensor, o: cute.Tensor, n: cutlass.Int32):
    _k_blocked(s, o, n).launch(grid=[1, 1, 1], block=[_THREADS, 1, 1])


def _k_blocked_args(n=3):
    return (from_dlpack(np.zeros((4, _ROWS, _THREADS + n), np.int8)),
            from_dlpack(np.zeros((_THREADS, _ROWS), np.float32)), n)


def test_a_view_of_its_own_registers_each_trip_needs_no_local_memory():
    # Copied into itself, the fragment was carried as one packed vector per row: each row's bytes of every k-block
    # stayed live to the trip's end, and the kernel spilled at its 64 registers.
    with target("sm_90a"):
        compiled = cute.compile(_k_blocked_host, *_k_blocked_args(), options="-v")
    stack, spill_st, spill_ld, regs = ptxas_report(compiled)
    assert (stack, spill_st, spill_ld) == (0, 0, 0), compiled.info["jit_log"]
    assert regs <= 64


@cute.jit
def shifted_view(gA, n):
    frag = cute.make_rmem_tensor((4,), cutlass.Int32)
    for j in cutlass.range_constexpr(4):
        frag[j] = cutlass.Int32(j + 1)
    view = cute.make_tensor(frag.iterator, cute.make_layout(2))
    i = cutlass.Int32(0)
    while i < n:
        view = cute.make_tensor(frag.iterator + 2, cute.make_layout(2))   # the fragment's other half
        i += 1
    gA[0] = view[0]   # after a trip: the other half's values, copied into the variable's registers
    gA[1] = view[1]
    gA[2] = frag[0]
    gA[3] = frag[1]


def test_a_view_of_other_registers_is_still_copied():
    ptx = _compile(shifted_view)
    assert "st.global" in ptx and ".local" not in ptx.split("{", 1)[1]


@requires_gpu
@pytest.mark.parametrize("n", [0, 2])
def test_the_shifted_views_values(n):
    import torch

    a = torch.zeros(4, dtype=torch.int32, device="cuda")
    _host(shifted_view)(from_dlpack(a), n)
    torch.cuda.synchronize()
    assert a.tolist() == ([1, 2, 1, 2] if n == 0 else [3, 4, 3, 4])


@requires_gpu
def test_the_k_blocked_loops_values():
    import torch

    n = 3
    s = torch.randint(-3, 4, (4, _ROWS, _THREADS + n), dtype=torch.int8)
    out = torch.zeros((_THREADS, _ROWS), dtype=torch.float32)
    tid = torch.arange(_THREADS)
    want = torch.zeros((_THREADS, _ROWS), dtype=torch.float32)
    prev = s[0, :, tid].T.float()
    for t in range(n):
        for kb in range(4):
            cur = prev
            prev = s[(kb + 1) % 4, :, tid + t].T.float()
            want = want * cur + 1
    sd, od = s.cuda(), out.cuda()
    _k_blocked_host(from_dlpack(sd), from_dlpack(od), n)
    torch.cuda.synchronize()
    assert torch.equal(od.cpu(), want)
