"""What the task-scheduling GEMM tutorials reach for besides the task API: a numeric subtype (a descriptor built as
an Int64) assigned in a dynamic if keeps the variable's type, a Vector of a tensor's loaded values, a tiled MMA's
copy with fields of its own (with_), a pointer made at the constant address 0 (a placeholder base) as aligned as
any buffer, tcgen05.tile_to_mma_shape (the layout make_smem_layout_a builds), and mbarrier arrivals with a count."""
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import target


class Desc(cutlass.Int64):
    """A 64-bit descriptor, as the experimental primitives' descriptor builders return."""


def _compile(kernel_body, arch="sm_100a"):
    @cute.kernel
    def k(x: cute.Tensor):
        kernel_body(x)

    @cute.jit
    def host(x: cute.Tensor):
        k(x).launch(grid=[1, 1, 1], block=[128, 1, 1])

    with target(arch):
        return cute.compile(host, from_dlpack(np.zeros(16, np.int64)))


def test_a_subtype_assigned_in_a_dynamic_if_keeps_the_variables_type():
    seen = {}

    @cute.jit  # rewritten: its `if` on a runtime value is a dynamic if
    def body(x):
        tidx, _, _ = cute.arch.thread_idx()
        d = cutlass.Int64(0)
        if tidx == 0:
            d = Desc(cutlass.Int64(tidx) + 5)
        seen["type"] = type(d)
        x[0] = d

    _compile(body)
    assert seen["type"] is cutlass.Int64


def test_a_vector_of_a_tensors_loaded_values():
    seen = {}

    def body(x):
        frag = cute.make_rmem_tensor(cute.make_layout((4, 2)), cutlass.Float32)
        frag.fill(1.5)
        v = cutlass.Vector(frag.load())
        seen["v"] = (v.dtype, v.shape)

    _compile(body)
    assert seen["v"] == (cutlass.Float32, (8,))


def test_with_gives_a_tiled_mma_whose_fields_are_its_own():
    import warpweave.utils.blackwell_helpers as sm100
    from warpweave.cute.nvgpu import tcgen05

    with target("sm_100a"):
        mma = sm100.make_trivial_tiled_mma(cutlass.Float16, tcgen05.OperandMajorMode.K, tcgen05.OperandMajorMode.K,
                                           cutlass.Float32, tcgen05.CtaGroup.ONE, (128, 128))
        mma.set(tcgen05.Field.ACCUMULATE, False)
        copy = mma.with_()
        copy.set(tcgen05.Field.ACCUMULATE, True)
        assert mma.get(tcgen05.Field.ACCUMULATE) is False and copy.get(tcgen05.Field.ACCUMULATE) is True
        assert copy.atom is not mma.atom and copy.thr_layout_vmnk == mma.thr_layout_vmnk


def test_a_pointer_at_a_known_address_takes_any_swizzle():
    """make_ptr(dtype, addr, smem, assumed_align=128) under a 128-byte swizzle: 0 and 2048 are aligned to its 1024
    bytes; 128 is not, and its low bits become the layout's offset (the swizzle permutes the absolute address)."""
    def at(addr):
        def body(x):
            p = cute.make_ptr(cutlass.Float16, addr, cute.AddressSpace.smem, assumed_align=128)
            cute.make_tensor(cute.recast_ptr(p, cute.make_swizzle(3, 4, 3)), cute.make_layout((64, 8)))
        return body

    _compile(at(0))
    _compile(at(2048))
    _compile(at(128))  # below the swizzle's span: the address's low bits become the layout's offset


def test_tile_to_mma_shape_is_the_layout_of_make_smem_layout_a():
    import warpweave.utils.blackwell_helpers as sm100
    from warpweave.cute.nvgpu import tcgen05

    with target("sm_100a"):
        mma = sm100.make_trivial_tiled_mma(cutlass.Float16, tcgen05.OperandMajorMode.K, tcgen05.OperandMajorMode.K,
                                           cutlass.Float32, tcgen05.CtaGroup.ONE, (128, 128))
        tiler = (128, 128, 64)
        expected = sm100.make_smem_layout_a(mma, tiler, cutlass.Float16, 3)
        atom = tcgen05.make_smem_layout_atom(tcgen05.SmemLayoutAtomKind.K_SW128, cutlass.Float16)
        shape = cute.append(mma.partition_shape_A((tiler[0], tiler[2])), 3)
        got = tcgen05.tile_to_mma_shape(atom, shape, order=(0, 1, 2))
        assert str(got) == str(expected)
        for i in range(0, cute.size(got.outer), 97):
            assert got.outer(i) == expected.outer(i)
        with pytest.raises(Exception, match=r"\(\(MMA MN, MMA K\), rest MN, rest K"):
            tcgen05.tile_to_mma_shape(atom, (128, 64, 3))


def test_an_arrival_with_a_count():
    from warpweave.experimental import primitives as prims

    def body(x):
        bar = cutlass.utils.SmemAllocator().allocate_array(cutlass.Int64, 1, byte_alignment=8)
        prims.mbarrier_arrive(bar, count=3)
        prims.mbarrier_arrive(prims.mapa(bar, 1), count=2, scope=prims.MemScope.CLUSTER)

    ptx = _compile_cluster(body).ptx
    # the count is the instruction's last operand, in a register
    assert re.search(r"mbarrier\.arrive\.release\.cta\.shared::cta\.b64 %rd\d+, \[%r\d+\], %r\d+;", ptx), ptx
    assert re.search(r"mbarrier\.arrive\.release\.cluster\.shared::cluster\.b64 _, \[%r\d+\], %r\d+;", ptx), ptx


def _compile_cluster(kernel_body):
    @cute.kernel
    def k(x: cute.Tensor):
        kernel_body(x)

    @cute.jit
    def host(x: cute.Tensor):
        k(x).launch(grid=[2, 1, 1], block=[128, 1, 1], cluster=[2, 1, 1])

    with target("sm_90a"):
        return cute.compile(host, from_dlpack(np.zeros(16, np.int64)))
