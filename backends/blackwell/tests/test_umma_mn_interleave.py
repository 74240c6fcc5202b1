"""MN-major operands without a swizzle (the MN_INTER layout atom): the UMMA descriptor's interleaved canonical form,
core matrices of 8 K-rows of 16 bytes, the next along MN SBO bytes on and the next along K LBO bytes on. CuTe
DSL's mixed-input FMHA decode reads its P tile (N = 8 heads, 16-bit) this way as B of the second GEMM."""
from __future__ import annotations

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from test_backend_blackwell import blackwell  # noqa: F401


def _form(blackwell, n, layout=None):
    from warpweave import ext
    from warpweave.backends.blackwell import tcgen05_mma
    from warpweave.cute.nvgpu import tcgen05
    import warpweave.utils.blackwell_helpers as sm100

    tm = sm100.make_trivial_tiled_mma(cutlass.Float16, cutlass.Float16, tcgen05.OperandMajorMode.K,
                                      tcgen05.OperandMajorMode.MN, cutlass.Float32, tcgen05.CtaGroup.ONE, (128, n))
    staged = layout if layout is not None else sm100.make_smem_layout_b(tm, (128, n, 64), cutlass.Float16, 1)
    tile = cute.make_tensor(ext.make_pointer(None, cutlass.Float16, "smem", 1024), staged)
    return staged, tcgen05_mma.UmmaSmemDescriptorKind().form("b", tile[(None, 0, 0, 0)])


@pytest.mark.parametrize("n", [8, 24])
def test_interleaved_mn_major_offsets_are_the_core_matrix_steps(blackwell, n):
    staged, (major, swizzle, lbo, sbo) = _form(blackwell, n)
    assert (major, swizzle) == ("MN", 0), staged

    def byte_offset(mn, k):   # of element (mn, k) of the first instruction's tile, 2 bytes an element
        return 2 * cute.crd2idx(((mn, k), 0, 0, 0), staged.outer)

    # A core matrix is 8 values of MN by 8 of K, 128 contiguous bytes. SBO is the step to the next one along MN
    # (none with N = 8: not read, 0), LBO the step along K.
    for k in range(8):
        for mn in range(8):
            assert byte_offset(mn, k) == 2 * mn + 16 * k
    assert sbo == (byte_offset(8, 0) if n > 8 else 0) and lbo == byte_offset(0, 8)
    assert lbo == 128 and sbo == (1024 if n > 8 else 0)   # make_smem_layout_b stacks the K core matrices first


def test_a_mn_contiguous_tile_of_another_form_is_refused(blackwell):
    plain = cute.make_layout(((24, 16), 1, 4, 1), stride=((1, 24), 0, 384, 0))   # column-major, no core matrices
    with pytest.raises(Exception, match=r"is not a layout tcgen05\.mma reads: element \(0, 1\) is at 24"):
        _form(blackwell, 24, plain)
