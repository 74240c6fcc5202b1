"""`cutlass._mlir.dialects.vector` and `.math` (ops CuTe DSL's attention helpers and the amax GEMM write with the IR
directly) and `cutlass_dsl.extract_mlir_values` / `new_from_mlir_values` (how their tile schedulers take their
state apart and make it again): what reaches the PTX, and the mistakes refused at the user's line."""
import os

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._mlir.dialects import arith, math, vector
from warpweave.cute.runtime import from_dlpack
from warpweave.cutlass_dsl import (Float32, Int32, T, dsl_user_op, extract_mlir_values, max as dsl_max,
                                   min as dsl_min, new_from_mlir_values)

from dsl_helpers import line_in, target

THIS = os.path.abspath(__file__)


@pytest.fixture(autouse=True)
def _fresh_compiles(monkeypatch):
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")


@dsl_user_op
def pack_abs_bits(x, *, loc=None, ip=None):
    """(x, |x|) as a vector<2xf32>, its bits as vector<2xi32>, the second one out."""
    v = vector.from_elements(T.vector(2, T.f32()), [x, math.absf(x)])
    bits = vector.bitcast(T.vector(2, T.i32()), v)
    return Int32(vector.extract(bits, [], [1]))


class Sched:
    """A tile scheduler's state the way CuTe DSL's helpers write it: its fields through the protocol."""

    def __init__(self, idx, coord, tile=(128, 64)):
        self.idx, self.coord, self.tile = idx, coord, tile

    def __extract_mlir_values__(self):
        return extract_mlir_values(self.idx) + extract_mlir_values(self.coord)

    def __new_from_mlir_values__(self, values):
        return Sched(new_from_mlir_values(self.idx, values[:1]), new_from_mlir_values(self.coord, values[1:]),
                     self.tile)


def _compile(kernel_body):
    @cute.kernel
    def k(out: cute.Tensor):
        kernel_body(out)

    @cute.jit
    def host(out: cute.Tensor):
        k(out).launch(grid=(1, 1, 1), block=(32, 1, 1))

    with target("sm_90a"):
        return cute.compile(host, from_dlpack(np.zeros(32, np.float32)))


def test_vector_and_math_ops_reach_the_ptx():
    def body(out):
        tidx, _, _ = cute.arch.thread_idx()
        x = Float32(out[tidx]).ir_value()
        e = math.exp2(x, fastmath=True)                     # the hardware's ex2
        r = math.rsqrt(math.sqrt(Float32(e).ir_value()))
        out[tidx] = Float32(r) + Float32(arith.sitofp(T.f32(), pack_abs_bits(x).ir_value()))

    ptx = _compile(body).ptx
    assert "ex2.approx.f32" in ptx
    assert ptx.count("sqrt.rn.f32") == 2 and "rcp.rn.f32" in ptx    # rsqrt(y) rounded: 1 / sqrt(y)
    assert "and.b32" in ptx          # |x| taken on its bits: the sign bit cleared


def test_vector_mistakes_name_the_users_line():
    def body(out):
        x = Float32(out[0]).ir_value()
        v = vector.from_elements(T.vector(2, T.f32()), [x, x])
        vector.extract(v, [], [2])  # BADX

    with pytest.raises(ValueError, match=r"position \[2\] is outside vector<2") as e:
        _compile(body)
    assert e.value.location == (THIS, line_in(THIS, "# BADX"))

    def body2(out):
        x = Float32(out[0]).ir_value()
        vector.bitcast(T.vector(4, T.i32()), vector.from_elements(T.vector(2, T.f32()), [x, x]))  # BADB

    with pytest.raises(TypeError, match="keeps the bits") as e:
        _compile(body2)
    assert e.value.location == (THIS, line_in(THIS, "# BADB"))

    def body3(out):
        math.exp2(Int32(out[0]).ir_value())  # BADM

    with pytest.raises(TypeError, match="math.exp2 works on floats") as e:
        _compile(body3)
    assert e.value.location == (THIS, line_in(THIS, "# BADM"))


def test_extract_and_new_from_mlir_values_round_trip():
    seen = {}

    def body(out):
        tidx, _, _ = cute.arch.thread_idx()
        s = Sched(Int32(tidx), (Int32(tidx) + 1, 3, Int32(7)))
        vals = extract_mlir_values(s)
        seen["n"] = len(vals)                  # idx, coord[0], coord[2]: the Python 3 has no IR value
        again = new_from_mlir_values(s, vals[::-1][::-1])
        seen["kept"] = (again.tile, again.coord[1], type(again.coord[0]).__name__)
        out[tidx] = Float32(dsl_min(again.coord[0], again.coord[2]) + dsl_max(again.idx, 2))
        with pytest.raises(ValueError, match="made of 3 IR values, got 2"):
            new_from_mlir_values(s, vals[:2])

    _compile(body)
    assert seen == {"n": 3, "kept": ((128, 64), 3, "Int32")}


def test_a_tensorssa_is_one_ir_vector_for_the_math_dialect_and_back():
    # CuTe DSL's amax GEMM: math.absf over TensorSSA.ir_value(), the result made a TensorSSA again with
    # type(x)(value, shape, dtype): the values, in their order, through one vector op
    @cute.kernel
    def k(src: cute.Tensor, out: cute.Tensor):
        r = cute.make_rmem_tensor((4, 2), cutlass.Float32)
        for i in cutlass.range_constexpr(8):
            r[i] = src[i]
        x = r.load()
        y = type(x)(math.absf(x.ir_value()), x.shape, x.dtype)
        for i in cutlass.range_constexpr(8):
            out[i] = y[i] + cutlass.Float32(i)

    @cute.jit
    def host(src: cute.Tensor, out: cute.Tensor):
        k(src, out).launch(grid=(1, 1, 1), block=(1, 1, 1))

    with target("sm_80"):
        ptx = cute.compile(host, from_dlpack(np.zeros(8, np.float32)), from_dlpack(np.zeros(8, np.float32))).ptx
    assert ptx.count("abs.f32") == 8


def test_a_tensorssa_from_an_ir_value_of_another_type_is_refused_at_the_users_line():
    @cute.kernel
    def k(src: cute.Tensor):
        r = cute.make_rmem_tensor((4,), cutlass.Float32)
        x = r.load()
        type(x)(x.ir_value(), (8,), x.dtype)   # BADLANES: 4 lanes, not 8

    @cute.jit
    def host(src: cute.Tensor):
        k(src).launch(grid=(1, 1, 1), block=(1, 1, 1))

    with target("sm_80"), pytest.raises(TypeError, match="vector<8xf32>") as e:
        cute.compile(host, from_dlpack(np.zeros(8, np.float32)))
    assert e.value.location == (THIS, line_in(THIS, "# BADLANES"))
