"""The shared-memory layouts tensor-core MMAs read through 64-bit matrix descriptors: operand majors, layout atoms
and the canonical form of an instruction's (MN, K) tile.

A descriptor holds the tile's start address and two strides, the leading and stride byte offsets (LBO, SBO), and
the swizzle mode; the layouts it can describe are CuTe's canonical GMMA layouts (PTX ISA, "Matrix Descriptor
Format"; T = 16 bytes of elements, W = the swizzle's bytes in elements):

  K-major, swizzled:    offset(mn, k) = (mn % 8) W + (mn / 8) SBO + k                      (K of 32 bytes <= W)
  K-major, no swizzle:  offset(mn, k) = (mn % 8) T + (mn / 8) SBO + (k % T) + (k / T) LBO
  MN-major, swizzled:   offset(mn, k) = (mn % W) + (mn / W) LBO + (k % 8) W + (k / 8) SBO

wgmma reads them, and so does tcgen05.mma (the Blackwell backend, which extends this one, imports this module as
warpweave.backends.hopper.mma_smem_layouts); a Reader names the instruction in the errors. The form is checked
element by element, so a layout the hardware would read differently is refused at trace time instead of
computing wrong products.
"""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import ext


class OperandMajorMode(enum.Enum):
    """Which mode of an A (M, K) or B (N, K) operand is contiguous in shared memory."""
    K = "k"
    MN = "mn"


class SmemLayoutAtomKind(enum.Enum):
    MN_INTER = ("MN", 0)
    MN_SW32 = ("MN", 32)
    MN_SW64 = ("MN", 64)
    MN_SW128 = ("MN", 128)
    K_INTER = ("K", 0)
    K_SW32 = ("K", 32)
    K_SW64 = ("K", 64)
    K_SW128 = ("K", 128)


def layout_atom(kind: SmemLayoutAtomKind, element_type, widths: tuple):
    """The shared-memory layout atom of a kind, in elements of element_type (of one of the bit widths the reader
    takes): 8 rows of the swizzle's width (16 bytes for the interleaved kinds) along the major mode, swizzled as
    TMA writes and the MMA reads it."""
    if not isinstance(kind, SmemLayoutAtomKind):
        raise ext.user_error(f"make_smem_layout_atom: expected a SmemLayoutAtomKind, got {kind!r}", ext.DSLTypeError)
    et = cutlass.dtype(element_type) if not isinstance(element_type, type) else element_type
    major, width = kind.value
    if et.width not in widths:
        names = ", ".join(map(str, widths[:-1])) + f" or {widths[-1]}"
        article = "an" if names.startswith("8") else "a"
        raise ext.user_error(f"make_smem_layout_atom: {et.__name__} is not {article} {names}-bit type",
                             ext.DSLTypeError)
    row = (width or 16) * 8 // et.width
    base = int(math.log2(128 // et.width))
    bits = int(math.log2(width // 16)) if width else 0
    outer = (cute.make_layout((8, row), stride=(row, 1)) if major == "K"
             else cute.make_layout((row, 8), stride=(1, row)))
    return cute.make_composed_layout(cute.make_swizzle(bits, base, 3), 0, outer)


def smem_layout_atom_kind(major: OperandMajorMode, element_type, major_mode_size: int) -> SmemLayoutAtomKind:
    """The widest swizzle whose rows divide major_mode_size elements."""
    bits = major_mode_size * element_type.width
    prefix = "K" if major == OperandMajorMode.K else "MN"
    for width in (128, 64, 32):
        if bits % (width * 8) == 0:
            return SmemLayoutAtomKind[f"{prefix}_SW{width}"]
    return SmemLayoutAtomKind[f"{prefix}_INTER"]


@dataclass(frozen=True)
class Reader:
    """How the errors of descriptor_form name the MMA that reads the tile and where its layouts are made."""
    instruction: str      # "wgmma"
    descriptor: str       # "a wgmma descriptor"
    swizzle_hint: str     # ends "the swizzle ... is not one <instruction> reads (...); make the layout with ..."
    mismatch_hint: str    # appended to "... the <major>-major form puts it at <offset>"


def descriptor_form(reader: Reader, name: str, layout, bits: int, K: int, MN: int) -> tuple:
    """(major, swizzle bytes, LBO bytes, SBO bytes) of operand `name`'s (MN, K) tile `layout` of bits-wide
    elements, checked element by element against the canonical form it claims."""
    outer = layout.outer if hasattr(layout, "outer") else layout
    inner = layout.inner if hasattr(layout, "outer") else None
    o0 = outer(0)

    def off(mn, k):
        return outer(mn + MN * k) - o0

    T = 128 // bits
    swizzle = 0
    if inner is not None and getattr(inner, "num_bits", 0):
        if inner.num_base != int(math.log2(T)) or inner.num_shift != 3 or inner.num_bits > 3:
            raise ext.user_error(f"cute.gemm: operand {name}'s swizzle {inner} is not one {reader.instruction} reads "
                                 f"(Swizzle<b,{int(math.log2(T))},3>, b = 1, 2, 3); make the layout with "
                                 f"{reader.swizzle_hint}", ext.DSLValueError)
        swizzle = 16 << inner.num_bits
    if off(0, 1) == 1:
        major = "K"
        sbo = off(8, 0) if MN > 8 else 0
        if swizzle:
            w = swizzle * 8 // bits
            lbo = T   # not read by the hardware for swizzled K-major tiles: 16 bytes, as CuTe writes it
            expect = lambda mn, k: (mn % 8) * w + (mn // 8) * sbo + k  # noqa: E731
        else:
            lbo = off(0, T)
            expect = lambda mn, k: (mn % 8) * T + (mn // 8) * sbo + (k % T) + (k // T) * lbo  # noqa: E731
    elif off(1, 0) == 1:
        major = "MN"
        if not swizzle:
            # Interleaved: 8 (k) x 16-byte (MN) core matrices of 128 contiguous bytes. The two offsets swap roles
            # against the swizzled forms: SBO steps to the next core matrix along MN, LBO along K (CuTe's
            # MN-major INTERLEAVE canonical layout); an offset that a single core matrix leaves unread is 0.
            sbo = off(T, 0) if MN > T else 0
            lbo = off(0, 8) if K > 8 else 0
            expect = lambda mn, k: (mn % T) + (mn // T) * sbo + (k % 8) * T + (k // 8) * lbo  # noqa: E731
        else:
            w = swizzle * 8 // bits
            lbo = off(w, 0) if MN > w else T   # one swizzle row holds the whole MN extent: not read
            sbo = off(0, 8)
            expect = lambda mn, k: (mn % w) + (mn // w) * lbo + (k % 8) * w + (k // 8) * sbo  # noqa: E731
    else:
        raise ext.user_error(f"cute.gemm: operand {name}'s tile {outer} is contiguous neither along K nor along M/N, "
                             f"which {reader.descriptor} cannot describe", ext.DSLValueError)
    for k in range(K):
        for mn in range(MN):
            if off(mn, k) != expect(mn, k):
                raise ext.user_error(f"cute.gemm: operand {name}'s tile {outer} (swizzle {swizzle or 'none'}) is not "
                                     f"a layout {reader.instruction} reads: element ({mn}, {k}) is at {off(mn, k)}, "
                                     f"the {major}-major form puts it at {expect(mn, k)}{reader.mismatch_hint}",
                                     ext.DSLValueError)
    return major, swizzle, lbo * bits // 8, sbo * bits // 8


def check_swizzle_alignment(ptr, swizzle: int) -> None:
    """A swizzled operand's buffer must be aligned to the swizzle's period (8 rows of it)."""
    if swizzle and ptr.alignment_at(0) < 8 * swizzle:
        raise ext.user_error(f"cute.gemm: a {swizzle}-byte swizzled operand needs its buffer aligned to "
                             f"{8 * swizzle} bytes (the swizzle's period), this one is known aligned to "
                             f"{ptr.alignment_at(0)} (allocate it with byte_alignment={8 * swizzle})",
                             ext.DSLValueError)


class SmemDescriptorOperands(ext.OperandKind):
    """An operand kind of MMA operands read from shared memory through a descriptor: a fragment is the shared-memory
    partition itself, and each instruction reads the descriptor of its (MN, K) tile (`descriptor`, the subclass')."""

    def __init__(self):
        self._forms = {}

    def make_fragment(self, atom_id, operand, tensor, dtype):
        self.check_fragment(atom_id, operand, tensor)
        return tensor

    def read(self, operand, tensor, coords):
        return [self.descriptor(operand, tensor[(None, coords[0][1])])]
