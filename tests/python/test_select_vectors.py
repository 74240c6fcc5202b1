"""cutlass.select_ over a tensor's loaded values (QuACK's paired f32 epilogue store swaps two fragments by a
thread's parity: `TensorSSA(cutlass.select_(h, v1, v0), shape, dtype)`): one Vector, chosen whole by a Boolean or
lane by lane by Booleans, as CuTe DSL gives; numbers as before; mistakes at the user's line."""
import re

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base.errors import DSLTypeError, DSLValueError
from warpweave._dsl.values.ir_vector import Vector

from test_arch_ops import compile_kernel
from test_atomicrmw_ops import refused_at_the_eval_line



def _rows(g, tidx):
    return cute.make_tensor(g.iterator + tidx * 4, cute.make_layout(4))


def _selects(ptx):
    return len(re.findall(r"\bselp\.(?:f32|b32)\b", ptx))


@pytest.mark.parametrize("form", ["tensorssa", "vector", "number_other_side", "lanewise"])
def test_select_of_loaded_values_is_one_vector_choice(form):
    seen = {}

    def body(gA, gB, tidx):
        v0 = _rows(gA, tidx).load()
        v1 = v0 * 2.0
        if form == "tensorssa":
            s = cutlass.select_(tidx > 3, v1, v0)
        elif form == "vector":
            s = cutlass.select_(tidx > 3, Vector(v1), Vector(v0))
        elif form == "number_other_side":
            s = cutlass.select_(tidx > 3, v1, 0.5)
        else:
            s = cutlass.select_(v0.to(cutlass.Float32) > 0.0, v1, v0)
        seen["type"] = type(s)
        _rows(gB, tidx).store(cute.TensorSSA(s, v0.shape, cutlass.Float32))

    ptx = compile_kernel(body, n=512).info["ptx"]
    assert seen["type"] is Vector
    assert _selects(ptx) == 4, ptx  # one per lane, no more: the choice is the Vector's, not per element op


def test_a_static_condition_picks_in_python_and_numbers_stay_numbers():
    seen = {}

    def body(gA, gB, tidx):
        v0 = _rows(gA, tidx).load()
        seen["static"] = cutlass.select_(True, v0, v0 * 2.0)
        seen["number"] = cutlass.select_(tidx > 3, cutlass.Float32(1.0), 2.0)
        gB[tidx] = seen["number"]

    compile_kernel(body, n=512)
    assert isinstance(seen["static"], cute.TensorSSA)
    assert type(seen["number"]) is cutlass.Float32


@pytest.mark.parametrize("call,err,needle", [
    ("cutlass.select_(tidx > 3, _rows(gA, tidx).load(), cute.make_tensor(gA.iterator, cute.make_layout(8)).load())",
     DSLValueError, "shapes"),
    ("cutlass.select_(_rows(gA, tidx).load() > 0.0, 1.0, 2.0)", DSLTypeError, "picks between Vectors"),
])
def test_select_mistakes_at_the_users_line(call, err, needle):
    refused_at_the_eval_line(call, err, needle, names={"_rows": _rows}, n=512)
