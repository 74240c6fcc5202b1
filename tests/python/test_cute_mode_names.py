"""cute.dice, cute.append_ones / prepend_ones, cute.typing and cute.make_ptr (a pointer from an address in device
code), with CuTe DSL's names and CuTe's semantics."""
import itertools
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base.errors import DSLError
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu, target


def test_dice_keeps_the_modes_slicing_drops():
    shape = (3, 4, 5, 6)
    layout = cute.make_layout(shape, stride=(1, 3, 12, 60))
    for mask in itertools.product((None, 0), repeat=4):
        kept = cute.dice(shape, mask)
        assert kept == tuple(s for s, m in zip(shape, mask) if m is not None)
        if kept and len(kept) < 4:  # slicing keeps the None modes, dice the others: together, every mode
            sliced = cute.slice_(layout, mask).shape
            assert sorted(kept + (sliced if isinstance(sliced, tuple) else (sliced,))) == sorted(shape)
        if kept:
            d = cute.dice(layout, mask)
            assert d.shape == kept
            assert d.stride == tuple(s for s, m in zip(layout.stride, mask) if m is not None)
    assert cute.dice((128, 64, 32), (1, None, 1)) == (128, 32)          # (M, N, K) -> (M, K)
    nested = cute.dice(cute.make_layout((4, (2, 3), 5)), (1, (None, 1), None))
    assert nested.shape == (4, 3) and nested.stride == (1, 8)           # a nested dicer's kept modes join the result
    with pytest.raises(ValueError, match="does not match"):
        cute.dice((4, 8), (1, None, 1))


def test_unit_modes_pad_to_a_rank_without_changing_the_function():
    for shape, stride in [((4, 8), (1, 4)), ((6,), (2,)), ((2, (3, 2)), (6, (1, 3)))]:
        L = cute.make_layout(shape, stride=stride)
        for up in (3, 4):
            for f in (cute.append_ones, cute.prepend_ones):
                P = f(L, up_to_rank=up)
                assert cute.rank(P) == max(up, cute.rank(L)) and cute.size(P) == cute.size(L)
                assert [P(i) for i in range(cute.size(L))] == [L(i) for i in range(cute.size(L))]
    assert cute.append_ones((4, 8), up_to_rank=4) == (4, 8, 1, 1)
    assert cute.prepend_ones((4, 8), up_to_rank=3) == (1, 4, 8)
    assert cute.append_ones((4, 8)) == (4, 8, 1)
    assert cute.append_ones((4, 8, 2, 2), up_to_rank=3) == (4, 8, 2, 2)   # already of that rank
    assert str(cute.append_ones(cute.make_layout((4, 8)), up_to_rank=3)) == "(4,8,1):(1,4,0)"
    with pytest.raises(ValueError, match="up_to_rank"):
        cute.append_ones((4,), up_to_rank=-1)


def test_typing_module_names_are_cutes_own():
    import warpweave.cute.typing as typing_mod

    for name in typing_mod.__all__:
        obj = getattr(typing_mod, name)
        # Tiler and Int are annotations of typing's own; T (MLIR types by short name) is CuTe DSL's typing's only
        assert getattr(cute, name, getattr(cutlass, name, None)) is obj or name in ("Tiler", "Int", "T"), name
    assert set(typing_mod.Int.__args__) == {int, cute.Integer}  # an int or a DSL integer
    for name in ("Int32", "Float32", "Boolean", "Pointer", "Tensor", "Layout", "Shape", "Int8", "Int64",
                 "Float8E4M3FN", "Float16", "BFloat16", "Numeric", "Constexpr"):
        assert name in typing_mod.__all__
    ns = {}
    exec("from warpweave.cute.typing import *", ns)  # noqa: S102 - the star import CuTe DSL programs use
    assert ns["Int32"] is cute.Int32 and ns["Pointer"] is cute.Pointer


def _gather_kernel():
    @cute.kernel
    def gather(addrs: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        p = cute.make_ptr(cutlass.Float32, addrs[tidx], cute.AddressSpace.gmem, assumed_align=4)
        src = cute.make_tensor(p, cute.make_layout(4))
        out[tidx] = src[0] + src[3]

    @cute.jit
    def run(addrs: cute.Tensor, out: cute.Tensor):
        gather(addrs, out).launch(grid=[1, 1, 1], block=[32, 1, 1])
    return run


def test_make_ptr_in_a_kernel_loads_through_global_memory():
    with target("sm_80"):
        f = cute.compile(_gather_kernel(), from_dlpack(np.zeros(32, np.int64)), from_dlpack(np.zeros(32, np.float32)))
    ptx = f.info["ptx"]
    # The address read from the table is used as a global pointer: two global loads of it, no generic ones.
    assert len(re.findall(r"ld\.global(\.nc)?\.[bf]32", ptx)) == 2, ptx
    assert not re.search(r"\bld\.[bf]32", ptx)


def test_make_ptr_errors_name_the_users_line():
    @cute.kernel
    def bad(x: cute.Tensor):
        cute.make_ptr(cutlass.Float32, x[0], cute.AddressSpace.gmem)  # a float is no address

    @cute.jit
    def run_bad(x: cute.Tensor):
        bad(x).launch(grid=[1, 1, 1], block=[1, 1, 1])

    @cute.jit
    def host_side(x: cute.Tensor):
        cute.make_ptr(cutlass.Float32, 0x1000)

    with target("sm_80"):
        with pytest.raises(DSLError, match="the address is an integer") as e:
            cute.compile(run_bad, from_dlpack(np.zeros(4, np.float32)))
        assert "test_cute_mode_names.py" in str(e.value)
        with pytest.raises(DSLError, match="host side"):
            cute.compile(host_side, from_dlpack(np.zeros(4, np.float32)))
    # Outside any function it is the runtime pointer of cute.runtime.make_ptr.
    p = cute.make_ptr(cutlass.Float32, 0x1000, assumed_align=16)
    assert p.address == 0x1000 and p.assumed_align == 16


@requires_gpu
def test_make_ptr_gathers_on_the_gpu():
    import torch

    bufs = [torch.randn(4, device="cuda") for _ in range(32)]
    addrs = torch.tensor([b.data_ptr() for b in bufs], dtype=torch.int64, device="cuda")
    out = torch.zeros(32, device="cuda")
    _gather_kernel()(from_dlpack(addrs), from_dlpack(out))
    torch.cuda.synchronize()
    want = torch.stack([b[0] + b[3] for b in bufs])
    assert torch.equal(out, want)
