"""warpweave.utils.blackwell_helpers: the Blackwell choices a tcgen05 GEMM makes, with CuTe DSL's names.

    import warpweave.utils.blackwell_helpers as sm100_utils
    tiled_mma = sm100_utils.make_trivial_tiled_mma(ab_dtype, a_major, b_major, acc_dtype, cta_group, (128, 256))
    sA_layout = sm100_utils.make_smem_layout_a(tiled_mma, (128, 256, 64), ab_dtype, num_stages)

Shared-memory layouts of A and B are tiled from the widest swizzled atom whose rows divide the tile's major mode
(K-major tiles atom after atom along MN first, MN-major ones along K first) and then viewed in the MMA's shape
((MN of one instruction for this CTA, K of one instruction), rest MN, rest K, stages), so that each instruction's
tile is one canonical layout its UMMA descriptor describes and each stage is a few dense TMA boxes.
"""
from __future__ import annotations

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import ext
from warpweave.backends.hopper.mma_smem_layouts import smem_layout_atom_kind
from warpweave.utils import LayoutEnum

from .tcgen05_mma import (BLOCK_SCALED_FORMS, MXF8F6F4_TYPES, CtaGroup, OperandMajorMode, OperandSource,  # noqa: F401
                          SmemLayoutAtomKind, make_smem_layout_atom)
from .tma import cluster_shape_to_tma_atom_A, cluster_shape_to_tma_atom_B, cluster_shape_to_tma_atom_SFB  # noqa: F401
from .tmem_layouts import DATAPATHS, datapath

SMEM_CAPACITY = {"sm100": 232448}


def _tcgen05():
    from warpweave.cute.nvgpu import tcgen05

    return tcgen05


def make_trivial_tiled_mma(ab_dtype, *args, loc=None, ip=None, **kwargs):
    """A tiled MMA of one tcgen05.mma atom of shape (mma_tiler_mn, 256 bits of K): kind::f16 for Float16/BFloat16,
    kind::tf32 for TFloat32/Float32, kind::i8 for Int8/Uint8, kind::f8f6f4 for 8-bit floats.

    make_trivial_tiled_mma(ab_dtype, a_leading_mode, b_leading_mode, acc_dtype, cta_group, mma_tiler_mn[, a_source])
    or, with A's and B's types apart, (a_dtype, b_dtype, a_leading_mode, b_leading_mode, acc_dtype, cta_group,
    mma_tiler_mn[, a_source]); A and B then have the same type."""
    if args and isinstance(args[0], type) and issubclass(args[0], cutlass.Numeric):
        b_dtype, args = args[0], args[1:]
        if b_dtype is not ab_dtype:
            raise ext.user_error(f"make_trivial_tiled_mma: A is {ab_dtype.__name__} and B {b_dtype.__name__}; the "
                                 "tcgen05 MMAs here take one type for both", ext.DSLTypeError)
    return _trivial_tiled_mma(ab_dtype, *args, **kwargs)


def _trivial_tiled_mma(ab_dtype, a_leading_mode: OperandMajorMode, b_leading_mode: OperandMajorMode, acc_dtype,
                       cta_group, mma_tiler_mn, a_source: OperandSource = OperandSource.SMEM):
    t = _tcgen05()
    mn = tuple(mma_tiler_mn)
    if len(mn) != 2:
        raise ext.user_error(f"make_trivial_tiled_mma: mma_tiler_mn is (M, N), got {mma_tiler_mn}", ext.DSLValueError)
    if cta_group not in (1, 2):
        raise ext.user_error(f"make_trivial_tiled_mma: cta_group is CtaGroup.ONE or TWO, got {cta_group!r}",
                             ext.DSLTypeError)
    group = CtaGroup(cta_group)
    if ab_dtype in (cutlass.Float16, cutlass.BFloat16):
        op = t.MmaF16BF16Op(ab_dtype, acc_dtype, (*mn, 16), group, a_source, a_leading_mode, b_leading_mode)
    elif ab_dtype in (cutlass.TFloat32, cutlass.Float32):
        if acc_dtype is not cutlass.Float32:
            raise ext.user_error("make_trivial_tiled_mma: tf32 MMAs accumulate in Float32", ext.DSLTypeError)
        op = t.MmaTF32Op((*mn, 8), group, a_source, a_leading_mode, b_leading_mode)
    elif ab_dtype in (cutlass.Int8, cutlass.Uint8):
        if acc_dtype is not cutlass.Int32:
            raise ext.user_error("make_trivial_tiled_mma: 8-bit integer MMAs accumulate in Int32", ext.DSLTypeError)
        op = t.MmaI8Op(ab_dtype, (*mn, 32), group, a_source, a_leading_mode, b_leading_mode)
    elif ab_dtype in (cutlass.Float8E4M3FN, cutlass.Float8E5M2):
        op = t.MmaF8F6F4Op(ab_dtype, acc_dtype, (*mn, 32), group, a_source, a_leading_mode, b_leading_mode)
    else:
        raise ext.user_error(f"make_trivial_tiled_mma: no tcgen05 MMA for {ab_dtype.__name__} inputs here",
                             ext.DSLTypeError)
    return cute.make_tiled_mma(op)


def make_blockscaled_trivial_tiled_mma(ab_dtype, *args, loc=None, ip=None, **kwargs):
    """A tiled MMA of one block-scaled tcgen05.mma atom of shape (mma_tiler_mn, 256 bits of K): kind::mxf4nvf4
    scale_vec::4X for Float4E2M1FN A and B with a scale factor per 16 values (Float8E4M3FN or Float8E8M0FNU),
    kind::mxf4 scale_vec::2X for Float4E2M1FN with a Float8E8M0FNU factor per 32, kind::mxf8f6f4 scale_vec::1X for
    Float8E4M3FN or Float8E5M2 A and B of one type (MmaMXF8Op), or A and B of any of its formats (8-bit, or
    Float6E2M3FN, Float6E3M2FN, Float4E2M1FN, K- or MN-major: MmaMXF8F6F4Op) with a Float8E8M0FNU factor per 32.

    make_blockscaled_trivial_tiled_mma(ab_dtype, a_leading_mode, b_leading_mode, sf_dtype, sf_vec_size, cta_group,
    mma_tiler_mn[, a_source]) or, with A's and B's types apart, (a_dtype, b_dtype, a_leading_mode, ...)."""
    if args and isinstance(args[0], type) and issubclass(args[0], cutlass.Numeric):
        b_dtype, args = args[0], args[1:]
    else:
        b_dtype = ab_dtype
    return _blockscaled_tiled_mma(ab_dtype, b_dtype, *args, **kwargs)


def _blockscaled_op(t, a_dtype, b_dtype, a_leading_mode, b_leading_mode, sf_dtype, sf_vec_size, mn, cta_group,
                    a_source):
    """The block-scaled op the types and the scale factors' vector size select (CuTe DSL's choice)."""
    fp4, fp8 = cutlass.Float4E2M1FN, (cutlass.Float8E4M3FN, cutlass.Float8E5M2)
    where = "make_blockscaled_trivial_tiled_mma"
    if a_dtype is fp4 and b_dtype is fp4:
        if a_leading_mode != OperandMajorMode.K or b_leading_mode != OperandMajorMode.K:
            raise ext.user_error(f"{where}: Float4E2M1FN A and B select kind::mxf4 or kind::mxf4nvf4, which cannot "
                                 "transpose their operands: both must be K-major (OperandMajorMode.K)",
                                 ext.DSLValueError)
        if sf_vec_size == 16:
            return t.MmaMXF4NVF4Op(sf_dtype, (*mn, 64), CtaGroup(cta_group), a_source)
        if sf_vec_size == 32 and sf_dtype is cutlass.Float8E8M0FNU:
            return t.MmaMXF4Op((*mn, 64), CtaGroup(cta_group), a_source)
    elif a_dtype in MXF8F6F4_TYPES and b_dtype in MXF8F6F4_TYPES and sf_vec_size == 32 \
            and sf_dtype is cutlass.Float8E8M0FNU:
        if a_dtype is b_dtype and a_dtype in fp8:
            return t.MmaMXF8Op(a_dtype, (*mn, 32), CtaGroup(cta_group), a_source, a_leading_mode, b_leading_mode)
        return t.MmaMXF8F6F4Op(a_dtype, b_dtype, (*mn, 32), CtaGroup(cta_group), a_source, a_leading_mode,
                               b_leading_mode)
    raise ext.user_error(
        f"{where}: {a_dtype.__name__} x {b_dtype.__name__} with a {getattr(sf_dtype, '__name__', sf_dtype)} scale "
        f"factor per {sf_vec_size} values is none of this backend's block-scaled MMAs: {BLOCK_SCALED_FORMS}",
        ext.DSLTypeError)


def _blockscaled_tiled_mma(a_dtype, b_dtype, a_leading_mode: OperandMajorMode, b_leading_mode: OperandMajorMode,
                           sf_dtype, sf_vec_size: int, cta_group, mma_tiler_mn,
                           a_source: OperandSource = OperandSource.SMEM):
    t = _tcgen05()
    mn = tuple(mma_tiler_mn)
    if len(mn) != 2:
        raise ext.user_error(f"make_blockscaled_trivial_tiled_mma: mma_tiler_mn is (M, N), got {mma_tiler_mn}",
                             ext.DSLValueError)
    if cta_group not in (1, 2):
        raise ext.user_error("make_blockscaled_trivial_tiled_mma: cta_group is CtaGroup.ONE or TWO, got "
                             f"{cta_group!r}", ext.DSLTypeError)
    return cute.make_tiled_mma(_blockscaled_op(t, a_dtype, b_dtype, a_leading_mode, b_leading_mode, sf_dtype,
                                               sf_vec_size, mn, cta_group, a_source))


def get_smem_layout_atom_ab(major_mode: OperandMajorMode, element_type, smem_shape_mn_k, *, loc=None, ip=None):
    """The SmemLayoutAtomKind for an (MN, K) tile of element_type whose contiguous mode is major_mode."""
    mn, k = smem_shape_mn_k
    return smem_layout_atom_kind(major_mode, element_type, k if major_mode == OperandMajorMode.K else mn)


def make_smem_layout(leading_mode: OperandMajorMode, smem_tile_shape, dtype, num_stages: int = 1, *, loc=None,
                     ip=None):
    """A plain (MN, K, stages) shared-memory layout of a tile whose contiguous mode is leading_mode (K: mode 1, MN:
    mode 0), tiled from the widest swizzled atom whose rows divide that mode (as make_smem_layout_a/b tile theirs,
    without their MMA-shaped view): what a TMA copy of a plain tile takes."""
    mn, k = (cute.size(x) for x in smem_tile_shape)
    if not isinstance(num_stages, int) or num_stages < 1:
        raise ext.user_error(f"make_smem_layout: num_stages is a positive integer, got {num_stages!r}",
                             ext.DSLValueError)
    kind = get_smem_layout_atom_ab(leading_mode, dtype, (mn, k))
    atom = make_smem_layout_atom(kind, dtype)
    k_major = leading_mode == OperandMajorMode.K
    return cute.tile_to_shape(atom, (mn, k, num_stages), (0, 1, 2) if k_major else (1, 0, 2))


def tile_to_mma_shape(atom, mma_tile_shape, order=(0, 1, 2), *, loc=None, ip=None):
    """cute.nvgpu.tcgen05.tile_to_mma_shape: a shared-memory layout atom tiled to an MMA-partitioned tile shape
    ((MMA MN, MMA K), rest MN, rest K[, stages]): the atom tiles the plain (MN, K, stages) tile in `order` (the
    order of its modes, (0, 1, 2) for a K-major atom), and the result is that tiling seen in the partitioned
    shape, as the MMA's operand partitions index it."""
    shape = tuple(mma_tile_shape)
    if len(shape) < 3 or not isinstance(shape[0], tuple) or len(shape[0]) != 2:
        raise ext.user_error(f"tile_to_mma_shape: the shape is ((MMA MN, MMA K), rest MN, rest K[, stages]) as "
                             f"partition_shape_A/B give it, got {mma_tile_shape}", ext.DSLValueError)
    (ma, ka), rmn, rk = (cute.size(x) for x in shape[0]), cute.size(shape[1]), cute.size(shape[2])
    stages = cute.size(shape[3:]) if len(shape) > 3 else 1
    mn, k = ma * rmn, ka * rk
    staged = cute.tile_to_shape(atom, (mn, k, stages), tuple(order))
    # ((ma, ka), rmn, rk, stages) -> the (mn, k, stage) index of the plain tiling
    view = cute.make_layout(((ma, ka), rmn, rk, stages), stride=((1, mn), ma, mn * ka, mn * k))
    if len(shape) == 3:
        view = cute.make_layout(((ma, ka), rmn, rk), stride=((1, mn), ma, mn * ka))
    if hasattr(staged, "inner"):
        return cute.make_composed_layout(staged.inner, 0, cute.composition(staged.outer, view))
    return cute.composition(staged, view)


def _mma_shaped(tiled_mma, which: str, mma_tiler_mnk, dtype, stages: int, is_k_major=None):
    mode = (mma_tiler_mnk[0], mma_tiler_mnk[2]) if which == "A" else (mma_tiler_mnk[1], mma_tiler_mnk[2])
    part = tiled_mma.partition_shape_A(mode) if which == "A" else tiled_mma.partition_shape_B(mode)
    (ma, ka), rmn, rk = part[0], part[1], part[2]
    if is_k_major is None:
        major = tiled_mma.op.a_major_mode if which == "A" else tiled_mma.op.b_major_mode
    elif isinstance(is_k_major, bool):
        major = OperandMajorMode.K if is_k_major else OperandMajorMode.MN
    else:
        raise ext.user_error(f"make_smem_layout_{which.lower()}: is_k_major is True, False or None (the tiled MMA's "
                             f"major mode), got {is_k_major!r}", ext.DSLTypeError)
    kind = get_smem_layout_atom_ab(major, dtype, (ma * rmn, ka * rk))
    atom = make_smem_layout_atom(kind, dtype)
    order = (0, 1, 2) if major == OperandMajorMode.K else (1, 0, 2)
    return tile_to_mma_shape(atom, ((ma, ka), rmn, rk, stages), order)


def make_smem_layout_a(tiled_mma, mma_tiler_mnk, a_dtype, num_stages: int, *, is_k_major=None, loc=None, ip=None):
    """A's ((MMA M, MMA K), rest M, rest K, stages) shared-memory layout for an MMA tile of mma_tiler_mnk; K-major
    or M-major as the tiled MMA's A, or as is_k_major says (an operand kept in another major mode than the MMA
    reads it with)."""
    return _mma_shaped(tiled_mma, "A", mma_tiler_mnk, a_dtype, num_stages, is_k_major)


def make_smem_layout_b(tiled_mma, mma_tiler_mnk, b_dtype, num_stages: int, *, is_k_major=None, loc=None, ip=None):
    """B's ((MMA N, MMA K), rest N, rest K, stages) shared-memory layout (is_k_major as make_smem_layout_a's)."""
    return _mma_shaped(tiled_mma, "B", mma_tiler_mnk, b_dtype, num_stages, is_k_major)


def make_smem_layout_epi(epi_dtype, epi_layout: LayoutEnum, epi_tile, epi_stage: int, *, loc=None, ip=None):
    """The epilogue's (M, N, stages) shared-memory layout for C tiles of epi_tile (N-contiguous for a ROW_MAJOR C)."""
    m, n = (cute.size(x) for x in epi_tile)
    n_major = epi_layout == LayoutEnum.ROW_MAJOR
    kind = smem_layout_atom_kind(OperandMajorMode.K if n_major else OperandMajorMode.MN, epi_dtype, n if n_major else m)
    atom = make_smem_layout_atom(kind, epi_dtype)
    return cute.tile_to_shape(atom, (m, n, epi_stage), (0, 1, 2) if n_major else (1, 0, 2))


def compute_epilogue_tile_shape(cta_tile_shape, use_2cta_instrs: bool, layout_d: LayoutEnum, elem_ty_d, *,
                                layout_c=None, elem_ty_c=None, loc=None, ip=None):
    """The epilogue's sub-tile of this CTA's (M, N) tile: all of its rows (as the accumulator's lanes hold them:
    128, or 64 for a 64-row tile) and up to 32 columns (64 for 8-bit D), so that a sub-tile of C fits in
    registers and shared memory while the next one is loaded from tensor memory.

    With C (elem_ty_c: an epilogue that also reads a source tensor, e.g. D = alpha acc + beta C), each thread holds
    a sub-tile row of C beside its accumulators, so the sub-tile is as narrow as CuTe DSL's, by the wider of C and
    D: a 128-row sub-tile holds 64 bytes of it per row for tiles up to 128 columns, 128 bytes for wider ones, at
    most 64 columns (a Float32 C of a 128 x 128 tile: 16 columns, one .x16 load, rather than 32); a 64-row one as
    without C, for the wider type."""
    m, n = cta_tile_shape[0], cta_tile_shape[1]
    if elem_ty_c is None:
        return _epilogue_tile(m, n, elem_ty_d.width)
    width = max(elem_ty_c.width, elem_ty_d.width)
    if m < 128:
        return _epilogue_tile(m, n, width)
    return _fit(128, n, min(64, (512 if n <= 128 else 1024) // width))


def compute_epilogue_tile_size(cta_tile_m, cta_tile_n, d_major_n, d_width: int, *, loc=None, ip=None):
    """compute_epilogue_tile_shape's sub-tile from the tile's extents and D's element width in bits (d_major_n,
    whether D is N-major, does not change it: the sub-tile is whole rows of the accumulator either way)."""
    return _epilogue_tile(cta_tile_m, cta_tile_n, d_width)


def _epilogue_tile(m, n, d_width: int):
    return _fit(min(m, 128), n, 64 if d_width <= 8 else 32)


def _fit(tile_m, n, widest):
    """(tile_m, the widest sub-tile of at most `widest` columns that divides the n columns of the tile)."""
    tile_n = min(n, widest)
    while n % tile_n:
        tile_n //= 2
    return (tile_m, tile_n)


def get_tmem_load_op(cta_tile_shape, layout_d: LayoutEnum, elem_ty_d, elem_ty_acc, epi_tile, use_2cta_instrs: bool,
                     *, loc=None, ip=None):
    """The tensor-memory load atom of the epilogue: tcgen05.ld .32x32b (one accumulator row per lane) for the
    data paths that fill all 128 lanes (A, D: a row per lane; B: the pair's 64 rows per CTA in two lane halves, one
    per half of the columns, so a sub-tile's columns are split between them), .16x256b for layout F (M = 64:
    16 lanes of each warp); repeated over the sub-tile's columns (up to .x32)."""
    t = _tcgen05()
    m = cta_tile_shape[0]
    cta = 2 if use_2cta_instrs else 1
    # M is one CTA's share of the tile, as CuTe DSL's examples give it; a pair's whole MMA tile (FlashAttention
    # passes its MMA tiler, M = 256 for two CTAs) names the same data path
    dp = datapath(m * cta if (m * cta, cta) in DATAPATHS else m, cta)
    cols = cute.size(epi_tile[1]) * elem_ty_acc.width // 32
    if dp in ("A", "D", "B"):
        num = min(cols // 2 if dp == "B" else cols, 32)
        op = t.Ld32x32bOp(t.Repetition[f"x{num}"])
    else:
        num = max(1, min(cols // 8, 32))
        op = t.Ld16x256bOp(t.Repetition[f"x{num}"])
    return cute.make_copy_atom(op, elem_ty_acc)


def get_tmem_copy_properties(atom, *, loc=None, ip=None):
    """(data paths, bits, repetitions, packing) of a tensor-memory load or store atom (tcgen05.Ld*Op / St*Op): the
    lanes and bits per lane of its shape (.32x32b: 32 and 32, .16x256b: 16 and 256), its Repetition's count, and
    its Pack (loads) or Unpack (stores) mode, which is NONE here (the only mode these ops build)."""
    from .tmem import Pack, Unpack

    name = getattr(getattr(atom, "op", None), "python_name", "")
    ld = name.startswith("tcgen05.Ld")
    if not (ld or name.startswith("tcgen05.St")) or getattr(atom, "manifest", None) is None:
        raise ext.user_error(f"get_tmem_copy_properties: the atom is a tensor-memory load or store (a copy atom of "
                             f"tcgen05.Ld*Op or St*Op), got {atom!r}", ext.DSLValueError)
    _, _, _, shape, num = atom.manifest["id"].split(".")       # blackwell.tcgen05.<ld|st>.<lanes>x<bits>b.x<num>
    lanes, bits = shape.split("x")
    return int(lanes), int(bits.rstrip("b")), int(num[1:]), Pack.NONE if ld else Unpack.NONE


def get_smem_store_op(layout_d: LayoutEnum, elem_ty_d, elem_ty_acc, tiled_tmem_load=None, *, loc=None, ip=None):
    """The copy atom that writes the converted accumulators into the epilogue's shared-memory tile (a universal
    copy: each thread holds its row's values)."""
    return cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), elem_ty_d)


# Each operand's contiguous mode, by its major: (name, modes it may be major in).
_GEMM_OPERANDS = (("A", ("m", "k")), ("B", ("n", "k")))


def check_gemm_tma_alignment(m: int, n: int, k: int, a_dtype, b_dtype, d_dtype, a_major: str, b_major: str,
                             d_major, *, output_tensor_name: str = "D") -> None:
    """Refuses (cute.testing.CantImplementError) a GEMM whose operands TMA cannot move: a tensor map's rows are
    whole 16-byte units, so each operand's contiguous extent (K, or M / N where it is major there) is a multiple
    of 16 bytes; D's as well when it is given (d_dtype, d_major), for its TMA store."""
    from warpweave.cute.testing import CantImplementError

    extent = {"m": m, "n": n, "k": k}
    checks = [(f"{name} TMA load", major, modes, dtype)
              for (name, modes), major, dtype in zip(_GEMM_OPERANDS, (a_major, b_major), (a_dtype, b_dtype))]
    if d_dtype is not None:
        checks.append((f"{output_tensor_name} TMA store", d_major, ("m", "n"), d_dtype))
    for what, major, modes, dtype in checks:
        if major not in modes:
            raise CantImplementError(f"[alignment] {what}: the major mode is one of {modes}, got {major!r}")
        units = 128 // dtype.width if dtype.width < 128 else 1
        if extent[major] % units:
            raise CantImplementError(
                f"[alignment] {what} needs the contiguous {major.upper()} extent in whole 16-byte units: "
                f"{major.upper()}={extent[major]} of {dtype.__name__} is not a multiple of {units} elements")


def get_smem_capacity_in_bytes(arch: str = "sm100") -> int:
    return SMEM_CAPACITY.get(arch.replace("_", "").rstrip("a"), SMEM_CAPACITY["sm100"])


__all__ = ["make_trivial_tiled_mma", "get_smem_layout_atom_ab", "make_smem_layout_a", "make_smem_layout_b",
           "make_smem_layout_epi", "compute_epilogue_tile_shape", "get_tmem_load_op", "get_smem_store_op",
           "get_tmem_copy_properties",
           "cluster_shape_to_tma_atom_A", "cluster_shape_to_tma_atom_B", "cluster_shape_to_tma_atom_SFB",
           "make_blockscaled_trivial_tiled_mma", "get_smem_capacity_in_bytes", "check_gemm_tma_alignment",
           "OperandMajorMode", "OperandSource", "CtaGroup", "SmemLayoutAtomKind", "make_smem_layout_atom"]
