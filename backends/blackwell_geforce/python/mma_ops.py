"""The block-scaled warp-level MMAs as CuTe DSL names them, over the manifest's families.

Each thread hands the instruction one 32-bit register of scale factors per operand, one byte a factor: for an
atom of K values with a factor per `vec` of them it holds K / vec bytes (1X: one, 2X: two, 4X: four), low byte
first, so the selector byte_id stays 0. Which thread of a quad supplies them (thread_id_a, thread_id_b) follows
from the scale factors' thread-value layouts (helpers.py): the threads of a quad that hold a row of A hold its
factors (thread_id 0 picks them), and every thread of a quad holds its column of B.
"""
from __future__ import annotations

import dataclasses

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import ext

FP8 = (cutlass.Float8E4M3FN, cutlass.Float8E5M2)
# The mixed pairs CuTe DSL's MmaMXF8F6F4Op takes (FP4 x FP8 either way round): its GEMMs load the 4-bit operand
# unpacked into 8-bit containers, which the same-width pairs (E4M3 x E5M2) and FP6 do not use.
MXF8F6F4_SUPPORTED_PAIRS = frozenset({(cutlass.Float4E2M1FN, t) for t in FP8} | {(t, cutlass.Float4E2M1FN) for t in FP8})


def _name(t):
    return getattr(t, "__name__", repr(t))


def _pack_scale_factors(one):
    """The b32 register of one operand's factors (`one`: the atom's factors, stride-0 modes filtered out), low byte
    first. Where they lie consecutively in the fragment, aligned, they are read as one word: read byte by byte, the
    fragment's bytes would each keep a register of their own (and be carried so through the main loop), where the
    copy that filled it wrote whole words."""
    b = ext.builder()
    n = cute.size(one)
    if n not in (1, 2, 4):
        raise ext.user_error(f"a block-scaled MMA takes 1, 2 or 4 scale factors per operand and atom; the fragment "
                             f"holds {n} (partition it with partition_fragment_SFA / SFB)")
    word = _factor_word(one, n)
    if word is not None:
        return word
    values = [one[j] for j in range(n)]
    raw = [v.ir() if v.ir_type == "i8" else b.op1("llvm.bitcast", [v.ir()], "i8") for v in values]
    zero = cutlass.Int8(0).ir()
    raw += [zero] * (4 - len(raw))
    vec = b.op1("vector.from_elements", raw, "vector<4xi8>")
    return b.op1("llvm.bitcast", [vec], "i32")


_WORD = {1: cutlass.Int8, 2: cutlass.Int16, 4: cutlass.Int32}


def _factor_word(one, n):
    """The n factors as one i32 (zero-extended) read as one n-byte element, or None where they are not consecutive
    bytes of a register fragment, aligned to n."""
    offs = [one.layout(j) for j in range(n)]
    ptr = one.iterator
    if ptr.memspace != "rmem" or not all(isinstance(x, int) for x in offs) or \
            offs != list(range(offs[0], offs[0] + n)) or not isinstance(ptr.offset, int) or \
            (ptr.offset + offs[0]) % n or ptr.alignment_at(offs[0]) < n:
        return None
    word = cute.make_tensor((ptr + offs[0]).recast(_WORD[n]), cute.make_layout(1))[0].ir()
    return word if n == 4 else ext.builder().op1("arith.extui", [word], "i32")


def _atom_factors(fragment, i):
    """The factors of atom i of a (V, MMA) slice: V broadcasts each factor over its `vec` values (stride 0)."""
    return cute.filter_zeros(fragment[None, i])


class _BlockScaled:
    """What every block-scaled op adds to its manifest class: the scale operands from cute.gemm's companions."""

    def companion_inputs(self, a_more, b_more, m, n):
        if len(a_more) != 1 or len(b_more) != 1:
            raise ext.user_error(f"cute.gemm: {type(self).__name__} takes A and B each with one scale-factor "
                                 "fragment: [tCrA, tCrSFA], [tCrB, tCrSFB]")
        return {"scale_a": [_pack_scale_factors(_atom_factors(a_more[0], m))],
                "scale_b": [_pack_scale_factors(_atom_factors(b_more[0], n))]}


def make_op_classes() -> dict:
    """CuTe DSL's classes: MmaMXF4NVF4Op and MmaMXF4Op (e2m1), MmaMXF8Op (one fp8 type) and MmaMXF8F6F4Op (the
    FP4 x FP8 pairs)."""
    nvf4 = ext.manifest_class("warp.MmaMXF4NVF4Op")
    mxf4 = ext.manifest_class("warp.MmaMXF4Op")
    f8f6f4 = ext.manifest_class("warp.MmaMXF8F6F4Op")

    class MmaMXF4NVF4Op(_BlockScaled, nvf4):
        """mma.sync m16n8k64 of e2m1 values, a ue4m3 factor per 16 values of K (NVFP4) or ue8m0 per 32 (MXFP4)."""

    class MmaMXF4Op(_BlockScaled, mxf4):
        """mma.sync m16n8k64 of e2m1 values, a ue8m0 factor per 32 values of K."""

    # A frozen dataclass of CuTe DSL's fields, as CuTe DSL's class is: libraries subclass it as a dataclass of the
    # same fields whose __post_init__ replaces the pair check (QuACK admits every pair of the instruction), and
    # such a subclass's generated __init__ sets only the fields, so the selecting parameters are read from them.
    @dataclasses.dataclass(frozen=True)
    class MmaMXF8F6F4Op(_BlockScaled, f8f6f4):
        """mma.sync m16n8k32 of an FP4 x FP8 pair (either way round), a ue8m0 factor per 32 values of K."""

        a_dtype: type
        b_dtype: type
        acc_dtype: type
        sf_type: type

        def __post_init__(self):
            a_dtype, b_dtype = self.a_dtype, self.b_dtype
            if (a_dtype, b_dtype) not in MXF8F6F4_SUPPORTED_PAIRS:
                same_fp8 = a_dtype in FP8 and b_dtype in FP8
                raise ext.user_error(
                    f"MmaMXF8F6F4Op: ({_name(a_dtype)}, {_name(b_dtype)}) is not a supported pair; it takes FP4 x FP8 "
                    "either way round: " + ", ".join(sorted(f"({_name(x)}, {_name(y)})"
                                                            for x, y in MXF8F6F4_SUPPORTED_PAIRS))
                    + ("; A and B of one FP8 type take MmaMXF8Op" if same_fp8 and a_dtype is b_dtype else ""))

        @property
        def _selection(self):
            return f8f6f4(self.a_dtype, self.b_dtype, self.acc_dtype, self.sf_type)

        params = property(lambda self: self._selection.params)
        raw_params = property(lambda self: self._selection.raw_params)

    class MmaMXF8Op(_BlockScaled, f8f6f4):
        """mma.sync m16n8k32 kind::mxf8f6f4 with A and B of one FP8 type (E4M3 or E5M2), a ue8m0 factor per 32 values
        of K."""

        def __init__(self, ab_dtype, acc_dtype, sf_dtype):
            if ab_dtype not in FP8:
                raise ext.user_error(f"MmaMXF8Op: A and B are Float8E4M3FN or Float8E5M2, got {_name(ab_dtype)} "
                                     "(FP4 takes MmaMXF4Op or MmaMXF4NVF4Op, FP4 x FP8 MmaMXF8F6F4Op)")
            super().__init__(ab_dtype, ab_dtype, acc_dtype, sf_dtype)
            self.ab_dtype = ab_dtype

    return {c.__name__: c for c in (MmaMXF4NVF4Op, MmaMXF4Op, MmaMXF8F6F4Op, MmaMXF8Op)}
