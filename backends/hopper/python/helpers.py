"""warpweave.utils.hopper_helpers: the Hopper choices a GEMM makes, with CuTe DSL's names.

    import warpweave.utils.hopper_helpers as sm90_utils
    tiled_mma = sm90_utils.make_trivial_tiled_mma(a_dtype, b_dtype, a_major, b_major, acc_dtype, (2, 1, 1),
                                                  tiler_mn=(64, 128))
    sA_layout = sm90_utils.make_smem_layout_a(a_layout, (128, 128, 64), a_dtype, num_stages)

Shared-memory layouts are tiled from the widest swizzled atom whose rows divide the tile's major mode, K-major
tiles atom after atom along MN first, MN-major ones along K first, so that each stage is a few dense TMA boxes
and every wgmma tile is one of the canonical layouts its descriptor describes.
"""
from __future__ import annotations

import warpweave.cute as cute
from warpweave import ext
from warpweave.utils import LayoutEnum

from .mma_smem_layouts import OperandMajorMode, SmemLayoutAtomKind, smem_layout_atom_kind  # noqa: F401
from .wgmma import OperandSource, make_smem_layout_atom  # noqa: F401

SMEM_CAPACITY = {"sm90": 232448}


def _op_classes():
    from warpweave.cute.nvgpu import warpgroup

    return warpgroup.MmaF16BF16Op, warpgroup.MmaF8Op


def make_trivial_tiled_mma(a_dtype, b_dtype, a_leading_mode: OperandMajorMode, b_leading_mode: OperandMajorMode,
                           acc_dtype, atom_layout_mnk, tiler_mn, a_source: OperandSource = OperandSource.SMEM):
    """A tiled MMA of one wgmma atom of shape (64, tiler_mn[1], 256 bits of K) laid out by atom_layout_mnk."""
    tiler_mn = tuple(tiler_mn)
    if len(tiler_mn) != 2 or tiler_mn[0] != 64:
        raise ext.user_error(f"make_trivial_tiled_mma: tiler_mn is (64, N) (a warpgroup MMA covers 64 rows), got "
                             f"{tiler_mn}", ext.DSLValueError)
    n = tiler_mn[1]
    if n % 8 or not 8 <= n <= 256:
        raise ext.user_error(f"make_trivial_tiled_mma: N={n} must be a multiple of 8 from 8 to 256",
                             ext.DSLValueError)
    F16, F8 = _op_classes()
    if a_dtype.width == 16:
        if b_dtype is not a_dtype:
            raise ext.user_error(f"make_trivial_tiled_mma: 16-bit A and B must be of one type, got "
                                 f"{a_dtype.__name__} and {b_dtype.__name__}", ext.DSLTypeError)
        op = F16(a_dtype, acc_dtype, (64, n, 16), a_source, a_leading_mode, b_leading_mode)
    elif a_dtype.width == 8 and a_dtype.is_float:
        op = F8(a_dtype, b_dtype, acc_dtype, (64, n, 32), a_source, a_leading_mode, b_leading_mode)
    else:
        raise ext.user_error(f"make_trivial_tiled_mma: no warpgroup MMA for {a_dtype.__name__} inputs here",
                             ext.DSLTypeError)
    return cute.make_tiled_mma(op, atom_layout_mnk)


def get_smem_layout_atom(layout: LayoutEnum, element_type, major_mode_size: int):
    """The SmemLayoutAtomKind for an operand whose contiguous mode has major_mode_size elements in the tile."""
    return smem_layout_atom_kind(OperandMajorMode.K if layout == LayoutEnum.ROW_MAJOR else OperandMajorMode.MN,
                                 element_type, major_mode_size)


def _staged(layout: LayoutEnum, rows: int, cols: int, dtype, stages: int, shape=None, order=None):
    # (rows, cols) with cols the contiguous mode when ROW_MAJOR, rows when COL_MAJOR; the atom tiled to
    # (rows, cols, stages), or to `shape` (rows and cols first, then stages and any further modes) in `order`
    k_major = layout == LayoutEnum.ROW_MAJOR
    kind = get_smem_layout_atom(layout, dtype, cols if k_major else rows)
    atom = make_smem_layout_atom(kind, dtype)
    shape = (rows, cols, stages) if shape is None else shape
    if order is None:
        order = ((0, 1) if k_major else (1, 0)) + tuple(range(2, len(shape)))
    return cute.tile_to_shape(atom, shape, order)


def make_smem_layout_a(a_layout: LayoutEnum, mma_tiler_mnk, a_dtype, num_stages: int):
    """A's (M, K, stages) shared-memory layout for a tile of mma_tiler_mnk."""
    return _staged(a_layout, mma_tiler_mnk[0], mma_tiler_mnk[2], a_dtype, num_stages)


def make_smem_layout_b(b_layout: LayoutEnum, mma_tiler_mnk, b_dtype, num_stages: int):
    """B's (N, K, stages) shared-memory layout."""
    return _staged(b_layout, mma_tiler_mnk[1], mma_tiler_mnk[2], b_dtype, num_stages)


def make_smem_layout_epi(epi_dtype, epi_layout: LayoutEnum, epi_tile, epi_stage: int, smem_trg_shape=None,
                         smem_order=None):
    """The epilogue's (M, N, stages) shared-memory layout for C tiles of epi_tile. With smem_trg_shape, the atom
    (chosen for epi_tile's contiguous mode) is tiled to that shape instead, e.g. (M, N, stages, warpgroups) for
    one buffer per consumer warpgroup; smem_order is the order its modes are tiled in (by default the contiguous
    one of M and N first, then the others in turn)."""
    rows, cols = (cute.size(t) if not isinstance(t, int) else t for t in tuple(epi_tile)[:2])
    shape = None
    if smem_trg_shape is not None:
        shape = tuple(smem_trg_shape.shape if hasattr(smem_trg_shape, "shape") else smem_trg_shape)
        if len(shape) < 2:
            raise ext.user_error(f"make_smem_layout_epi: smem_trg_shape has M and N first, got {shape}",
                                 ext.DSLValueError)
    if smem_order is not None:
        n = len(shape) if shape is not None else 3
        if sorted(smem_order) != list(range(n)):
            raise ext.user_error(f"make_smem_layout_epi: smem_order must order the {n} modes of the target shape "
                                 f"(a permutation of 0..{n - 1}), got {tuple(smem_order)}", ext.DSLValueError)
        smem_order = tuple(smem_order)
    return _staged(epi_layout, rows, cols, epi_dtype, epi_stage, shape, smem_order)


def compute_tile_shape_or_override(tile_shape_mnk, element_type, is_cooperative: bool = False,
                                   epi_tile_override=None):
    """The epilogue's sub-tile of the CTA tile: the override if given, else (M of one warpgroup or two, up to 32
    columns)."""
    if epi_tile_override is not None:
        return tuple(epi_tile_override)
    m = min(tile_shape_mnk[0], 128 if is_cooperative else 64)
    n = min(tile_shape_mnk[1], 32 if element_type.width >= 16 else 64)
    return (m, n)


def sm90_get_smem_store_op(layout_d: LayoutEnum, elem_ty_d, elem_ty_acc, *, loc=None, ip=None):
    """The copy atom that writes accumulators (converted to elem_ty_d) into shared memory: stmatrix x4 for 16-bit
    D (transposed for an M-major D), a universal copy of elem_ty_d otherwise."""
    if elem_ty_d.width == 16:
        from warpweave.cute.nvgpu import warp

        return cute.make_copy_atom(warp.StMatrix8x8x16bOp(layout_d == LayoutEnum.COL_MAJOR, 4), elem_ty_d)
    return cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), elem_ty_d)


get_smem_store_op = sm90_get_smem_store_op


def get_smem_capacity_in_bytes(arch: str = "sm90") -> int:
    return SMEM_CAPACITY.get(arch.replace("_", ""), SMEM_CAPACITY["sm90"])


__all__ = ["make_trivial_tiled_mma", "get_smem_layout_atom", "make_smem_layout_a", "make_smem_layout_b",
           "make_smem_layout_epi", "compute_tile_shape_or_override", "get_smem_capacity_in_bytes",
           "sm90_get_smem_store_op", "get_smem_store_op",
           "OperandMajorMode", "OperandSource", "SmemLayoutAtomKind", "make_smem_layout_atom"]
