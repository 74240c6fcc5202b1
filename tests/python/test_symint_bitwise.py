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
