"""Tensor-memory layouts: where tcgen05.mma puts D, and which (lane, column) each thread's register of a
tcgen05.ld / tcgen05.st holds.

Tensor memory is 128 lanes x 512 columns of 32 bits per CTA. An address is lane << 16 | column, so a layout into
tensor memory here has offsets in 32-bit columns with lane steps of LANE = 1 << 16 (the unit of CuTe's TMEM
tensors of 32-bit values). Warp w of a warpgroup reaches lanes 32 (w % 4) .. 32 (w % 4) + 31 only.

D of one instruction, per CTA (PTX ISA, tcgen05 "Data path layout organization"; row m, column n of the CTA's
share of D):
  layout A  M = 256, cta_group::2 (128 rows per CTA):  lane m,                          column n
  layout B  M = 128, cta_group::2 (64 rows per CTA):   lane m + 64 (n / (N/2)),         column n % (N/2)
  layout D  M = 128, cta_group::1:                     lane m,                          column n
  layout F  M = 64,  cta_group::1:                     lane (m % 16) + 32 (m / 16),     column n
"""
from __future__ import annotations

import warpweave.cute as cute
from warpweave import ext

LANE = 1 << 16
LANES = 128


DATAPATHS = {(256, 2): "A", (128, 2): "B", (128, 1): "D", (64, 1): "F"}  # (M, CTAs) -> the data path of D


def datapath(m: int, cta: int) -> str:
    """The PTX ISA's letter for the data-path layout of D of an M-row instruction of cta CTAs (dense)."""
    hit = DATAPATHS.get((m, cta))
    if hit is None:
        raise ext.user_error(f"no tensor-memory layout of D for M={m} with {cta} CTA(s) (M is 64 or 128 for one CTA, "
                             "128 or 256 for two)", ext.DSLValueError)
    return hit


def atom_accumulator_layout(m: int, n: int, cta: int):
    """(CTA's rows, N) -> tensor-memory offset of D of one instruction, and the columns it spans."""
    dp = datapath(m, cta)
    if dp in ("A", "D"):
        return cute.make_layout((m // cta, n), stride=(LANE, 1)), n
    if dp == "F":
        return cute.make_layout(((16, 4), n), stride=((LANE, 32 * LANE), 1)), n
    half = n // 2
    return cute.make_layout((64, (half, 2)), stride=(LANE, (1, 64 * LANE))), half


def accumulator_layout(m: int, n: int, cta: int, shape):
    """The tensor-memory layout of an accumulator fragment of partition shape ((M/cta, N), rest_m, rest_n, ...)
    (tiled_mma.partition_shape_C): each instruction's D as the hardware writes it, further tiles of the tiled MMA
    (and further modes, e.g. accumulator stages) side by side in columns."""
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    atom, cols = atom_accumulator_layout(m, n, cta)
    if cute.size(shape[0]) != cute.size(atom):
        raise ext.user_error(f"make_fragment_C: the partition shape {shape} does not start with one instruction's "
                             f"D of this CTA ({m // cta}, {n})", ext.DSLValueError)
    rest_shape, rest_stride, step = [], [], cols
    for s in shape[1:]:
        if not isinstance(s, int):
            raise ext.user_error(f"make_fragment_C: the partition shape {shape} must be static", ext.DSLValueError)
        rest_shape.append(s)
        rest_stride.append(step)
        step *= s
    if step > 512:
        raise ext.user_error(f"make_fragment_C: the accumulators of shape {shape} take {step} tensor-memory columns; "
                             "a CTA has 512", ext.DSLValueError)
    # the modes of the instruction's D keep its own shape (e.g. (16, 4) rows of layout F)
    return cute.make_layout((atom.shape,) + tuple(rest_shape), stride=(atom.stride,) + tuple(rest_stride))


def a_operand_layout(m: int, k: int, cta: int, shape, width: int):
    """The tensor-memory layout of an A fragment (OperandSource.TMEM) of partition shape ((M/cta, K), MMA_M, MMA_K,
    rest...) (tiled_mma.partition_shape_A) of width-bit values, as CuTe DSL lays it out: row m of the instruction's A
    in the lane its row of D takes (layouts A, D and F above), its K values packed 32 / width to a column; further
    modes side by side in columns after it, a mode of extent 1 taking none."""
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    lane = (32 // width) * LANE
    dp = datapath(m, cta)
    if dp == "B":
        raise ext.user_error("make_fragment_A: A in tensor memory with M = 128 over two CTAs is not supported here "
                             "(M = 256 is)", ext.DSLValueError)
    atom = cute.make_layout(((16, 4), k), stride=((lane, 32 * lane), 1)) if dp == "F" else \
        cute.make_layout((m // cta, k), stride=(lane, 1))
    if cute.size(shape[0]) != cute.size(atom):
        raise ext.user_error(f"make_fragment_A: the partition shape {shape} does not start with one instruction's "
                             f"A of this CTA ({m // cta}, {k})", ext.DSLValueError)
    step = k

    def compact(s):   # column-major over the mode's leaves, nested as the mode is
        nonlocal step
        if isinstance(s, tuple):
            return tuple(compact(x) for x in s)
        if not isinstance(s, int):
            raise ext.user_error(f"make_fragment_A: the partition shape {shape} must be static", ext.DSLValueError)
        d, step = (step if s > 1 else 0), step * s
        return d

    rest_shape = list(shape[1:])
    rest_stride = [compact(s) for s in rest_shape]
    if step * width > 512 * 32:
        raise ext.user_error(f"make_fragment_A: A of shape {shape} takes {step * width // 32} tensor-memory columns; "
                             "a CTA has 512", ext.DSLValueError)
    return cute.make_layout((atom.shape,) + tuple(rest_shape), stride=(atom.stride,) + tuple(rest_stride))


def _leaves(t):
    if isinstance(t, tuple):
        return [x for e in t for x in _leaves(e)]
    return [t]


def columns_of(layout, per_column: int = 1) -> int:
    """How many tensor-memory columns a layout of offsets reaches from column 0. Offsets count elements of which
    per_column share a 32-bit column (1 for 32-bit values, 4 for bytes); a lane step is per_column * LANE."""
    outer = getattr(layout, "outer", layout)
    lane = per_column * LANE
    last = 0
    for s, d in zip(_leaves(outer.shape), _leaves(outer.stride)):
        if not isinstance(s, int) or not isinstance(d, int):
            raise ext.user_error(f"the tensor-memory layout {layout} must be static", ext.DSLValueError)
        if d % lane:
            if d >= lane:
                raise ext.user_error(f"the tensor-memory layout {layout} mixes lanes and columns in one stride",
                                     ext.DSLValueError)
            last += (s - 1) * d
    return last // per_column + 1


def lane_and_column(offset: int):
    return offset // LANE, offset % LANE
