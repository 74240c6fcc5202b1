"""Warpgroup MMA (wgmma) in the DSL: the operand majors and sources, shared-memory layout atoms, the ops with CuTe
DSL's constructors, and the "smem_descriptor" operand kind.

A wgmma reads A (or only B, with A in registers) straight from shared memory through a 64-bit matrix descriptor:
the tile's start address and two strides, the leading and stride byte offsets (LBO, SBO), and the swizzle mode.
Fragments of such an operand are the thread's partition of the shared-memory tensor itself (make_fragment_A/B
return it); at cute.gemm the adapter reads the layout of the atom's (MN, K) tile and writes the descriptor with the
backend's make_smem_desc hook. The layouts the hardware reads are CuTe's canonical GMMA layouts (PTX ISA, "Matrix
Descriptor Format"; T = 16 bytes of elements, W = the swizzle's bytes in elements):

  K-major, swizzled:    offset(mn, k) = (mn % 8) W + (mn / 8) SBO + k                      (K of 32 bytes <= W)
  K-major, no swizzle:  offset(mn, k) = (mn % 8) T + (mn / 8) SBO + (k % T) + (k / T) LBO
  MN-major, swizzled:   offset(mn, k) = (mn % W) + (mn / W) LBO + (k % 8) W + (k / 8) SBO

The adapter checks every element of the tile against the form it finds, so a layout the hardware would read
differently is refused at trace time instead of computing wrong products.
"""
from __future__ import annotations

import enum
import math

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import ext


class OperandMajorMode(enum.Enum):
    """Which mode of an A (M, K) or B (N, K) operand is contiguous in shared memory."""
    K = "k"
    MN = "mn"


class OperandSource(enum.Enum):
    SMEM = "SMEM"
    RMEM = "RMEM"


class Field(enum.Enum):
    """Runtime fields of a warpgroup MMA atom: ACCUMULATE False makes the next cute.gemm compute D = A * B (its C
    ignored), True D = A * B + C (the default)."""
    ACCUMULATE = "accumulate"


class SmemLayoutAtomKind(enum.Enum):
    MN_INTER = ("MN", 0)
    MN_SW32 = ("MN", 32)
    MN_SW64 = ("MN", 64)
    MN_SW128 = ("MN", 128)
    K_INTER = ("K", 0)
    K_SW32 = ("K", 32)
    K_SW64 = ("K", 64)
    K_SW128 = ("K", 128)


def make_smem_layout_atom(kind: SmemLayoutAtomKind, element_type, *, loc=None, ip=None):
    """The shared-memory layout atom of a kind, in elements of element_type: 8 rows of the swizzle's width (16
    bytes for the interleaved kinds) along the major mode, swizzled as TMA writes and wgmma reads it."""
    if not isinstance(kind, SmemLayoutAtomKind):
        raise ext.user_error(f"make_smem_layout_atom: expected a SmemLayoutAtomKind, got {kind!r}", ext.DSLTypeError)
    et = cutlass.dtype(element_type) if not isinstance(element_type, type) else element_type
    major, width = kind.value
    ebits = et.width
    if ebits not in (8, 16, 32):
        raise ext.user_error(f"make_smem_layout_atom: {et.__name__} is not an 8, 16 or 32-bit type",
                             ext.DSLTypeError)
    row = (width or 16) * 8 // ebits
    base = int(math.log2(128 // ebits))
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


# --- the ops ----------------------------------------------------------------------------------------------------

def _operands(op, fields):
    acc = fields.get(Field.ACCUMULATE, True)
    scale = (acc if isinstance(acc, cutlass.Boolean) else cutlass.Boolean(bool(acc))).ir()
    attrs = {"tnsp_b": int(op.b_major_mode == OperandMajorMode.MN)}
    if op.a_src == OperandSource.SMEM:
        attrs["tnsp_a"] = int(op.a_major_mode == OperandMajorMode.MN)
    if not op.transposable:
        attrs = {}
    return {"scale_d": [scale]}, attrs


def _check(op, name, a_src, a_major, b_major):
    for what, v, cls in (("a_src", a_src, OperandSource), ("a_major_mode", a_major, OperandMajorMode),
                         ("b_major_mode", b_major, OperandMajorMode)):
        if not isinstance(v, cls):
            raise ext.user_error(f"{name}: {what} must be a {cls.__name__}, got {v!r}", ext.DSLTypeError)
    if a_src == OperandSource.RMEM and a_major != OperandMajorMode.K:
        raise ext.user_error(f"{name}: A from registers is K-major", ext.DSLValueError)
    if not op.transposable and (a_major != OperandMajorMode.K or b_major != OperandMajorMode.K):
        raise ext.user_error(f"{name}: only 16-bit inputs may be MN-major; A and B of this op are K-major",
                             ext.DSLValueError)


def _make_op_classes():
    base16 = ext.manifest_class("warpgroup.MmaF16BF16Op")
    base8 = ext.manifest_class("warpgroup.MmaF8Op")
    out = {}
    if base16 is not None:
        class MmaF16BF16Op(base16):
            """wgmma with fp16 or bf16 inputs: MmaF16BF16Op(ab_dtype, acc_dtype, instruction_shape, a_src,
            a_major_mode, b_major_mode); instruction_shape (64, N, 16), N a multiple of 8 up to 256."""
            transposable = True
            # Every atom has the field from the start, so that a first set() inside a run-time loop is carried.
            default_fields = {Field.ACCUMULATE: True}

            def __init__(self, ab_dtype, acc_dtype, instruction_shape, a_src=OperandSource.SMEM,
                         a_major_mode=OperandMajorMode.K, b_major_mode=OperandMajorMode.K):
                _check(self, "MmaF16BF16Op", a_src, a_major_mode, b_major_mode)
                super().__init__(ab_dtype, acc_dtype, tuple(instruction_shape), a_src)
                self.a_src, self.a_major_mode, self.b_major_mode = a_src, a_major_mode, b_major_mode

            def instruction_operands(self, fields):
                return _operands(self, fields)

            def __eq__(self, other):
                return super().__eq__(other) and (self.a_major_mode, self.b_major_mode) == \
                    (other.a_major_mode, other.b_major_mode)

            def __hash__(self):
                return hash((super().__hash__(), self.a_major_mode, self.b_major_mode))

        out["MmaF16BF16Op"] = MmaF16BF16Op
    if base8 is not None:
        class MmaF8Op(base8):
            """wgmma with fp8 inputs (E4M3, E5M2), K-major: MmaF8Op(a_dtype, b_dtype, acc_dtype,
            instruction_shape, a_src, a_major_mode, b_major_mode); instruction_shape (64, N, 32)."""
            transposable = False
            default_fields = {Field.ACCUMULATE: True}

            def __init__(self, a_dtype, b_dtype, acc_dtype, instruction_shape, a_src=OperandSource.SMEM,
                         a_major_mode=OperandMajorMode.K, b_major_mode=OperandMajorMode.K):
                _check(self, "MmaF8Op", a_src, a_major_mode, b_major_mode)
                super().__init__(a_dtype, b_dtype, acc_dtype, tuple(instruction_shape), a_src)
                self.a_src, self.a_major_mode, self.b_major_mode = a_src, a_major_mode, b_major_mode

            def instruction_operands(self, fields):
                return _operands(self, fields)

        out["MmaF8Op"] = MmaF8Op
    return out


# --- the shared-memory descriptor operand kind ------------------------------------------------------------------

def _elem_bytes(t) -> int:
    return t.width // 8


class SmemDescriptorKind(ext.OperandKind):
    """wgmma operands read from shared memory through a matrix descriptor."""

    name = "smem_descriptor"

    def __init__(self):
        self._forms = {}

    def check_fragment(self, atom_id, operand, tensor):
        if getattr(tensor, "memspace", None) != "smem":
            raise ext.user_error(f"cute.gemm: {operand['name']} of {atom_id} is read from shared memory: pass the "
                                 f"fragment of make_fragment_{operand['name'].upper()} (the thread's partition of "
                                 f"the shared-memory tensor), got {tensor!r}", ext.DSLTypeError)

    def make_fragment(self, atom_id, operand, tensor, dtype):
        self.check_fragment(atom_id, operand, tensor)
        return tensor

    def read(self, operand, tensor, coords):
        m = coords[0][1]
        return [self.descriptor(operand, tensor[(None, m)])]

    def form(self, operand, tile):
        """(major, swizzle bytes, LBO bytes, SBO bytes) of the (MN, K) tile's layout, checked element by element."""
        lay = tile.layout
        outer = lay.outer if hasattr(lay, "outer") else lay
        inner = lay.inner if hasattr(lay, "outer") else None
        e = _elem_bytes(tile.element_type)
        key = (str(outer), str(inner), e, operand["name"])
        hit = self._forms.get(key)
        if hit is not None:
            return hit
        K = 32 // e
        MN = int(operand["values"]) // K
        o0 = outer(0)

        def off(mn, k):
            return outer(mn + MN * k) - o0

        swizzle = 0
        if inner is not None and hasattr(inner, "num_bits") and inner.num_bits:
            if inner.num_base != int(math.log2(16 // e)) or inner.num_shift != 3 or inner.num_bits > 3:
                raise ext.user_error(f"cute.gemm: operand {operand['name']}'s swizzle {inner} is not one wgmma reads "
                                     f"(Swizzle<b,{int(math.log2(16 // e))},3>, b = 1, 2, 3); make the layout with "
                                     "warpgroup.make_smem_layout_atom", ext.DSLValueError)
            swizzle = 16 << inner.num_bits
        if off(0, 1) == 1:
            major = "K"
            T = 16 // e
            if swizzle:
                w = swizzle // e
                sbo = off(8, 0) if MN > 8 else 0
                lbo = T   # not read by the hardware for swizzled K-major tiles: 16 bytes, as CuTe writes it
                expect = lambda mn, k: (mn % 8) * w + (mn // 8) * sbo + k  # noqa: E731
            else:
                sbo = off(8, 0) if MN > 8 else 0
                lbo = off(0, T)
                expect = lambda mn, k: (mn % 8) * T + (mn // 8) * sbo + (k % T) + (k // T) * lbo  # noqa: E731
        elif off(1, 0) == 1:
            major = "MN"
            if not swizzle:
                raise ext.user_error(f"cute.gemm: operand {operand['name']} is MN-major without a swizzle; use an "
                                     "MN_SW32/64/128 layout atom (warpgroup.make_smem_layout_atom)", ext.DSLValueError)
            w = swizzle // e
            lbo = off(w, 0) if MN > w else 16 // e   # one swizzle row holds the whole MN extent: not read
            sbo = off(0, 8)
            expect = lambda mn, k: (mn % w) + (mn // w) * lbo + (k % 8) * w + (k // 8) * sbo  # noqa: E731
        else:
            raise ext.user_error(f"cute.gemm: operand {operand['name']}'s tile {outer} is contiguous neither along "
                                 "K nor along M/N, which a wgmma descriptor cannot describe", ext.DSLValueError)
        for k in range(K):
            for mn in range(MN):
                if off(mn, k) != expect(mn, k):
                    raise ext.user_error(f"cute.gemm: operand {operand['name']}'s tile {outer} (swizzle "
                                         f"{swizzle or 'none'}) is not a layout wgmma reads: element ({mn}, {k}) is "
                                         f"at {off(mn, k)}, the {major}-major form puts it at {expect(mn, k)}; make "
                                         "it with warpgroup.make_smem_layout_atom and cute.tile_to_shape",
                                         ext.DSLValueError)
        hit = (major, swizzle, lbo * e, sbo * e)
        self._forms[key] = hit
        return hit

    def descriptor(self, operand, tile):
        major, swizzle, lbo, sbo = self.form(operand, tile)
        lay = tile.layout
        ptr = tile.iterator
        if swizzle and ptr.alignment_at(0) < 8 * swizzle:
            raise ext.user_error(f"cute.gemm: a {swizzle}-byte swizzled operand needs its buffer aligned to "
                                 f"{8 * swizzle} bytes (the swizzle's period), this one is known aligned to "
                                 f"{ptr.alignment_at(0)} (allocate it with byte_alignment={8 * swizzle})",
                                 ext.DSLValueError)
        start = lay.offset + lay.outer(0) if hasattr(lay, "outer") else lay(0)
        b = ext.builder()
        backend, entry = ext.select_instruction("warpgroup.make_smem_desc", {}, {"addr"})
        attrs = {"leading_byte_offset": lbo, "stride_byte_offset": sbo, "swizzle": swizzle}
        # The start address field is the address in 16-byte units (shared addresses are below 2^18, so it never
        # wraps): the descriptor of base + offset is the buffer base's descriptor plus offset / 16. Writing it so
        # leaves one descriptor per buffer, which the compiler keeps in uniform registers, and a constant add per
        # k-block and stage, as CuTe's descriptor iterators do; built from each tile's own address, every k-block
        # re-derives the field with shifts and masks in the issue path of the wgmma.
        byte = (ptr.offset + start) * _elem_bytes(tile.element_type)
        aligned = byte % 16 == 0 if isinstance(byte, int) else byte.divisibility % 16 == 0
        if not aligned or ptr.base_align < 16:
            addr = b.op1("llvm.ptrtoint", [ptr.address(start)], "i32")
            return ext.emit_instruction(b, backend, entry, {"addr": [addr]}, attrs)["desc"][0]
        base = b.op1("llvm.ptrtoint", [ptr.base], "i32")
        desc = ext.emit_instruction(b, backend, entry, {"addr": [base]}, attrs)["desc"][0]
        units = byte // 16
        if isinstance(units, int):
            if units == 0:
                return desc
            delta = b.constant_int(units, "i64")
        else:
            delta = b.materialize(units, "i64")
        return b.op1("arith.addi", [desc, delta], "i64")
