"""Numeric types a program defines itself, as CuTe DSL programs do (`class C(Float32, metaclass=FloatMeta, width=64,
mlir_type=T.f64)`): class keywords, values made of IR values through the class, the IR-values protocol, tensors,
fragments and kernel parameters of the type, operators the class defines, and mistakes in such a class reported at
the user's line. The types here are this file's own (a pair of f32 lanes in an i64, a wrapping 16-bit counter)."""
import os
import re
import ctypes
import struct

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._mlir import ir
from warpweave._mlir.dialects import arith
from warpweave._mlir.extras import types as T
from warpweave._mlir_helpers.arith import bitcast
from warpweave.base_dsl.typing import FloatMeta, IntegerMeta, NumericMeta
from warpweave.cute.runtime import make_fake_compact_tensor, make_fake_tensor
from warpweave.cutlass_dsl import Float32, Int32, Numeric, Uint16

from dsl_helpers import line_in, target

THIS = os.path.abspath(__file__)
MADE_FROM_IR = []  # the IR types the pair's constructor was given, in order


def _lane_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


class F32Pair(Float32, metaclass=FloatMeta, width=64, mlir_type=T.i64):
    """Two f32 lanes (lo in the low 32 bits) held in one i64; + and * lane by lane, swap() exchanges the lanes."""

    def __init__(self, x, hi=None, *, loc=None, ip=None):
        if hi is not None:
            x = self._pack(Float32(x).ir_value(), Float32(hi).ir_value())
        elif isinstance(x, tuple):  # static: the bits themselves, no IR needed
            x = _lane_bits(x[0]) | _lane_bits(x[1]) << 32
        elif isinstance(x, F32Pair):
            x = x.value
        elif isinstance(x, ir.Value):
            MADE_FROM_IR.append(str(x.type))
        elif isinstance(x, Numeric):  # a real number: (x, 0)
            x = self._pack(Float32(x).ir_value(), Float32(0.0).ir_value())
        Numeric.__init__(self, x, loc=loc, ip=ip)

    @staticmethod
    def _pack(lo, hi):
        lo64 = arith.extui(T.i64(), bitcast(lo, T.i32()))
        hi64 = arith.shli(arith.extui(T.i64(), bitcast(hi, T.i32())), arith.constant(T.i64(), 32))
        return arith.ori(lo64, hi64)

    def lanes(self):
        v = self.ir_value()
        lo = bitcast(arith.trunci(T.i32(), v), T.f32())
        hi = bitcast(arith.trunci(T.i32(), arith.shrui(v, arith.constant(T.i64(), 32))), T.f32())
        return Float32(lo), Float32(hi)

    def swap(self):
        lo, hi = self.lanes()
        return F32Pair(hi, lo)

    def __add__(self, other, *, loc=None, ip=None):
        (a, b), (c, d) = self.lanes(), F32Pair(other).lanes()
        return F32Pair(a + c, b + d)

    __radd__ = __add__

    def __mul__(self, other, *, loc=None, ip=None):
        (a, b), (c, d) = self.lanes(), F32Pair(other).lanes()
        return F32Pair(a * c, b * d)

    def __c_pointers__(self):  # a static pair as a kernel argument: its 8 bytes
        return [ctypes.cast(ctypes.pointer(ctypes.c_uint64(self.value)), ctypes.c_void_p)]


class Counter16(Int32, metaclass=IntegerMeta, width=16, mlir_type=T.i16, signed=False):
    """A 16-bit unsigned counter: the DSL's integer operators, wrapping at 16 bits."""


# --- the class --------------------------------------------------------------------------------------------------

def test_class_keywords_make_the_type():
    assert F32Pair.width == 64 and F32Pair.mlir_type == T.i64() and F32Pair.is_float
    assert isinstance(F32Pair, NumericMeta) and issubclass(F32Pair, Float32)
    assert Counter16.width == 16 and Counter16.mlir_type == T.i16() and not Counter16.signed
    assert Counter16.is_integer and isinstance(Counter16, IntegerMeta)
    # the DSL's own types are untouched by the user's classes
    assert Float32.width == 32 and Float32.mlir_type == T.f32() and Int32.width == 32 and Int32.signed


def test_a_static_value_is_the_class_storage_and_assignable():
    p = F32Pair((1.5, -2.0))
    assert isinstance(p, F32Pair) and isinstance(p, Float32)
    assert p.value == _lane_bits(1.5) | _lane_bits(-2.0) << 32
    p.value = 7  # CuTe DSL's convention: the class's storage is `value`, which it may assign
    assert p.value == 7


@pytest.mark.parametrize("keywords, message", [
    ({"width": 64, "mlir_type": "vector<2xf32>"}, "must be a scalar integer or float IR type"),
    ({"width": 128, "mlir_type": T.i64}, "width 128 does not fit its IR type i64"),
    ({"width": 0, "mlir_type": T.i64}, "width must be a positive number of bits"),
])
def test_a_malformed_class_is_refused_at_its_line(keywords, message):
    with pytest.raises(TypeError, match=message) as e:
        type("Bad", (Float32,), {}, **keywords)  # the class statement's own call: bad class here
    assert e.value.location == (THIS, line_in(THIS, 'type("Bad", (Float32,), {}, **keywords)'))


# --- in kernels ---------------------------------------------------------------------------------------------------

@cute.kernel
def pair_kernel(x: cute.Tensor, out: cute.Tensor, scale: F32Pair, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    frag = cute.make_rmem_tensor(2, F32Pair)
    frag[0] = x[tidx]
    frag[1] = Float32(3.0)  # a real number written to a pair fragment: the class converts it, (3, 0)
    acc = frag[0] * scale + frag[1]
    for _ in cutlass.range(n):  # a value of the type carried through a loop of the kernel
        acc = acc.swap()
    out[tidx] = acc


@cute.jit
def pair_host(x: cute.Tensor, out: cute.Tensor, scale: F32Pair, n: cutlass.Int32):
    assert x.element_type is F32Pair and out.element_type is F32Pair
    pair_kernel(x, out, scale, n).launch(grid=[1, 1, 1], block=[32, 1, 1])


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_tensors_fragments_parameters_and_operators_of_a_user_type(arch):
    del MADE_FROM_IR[:]
    x = make_fake_tensor(F32Pair, (32,), stride=(1,), assumed_align=8)
    out = make_fake_tensor(F32Pair, (32,), stride=(1,), assumed_align=8)
    with target(arch):
        c = cute.compile(pair_host, x, out, F32Pair((2.0, 0.5)), 4)
    assert c.cubin
    ptx = c.ptx
    # loads and stores of the i64 storage, the class's lane-wise multiply-add (fused or not) and its repacking
    assert re.search(r"ld\.global\.(u|b|s)64", ptx) and re.search(r"st\.global\.(u|b|s)64", ptx), ptx
    assert len(re.findall(r"\b(mul|fma)\.rn\.f32", ptx)) >= 2, ptx
    # the loaded values, the loop's carried value and the scalar parameter were all made through the class
    assert MADE_FROM_IR.count("i64") >= 3, MADE_FROM_IR
    # the parameter travels as the DSL type of its bits
    assert [p.spec for p in c.plans if p.spec[0] == "scalar"] == [("scalar", "Int64")]


def test_the_ir_values_protocol_round_trips_a_user_type():
    seen = {}

    @cute.kernel
    def k(out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        p = F32Pair(Float32(tidx), Float32(1.0))
        values = cutlass.extract_mlir_values(p)
        seen["types"] = [str(v.type) for v in values]
        q = cutlass.new_from_mlir_values(p, values)
        seen["type"] = type(q)
        seen["same"] = q.ir_value().id == p.ir_value().id
        seen["value_is_ir"] = isinstance(q.value, ir.Value)
        out[tidx] = q

    @cute.jit
    def h(out: cute.Tensor):
        k(out).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_80"):
        cute.compile(h, make_fake_tensor(F32Pair, (32,), stride=(1,), assumed_align=8))
    assert seen == {"types": ["i64"], "type": F32Pair, "same": True, "value_is_ir": True}


def test_an_integer_user_type_computes_with_the_dsl_operators_at_its_width():
    @cute.kernel
    def k(out: cute.Tensor, start: cutlass.Int32):
        c = Counter16(Uint16(start)) * Counter16(3) + 1
        assert type(c) is Counter16
        out[0] = c

    @cute.jit
    def h(out: cute.Tensor, start: cutlass.Int32):
        assert out.element_type is Counter16
        k(out, start).launch(grid=[1, 1, 1], block=[1, 1, 1])

    with target("sm_80"):
        c = cute.compile(h, make_fake_compact_tensor(Counter16, (1,)), 40000)
    assert re.search(r"st\.global\.(u|b|s)16", c.ptx), c.ptx


def test_a_constructor_given_the_wrong_ir_type_is_refused_at_the_user_line():
    @cute.kernel
    def k(out: cute.Tensor):
        out[0] = F32Pair(Int32(1).ir_value())  # an i32 for an i64 type

    @cute.jit
    def h(out: cute.Tensor):
        k(out).launch(grid=[1, 1, 1], block=[1, 1, 1])

    with target("sm_80"), pytest.raises(TypeError, match="made from an IR value of type i64, this one is i32") as e:
        cute.compile(h, make_fake_tensor(F32Pair, (1,), stride=(1,), assumed_align=8))
    assert e.value.location[0] == THIS


class F64Bits(Float32, metaclass=FloatMeta, width=64, mlir_type=T.f64):
    """Any 64 bits in an f64 (two f32 lanes, as a complex number packs them): NaN patterns are data."""


def test_static_values_of_a_float_held_type_keep_their_bits():
    patterns = [0xFFF8000000000001, 0x7FC0000000012345, 0x000000007FC00000, 0x8000000000000001]

    @cute.kernel
    def k(out: cute.Tensor):
        for i in cutlass.range_constexpr(len(patterns)):
            out[i] = F64Bits(struct.unpack("<d", struct.pack("<Q", patterns[i]))[0])

    @cute.jit
    def h(out: cute.Tensor):
        k(out).launch(grid=[1, 1, 1], block=[1, 1, 1])

    with target("sm_80"):
        c = cute.compile(h, make_fake_tensor(F64Bits, (len(patterns),), stride=(1,), assumed_align=8))
    stored = [int(v) & (1 << 64) - 1 for v in re.findall(r"st\.global\.b64\s+\[%rd\d+(?:\+\d+)?\], (-?\d+);", c.ptx)]
    assert sorted(stored) == sorted(patterns), c.ptx


def test_the_function_cache_rebuilds_a_user_type_and_keeps_it_apart_from_its_bits():
    def compile_with(dtype):
        ts = [make_fake_tensor(dtype, (32,), stride=(1,), assumed_align=8) for _ in range(2)]
        return cute.compile(pair_host, *ts, F32Pair((2.0, 0.5)), 4)

    # another type of the same name, as two modules of a program may have: the entry names the type by module
    shadow = FloatMeta("F32Pair", (Float32,), {"__module__": "other_kernels"}, width=64, mlir_type=T.i64)
    with target("sm_80"):
        first = compile_with(F32Pair)
        second = compile_with(F32Pair)
        # traced again (pair_host's assert on its tensors' type fails), not served by the pair kernel's entry
        with pytest.raises(RuntimeError, match="AssertionError"):
            compile_with(cutlass.Int64)
    assert second.info.get("level") == "function", second.info  # a hit before tracing
    assert [(p.spec, p.dtype) for p in second.plans] == [(p.spec, p.dtype) for p in first.plans]
    assert [p.dtype for p in second.plans if p.kind == "scalar"] == [F32Pair] != [shadow]
