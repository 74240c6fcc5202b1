"""tcgen05.mma in the DSL: CTA groups, operand majors and sources, runtime fields, shared-memory layout atoms, the
ops with CuTe DSL's constructors, and the two operand kinds of their manifest atoms.

A tcgen05.mma is issued by one thread for the whole CTA (or, with cta_group::2, by the even CTA of a pair for
both): A and B come from shared memory through 64-bit UMMA matrix descriptors (or A from tensor memory), D lives
in tensor memory and is accumulated in place. CuTe's SM100 traits give the atom's thread-value layouts over CTAs,
not threads: thr_id is the CTA group, and CTA v of a pair holds rows [v M/2, (v+1) M/2) of A and D and columns
[v N/2, (v+1) N/2) of B:

    A: (cta, (M/cta, K)) : (M/cta, (1, M))     B: (cta, (N/cta, K)) : (N/cta, (1, N))
    C: (cta, (M/cta, N)) : (M/cta, (1, M))

So a thread's partition is its CTA's whole share of the tile, and make_fragment_A/B return the shared-memory
partition itself ("umma_smem_descriptor" kind): at cute.gemm the adapter checks the (MN, K) tile of each
instruction element by element against the canonical layouts a descriptor can describe (the PTX ISA's "Shared
Memory Matrix Layouts", the same forms wgmma reads: Hopper's mma_smem_layouts, with the operand majors and layout
atoms, which this backend builds on) and writes the descriptor with the plugin's umma_smem_desc hook. The
accumulator fragment ("tmem" kind, make_fragment_C of a shape) is laid out in tensor memory as the instruction
writes D (PTX ISA, "Data path layout organization"), see tmem_layouts.py. The instruction descriptor comes from
the plugin's tcgen05_instr_desc hook.
"""
from __future__ import annotations

import enum

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import ext
from warpweave.backends.hopper.mma_smem_layouts import (
    OperandMajorMode, Reader, SmemDescriptorOperands, SmemLayoutAtomKind, check_swizzle_alignment, descriptor_form,
    layout_atom,
)

from . import tmem_layouts


class CtaGroup(int):
    """How many CTAs one tcgen05 instruction works for: ONE, or TWO (a pair of CTAs of a cluster, ranks 2i and
    2i+1, the even one issuing). An int, so that it selects the manifest's cta_group parameter as 1 or 2."""

    ONE: "CtaGroup"
    TWO: "CtaGroup"

    def __repr__(self):
        return "CtaGroup.ONE" if self == 1 else "CtaGroup.TWO"

    __str__ = int.__repr__


CtaGroup.ONE = CtaGroup(1)
CtaGroup.TWO = CtaGroup(2)


class OperandSource(enum.Enum):
    SMEM = "SMEM"
    TMEM = "TMEM"


class Field(enum.Enum):
    """Runtime fields of a tcgen05 MMA atom. ACCUMULATE (False at first, as in CuTe DSL): False makes the next
    cute.gemm compute D = A * B, True D = A * B + D. NEGATE_A / NEGATE_B negate an operand (float kinds). SFA / SFB
    (block-scaled ops): where in tensor memory the next cute.gemm reads A's and B's scale factors, a tensor-memory
    pointer (the iterator of the instruction's slice of make_tmem_layout_sfa/sfb's tensor)."""
    ACCUMULATE = "accumulate"
    NEGATE_A = "negate_a"
    NEGATE_B = "negate_b"
    SFA = "sfa"
    SFB = "sfb"


def make_smem_layout_atom(kind: SmemLayoutAtomKind, element_type, *, loc=None, ip=None):
    """The shared-memory layout atom of a kind, in elements of element_type: 8 rows of the swizzle's width (16
    bytes for the interleaved kinds) along the major mode, swizzled as TMA writes and tcgen05.mma reads it."""
    return layout_atom(kind, element_type, (4, 8, 16, 32))


# --- the ops ----------------------------------------------------------------------------------------------------

def _flag(fields, field, default):
    v = fields.get(field, default)
    return v if isinstance(v, cutlass.Boolean) else cutlass.Boolean(bool(v))


class _Tcgen05Mma:
    """What the four op classes share (mixed into subclasses of the manifest's classes)."""

    default_fields = {Field.ACCUMULATE: False}
    # a cute.gemm over several k-blocks accumulates from its second on, whatever the field says for the first
    accumulate_field = Field.ACCUMULATE

    def _setup(self, name, cta_group, a_src, a_major, b_major):
        if not isinstance(cta_group, int) or cta_group not in (1, 2):
            raise ext.user_error(f"{name}: cta_group must be tcgen05.CtaGroup.ONE or TWO, got {cta_group!r}",
                                 ext.DSLTypeError)
        checked = []
        for what, v, cls in (("a_src", a_src, OperandSource), ("a_major_mode", a_major, OperandMajorMode),
                             ("b_major_mode", b_major, OperandMajorMode)):
            if isinstance(v, str) and v in cls.__members__:
                v = cls[v]          # the member's name, as the manifest spells it
            if not isinstance(v, cls):
                raise ext.user_error(f"{name}: {what} must be a tcgen05.{cls.__name__}, got {v!r}", ext.DSLTypeError)
            checked.append(v)
        a_src, a_major, b_major = checked
        if a_src == OperandSource.TMEM and a_major != OperandMajorMode.K:
            raise ext.user_error(f"{name}: A in tensor memory is K-major", ext.DSLValueError)
        self.cta_group = CtaGroup(cta_group)
        self.a_src, self.a_major_mode, self.b_major_mode = a_src, a_major, b_major

    @property
    def shape_mnk(self):
        return tuple(self.raw_params["shape_mnk"])

    @property
    def a_dtype(self):
        """A's element type as the instruction reads it (CuTe DSL's MmaOp.a_dtype)."""
        return self._dtype_param("a_dtype")

    @property
    def b_dtype(self):
        return self._dtype_param("b_dtype")

    @property
    def acc_dtype(self):
        """The accumulators' type: Int32 for kind::i8, Float32 where the op takes no acc_dtype (kind::tf32)."""
        p = self.raw_params
        if "acc_dtype" in p:
            return p["acc_dtype"]
        return cutlass.Int32 if p.get("ab_dtype") in (cutlass.Int8, cutlass.Uint8) else cutlass.Float32

    def _dtype_param(self, which):
        p = self.raw_params
        if which in p:
            return p[which]
        if "ab_dtype" in p:
            return p["ab_dtype"]
        return cutlass.TFloat32   # kind::tf32 names no type: its operands are tf32

    def instruction_operands(self, fields):
        """The instruction descriptor (a constant from the plugin's hook: types, M, N from the atom; majors and
        negations from the op and its fields) and enable_input_d (Field.ACCUMULATE)."""
        return self._base_operands(fields)

    def _base_operands(self, fields, **more_attrs):
        backend, entry = self.entry()
        idesc_backend, idesc_entry = ext.select_instruction("tcgen05.make_instr_desc", {}, set())
        attrs = {"atom": entry["id"], "a_major": "K" if self.a_major_mode == OperandMajorMode.K else "MN",
                 "b_major": "K" if self.b_major_mode == OperandMajorMode.K else "MN"}
        for f, key in ((Field.NEGATE_A, "negate_a"), (Field.NEGATE_B, "negate_b")):
            v = fields.get(f, False)
            if not isinstance(v, bool):
                raise ext.user_error(f"tcgen05 {f}: the negation is part of the instruction descriptor, a constant: "
                                     "set it to True or False", ext.DSLTypeError)
            attrs[key] = int(v)
        attrs.update(more_attrs)
        idesc = ext.emit_instruction(ext.builder(), idesc_backend, idesc_entry, {}, attrs)["idesc"][0]
        return {"idesc": [idesc], "enable_input_d": [_flag(fields, Field.ACCUMULATE, False).ir()]}, {}

    def emit_instruction(self, b, backend, entry, inputs, attrs):
        """One elected thread of the calling warp issues the instruction (CuTe DSL's kernels call cute.gemm from
        the whole MMA warp). D is both the accumulator read and the one written: cute.gemm's c is it."""
        ins = dict(inputs)
        ins["d"] = ins.pop("c")
        ext.when(cute.arch.elect_one(), lambda: ext.emit_instruction(b, backend, entry, ins, attrs))
        return {}

    def _key(self):
        return (self.a_major_mode, self.b_major_mode)

    def __eq__(self, other):
        return super().__eq__(other) and self._key() == other._key()

    def __hash__(self):
        return hash((super().__hash__(), self._key()))

    def __repr__(self):
        return (f"{type(self).__name__}({self.shape_mnk}, {self.cta_group!r}, {self.a_src}, A {self.a_major_mode.name}"
                f"-major, B {self.b_major_mode.name}-major)")


def _is_f8_type(t) -> bool:
    return isinstance(t, type) and issubclass(t, cutlass.Float) and getattr(t, "width", 0) == 8


def _make_op_classes():
    out = {}
    S, K = OperandSource.SMEM, OperandMajorMode.K

    base = ext.manifest_class("tcgen05.MmaF16BF16Op")
    if base is not None:
        class MmaF16BF16Op(_Tcgen05Mma, base):
            """tcgen05.mma kind::f16: MmaF16BF16Op(ab_dtype, acc_dtype, instruction_shape, cta_group, a_src,
            a_major_mode, b_major_mode); fp16 or bf16 inputs, K = 16."""

            def __init__(self, ab_dtype, acc_dtype, instruction_shape, cta_group=CtaGroup.ONE, a_src=S,
                         a_major_mode=K, b_major_mode=K):
                self._setup("MmaF16BF16Op", cta_group, a_src, a_major_mode, b_major_mode)
                super().__init__(ab_dtype, acc_dtype, tuple(instruction_shape), self.cta_group, self.a_src)

        out["MmaF16BF16Op"] = MmaF16BF16Op
    base = ext.manifest_class("tcgen05.MmaTF32Op")
    if base is not None:
        class MmaTF32Op(_Tcgen05Mma, base):
            """tcgen05.mma kind::tf32: MmaTF32Op(instruction_shape, cta_group, a_src, a_major_mode, b_major_mode);
            fp32 accumulators, K = 8."""

            def __init__(self, instruction_shape, cta_group=CtaGroup.ONE, a_src=S, a_major_mode=K, b_major_mode=K):
                self._setup("MmaTF32Op", cta_group, a_src, a_major_mode, b_major_mode)
                super().__init__(tuple(instruction_shape), self.cta_group, self.a_src)

        out["MmaTF32Op"] = MmaTF32Op
    base = ext.manifest_class("tcgen05.MmaI8Op")
    if base is not None:
        class MmaI8Op(_Tcgen05Mma, base):
            """tcgen05.mma kind::i8: MmaI8Op(ab_dtype, instruction_shape, cta_group, a_src, a_major_mode,
            b_major_mode); Int8 or Uint8 inputs, Int32 accumulators, K = 32."""

            def __init__(self, ab_dtype, instruction_shape, cta_group=CtaGroup.ONE, a_src=S, a_major_mode=K,
                         b_major_mode=K):
                self._setup("MmaI8Op", cta_group, a_src, a_major_mode, b_major_mode)
                super().__init__(ab_dtype, tuple(instruction_shape), self.cta_group, self.a_src)

        out["MmaI8Op"] = MmaI8Op
    base = ext.manifest_class("tcgen05.MmaF8F6F4Op")
    if base is not None:
        class MmaF8F6F4Op(_Tcgen05Mma, base):
            """tcgen05.mma kind::f8f6f4 with 8-bit floats: MmaF8F6F4Op(a_dtype, b_dtype, acc_dtype,
            instruction_shape, cta_group, a_src, a_major_mode, b_major_mode), CuTe DSL's form, or with one type for
            A and B, MmaF8F6F4Op(ab_dtype, acc_dtype, instruction_shape, ...); Float8E4M3FN or Float8E5M2, the same
            for A and B (the families here have one type for both), K = 32."""

            def __init__(self, ab_dtype, *args, **kwargs):
                # CuTe DSL's form gives B's type second; the accumulator types (Float16, Float32) are no 8-bit
                # float, so the second argument says which form this is
                if args and _is_f8_type(args[0]):
                    b_dtype, args = args[0], args[1:]
                    if b_dtype is not ab_dtype:
                        raise ext.user_error(
                            f"MmaF8F6F4Op: A is {ab_dtype.__name__} and B {b_dtype.__name__}; the kind::f8f6f4 MMAs "
                            "here take one type for both", ext.DSLTypeError)
                self._init(ab_dtype, *args, **kwargs)

            def _init(self, ab_dtype, acc_dtype, instruction_shape, cta_group=CtaGroup.ONE, a_src=S,
                      a_major_mode=K, b_major_mode=K):
                self._setup(type(self).__name__, cta_group, a_src, a_major_mode, b_major_mode)
                base.__init__(self, ab_dtype, acc_dtype, tuple(instruction_shape), self.cta_group, self.a_src)

        out["MmaF8F6F4Op"] = MmaF8F6F4Op

        # A class of its own, not a subclass: CuTe DSL's MmaFP8Op is no MmaF8F6F4Op (libraries test for both)
        class MmaFP8Op(_Tcgen05Mma, base):
            """tcgen05.mma kind::f8f6f4 with one 8-bit float type for A and B, CuTe DSL's earlier name:
            MmaFP8Op(ab_dtype, acc_dtype, instruction_shape, cta_group, a_src, a_major_mode, b_major_mode); the
            same instruction and atom as MmaF8F6F4Op of that type for A and B."""

            def __init__(self, ab_dtype, acc_dtype, instruction_shape, cta_group=CtaGroup.ONE, a_src=S,
                         a_major_mode=K, b_major_mode=K):
                MmaF8F6F4Op._init(self, ab_dtype, acc_dtype, instruction_shape, cta_group, a_src, a_major_mode,
                                  b_major_mode)

        out["MmaFP8Op"] = MmaFP8Op


    # sm_103a's K = 96 ops are sm_100a's 4-bit ops over their own manifest families (K = 96 in the descriptor)
    for prefix, k in (("", 64), ("SM103", 96)):
        for name, make in (("MmaMXF4NVF4Op", _nvf4_class), ("MmaMXF4Op", _mxf4_class)):
            base = ext.manifest_class(f"tcgen05.{prefix}{name}")
            if base is not None:
                out[prefix + name] = make(prefix + name, base, k)
    base = ext.manifest_class("tcgen05.MmaMXF8Op")
    if base is not None:
        class MmaMXF8Op(BlockScaledMmaOp, _Tcgen05Mma, base):
            """tcgen05.mma kind::mxf8f6f4 .block_scale.scale_vec::1X (MXFP8): MmaMXF8Op(ab_dtype,
            instruction_shape, cta_group, a_src, a_major_mode, b_major_mode); Float8E4M3FN or Float8E5M2 A and B,
            Float32 accumulators, K = 32, one Float8E8M0FNU scale factor per 32 elements along K, read from tensor
            memory at Field.SFA / Field.SFB."""

            def __init__(self, ab_dtype, instruction_shape, cta_group=CtaGroup.ONE, a_src=S, a_major_mode=K,
                         b_major_mode=K):
                self._setup("MmaMXF8Op", cta_group, a_src, a_major_mode, b_major_mode)
                if self.a_src != OperandSource.SMEM:
                    raise ext.user_error("MmaMXF8Op: A is read from shared memory here (OperandSource.SMEM)",
                                         ext.DSLValueError)
                base.__init__(self, ab_dtype, tuple(instruction_shape), self.cta_group, self.a_src)
                self.sf_dtype, self.sf_vec_size = cutlass.Float8E8M0FNU, 32

        out["MmaMXF8Op"] = MmaMXF8Op
    base = ext.manifest_class("tcgen05.MmaMXF8F6F4Op")
    if base is not None:
        class MmaMXF8F6F4Op(BlockScaledMmaOp, _Tcgen05Mma, base):
            """tcgen05.mma kind::mxf8f6f4 .block_scale.scale_vec::1X with A and B of their own formats:
            MmaMXF8F6F4Op(a_dtype, b_dtype, instruction_shape, cta_group, a_src, a_major_mode, b_major_mode);
            Float8E4M3FN, Float8E5M2, Float6E2M3FN, Float6E3M2FN or Float4E2M1FN each (the 6- and 4-bit ones a
            byte an element in shared memory, K- or MN-major), Float32 accumulators, K = 32, one Float8E8M0FNU scale
            factor per 32 elements along K."""

            def __init__(self, a_dtype, b_dtype, instruction_shape, cta_group=CtaGroup.ONE, a_src=S,
                         a_major_mode=K, b_major_mode=K):
                self._setup("MmaMXF8F6F4Op", cta_group, a_src, a_major_mode, b_major_mode)
                if self.a_src != OperandSource.SMEM:
                    raise ext.user_error("MmaMXF8F6F4Op: A is read from shared memory here (OperandSource.SMEM)",
                                         ext.DSLValueError)
                base.__init__(self, a_dtype, b_dtype, tuple(instruction_shape), self.cta_group, self.a_src)
                self.sf_dtype, self.sf_vec_size = cutlass.Float8E8M0FNU, 32

        out["MmaMXF8F6F4Op"] = MmaMXF8F6F4Op
    out["BlockScaledMmaOp"] = BlockScaledMmaOp
    return out


def _nvf4_class(name, base, k):
    class Op(BlockScaledMmaOp, _Tcgen05Mma, base):
        def __init__(self, sf_dtype, instruction_shape, cta_group=CtaGroup.ONE, a_src=OperandSource.SMEM):
            self._setup(name, cta_group, a_src, OperandMajorMode.K, OperandMajorMode.K)
            if self.a_src != OperandSource.SMEM:
                raise ext.user_error(f"{name}: A is read from shared memory here (OperandSource.SMEM)",
                                     ext.DSLValueError)
            base.__init__(self, sf_dtype, tuple(instruction_shape), self.cta_group, self.a_src)
            self.sf_dtype, self.sf_vec_size = sf_dtype, 16

    Op.__name__ = Op.__qualname__ = name
    Op.__doc__ = (f"tcgen05.mma kind::mxf4nvf4 with 16 elements a scale factor: {name}(sf_dtype, instruction_shape, "
                  f"cta_group, a_src); Float4E2M1FN A and B (K-major), Float32 accumulators, K = {k}, one scale "
                  "factor of sf_dtype (Float8E4M3FN for nvf4, or Float8E8M0FNU) per 16 elements along K, read from "
                  "tensor memory at Field.SFA / Field.SFB.")
    return Op


def _mxf4_class(name, base, k):
    class Op(BlockScaledMmaOp, _Tcgen05Mma, base):
        def __init__(self, instruction_shape, cta_group=CtaGroup.ONE, a_src=OperandSource.SMEM):
            self._setup(name, cta_group, a_src, OperandMajorMode.K, OperandMajorMode.K)
            if self.a_src != OperandSource.SMEM:
                raise ext.user_error(f"{name}: A is read from shared memory here (OperandSource.SMEM)",
                                     ext.DSLValueError)
            base.__init__(self, tuple(instruction_shape), self.cta_group, self.a_src)
            self.sf_dtype, self.sf_vec_size = cutlass.Float8E8M0FNU, 32

    Op.__name__ = Op.__qualname__ = name
    Op.__doc__ = (f"tcgen05.mma kind::mxf4 (MXFP4): {name}(instruction_shape, cta_group, a_src); Float4E2M1FN A and "
                  f"B (K-major), Float32 accumulators, K = {k}, one Float8E8M0FNU scale factor per 32 elements along "
                  "K, read from tensor memory at Field.SFA / Field.SFB.")
    return Op


class BlockScaledMmaOp:
    """The block-scaled ops' scale factors: Field.SFA and Field.SFB point into tensor memory; the instruction takes
    their 32-bit column addresses and, in its descriptor, the byte of the column each starts at."""

    # The scale factors come from Field.SFA / Field.SFB or from cute.gemm's companions, either way.
    companions_optional = True

    def __init__(self, a_dtype, b_dtype, acc_dtype, sf_dtype, sf_vec_size, shape_mnk, cta_group, a_src,
                 a_major_mode, b_major_mode):
        """CuTe DSL's general constructor of the block-scaled ops, which libraries call on their own subclasses
        (an op of one kind with another's scale vector): the types and the scale vector select the manifest's
        instruction, whatever the subclass."""
        name = type(self).__name__
        self._setup(name, cta_group, a_src, a_major_mode, b_major_mode)
        target = _block_scaled_target(name, a_dtype, b_dtype, acc_dtype, sf_dtype, sf_vec_size)
        check_transposable(name, target, self.a_major_mode, self.b_major_mode)
        cls = ext.manifest_class(target)
        if cls is None:
            raise ext.user_error(f"{name}: no loaded backend offers {target}", ext.DSLNotImplementedError)
        params = {"ab_dtype": a_dtype, "a_dtype": a_dtype, "b_dtype": b_dtype, "acc_dtype": acc_dtype,
                  "sf_dtype": sf_dtype, "shape_mnk": tuple(shape_mnk), "cta_group": self.cta_group,
                  "a_src": self.a_src}
        # the instance is the target's op, under the library's class
        self.python_name, self.signature, self.param_names = cls.python_name, (), cls.param_names
        cls.__init__(self, **{k: v for k, v in params.items() if k in cls.param_names})
        self.sf_dtype, self.sf_vec_size = sf_dtype, sf_vec_size

    def _verify(self):
        """Selects the instruction now, so that an op no backend offers fails where it is made."""
        self.entry()

    def companion_inputs(self, a_more, b_more, m, n):
        """cute.gemm(tiled_mma, d, [tCrA, tCtSFA], [tCrB, tCtSFB], c): the scale factors as tensor-memory
        tensors, one (MMA, MMA_M) / (MMA, MMA_N) slice per k-block; atom (m, n) reads where its slice starts, as
        Field.SFA / Field.SFB would point."""
        if len(a_more) != 1 or len(b_more) != 1:
            raise ext.user_error(f"cute.gemm: {type(self).__name__} takes A and B each with one scale-factor tensor "
                                 "in tensor memory: [tCrA, tCtSFA], [tCrB, tCtSFB]", ext.DSLValueError)
        out = {}
        for f, t, i in ((Field.SFA, a_more[0], m), (Field.SFB, b_more[0], n)):
            if getattr(t, "memspace", None) != "tmem":
                raise ext.user_error(f"cute.gemm: {type(self).__name__} reads its scale factors from tensor memory; "
                                     f"the {f.name} companion is {t!r} (copy it there, e.g. with tcgen05.Cp4x32x128bOp)",
                                     ext.DSLTypeError)
            out[f] = (t[None, i] if cute.rank(t) > 1 else t).iterator
        return out

    def instruction_operands(self, fields, companions=None):
        if companions:
            fields = {**fields, **companions}
        inputs, attrs = {}, {}
        ids = {}
        for f, name in ((Field.SFA, "scale_a"), (Field.SFB, "scale_b")):
            ptr = fields.get(f)
            if ptr is None:
                raise ext.user_error(f"cute.gemm: {type(self).__name__} reads its scale factors from tensor memory: "
                                     f"set tiled_mma.set(tcgen05.{f}, tmem_tensor.iterator) first", ext.DSLValueError)
            addr, byte = _scale_address(ptr, f)
            inputs[name] = [addr]
            ids[f] = byte
        base_inputs, base_attrs = self._base_operands(fields, sfa_id=ids[Field.SFA], sfb_id=ids[Field.SFB])
        inputs.update(base_inputs)
        attrs.update(base_attrs)
        return inputs, attrs


def _block_scaled_target(name, a, b, acc, sf, vec):
    """The manifest name of the block-scaled instruction for A and B types a and b with a scale factor of type sf
    per vec elements (PTX ISA, tcgen05.mma .block_scale: kind::mxf4nvf4 with scale_vec::4X, kind::mxf4 with
    scale_vec::2X, kind::mxf8f6f4 with scale_vec::1X)."""
    fp4, fp8, e8m0 = cutlass.Float4E2M1FN, (cutlass.Float8E4M3FN, cutlass.Float8E5M2), cutlass.Float8E8M0FNU
    if acc is not cutlass.Float32:
        raise ext.user_error(f"{name}: block-scaled MMAs accumulate in Float32, got {getattr(acc, '__name__', acc)}",
                             ext.DSLTypeError)
    if a is fp4 and b is fp4 and vec == 16 and sf in (cutlass.Float8E4M3FN, e8m0):
        return "tcgen05.MmaMXF4NVF4Op"
    if a is fp4 and b is fp4 and vec == 32 and sf is e8m0:
        return "tcgen05.MmaMXF4Op"
    if a in fp8 and b in fp8 and vec == 32 and sf is e8m0:
        return "tcgen05.MmaMXF8Op" if a is b else "tcgen05.MmaMXF8F6F4Op"
    if a in MXF8F6F4_TYPES and b in MXF8F6F4_TYPES and vec == 32 and sf is e8m0:
        return "tcgen05.MmaMXF8F6F4Op"
    raise ext.user_error(
        f"{name}: {getattr(a, '__name__', a)} x {getattr(b, '__name__', b)} with a {getattr(sf, '__name__', sf)} "
        f"scale factor per {vec} elements is none of the block-scaled MMAs here: {BLOCK_SCALED_FORMS}",
        ext.DSLTypeError)


BLOCK_SCALED_FORMS = ("Float4E2M1FN A and B with Float8E4M3FN or Float8E8M0FNU per 16 (kind::mxf4nvf4), "
                      "Float4E2M1FN with Float8E8M0FNU per 32 (kind::mxf4), Float8E4M3FN, Float8E5M2, Float6E2M3FN, "
                      "Float6E3M2FN or Float4E2M1FN A and B, alike or not, with Float8E8M0FNU per 32 "
                      "(kind::mxf8f6f4; its 6- and 4-bit operands one a byte in shared memory)")

# kind::mxf8f6f4's formats. The 6- and 4-bit ones are read from shared memory unpacked (PTX ISA: 16 elements fill
# 16 bytes, .b6x16_p32 / .b4x16_p64), so their tiles are those of 8-bit elements, typically Uint8 tensors that
# TMA's unpacking tensor maps fill.
MXF8F6F4_TYPES = (cutlass.Float8E4M3FN, cutlass.Float8E5M2, cutlass.Float6E2M3FN, cutlass.Float6E3M2FN,
                  cutlass.Float4E2M1FN)


# The block-scaled kinds whose A and B cannot be transposed, so are read K-major only (PTX ISA, tcgen05.mma's
# "Transpose and Negate operations": kind::mxf8f6f4 transposes, whatever its formats; kind::mxf4 and kind::mxf4nvf4
# do not).
_K_MAJOR_ONLY = {"tcgen05.MmaMXF4Op": "kind::mxf4", "tcgen05.MmaMXF4NVF4Op": "kind::mxf4nvf4"}


def check_transposable(name, target, a_major, b_major):
    """Refuses an MN-major A or B for a kind that has no transpose (_K_MAJOR_ONLY)."""
    kind = _K_MAJOR_ONLY.get(target)
    for what, major in (("A", a_major), ("B", b_major)):
        if kind is not None and major != OperandMajorMode.K:
            raise ext.user_error(f"{name}: {kind} cannot transpose its operands, so {what} must be K-major "
                                 f"(OperandMajorMode.K), got {major}; MN-major 4-bit operands need kind::mxf8f6f4 "
                                 "(MmaMXF8F6F4Op, a Float8E8M0FNU scale factor per 32 elements)", ext.DSLValueError)


def _scale_address(ptr, field):
    """(the 32-bit tensor-memory address of the column, the byte in it) of a scale-factor pointer."""
    if getattr(ptr, "memspace", None) != "tmem" or getattr(ptr, "base", None) is None:
        raise ext.user_error(f"tcgen05 {field}: expected a pointer into allocated tensor memory (the iterator of a "
                             f"tensor made over TmemAllocator's pointer), got {ptr!r}", ext.DSLTypeError)
    width = ptr.dtype.width
    if width != 8:
        raise ext.user_error(f"tcgen05 {field}: scale factors are 8-bit values, got a pointer to {ptr.dtype.__name__}",
                             ext.DSLTypeError)
    off = ptr.offset
    # The byte within the 32-bit column goes into the instruction descriptor (a constant); the column may move at
    # run time (a base shifted by whole columns, as QuACK's SFB of odd N tiles), which the index algebra tells.
    byte = off % 4
    if not isinstance(byte, int):
        raise ext.user_error(f"tcgen05 {field}: the scale factors' byte within their tensor-memory column goes into "
                             "the instruction descriptor (a constant), and this pointer's is known only at run time: "
                             "index the scale-factor tensor with compile-time coordinates (e.g. in a "
                             "cutlass.range(..., unroll_full=True) loop) from a base of whole columns",
                             ext.DSLValueError)
    aligned = off - byte
    t = cute.make_tensor(ext.make_pointer(ptr.base, ptr.dtype, "tmem", 4), cute.make_layout(1))
    return tmem_address(t, aligned), byte


# --- operand kinds ---------------------------------------------------------------------------------------------

def atom_geometry(atom_id: str):
    """(M, N, K, CTAs) of a tcgen05.mma atom."""
    _, entry = ext.manifest_entry(atom_id)
    m, n, k = (int(x) for x in entry["shape_mnk"].strip("()").split(","))
    cta = int(entry.get("thr_id", "1:1").split(":")[0])
    return m, n, k, cta


def operand_layout_tv(atom_id: str, name: str):
    """CuTe's SM100 thread-value layout of operand a, b or c/d (the thread mode counts CTAs)."""
    m, n, k, cta = atom_geometry(atom_id)
    if name == "a":
        return cute.make_layout((cta, (m // cta, k)), stride=(m // cta, (1, m)))
    if name == "b":
        return cute.make_layout((cta, (n // cta, k)), stride=(n // cta, (1, n)))
    return cute.make_layout((cta, (m // cta, n)), stride=(m // cta, (1, m)))


def _ebits(t) -> int:
    return t.width


READER = Reader("tcgen05.mma", "a UMMA descriptor",
                "tcgen05.make_smem_layout_atom or blackwell_helpers.make_smem_layout_a/b", "")


class UmmaSmemDescriptorKind(SmemDescriptorOperands):
    """tcgen05.mma operands read from shared memory through a UMMA matrix descriptor."""

    name = "umma_smem_descriptor"

    def layout_tv(self, atom_id, operand):
        return operand_layout_tv(atom_id, operand["name"])

    def check_fragment(self, atom_id, operand, tensor):
        if isinstance(getattr(tensor, "iterator", None), UmmaDescriptor):
            return      # a descriptor made by make_umma_smem_desc (cute.mma_atom_call)
        if getattr(tensor, "memspace", None) != "smem":
            raise ext.user_error(f"cute.gemm: {operand['name']} of {atom_id} is read from shared memory: pass "
                                 f"make_fragment_{operand['name'].upper()} of the shared-memory tensor, got {tensor!r}",
                                 ext.DSLTypeError)

    def form(self, operand_name, tile, k_bytes: int = 32):
        """(major, swizzle bytes, LBO bytes, SBO bytes) of one instruction's (MN, K) tile (K of k_bytes: 32 for
        the MMAs), checked element by element against the canonical form it claims."""
        lay = ext.full_layout(tile)
        outer = lay.outer if hasattr(lay, "outer") else lay
        inner = lay.inner if hasattr(lay, "outer") else None
        bits = _ebits(tile.element_type)      # 4-bit operands (e2m1) are packed two to a byte
        key = (str(outer), str(inner), bits, k_bytes)
        hit = self._forms.get(key)
        if hit is not None:
            return hit
        K = k_bytes * 8 // bits
        total = cute.size(outer)
        if total % K:
            raise ext.user_error(f"cute.gemm: operand {operand_name}'s tile {outer} does not hold whole 32-byte K "
                                 "blocks", ext.DSLValueError)
        hit = self._forms[key] = descriptor_form(READER, operand_name, lay, bits, K, total // K)
        return hit

    def read(self, operand, tensor, coords):
        if isinstance(tensor.iterator, UmmaDescriptor):
            return [tensor.iterator.value]
        return super().read(operand, tensor, coords)

    def descriptor(self, operand, tile, k_bytes: int = 32, next_ptr=None):
        """The descriptor of one instruction's tile; with next_ptr (sm_103a), its leading field is next_ptr's
        address, where the tile's rows go on (a K-major tile under the 128-byte swizzle)."""
        major, swizzle, lbo, sbo = self.form(operand["name"], tile, k_bytes)
        b = ext.builder()
        inputs, attrs = {"addr": [_start_address(tile, swizzle)]}, {"stride_byte_offset": sbo, "swizzle": swizzle}
        if next_ptr is None:
            attrs["leading_byte_offset"] = lbo
        else:
            if major != "K" or swizzle != 128:
                raise ext.user_error(f"make_umma_smem_desc: a descriptor with next_src reads a K-major tile under the "
                                     f"128-byte swizzle (PTX ISA); {operand['name']} is {major}-major with swizzle "
                                     f"{swizzle}", ext.DSLValueError)
            inputs["next_addr"] = [b.op1("llvm.ptrtoint", [next_ptr.address(0)], "i32")]
        name = "tcgen05.make_smem_desc" if next_ptr is None else "tcgen05.make_smem_desc_next"
        backend, entry = ext.select_instruction(name, {}, set(inputs))
        return ext.emit_instruction(b, backend, entry, inputs, attrs)["desc"][0]


def _start_address(tile, swizzle):
    lay = ext.full_layout(tile)
    ptr = tile.iterator
    check_swizzle_alignment(ptr, swizzle)
    start = lay.offset + lay.outer(0) if hasattr(lay, "outer") else lay(0)
    return ext.builder().op1("llvm.ptrtoint", [ptr.address(start)], "i32")


class UmmaDescriptor:
    """A UMMA shared-memory descriptor as a tensor's iterator (CuTe DSL's make_umma_smem_desc result): the
    tcgen05.mma operands of cute.mma_atom_call read it as it is."""

    def __init__(self, value, major):
        self.value = value
        self.major = major

    def __repr__(self):
        return f"UmmaDescriptor({self.major}-major)"


_DESCRIPTORS = UmmaSmemDescriptorKind()


def make_umma_smem_desc(src, layout, major: str, next_src=None, *, loc=None, ip=None):
    """The UMMA descriptor of the shared-memory tile at pointer src with `layout` (MN, K) (one instruction's tile of
    A or B, "k" or "mn" its major, checked against the layout); next_src (sm_103a): the pointer where the tile's
    rows go on, a buffer of the same layout, for the K = 96 4-bit MMAs whose 48 bytes a row may cross into it."""
    want = {"k": "K", "mn": "MN"}.get(str(major).lower())
    if want is None:
        raise ext.user_error(f"make_umma_smem_desc: major must be \"k\" or \"mn\", got {major!r}", ext.DSLValueError)
    if getattr(src, "memspace", None) != "smem":
        raise ext.user_error(f"make_umma_smem_desc: src must be a shared-memory pointer, got {src!r}",
                             ext.DSLTypeError)
    tile = cute.make_tensor(src, layout)
    outer = layout.outer if hasattr(layout, "outer") else layout
    # (MN, K), or the one mode ((MN, K)) of a slice of a staged buffer (sA[(None, 0, k, stage)])
    mn_k = cute.get(outer, mode=[0]) if cute.rank(outer) == 1 else outer
    if cute.rank(mn_k) != 2:
        raise ext.user_error(f"make_umma_smem_desc: layout must be one instruction's (MN, K) tile, got {layout}",
                             ext.DSLValueError)
    k_bytes = cute.size(mn_k, mode=[1]) * _ebits(src.dtype) // 8
    op = {"name": "a"}
    got = _DESCRIPTORS.form("a", tile, k_bytes)[0]
    if got != want:
        raise ext.user_error(f"make_umma_smem_desc: the layout {layout} is {got}-major, not {major!r}",
                             ext.DSLValueError)
    if next_src is not None and (getattr(next_src, "memspace", None) != "smem" or next_src.swizzle is not None):
        raise ext.user_error(f"make_umma_smem_desc: next_src must be the iterator of a shared-memory tensor (where "
                             f"the rows go on), got {next_src!r}", ext.DSLTypeError)
    return UmmaDescriptor(_DESCRIPTORS.descriptor(op, tile, k_bytes, next_src), want)


def i32_value(x):
    """An i32 operand of an instruction from a Python int, a DSL number or an IR value (tmem.py's ops take it too)."""
    if isinstance(x, int):
        return cutlass.Int32(x).ir()
    if hasattr(x, "ir"):
        return cutlass.Int32(x).ir()
    return ext.builder().materialize(x, "i32")


def tmem_address(tensor, offset):
    """The 32-bit tensor-memory address (lane << 16 | column) of element `offset` of a tensor in tensor memory:
    element offsets count 32-bit columns (lane steps are 1 << 16), the unit of the accumulator layouts here."""
    ptr = tensor.iterator
    if getattr(ptr, "memspace", None) != "tmem":
        raise ext.user_error(f"expected a tensor in tensor memory, got {tensor!r}", ext.DSLTypeError)
    width = ptr.dtype.width
    if width > 32 or 32 % width:
        raise ext.user_error(f"tensor-memory tensors of {ptr.dtype.__name__} are not supported here (32-bit values, "
                             "or 8/16-bit ones packed in 32-bit columns)", ext.DSLTypeError)
    b = ext.builder()
    # A fragment made from a shape (make_fragment_A/C) points at lane 0, column 0, as CuTe's do: kernels whose one
    # allocation holds all of tensor memory offset such fragments without retrieving the allocation's pointer.
    base = i32_value(0) if ptr.base is None else b.op1("llvm.ptrtoint", [ptr.base], "i32")
    total = ptr.offset + offset
    per = 32 // width           # elements per 32-bit column (their lane steps are per * LANE)
    if isinstance(total, int):
        if total % per:
            raise ext.user_error(f"tensor memory is addressed by 32-bit column: element {total} of {ptr.dtype.__name__}"
                                 " values is inside one", ext.DSLValueError)
        total //= per
        if total == 0:
            return base
        return b.op1("arith.addi", [base, i32_value(total)], "i32")
    idx = i32_value(total)
    if per > 1:
        idx = b.op1("arith.shrui", [idx, i32_value(per.bit_length() - 1)], "i32")
    return b.op1("arith.addi", [base, idx], "i32")


def _same_place(p, q) -> bool:
    """Whether two tensor-memory pointers are one address: the same object, or the same allocation at offsets whose
    difference the integer algebra reduces to 0 (d and c sliced alike by a dynamic stage index: tCtAcc[None, None,
    None, state.index] written twice)."""
    if p is q:
        return True
    if p.base is not q.base or p.dtype is not q.dtype:
        return False
    diff = p.offset - q.offset
    return isinstance(diff, int) and diff == 0


class TmemKind(ext.OperandKind):
    """tcgen05.mma operands in tensor memory: the accumulator D (cute.gemm's c and d, one tensor) and A with
    OperandSource.TMEM. make_fragment_C of a partition shape lays D out as the instruction writes it."""

    name = "tmem"
    fragments_from_shapes = True

    def __init__(self):
        self._pending_d = None

    def layout_tv(self, atom_id, operand):
        return operand_layout_tv(atom_id, "a" if operand["name"] == "a" else "c")

    def check_fragment(self, atom_id, operand, tensor):
        if getattr(tensor, "memspace", None) != "tmem":
            raise ext.user_error(f"cute.gemm: {operand['name']} of {atom_id} lives in tensor memory: make it with "
                                 "cute.make_tensor(tmem_ptr, tiled_mma.make_fragment_C(shape).layout), got "
                                 f"{tensor!r}", ext.DSLTypeError)
        # cute.gemm checks d, a, b, then c: the instruction accumulates in place, so c must be d.
        if operand["name"] == "d":
            self._pending_d = tensor
            return
        if operand["name"] != "c":
            return
        d, self._pending_d = self._pending_d, None
        if d is not None and not (d is tensor or (_same_place(d.iterator, tensor.iterator) and
                                                  str(d.layout) == str(tensor.layout))):
            raise ext.user_error("cute.gemm: tcgen05.mma accumulates into D in place: pass the same tensor-memory "
                                 "tensor as d and c", ext.DSLValueError)

    def make_fragment(self, atom_id, operand, tensor, dtype):
        m, n, k, cta = atom_geometry(atom_id)
        if hasattr(tensor, "iterator"):
            self.check_fragment(atom_id, {**operand, "name": "a"}, tensor)
            if operand["name"] != "a":
                return tensor
            # As CuTe DSL's, A of a tensor in tensor memory (its shape typically that of a shared-memory layout of
            # A, as attention's P) is laid out from the tensor's shape alone, at the tensor's address.
            return cute.make_tensor(tensor.iterator, tmem_layouts.a_operand_layout(m, k, cta, tensor.shape,
                                                                                   dtype.width))
        if operand["name"] == "a":
            # laid out from the shape alone (its address comes with cute.make_tensor over an allocated pointer); a
            # layout (a shared-memory layout of A, as the mixed-input GEMMs pass) gives its shape
            shape = tensor.shape if hasattr(tensor, "shape") and hasattr(tensor, "stride") else tensor
            layout = tmem_layouts.a_operand_layout(m, k, cta, shape, dtype.width)
            return cute.make_tensor(ext.make_pointer(None, dtype, "tmem", 16), layout)
        if dtype.width != 32:
            raise ext.user_error(f"make_fragment_C: accumulators of {dtype.__name__} in tensor memory are not "
                                 "supported here (Float32 or Int32)", ext.DSLTypeError)
        layout = tmem_layouts.accumulator_layout(m, n, cta, tensor)
        return cute.make_tensor(ext.make_pointer(None, dtype, "tmem", 16), layout)

    def read(self, operand, tensor, coords):
        return [tmem_address(tensor, tensor.layout(coords[0]))]

    def write(self, operand, tensor, coords, values, dtype):
        pass   # written in place by the instruction
