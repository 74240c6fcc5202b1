"""Warpgroup MMA (wgmma) in the DSL: the operand sources, the ops with CuTe DSL's constructors, and the
"smem_descriptor" operand kind.

A wgmma reads A (or only B, with A in registers) straight from shared memory through a 64-bit matrix descriptor.
Fragments of such an operand are the thread's partition of the shared-memory tensor itself (make_fragment_A/B
return it); at cute.gemm the adapter reads the layout of the atom's (MN, K) tile, checks it against the canonical
forms a descriptor describes (mma_smem_layouts.py, with the operand majors and layout atoms) and writes the
descriptor with the backend's make_smem_desc hook.
"""
from __future__ import annotations

import enum

import warpweave as cutlass
from warpweave import ext

from .mma_smem_layouts import (
    OperandMajorMode, Reader, SmemDescriptorOperands, SmemLayoutAtomKind, check_swizzle_alignment, descriptor_form,
    layout_atom,
)

class OperandSource(enum.Enum):
    SMEM = "SMEM"
    RMEM = "RMEM"


class Field(enum.Enum):
    """Runtime fields of a warpgroup MMA atom: ACCUMULATE False makes the next cute.gemm compute D = A * B (its C
    ignored), True D = A * B + C (the default)."""
    ACCUMULATE = "accumulate"


def make_smem_layout_atom(kind: SmemLayoutAtomKind, element_type, *, loc=None, ip=None):
    """The shared-memory layout atom of a kind, in elements of element_type: 8 rows of the swizzle's width (16
    bytes for the interleaved kinds) along the major mode, swizzled as TMA writes and wgmma reads it. 4-bit types
    have atoms too: the tiles TMA writes for other readers (ldmatrix on sm_120a, tcgen05.mma) are these; wgmma itself
    takes no 4-bit operand (its manifest has none)."""
    return layout_atom(kind, element_type, (4, 8, 16, 32))


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
            accumulate_field = Field.ACCUMULATE   # from a cute.gemm's second k-block on, whatever the field says

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
            accumulate_field = Field.ACCUMULATE   # from a cute.gemm's second k-block on, whatever the field says

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


READER = Reader("wgmma", "a wgmma descriptor", "warpgroup.make_smem_layout_atom",
                "; make it with warpgroup.make_smem_layout_atom and cute.tile_to_shape")


class SmemDescriptorKind(SmemDescriptorOperands):
    """wgmma operands read from shared memory through a matrix descriptor."""

    name = "smem_descriptor"

    def check_fragment(self, atom_id, operand, tensor):
        if getattr(tensor, "memspace", None) != "smem":
            raise ext.user_error(f"cute.gemm: {operand['name']} of {atom_id} is read from shared memory: pass the "
                                 f"fragment of make_fragment_{operand['name'].upper()} (the thread's partition of "
                                 f"the shared-memory tensor), got {tensor!r}", ext.DSLTypeError)

    def form(self, operand, tile):
        """(major, swizzle bytes, LBO bytes, SBO bytes) of the (MN, K) tile's layout, checked element by element."""
        lay = ext.full_layout(tile)
        swizzled = hasattr(lay, "outer")
        e = _elem_bytes(tile.element_type)
        key = (str(lay.outer if swizzled else lay), str(lay.inner if swizzled else None), e, operand["name"])
        hit = self._forms.get(key)
        if hit is None:
            K = 32 // e
            hit = self._forms[key] = descriptor_form(READER, operand["name"], lay, 8 * e, K,
                                                     int(operand["values"]) // K)
        return hit

    def descriptor(self, operand, tile):
        major, swizzle, lbo, sbo = self.form(operand, tile)
        lay = ext.full_layout(tile)
        ptr = tile.iterator
        check_swizzle_alignment(ptr, swizzle)
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
