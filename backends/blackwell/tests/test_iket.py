"""cute.experimental.iket (in-kernel event tracing's named ranges) for sm_100a: a kernel with nested ranges, indexed
by compile-time and loop integers, compiles to the code it has without them (no recording outside a tracing run);
misuse is refused at the user's line."""
from __future__ import annotations

import os

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import ext
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import line_in, target

THIS = os.path.abspath(__file__)


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")


def _compile(kernel):
    @cute.jit
    def host(x: cute.Tensor):
        kernel(x).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_100a"):
        return cute.compile(host, from_dlpack(np.zeros(32, np.float32)))


def _body(x):
    tidx, _, _ = cute.arch.thread_idx()
    for k in cutlass.range(4, unroll=1):
        x[tidx] = x[tidx] + 1.0


@cute.kernel
def plain(x: cute.Tensor):
    _body(x)


@cute.kernel
def traced(x: cute.Tensor):
    cute.experimental.iket.range_push("kernel")
    tidx, _, _ = cute.arch.thread_idx()
    for k in cutlass.range(4, unroll=1):
        cute.experimental.iket.range_push("step", k)
        cute.experimental.iket.range_push("inner", 3)
        x[tidx] = x[tidx] + 1.0
        cute.experimental.iket.range_pop()
        cute.experimental.iket.range_pop()
    cute.experimental.iket.range_pop()


def _instructions(ptx):
    return [l.strip() for l in ptx.splitlines() if l.strip() and not l.strip().startswith(("//", ".visible",
                                                                                         ".entry", ".globl"))
            and "plain" not in l and "traced" not in l]


def test_ranges_compile_to_the_kernel_without_them():
    a, b = _compile(plain), _compile(traced)
    assert _instructions(a.ptx) == _instructions(b.ptx)


@cute.kernel
def popped_too_often(x: cute.Tensor):
    cute.experimental.iket.range_push("a")
    cute.experimental.iket.range_pop()
    cute.experimental.iket.range_pop()  # nothing open


@cute.kernel
def named_by_a_number(x: cute.Tensor):
    cute.experimental.iket.range_push(7)  # not a name


@cute.kernel
def indexed_by_a_float(x: cute.Tensor):
    cute.experimental.iket.range_push("a", cutlass.Float32(1.0))  # not an integer


@pytest.mark.parametrize("kernel, text, match", [
    (popped_too_often, "range_pop()  # nothing open", "no range is open"),
    (named_by_a_number, "range_push(7)  # not a name", "non-empty string"),
    (indexed_by_a_float, "# not an integer", "is an integer, got Float32"),
])
def test_misuse_is_refused_at_the_users_line(kernel, text, match):
    with pytest.raises(ext.DSLError, match=match) as e:
        _compile(kernel)
    assert e.value.location == (THIS, line_in(THIS, text))


def test_ranges_belong_in_kernels():
    with target("sm_100a"), pytest.raises(ext.DSLRuntimeError, match="inside a @cute.kernel"):
        cute.experimental.iket.range_push("host")
