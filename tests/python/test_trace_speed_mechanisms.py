"""What makes tracing cheaper must not change what it reports: the remembered user lines are those of the frame
asking, also when a code object's id is reused, and the cyclic collector that tracing pauses runs again
afterwards, whether the trace succeeded or not."""
from __future__ import annotations

import gc

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base import errors


def test_user_lines_are_those_of_the_calling_frame(tmp_path):
    path = str(tmp_path / "user_code.py")
    ns = {"ul": errors.user_location}
    exec(compile("def f(k):\n    a = ul(1)\n    b = ul(1)\n    return a, b\n", path, "exec"), ns)
    for _ in range(3):   # first from the line table, then remembered
        a, b = ns["f"](0)
        assert a == (path, 2) and b == (path, 3)


def test_a_reused_code_id_does_not_give_the_earlier_codes_line(tmp_path):
    path = str(tmp_path / "generated.py")
    for k in range(200):   # each function and its code go after their call; a later one may get the same id
        ns = {"ul": errors.user_location}
        exec(compile("\n" * k + "def f():\n    return ul(1)\n", path, "exec"), ns)
        assert ns["f"]() == (path, k + 2)
        del ns


@cute.kernel
def _copy_kernel(x: cute.Tensor, y: cute.Tensor):
    t, _, _ = cute.arch.thread_idx()
    y[t] = x[t]


@cute.jit
def _good(x: cute.Tensor, y: cute.Tensor):
    _copy_kernel(x, y).launch(grid=[1, 1, 1], block=[32, 1, 1])


@cute.jit
def _bad(x: cute.Tensor, y: cute.Tensor):
    raise ValueError("a mistake while tracing")


def _fake():
    from warpweave.cute.runtime import make_fake_tensor

    return make_fake_tensor(cutlass.Float32, (32,), stride=(1,), assumed_align=16)


@pytest.mark.parametrize("fn", [_good, _bad])
def test_the_cyclic_collector_runs_again_after_a_trace(fn, monkeypatch):
    monkeypatch.setenv("WARPWEAVE_ARCH", "sm_80")
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")
    assert gc.isenabled()
    if fn is _bad:
        with pytest.raises(cutlass.DSLError, match="a mistake while tracing"):
            cute.compile(fn, _fake(), _fake())
    else:
        cute.compile(fn, _fake(), _fake())
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled(monkeypatch):
    monkeypatch.setenv("WARPWEAVE_ARCH", "sm_80")
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")
    gc.disable()
    try:
        cute.compile(_good, _fake(), _fake())
        assert not gc.isenabled()
    finally:
        gc.enable()
