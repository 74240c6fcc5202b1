"""cute.math's explicit forms (approx=, ftz=, rounding=, as CuTe DSL's cute.math takes them): the instruction each
picks, static values unchanged by them, and contradictory or unknown choices refused at the user's line."""
import math
import os
import re

import numpy as np
import pytest

import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import target

THIS = os.path.abspath(__file__)


def _ptx(fn, dtype=np.float32, arch="sm_90a"):
    @cute.kernel
    def k(gA: cute.Tensor, gB: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        gB[tidx] = fn(gA[tidx])

    @cute.jit
    def h(a, b):
        k(a, b).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target(arch):
        return cute.compile(h, from_dlpack(np.zeros(32, dtype)), from_dlpack(np.zeros(32, dtype))).info["ptx"]


def _instructions(ptx, family):
    return sorted(set(re.findall(rf"\b({family}\.[a-z0-9.]*f(?:32|64))\b", ptx)))


@pytest.mark.parametrize("name,family", [("sqrt", "sqrt"), ("rsqrt", "rsqrt"), ("exp2", "ex2"), ("log2", "lg2"),
                                         ("sin", "sin"), ("cos", "cos")])
@pytest.mark.parametrize("ftz", [False, True])
def test_approx_picks_the_approximate_instruction_and_ftz_its_flushing_form(name, family, ftz):
    fn = getattr(cute.math, name)
    ptx = _ptx(lambda x: fn(x, approx=True, ftz=ftz))
    assert _instructions(ptx, family) == [f"{family}.approx{'.ftz' if ftz else ''}.f32"]


def test_tanh_approx():
    assert _instructions(_ptx(lambda x: cute.math.tanh(x, approx=True)), "tanh") == ["tanh.approx.f32"]


@pytest.mark.parametrize("mode", list(cute.math.RoundingMode))
@pytest.mark.parametrize("ftz", [False, True])
def test_sqrt_rounding_picks_the_rounded_instruction(mode, ftz):
    ptx = _ptx(lambda x: cute.math.sqrt(x, rounding=mode, ftz=ftz))
    assert _instructions(ptx, "sqrt") == [f"sqrt.{mode.value}{'.ftz' if ftz else ''}.f32"]
    # The mode's spelling is accepted as well as the enum.
    assert _ptx(lambda x: cute.math.sqrt(x, rounding=mode.value, ftz=ftz)) == ptx


def test_sqrt_rounding_on_f64():
    ptx = _ptx(lambda x: cute.math.sqrt(x, rounding=cute.math.RoundingMode.ZERO), dtype=np.float64)
    assert _instructions(ptx, "sqrt") == ["sqrt.rz.f64"]


def test_static_values_do_not_depend_on_the_form():
    assert cute.math.sqrt(2.25, approx=True).value == 1.5
    assert cute.math.exp2(3.0, approx=True, ftz=True).value == 8.0
    assert cute.math.sqrt(2.0, rounding="rz").value == pytest.approx(math.sqrt(2.0), rel=1e-7)


def _refused(fn, exc):
    with target("sm_90a"), pytest.raises(exc) as e:
        _ptx(fn)
    msg = str(e.value)
    line = int(msg.split(f"{THIS}:")[1].split(":")[0])
    assert "the bad call" in open(THIS).read().splitlines()[line - 1], msg
    return msg


def test_contradictory_forms_are_refused_at_the_users_line():
    msg = _refused(lambda x: cute.math.sqrt(x, approx=True, rounding="rn"), ValueError)  # the bad call
    assert "rounding=" in msg and "approx=True" in msg
    msg = _refused(lambda x: cute.math.exp2(x, ftz=True), ValueError)  # the bad call
    assert "approx=True" in msg
    msg = _refused(lambda x: cute.math.sqrt(x, rounding="up"), ValueError)  # the bad call
    assert "NEAREST_EVEN" in msg


def test_functions_without_explicit_forms_do_not_take_them():
    # As in CuTe DSL: exp, log, tan and the rest have only fastmath=.
    for name in ("exp", "log", "log10", "tan", "erf"):
        with pytest.raises(TypeError):
            getattr(cute.math, name)(1.0, approx=True)
    with pytest.raises(TypeError):
        cute.math.tanh(1.0, ftz=True)
