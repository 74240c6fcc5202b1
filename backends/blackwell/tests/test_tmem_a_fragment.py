"""make_fragment_A of a tiled tcgen05 MMA whose A lives in tensor memory (OperandSource.TMEM), from a partition shape:
row m of the instruction's A in the lane its row of D takes, K values packed 32 / width to a 32-bit column (lane
steps of (32 / width) << 16 in element offsets), further modes side by side in columns after it (a mode of extent 1
taking none); the layouts CuTe DSL 4.8.1 makes for the same shapes."""
from __future__ import annotations

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.nvgpu import tcgen05 as t

from dsl_helpers import target


def _fragment(dtype, m, n, cta, shape=None, tile=None, stages=None):
    got = {}

    @cute.jit
    def f():
        g = t.CtaGroup.ONE if cta == 1 else t.CtaGroup.TWO
        if dtype.width == 16:
            op = t.MmaF16BF16Op(dtype, cutlass.Float32, (m, n, 16), g, t.OperandSource.TMEM, t.OperandMajorMode.K,
                                t.OperandMajorMode.K)
        else:
            op = t.MmaF8F6F4Op(dtype, cutlass.Float32, (m, n, 32), g, t.OperandSource.TMEM, t.OperandMajorMode.K,
                               t.OperandMajorMode.K)
        tm = cute.make_tiled_mma(op)
        s = shape if shape is not None else cute.append(tm.partition_shape_A(tile), stages)
        a = tm.make_fragment_A(s)
        got.update(layout=str(a.layout), cols=t.find_tmem_tensor_col_offset(a), dtype=a.element_type)

    with target("sm_100a"):
        cute.compile(f)
    return got


@pytest.mark.parametrize("dtype, m, n, cta, tile, stages, layout, cols", [
    (cutlass.BFloat16, 128, 64, 1, (128, 64), 2, "((128,16),1,4,2):((131072,1),0,16,64)", 64),
    (cutlass.Float16, 128, 64, 1, (256, 64), 3, "((128,16),2,4,3):((131072,1),16,32,128)", 192),
    (cutlass.Float16, 256, 128, 2, (256, 64), 3, "((128,16),1,4,3):((131072,1),0,16,64)", 96),
    (cutlass.Float16, 64, 64, 1, (128, 32), 3, "(((16,4),16),2,2,3):(((131072,4194304),1),16,32,64)", 96),
    (cutlass.Float8E4M3FN, 128, 64, 1, (128, 64), 2, "((128,32),1,2,2):((262144,1),0,32,64)", 32),
])
def test_a_fragment_from_a_partition_shape_is_laid_out_as_cute_dsl_does(dtype, m, n, cta, tile, stages, layout, cols):
    got = _fragment(dtype, m, n, cta, tile=tile, stages=stages)
    assert got == dict(layout=layout, cols=cols, dtype=dtype)


def test_nested_modes_after_the_instructions_are_compact_in_columns():
    got = _fragment(cutlass.Float16, 128, 64, 1, shape=((128, 16), 1, (4, 1, 2), (3, 2)))
    assert got["layout"] == "((128,16),1,(4,1,2),(3,2)):((131072,1),0,(16,0,64),(128,384))" and got["cols"] == 384


def test_a_fragment_refuses_what_tensor_memory_cannot_hold_or_a_shape_of_another_instruction():
    with pytest.raises(ValueError, match="columns; a CTA has 512"):
        _fragment(cutlass.Float16, 128, 64, 1, shape=((128, 16), 1, 8, 9))
    with pytest.raises(ValueError, match="does not start with one instruction's A"):
        _fragment(cutlass.Float16, 128, 64, 1, shape=((64, 16), 1, 2))


def test_a_fragment_of_a_tensor_memory_tensor_is_laid_out_from_its_shape_at_its_address():
    """Attention's backward pass makes P's fragment from a tensor-memory tensor of A's shared-memory layout: CuTe DSL
    4.8.1 gives ((128,16),1,(4,2),1):((131072,1),0,(16,64),0) for this one, the strides of the given layout unused."""
    got = {}

    @cute.kernel
    def k():
        op = t.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (128, 128, 16), t.CtaGroup.ONE, t.OperandSource.TMEM,
                            t.OperandMajorMode.K, t.OperandMajorMode.MN)
        tm = cute.make_tiled_mma(op)
        smem_like = cute.make_layout(((128, 16), 1, (4, 2), 1), stride=((64, 1), 0, (16, 8192), 0))
        ptr = cute.make_ptr(cutlass.Float16, 0, cute.AddressSpace.tmem)
        p = cute.make_tensor(ptr, smem_like)
        a = tm.make_fragment_A(p)
        got.update(layout=str(a.layout), same_place=a.iterator is p.iterator)

    @cute.jit
    def f():
        k().launch(grid=(1, 1, 1), block=(128, 1, 1))

    with target("sm_100a"):
        cute.compile(f)
    assert got == dict(layout="((128,16),1,(4,2),1):((131072,1),0,(16,64),0)", same_place=True)
