"""Bitwise operators of a dynamic extent (cute.ceil_div of a runtime length and arithmetic of it, a SymInt): `^`,
`&`, `|`, shifts and `~` are those of the DSL integer it is, on either side of a Python int, as CuTe DSL's Int32
extents have them (a kernel alternates between two stages with `iters % 2 ^ s`)."""
import re

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.values.numeric import SymInt
from warpweave.cute.runtime import make_fake_compact_tensor

from dsl_helpers import target

SEEN = {}


@cute.kernel
def phases(t: cute.Tensor, seqlen: cutlass.Int32):
    iters = cute.ceil_div(cute.ceil_div(seqlen, 64) - 1, 3)
    phase = iters % 2
    SEEN["phase"] = type(phase)
    results = (phase ^ 1, 1 ^ phase, phase & 1, phase | 2, iters << 2, iters >> 1, ~phase)
    SEEN["results"] = {type(r) for r in results}
    t[0] = results[0]
    t[1] = results[4] + results[6]


@cute.jit
def launch(t: cute.Tensor, seqlen: cutlass.Int32):
    phases(t, seqlen).launch(grid=[1, 1, 1], block=[32, 1, 1])


def test_bitwise_operators_of_a_dynamic_extent_are_its_integer_types():
    with target("sm_90a"):
        c = cute.compile(launch, make_fake_compact_tensor(cutlass.Int32, (8,)), cutlass.Int32(100))
    assert SEEN["phase"] is SymInt and SEEN["results"] == {cutlass.Int32}
    assert re.search(r"\bxor\.b32\b", c.ptx) and re.search(r"\bshl\.b32\b", c.ptx), c.ptx


@cute.kernel
def conversions(t: cute.Tensor, f: cute.Tensor):
    n = cute.ceil_div(cute.size(t, mode=[0]), 4)
    SEEN["dtype"] = n.dtype
    SEEN["to"] = type(n.to(cutlass.Int64))
    SEEN["ir"] = n.ir_value().type.text
    t[0] = n.to(cutlass.Int32) + cutlass.Int32(n.ir_value())
    f[0] = cutlass.Float32(n) * 0.5


@cute.jit
def convert(t: cute.Tensor, f: cute.Tensor):
    conversions(t, f).launch(grid=[1, 1, 1], block=[32, 1, 1])


def test_a_dynamic_extent_answers_as_its_integer_type():
    """.dtype, .ir_value(), .to(type) and a float made of it, as code written for an Int32 extent asks (CuTe DSL's
    extents are Int32 values)."""
    with target("sm_80"):
        t = cute.runtime.make_fake_tensor(cutlass.Int32, (cute.sym_int(),), (1,), assumed_align=16)
        c = cute.compile(convert, t, make_fake_compact_tensor(cutlass.Float32, (4,)))
    assert SEEN["dtype"] is cutlass.Int32 and SEEN["to"] is cutlass.Int64 and SEEN["ir"] == "i32"
    assert re.search(r"\bcvt\.rn\.f32\.[su]32\b", c.ptx), c.ptx  # (an extent is known not negative: unsigned)
