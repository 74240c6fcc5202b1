"""cutlass.experimental.primitives' tensor-core (tcgen05) and tensor-memory operations, CuTe DSL's signatures:

- descriptors, as numbers a kernel computes with (and loops carry): Tcgen05SmemDesc (64-bit, a shared-memory
  operand, the backend's UMMA descriptor hook), Tcgen05InstrDesc / Tcgen05MxInstrDesc / Tcgen05MxOmmaInstrDesc
  (32-bit, static fields), TmemAddr (lane << 16 | column);
- tcgen05_alloc / dealloc / relinquish_alloc_permit, tcgen05_mma (+ _block_scale), tcgen05_commit, tcgen05_wait,
  tcgen05_fence, tcgen05_ld / st / cp, make_tmem_ptr (+ _from_warp_row_col);
- their enumerations (Tcgen05MMAKind, Tcgen05SmemSwizzle, ...).

Each is one instruction, issued by the calling thread (or warp, for alloc/ld/st), as the examples call them: the
caller elects where one thread must issue. The MMA, ld and st with run-time operands are the manifest's
blackwell.prim.* families; allocation, commit, waits, fences and copies are the entries cute.nvgpu.tcgen05 uses.
"""
from __future__ import annotations

import enum

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import ext
from warpweave.backends.hopper.tma_primitives import CTAGroup, cta_group, pointer, shared_address

from . import tmem
from .tcgen05_mma import i32_value


class Tcgen05MMAKind(enum.Enum):
    MXF4NVF4 = "mxf4nvf4"
    F8F6F4 = "f8f6f4"
    MXF8F6F4 = "mxf8f6f4"
    INT8 = "int8"
    F16 = "f16"
    TF32 = "tf32"
    MXF4 = "mxf4"


MMABlockScaleKind = enum.Enum("MMABlockScaleKind", [("MXF8F6F4", 0), ("MXF4", 1), ("MXF4NVF4", 2)])


class Tcgen05SmemSwizzle(enum.IntEnum):
    """The layout field of a shared-memory descriptor (its value is the field's)."""
    NONE = 0
    SWIZZLE_128B_ATOM_32B = 1
    SWIZZLE_128B = 2
    SWIZZLE_64B = 4
    SWIZZLE_32B = 6

    @classmethod
    def from_tensor_map_swizzle(cls, swizzle):
        # the tensor map's swizzle of a TMA-loaded tile is the layout its MMA descriptor names
        named = {"none": cls.NONE, "s32b": cls.SWIZZLE_32B, "s64b": cls.SWIZZLE_64B, "s128b": cls.SWIZZLE_128B,
                 "s128b_atom_32b": cls.SWIZZLE_128B_ATOM_32B}
        if swizzle.name not in named:
            raise ext.user_error(f"TensorMapSwizzle.{swizzle.name} has no tcgen05 descriptor layout",
                                 ext.DSLValueError)
        return named[swizzle.name]


class Tcgen05Wait(enum.Enum):
    LOAD = "load"
    STORE = "store"


class Tcgen05Fence(enum.Enum):
    BEFORE_THREAD_SYNC = "before_thread_sync"
    AFTER_THREAD_SYNC = "after_thread_sync"


class Tcgen05LdStShape(enum.Enum):
    SHAPE_16X32BX2 = "16x32bx2"
    SHAPE_16X64B = "16x64b"
    SHAPE_32X32B = "32x32b"
    SHAPE_16X128B = "16x128b"
    SHAPE_16X256B = "16x256b"


class Tcgen05CpShape(enum.Enum):
    SHAPE_128X256B = "128x256b"
    SHAPE_4X256B = "4x256b"
    SHAPE_128X128B = "128x128b"
    SHAPE_64X128B = "64x128b"
    SHAPE_32X128B = "32x128b"


class Tcgen05CpMulticast(enum.Enum):
    WARPX2_02_13 = "warpx2_02_13"
    WARPX2_01_23 = "warpx2_01_23"
    WARPX4 = "warpx4"


class S2TCopyMode:
    """The shared-to-tensor-memory copies, as (Tcgen05CpShape, Tcgen05CpMulticast or None) pairs."""
    S2T_128x256b = (Tcgen05CpShape.SHAPE_128X256B, None)
    S2T_4x256b = (Tcgen05CpShape.SHAPE_4X256B, None)
    S2T_128x128b = (Tcgen05CpShape.SHAPE_128X128B, None)
    S2T_64x128b_WARPX2_02_13 = (Tcgen05CpShape.SHAPE_64X128B, Tcgen05CpMulticast.WARPX2_02_13)
    S2T_64x128b_WARPX2_01_23 = (Tcgen05CpShape.SHAPE_64X128B, Tcgen05CpMulticast.WARPX2_01_23)
    S2T_32x128b_WARPX4 = (Tcgen05CpShape.SHAPE_32X128B, Tcgen05CpMulticast.WARPX4)


class Tcgen05CpSrcFormat(enum.Enum):
    """Narrow elements decompressed to bytes on their way to tensor memory."""
    B6X16_P32 = "b6x16_p32"
    B4X16_P64 = "b4x16_p64"


class Tcgen05MMACollectorOp(enum.Enum):
    DISCARD = "discard"
    LASTUSE = "lastuse"
    FILL = "fill"
    USE = "use"


class Tcgen05MMABlockScale(enum.Enum):
    DEFAULT = 0
    BLOCK16 = 1
    BLOCK32 = 2


# --- descriptors --------------------------------------------------------------------------------------------

_SWIZZLE_NAMES = {0: "NONE", 1: "128B_BASE32B", 2: "128B", 4: "64B", 6: "32B"}


def _static(x, what, lo, hi):
    v = x.value if isinstance(x, cutlass.Numeric) and x.is_static else x
    if isinstance(v, enum.Enum):
        v = v.value
    if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
        raise ext.user_error(f"{what} must be a static integer {lo}..{hi}, got {x!r}", ext.DSLValueError)
    return v


class Tcgen05SmemDesc(cutlass.Int64):
    """The 64-bit descriptor of a shared-memory MMA operand (or tcgen05.cp source)."""

    @classmethod
    def build(cls, start_address, leading_byte_offset: int = 0, stride_byte_offset: int = 0, version: int = 1,
              base_offset: int = 0, layout=0, leading_dim_mode: int = 0, k_segment_offset: int = 0):
        """start_address: a shared-memory array or pointer (or its 32-bit shared address); offsets in bytes
        (multiples of 16); layout: a Tcgen05SmemSwizzle."""
        if _static(version, "Tcgen05SmemDesc.build: version", 0, 3) != 1:
            raise ext.user_error("Tcgen05SmemDesc.build: version 1 is Blackwell's descriptor (the one tcgen05.mma "
                                 "reads)", ext.DSLValueError)
        if _static(k_segment_offset, "Tcgen05SmemDesc.build: k_segment_offset", 0, 0):
            raise ext.user_error("Tcgen05SmemDesc.build: k_segment_offset is not supported", ext.DSLValueError)
        lay = _static(layout, "Tcgen05SmemDesc.build: layout", 0, 7)
        if lay not in _SWIZZLE_NAMES:
            raise ext.user_error(f"Tcgen05SmemDesc.build: layout {layout!r} is not a Tcgen05SmemSwizzle",
                                 ext.DSLValueError)
        attrs = {"leading_byte_offset": _static(leading_byte_offset, "leading_byte_offset", 0, (1 << 18) - 1),
                 "stride_byte_offset": _static(stride_byte_offset, "stride_byte_offset", 0, (1 << 18) - 1),
                 "swizzle": _SWIZZLE_NAMES[lay],
                 "base_offset": _static(base_offset, "Tcgen05SmemDesc.build: base_offset", 0, 7),
                 "lbo_mode": _static(leading_dim_mode, "Tcgen05SmemDesc.build: leading_dim_mode", 0, 1)}
        b = ext.builder()
        if isinstance(start_address, (int, cutlass.Numeric)):
            addr = cutlass.Int32(start_address).ir()
        else:
            addr = shared_address(b, start_address, "Tcgen05SmemDesc.build: start_address")
        backend, entry = ext.select_instruction("tcgen05.make_smem_desc", {}, {"addr"})
        out = ext.emit_instruction(b, backend, entry, {"addr": [addr]}, attrs)
        return cls.from_ir(out["desc"][0])

    def advance_start_address(self, byte_increment):
        """The descriptor of the operand byte_increment bytes further (a multiple of 16) in shared memory."""
        if isinstance(byte_increment, int) and byte_increment % 16:
            raise ext.user_error(f"advance_start_address: {byte_increment} bytes is not a multiple of 16",
                                 ext.DSLValueError)
        step = byte_increment // 16 if isinstance(byte_increment, int) else cutlass.Int64(byte_increment) >> 4
        return type(self)(cutlass.Int64(self) + step)


# Element formats of the instruction descriptor, per kind (PTX ISA, the instruction descriptor table)
_FORMATS = {"Float16": 0, "BFloat16": 1, "TFloat32": 2, "Float32": 2, "Float8E4M3FN": 0, "Float8E5M2": 1,
            "Float6E2M3FN": 3, "Float6E3M2FN": 4, "Float4E2M1FN": 5, "Uint8": 0, "Int8": 1}
_MX_FORMATS = {"Float8E4M3FN": 0, "Float8E5M2": 1, "Float6E2M3FN": 3, "Float6E3M2FN": 4, "Float4E2M1FN": 5}
_C_FORMATS = {"Float16": 0, "Float32": 1, "Int32": 2}


def _format(dtype, table, what):
    if dtype is None:
        return 0
    name = getattr(dtype, "__name__", str(dtype))
    if name not in table:
        raise ext.user_error(f"{what}: {name} is not an operand type of tcgen05.mma", ext.DSLTypeError)
    return table[name]


def _dims(m_dim, n_dim, what, m_shift, m_bits):
    m = _static(m_dim, f"{what}: m_dim", 0, 256)
    n = _static(n_dim, f"{what}: n_dim", 0, 256)
    if n % 8 or m % (1 << m_shift):
        raise ext.user_error(f"{what}: n_dim {n} must be a multiple of 8 and m_dim {m} of {1 << m_shift}",
                             ext.DSLValueError)
    return (n >> 3) & 0x3F, (m >> m_shift) & ((1 << m_bits) - 1)


class _StaticDesc(cutlass.Int32):
    """A 32-bit instruction descriptor: a constant of its fields."""

    @classmethod
    def _of(cls, fields):
        v = 0
        for shift, value in fields:
            v |= int(value) << shift
        return cls(v - (1 << 32) if v >= 1 << 31 else v)

    def _field(self, shift, bits):
        return (self.value >> shift) & ((1 << bits) - 1)


class Tcgen05InstrDesc(_StaticDesc):
    """tcgen05.mma's instruction descriptor of the kinds f16, tf32, f8f6f4 and i8."""

    @classmethod
    def build(cls, sparse_id2=0, sparse_flag=0, saturate=0, sparse_format=0, c_dtype=None, a_dtype=None,
              b_dtype=None, a_negate=0, b_negate=0, a_major=0, b_major=0, n_dim=0, m_dim=0, k_dim=0, max_shift=0):
        w = "Tcgen05InstrDesc.build"
        n, m = _dims(m_dim, n_dim, w, 4, 5)
        return cls._of([(0, _static(sparse_id2, f"{w}: sparse_id2", 0, 3)), (2, _static(sparse_flag, "sparse_flag", 0, 1)),
                        (3, _static(saturate, "saturate", 0, 1)), (4, _format(c_dtype, _C_FORMATS, w)),
                        (6, _static(sparse_format, "sparse_format", 0, 1)), (7, _format(a_dtype, _FORMATS, w)),
                        (10, _format(b_dtype, _FORMATS, w)), (13, _static(a_negate, "a_negate", 0, 1)),
                        (14, _static(b_negate, "b_negate", 0, 1)), (15, _static(a_major, "a_major", 0, 1)),
                        (16, _static(b_major, "b_major", 0, 1)), (17, n), (23, _static(k_dim, "k_dim", 0, 1)),
                        (24, m), (30, _static(max_shift, "max_shift", 0, 3))])

    m_dim = property(lambda self: self._field(24, 5) << 4)
    n_dim = property(lambda self: self._field(17, 6) << 3)
    a_major = property(lambda self: self._field(15, 1))
    b_major = property(lambda self: self._field(16, 1))


class Tcgen05MxInstrDesc(_StaticDesc):
    """tcgen05.mma's instruction descriptor of the block-scaled kinds (mxf8f6f4, mxf4, mxf4nvf4)."""

    _A_SF = 29
    _B_SF = 4

    @classmethod
    def build(cls, sparse_flag=0, b_sf_id=0, a_sf_id=0, a_dtype=None, b_dtype=None, scale_format=1, a_negate=0,
              b_negate=0, a_major=0, b_major=0, n_dim=0, m_dim=0, k_dim=0, a_sf_layout=0, **more):
        w = cls.__name__ + ".build"
        n, m = _dims(m_dim, n_dim, w, 7, 2)
        fmt = {**_MX_FORMATS, "Float4E2M1FN": 1} if a_dtype is not None and a_dtype.__name__ == "Float4E2M1FN" \
            and b_dtype is not None and b_dtype.__name__ == "Float4E2M1FN" else _MX_FORMATS
        # fields this descriptor's layout has no bits for: only their dense defaults
        for k, v in dict(more, k_dim=k_dim, a_sf_layout=a_sf_layout).items():
            if _static(v, f"{w}: {k}", 0, 7) != (1 if k == "sparsity_version" else 0):
                raise ext.user_error(f"{w}: {k}={v} is not supported", ext.DSLValueError)
        return cls._of([(2, _static(sparse_flag, f"{w}: sparse_flag", 0, 1)),
                        (cls._B_SF, _static(b_sf_id, "b_sf_id", 0, 3)), (7, _format(a_dtype, fmt, w)),
                        (10, _format(b_dtype, fmt, w)), (13, _static(a_negate, "a_negate", 0, 1)),
                        (14, _static(b_negate, "b_negate", 0, 1)), (15, _static(a_major, "a_major", 0, 1)),
                        (16, _static(b_major, "b_major", 0, 1)), (17, n),
                        (23, _static(scale_format, "scale_format", 0, 1)), (27, m),
                        (cls._A_SF, _static(a_sf_id, "a_sf_id", 0, 3))])

    def set_sf_ids(self, a_sf_id=None, b_sf_id=None):
        """This descriptor with its scale-factor ids (the byte of the scale factors' column) replaced."""
        v = self.value
        if a_sf_id is not None:
            v = (v & ~(3 << self._A_SF)) | (_static(a_sf_id, "a_sf_id", 0, 3) << self._A_SF)
        if b_sf_id is not None:
            v = (v & ~(3 << self._B_SF)) | (_static(b_sf_id, "b_sf_id", 0, 3) << self._B_SF)
        v &= (1 << 32) - 1
        return type(self)(v - (1 << 32) if v >= 1 << 31 else v)


class Tcgen05MxOmmaInstrDesc(Tcgen05MxInstrDesc):
    """The block-scaled descriptor as CuTe DSL's O-MMA builder names it (sparsity_version, k-dim halves at their
    dense defaults)."""

    @classmethod
    def build(cls, sparse_flag=0, a_sf_id=0, a_sf_layout=0, b_sf_id=0, a_dtype=None, b_dtype=None, scale_format=1,
              a_negate=0, b_negate=0, a_major=0, b_major=0, n_dim=0, m_dim=0, k_dim=0, sparsity_version=1):
        return super().build(sparse_flag=sparse_flag, b_sf_id=b_sf_id, a_sf_id=a_sf_id, a_dtype=a_dtype,
                             b_dtype=b_dtype, scale_format=scale_format, a_negate=a_negate, b_negate=b_negate,
                             a_major=a_major, b_major=b_major, n_dim=n_dim, m_dim=m_dim, k_dim=k_dim,
                             a_sf_layout=a_sf_layout, sparsity_version=sparsity_version)


class TmemAddr(cutlass.Int32):
    """A 32-bit tensor-memory address: lane (row) in the high 16 bits, column in the low 16."""

    @classmethod
    def from_row_col(cls, row, col):
        return cls((cutlass.Int32(row) << 16) | (cutlass.Int32(col) & 0xFFFF))

    @property
    def row_id(self):
        return (cutlass.Int32(self) >> 16) & 0xFFFF

    @property
    def col_id(self):
        return cutlass.Int32(self) & 0xFFFF

    def as_ptr(self, dtype):
        return make_tmem_ptr(self, dtype)


# Columns of one lane of tensor memory: what an Array from make_tmem_ptr spans
TMEM_COLUMNS = 512


def make_tmem_ptr(tmem_addr, dtype, *, loc=None, ip=None):
    """The dtype values in tensor memory from the 32-bit address tmem_addr (what tcgen05_alloc wrote) to the end of
    its lane, as a cutlass.Array (subview(i) moves along the columns; the primitives take it as its address)."""
    b = ext.builder()
    base = b.op1("llvm.inttoptr", [i32_value(tmem_addr)], "!llvm.ptr<6>")
    return cutlass.Array(ext.make_pointer(base, dtype, "tmem", 4), (TMEM_COLUMNS * 32 // dtype.width,))


def make_tmem_ptr_from_warp_row_col(tmem_base, warp, base_col, dtype, *, loc=None, ip=None):
    """The pointer to the lanes warp `warp` of its warpgroup reaches (32 (warp % 4) ..) at column base + base_col."""
    base = TmemAddr(tmem_base)
    row = base.row_id + (cutlass.Int32(warp) % 4) * 32
    return make_tmem_ptr(TmemAddr.from_row_col(row, base.col_id + base_col), dtype)


def _tmem_address(x, what):
    """The 32-bit address of a tensor-memory pointer (or array), or an address given as a number."""
    if isinstance(x, (int, cutlass.Numeric)):
        return i32_value(x)
    p = pointer(x, what)
    if p.memspace != "tmem":
        raise ext.user_error(f"{what} is in tensor memory, got a {p.memspace} pointer", ext.DSLTypeError)
    return tmem.tmem_address(cute.make_tensor(p, cute.make_layout(1)), 0) if p.offset else \
        ext.builder().op1("llvm.ptrtoint", [p.base], "i32")


def _i64(x):
    return cutlass.Int64(x).ir()


def _select(name, params, what):
    try:
        return ext.select_instruction(name, {k: str(v) for k, v in params.items()})
    except ext.DSLError:
        raise
    except Exception as e:
        raise ext.user_error(f"{what}: {e}", ext.DSLValueError) from None


# --- allocation, commit, waits, fences ------------------------------------------------------------------------

def tcgen05_alloc(addr, n_cols, *, is_exclusive=None, group=None, loc=None, ip=None):
    """The calling warp allocates n_cols columns of tensor memory; their address is written to shared memory at
    addr."""
    tmem._check_columns(n_cols)
    backend, entry = ext.select_instruction("tcgen05.alloc_tmem", {}, {"dst", "ncols"})
    b = ext.builder()
    ext.emit_instruction(b, backend, entry, {"dst": [shared_address(b, addr, "tcgen05_alloc: addr")],
                                             "ncols": [i32_value(n_cols)]}, {"cta_group": cta_group(group)})


def tcgen05_dealloc(taddr, n_cols, *, is_exclusive=None, group=None, loc=None, ip=None):
    """The allocating warp frees n_cols columns of tensor memory at taddr."""
    tmem._check_columns(n_cols)
    backend, entry = ext.select_instruction("tcgen05.dealloc_tmem", {}, {"taddr", "ncols"})
    ext.emit_instruction(ext.builder(), backend, entry, {"taddr": [_tmem_address(taddr, "tcgen05_dealloc: taddr")],
                                                         "ncols": [i32_value(n_cols)]}, {"cta_group": cta_group(group)})


def tcgen05_relinquish_alloc_permit(*, group=None, loc=None, ip=None):
    backend, entry = ext.select_instruction("tcgen05.relinquish_tmem_alloc_permit", {}, set())
    ext.emit_instruction(ext.builder(), backend, entry, {}, {"cta_group": cta_group(group)})


def tcgen05_commit(addr, *, multicast_mask=None, smem_a_read=None, group=None, loc=None, ip=None):
    """The mbarrier at addr (of every CTA in multicast_mask) gets one arrival once this thread's prior tcgen05
    operations have completed."""
    if smem_a_read:
        raise ext.user_error("tcgen05_commit: smem_a_read is not supported", ext.DSLNotImplementedError)
    b = ext.builder()
    bar = shared_address(b, addr, "tcgen05_commit: addr")
    if multicast_mask is None:
        backend, entry = ext.select_instruction("tcgen05.commit", {}, {"mbar"})
        inputs = {"mbar": [bar]}
    else:
        backend, entry = ext.select_instruction("tcgen05.commit_multicast", {}, {"mbar", "cta_mask"})
        inputs = {"mbar": [bar], "cta_mask": [i32_value(multicast_mask)]}
    ext.emit_instruction(b, backend, entry, inputs, {"cta_group": cta_group(group)})


def _member(x, cls, what):
    """A member of enumeration cls, given as itself or as its value (CuTe DSL takes "load" for LOAD)."""
    try:
        return x if isinstance(x, cls) else cls(x)
    except ValueError:
        raise ext.user_error(f"{what} is a {cls.__name__} ({', '.join(m.name for m in cls)}) or its value, got "
                             f"{x!r}", ext.DSLTypeError) from None


def tcgen05_wait(kind, *, loc=None, ip=None):
    """This thread's prior tcgen05_ld (LOAD) or tcgen05_st (STORE) have completed."""
    k = _member(kind, Tcgen05Wait, "tcgen05_wait: kind")
    tmem._primitive("tcgen05.wait_ld" if k is Tcgen05Wait.LOAD else "tcgen05.wait_st")


def tcgen05_fence(kind, *, loc=None, ip=None):
    tmem._primitive(f"tcgen05.fence_{_member(kind, Tcgen05Fence, 'tcgen05_fence: kind').value}")


# --- MMA ------------------------------------------------------------------------------------------------------

def _mma_operand_a(a):
    """("SMEM", descriptor) or ("TMEM", address) of operand A."""
    if isinstance(a, (int, cutlass.Numeric)):
        return "SMEM", _i64(a)
    return "TMEM", _tmem_address(a, "tcgen05_mma: a")


def _kind(mma_kind, allowed, what):
    k = getattr(mma_kind, "name", None)
    if k not in allowed:
        raise ext.user_error(f"{what}: the kind is one of {', '.join(allowed)}, got {mma_kind!r}", ext.DSLTypeError)
    return allowed[k]


def tcgen05_mma(mma_kind, cta_group_, d, a, b, idesc, enable_input_d, *, collector_op=None, b_collector_op=None,
                a_shift=None, scale_input_d=None, write_disable_mask=None, loc=None, ip=None):
    """D (+)= A B on the tensor cores: d A's and D's tensor memory, a a Tcgen05SmemDesc (or A in tensor memory),
    b a Tcgen05SmemDesc, idesc a Tcgen05InstrDesc; enable_input_d false overwrites D."""
    w = "tcgen05_mma"
    kind = _kind(mma_kind, {"F16": "f16", "TF32": "tf32", "F8F6F4": "f8f6f4", "INT8": "i8"}, w)
    if b_collector_op is not None:
        raise ext.user_error(f"{w}: b_collector_op is not supported", ext.DSLNotImplementedError)
    if collector_op is not None and not isinstance(collector_op, Tcgen05MMACollectorOp):
        raise ext.user_error(f"{w}: collector_op is a Tcgen05MMACollectorOp, got {collector_op!r}", ext.DSLTypeError)
    g = cta_group(cta_group_)
    a_src, a_val = _mma_operand_a(a)
    params = {"cta_group": g, "kind": kind, "a_src": a_src,
              "collector": collector_op.value if collector_op is not None else "none",
              "lanes": int(write_disable_mask is not None), "scale": int(scale_input_d is not None),
              "ashift": int(bool(a_shift))}
    backend, entry = _select("tcgen05.prim_mma", params, w)
    inputs = {"d": [_tmem_address(d, f"{w}: d")], "a": [a_val], "b": [_i64(b)], "idesc": [i32_value(idesc)],
              "enable_input_d": [cutlass.Boolean(enable_input_d).ir()]}
    attrs = {}
    if write_disable_mask is not None:
        words = [write_disable_mask[i] for i in range(len(write_disable_mask))]
        if len(words) != 4 * g:
            raise ext.user_error(f"{w}: write_disable_mask has {len(words)} words, cta_group {g} takes {4 * g}",
                                 ext.DSLValueError)
        inputs["mask"] = [i32_value(x) for x in words]
    if scale_input_d is not None:
        attrs["scale_input_d"] = _static(scale_input_d, f"{w}: scale_input_d", 0, 15)
    ext.emit_instruction(ext.builder(), backend, entry, inputs, attrs)


def tcgen05_mma_block_scale(mma_kind, cta_group_, d, a, b, idesc, enable_input_d, scale_a, scale_b, *,
                            scale_vec_size=None, collector_op=None, b_collector_op=None, a_shift=None, loc=None,
                            ip=None):
    """D (+)= (A x SFA) (B x SFB): as tcgen05_mma, with the scale factors in tensor memory at scale_a / scale_b
    and idesc a Tcgen05MxInstrDesc."""
    w = "tcgen05_mma_block_scale"
    kind = _kind(mma_kind, {"MXF8F6F4": "mxf8f6f4", "MXF4": "mxf4", "MXF4NVF4": "mxf4nvf4"}, w)
    if collector_op is not None or b_collector_op is not None or a_shift:
        raise ext.user_error(f"{w}: collector uses and a_shift are not supported", ext.DSLNotImplementedError)
    vec = getattr(scale_vec_size, "name", "DEFAULT")
    vec = {"DEFAULT": "block32" if kind != "mxf4nvf4" else "block16", "BLOCK16": "block16",
           "BLOCK32": "block32"}.get(vec)
    if vec is None:
        raise ext.user_error(f"{w}: scale_vec_size is a Tcgen05MMABlockScale, got {scale_vec_size!r}",
                             ext.DSLTypeError)
    a_src, a_val = _mma_operand_a(a)
    backend, entry = _select("tcgen05.prim_mma_block_scale",
                             {"cta_group": cta_group(cta_group_), "kind": kind, "a_src": a_src, "vec": vec}, w)
    ext.emit_instruction(ext.builder(), backend, entry, {
        "d": [_tmem_address(d, f"{w}: d")], "a": [a_val], "b": [_i64(b)], "idesc": [i32_value(idesc)],
        "scale_a": [_tmem_address(scale_a, f"{w}: scale_a")], "scale_b": [_tmem_address(scale_b, f"{w}: scale_b")],
        "enable_input_d": [cutlass.Boolean(enable_input_d).ir()]})


# --- tensor memory <-> registers, shared memory -> tensor memory ----------------------------------------------

_REGS_PER_REPEAT = {"32x32b": 1, "16x64b": 1, "16x128b": 2, "16x256b": 4, "16x32bx2": 1}


def _shape(shape, what):
    s = shape.value if isinstance(shape, Tcgen05LdStShape) else shape
    if s not in _REGS_PER_REPEAT:
        raise ext.user_error(f"{what}: shape is a Tcgen05LdStShape or one of {', '.join(_REGS_PER_REPEAT)}, got "
                             f"{shape!r}", ext.DSLValueError)
    return s


def _half_offset(shape, offset, what):
    if shape != "16x32bx2":
        if offset is not None:
            raise ext.user_error(f"{what}: offset= is for the 16x32bx2 shape", ext.DSLTypeError)
        return {}
    return {"half_offset": _static(offset if offset is not None else 0, f"{what}: offset", 0, (1 << 16) - 1)}


def tcgen05_ld(shape, tmem_addr, *, num: int = 1, pack=None, offset=None, loc=None, ip=None):
    """The calling warp's registers from tensor memory: a Vector of the pointer's element type (32-bit values, or
    16-bit ones two to a register with pack)."""
    w = "tcgen05_ld"
    s = _shape(shape, w)
    p = pointer(tmem_addr, f"{w}: tmem_addr")
    backend, entry = _select("tcgen05.prim_ld", {"shape": s, "num": _static(num, f"{w}: num", 1, 128),
                                                 "pack": int(bool(pack))}, w)
    b = ext.builder()
    out = ext.emit_instruction(b, backend, entry, {"src": [_tmem_address(p, w)]}, _half_offset(s, offset, w))["dst"]
    et = p.dtype
    if et.width == 32:
        vals = [et.from_ir(v if et.ir_type == "i32" else b.op1("llvm.bitcast", [v], et.ir_type)) for v in out]
    elif et.width == 16 and pack:
        vals = []
        for v in out:
            pair = b.op1("llvm.bitcast", [v], f"vector<2x{et.ir_type}>")
            vals += [et.from_ir(b.op1("llvm.extractelement", [pair, cutlass.Int32(i).ir()], et.ir_type))
                     for i in range(2)]
    else:
        raise ext.user_error(f"{w}: a pointer to {et.__name__} values; tensor memory loads 32-bit values (or "
                             "16-bit ones with pack=True)", ext.DSLTypeError)
    return cutlass.Vector.from_elements(vals, et)


def tcgen05_st(shape, tmem_addr, val, *, unpack=None, offset=None, loc=None, ip=None):
    """The calling warp's registers (a Vector of 32-bit values) to tensor memory."""
    w = "tcgen05_st"
    s = _shape(shape, w)
    p = pointer(tmem_addr, f"{w}: tmem_addr")
    elems = val.to_elements() if hasattr(val, "to_elements") else [val]
    words = [cutlass.Int32(x.ir() if x.ir_type == "i32" else ext.builder().op1("llvm.bitcast", [x.ir()], "i32"))
             if isinstance(x, cutlass.Numeric) and type(x).width == 32 else None for x in elems]
    if any(x is None for x in words):
        raise ext.user_error(f"{w}: the value is a Vector of 32-bit elements", ext.DSLTypeError)
    per = _REGS_PER_REPEAT[s]
    if len(words) % per or (len(words) // per) & (len(words) // per - 1):
        raise ext.user_error(f"{w}: {len(words)} registers are not a power-of-two repetition of .{s}",
                             ext.DSLValueError)
    backend, entry = _select("tcgen05.prim_st", {"shape": s, "num": len(words) // per, "pack": int(bool(unpack))}, w)
    ext.emit_instruction(ext.builder(), backend, entry, {"dst": [_tmem_address(p, w)],
                                                         "src": [x.ir() for x in words]}, _half_offset(s, offset, w))


_CP_SHAPES = {("128x256b", None), ("4x256b", None), ("128x128b", None), ("64x128b", "warpx2_02_13"),
              ("64x128b", "warpx2_01_23"), ("32x128b", "warpx4")}


def tcgen05_cp(shape, taddr, smem_desc, *, group=None, multicast=None, src_format=None, loc=None, ip=None):
    """Shared memory (the Tcgen05SmemDesc smem_desc) to tensor memory at taddr, asynchronously (complete with
    tcgen05_commit); src_format: narrow elements widened to 8-bit holders on the way."""
    w = "tcgen05_cp"
    key = (getattr(shape, "value", shape), getattr(multicast, "value", multicast))
    if key not in _CP_SHAPES:
        raise ext.user_error(f"{w}: no copy of shape {shape!r} with multicast {multicast!r} (S2TCopyMode lists "
                             "them)", ext.DSLValueError)
    if src_format is not None and not isinstance(src_format, Tcgen05CpSrcFormat):
        raise ext.user_error(f"{w}: src_format is a Tcgen05CpSrcFormat, got {src_format!r}", ext.DSLTypeError)
    name = key[0] + (f".{key[1]}" if key[1] else "")
    backend, entry = _select("tcgen05.prim_cp", {"cta_group": cta_group(group), "shape": name,
                                                 "fmt": src_format.value if src_format else "none"}, w)
    ext.emit_instruction(ext.builder(), backend, entry, {"dst": [_tmem_address(taddr, f"{w}: taddr")],
                                                         "src": [_i64(smem_desc)]})


NAMES = ("Tcgen05MMAKind", "MMABlockScaleKind", "Tcgen05SmemSwizzle", "Tcgen05Wait", "Tcgen05Fence",
         "Tcgen05LdStShape", "Tcgen05CpShape", "Tcgen05CpMulticast", "S2TCopyMode", "Tcgen05CpSrcFormat",
         "Tcgen05MMACollectorOp", "Tcgen05MMABlockScale", "Tcgen05SmemDesc", "Tcgen05InstrDesc",
         "Tcgen05MxInstrDesc", "Tcgen05MxOmmaInstrDesc", "TmemAddr", "make_tmem_ptr",
         "make_tmem_ptr_from_warp_row_col", "tcgen05_alloc", "tcgen05_dealloc", "tcgen05_relinquish_alloc_permit",
         "tcgen05_commit", "tcgen05_wait", "tcgen05_fence", "tcgen05_mma", "tcgen05_mma_block_scale", "tcgen05_ld",
         "tcgen05_st", "tcgen05_cp")
__all__ = list(NAMES) + ["CTAGroup"]
