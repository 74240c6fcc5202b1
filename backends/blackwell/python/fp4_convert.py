"""cute.arch's conversions of 4-bit E2M1 floats to f16 with CuTe DSL 4.8.1's signatures: one value, or a vector of 2,
4 or 8. Each pair of values is one conversion of two packed E2M1 codes to f16x2 (lane 0 in the low nibble and the
low half), an instruction of the family-specific Blackwell targets (sm_100a and later: 100a, 103a, 110a, 120a,
121a, and their "f" families); elsewhere the call is refused at the user's line. The conversion is exact (every
E2M1 value is an f16).

An operand is CuTe DSL's, an IR value of i4 (a vector of i4 lanes), or what warpweave's code holds: a
Float4E2M1FN number, a TensorSSA of them, or a tuple of them. A single value gives a Float16; a vector the IR
vector<n x f16>, which cute.TensorSSA(result, shape, Float16) takes."""
from __future__ import annotations

import warpweave as cutlass
from warpweave import ext
from warpweave._mlir.dialects import vector as _vector_ops

ir = ext.ir
_E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)   # the magnitudes of codes 0..7; bit 3 is the sign


def e2m1_value(code: int) -> float:
    """The value of a 4-bit E2M1 code (what the conversion gives, for checks on the CPU)."""
    m = _E2M1[code & 7]
    return -m if code & 8 else m


def _check_target(name: str):
    t = ext.current_target()
    if t.compute_capability < 100 or not (t.name.endswith("a") or t.name.endswith("f")):
        raise ext.user_error(f"cute.arch.{name}: the conversion of packed E2M1 values is an instruction of the "
                             f"family-specific Blackwell targets (sm_100a and later, an 'a' or 'f' target); "
                             f"compiling for {t.name}")
    if not ext.in_kernel():
        raise ext.user_error(f"cute.arch.{name} converts values inside a @cute.kernel function", ext.DSLTypeError)


def _codes(x, name: str, n):
    """The i4 IR values (Values) of x's n lanes."""
    if isinstance(x, cutlass.cute.TensorSSA):
        x = x.ir_value()
    if isinstance(x, (tuple, list)):
        if not x or not all(type(v) is cutlass.Float4E2M1FN for v in x):
            raise ext.user_error(f"cute.arch.{name}: a tuple operand holds Float4E2M1FN numbers", ext.DSLTypeError)
        x = [ext.ir_arith.trunci(ir.IntegerType.get_signless(4), v.ir_value()) for v in x]
    elif isinstance(x, cutlass.Float4E2M1FN):
        x = [ext.ir_arith.trunci(ir.IntegerType.get_signless(4), x.ir_value())]
    elif isinstance(x, ir.Value) and ir.VectorType.isinstance(x.type):
        vt = ir.VectorType(x.type)
        if vt.rank != 1 or str(vt.element_type) != "i4":
            raise ext.user_error(f"cute.arch.{name} takes a vector of i4 (E2M1 codes), got {x.type}",
                                 ext.DSLTypeError)
        x = [_vector_ops.extract(x, [], [i]) for i in range(vt.shape[0])]
    elif isinstance(x, ir.Value):
        if str(x.type) != "i4":
            raise ext.user_error(f"cute.arch.{name} takes an i4 (an E2M1 code), got an IR value of {x.type}",
                                 ext.DSLTypeError)
        x = [x]
    else:
        raise ext.user_error(f"cute.arch.{name} takes E2M1 codes (an i4 IR value or vector, Float4E2M1FN numbers or "
                             f"a TensorSSA of them), got {type(x).__name__}", ext.DSLTypeError)
    if len(x) != n:
        raise ext.user_error(f"cute.arch.{name} takes {n} E2M1 value{'s' if n > 1 else ''}, got {len(x)}",
                             ext.DSLTypeError)
    return x


def _pair_to_f16x2(lo, hi) -> list:
    """(lo, hi) E2M1 codes (i4 Values; hi may be None) as two Float16 numbers."""
    b = ext.builder()
    word = b.op1("arith.extui", [lo.use()], "i16")
    if hi is not None:
        h = b.op1("arith.extui", [hi.use()], "i16")
        word = b.op1("arith.ori", [word, b.op1("arith.shli", [h, b.constant_int(4, "i16")], "i16")], "i16")
    r = b.op1("llvm.call_intrinsic", [word], "vector<2xf16>",
              'intrin = "llvm.nvvm.e2m1x2.to.f16x2.rn", op_bundle_sizes = array<i32>, '
              "operandSegmentSizes = array<i32: 1, 0>")
    return [cutlass.Float16.from_ir(b.op1("vector.extract", [r], "f16", f"static_position = array<i64: {i}>"))
            for i in (0, 1)]


def _convert(x, name: str, n: int):
    _check_target(name)
    codes = _codes(x, name, n)
    out = []
    for k in range(0, n, 2):
        out += _pair_to_f16x2(codes[k], codes[k + 1] if k + 1 < n else None)
    return out[:n]


def cvt_f4e2m1_f16(src, *, loc=None, ip=None):
    """One E2M1 value (an i4 code) as a Float16."""
    return _convert(src, "cvt_f4e2m1_f16", 1)[0]


def _as_vector(values):
    return _vector_ops.from_elements(ir.VectorType.get([len(values)], ir.F16Type.get()),
                                     [v.ir_value() for v in values])


def cvt_f4e2m1x2_to_f16x2(src_vec2, *, loc=None, ip=None):
    """A vector<2xi4> of E2M1 codes as a vector<2xf16>."""
    return _as_vector(_convert(src_vec2, "cvt_f4e2m1x2_to_f16x2", 2))


def cvt_f4e2m1x4_to_f16x4(src_vec4, *, loc=None, ip=None):
    """A vector<4xi4> of E2M1 codes as a vector<4xf16>."""
    return _as_vector(_convert(src_vec4, "cvt_f4e2m1x4_to_f16x4", 4))


def cvt_f4e2m1x8_to_f16x8(src_vec8, *, loc=None, ip=None):
    """A vector<8xi4> of E2M1 codes as a vector<8xf16>."""
    return _as_vector(_convert(src_vec8, "cvt_f4e2m1x8_to_f16x8", 8))


NAMES = {f.__name__: f for f in (cvt_f4e2m1_f16, cvt_f4e2m1x2_to_f16x2, cvt_f4e2m1x4_to_f16x4,
                                 cvt_f4e2m1x8_to_f16x8)}
