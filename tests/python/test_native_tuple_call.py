"""A list or tuple of Python numbers passed to a compiled function is read by the native fast path (_core.FastCall's
Tree kind, bindings/fast_call_tree.cpp), as the generated Python fast path reads it (call/arg_tensor.py's TreeArg).

Properties, without a GPU (launches recorded by stand-ins of the launcher):
- a call whose tuple (nested, a list in a tuple's place, a NamedTuple, DSL numbers in it, an equal compile-time
  string that is another object) matches what was compiled is taken by the native path (its counters say so) and
  launches byte for byte what the general path computes for the same arguments;
- host code computing from the tuple's numbers (the host program) is run natively on the numbers read;
- a compile-time value (in a tuple, or a whole argument) equal to the compiled one but another object is taken
  natively where it is a number, a string or a tuple of them;
- a call whose tuple does not match (another length or depth, a number its element's type refuses or that does
  not fit, another compile-time value, a tuple type with its own indexing) is left to the Python call, which gives
  the result or raises the error it gives today;
- called as a @cute.jit function, a matching tuple is taken natively, and one of another structure or element type
  compiles again.
"""
import random
import typing

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import _core
from warpweave._dsl.call.compiled_function import JitCompiledFunction
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import target
from test_native_call import general, recorded  # noqa: F401 - a fixture


class Sizes(typing.NamedTuple):
    m: int
    n: int
    small: cutlass.Int8   # a field's annotation types its number


@cute.kernel
def mixed_kernel(y: cute.Tensor, a: cutlass.Int32, b: cutlass.Int64, w: cutlass.Float32, s: cutlass.Int8):
    tidx, _, _ = cute.arch.thread_idx()
    y[tidx] = a + cutlass.Int32(b) + cutlass.Int32(w) + cutlass.Int32(s)


@cute.jit
def mixed(y: cute.Tensor, problem):
    # m, n: Int32; small: Int8; big: Int64 (compiled for a value beyond 32 bits); tag: a string, compiled in;
    # w: Float32; flag: Boolean (read, not passed on); nothing: None, compiled in
    (m, n, small), (big, tag), w, flag, nothing = problem
    mixed_kernel(y, m * n, big, w, small).launch(grid=[(m + 31) // 32, n, 1], block=[32, 1, 1])


COMPILED_WITH = (Sizes(64, 3, 5), (1 << 40, "tag"), 1.5, True, None)


def tensor():
    return from_dlpack(np.zeros(64, np.int32))


def compiled_mixed(ready):
    with target("sm_80"):
        c = ready(cute.compile(mixed, tensor(), COMPILED_WITH))
    assert c.plans[1].kind == "tree" and isinstance(c._native, _core.FastCall)
    return c


def _problem(rng):
    """A problem that matches the compiled one: other numbers, of other Python forms where those read alike."""
    m, n = rng.randint(1, 1 << 20), rng.choice([1, 2, rng.randint(1, 65535)])
    if rng.random() < 0.2:
        m = cutlass.Int32(m)   # a DSL number: its value
    small = rng.choice([-128, 127, 0, rng.randint(-128, 127), cutlass.Int8(3)])
    mn = rng.choice([(m, n, small), [m, n, small], Sizes(m, n, small)])
    big = rng.choice([rng.randint(-(1 << 63), (1 << 63) - 1), 0, -1, 1 << 40, cutlass.Int64(rng.randint(0, 99))])
    tag = rng.choice(["tag", "".join(["t", "a", "g"])])  # the compiled string, or an equal one made now
    w = rng.choice([rng.uniform(-1e30, 1e30), 0.0, -0.0, 2, True, float("inf"), cutlass.Float32(rng.uniform(-8, 8))])
    flag = rng.choice([True, False, 1, 0, cutlass.Boolean(True)])
    inner = rng.choice([(big, tag), [big, tag]])
    outer = (mn, inner, w, flag, None)
    return list(outer) if rng.random() < 0.3 else outer


def test_a_matching_tuple_is_read_natively_as_the_general_path_reads_it(recorded):
    launched, ready = recorded
    c = compiled_mixed(ready)
    y = tensor()
    rng = random.Random(5)
    for k in range(300):
        problem = _problem(rng)
        want = general(c, y, problem)
        assert c._native.packed(y, problem) == want, problem
        before = c._native.stats
        launched.clear()
        c(y, problem)
        assert launched == want, problem
        assert c._native.stats == (before[0] + 1, before[1]), problem   # taken natively
    # the numbers are where the kernel reads them: m * n, big, w, flag in the parameter bytes
    problem = ((40, 3, -7), (-(1 << 50), "tag"), 0.25, False, None)
    (_, _, params), = c._native.packed(y, problem)
    assert (np.int32(40).tobytes() + np.int32(3).tobytes() in params and
            np.int64(-(1 << 50)).tobytes() in params and np.float32(0.25).tobytes() in params and
            np.int8(-7).tobytes() in params)
    assert c._native.packed(y, problem)[0][0] == (2, 3, 1)


class Indexed(tuple):
    """A tuple whose indexing is its own: read the Python way (v[k] runs its __getitem__)."""

    def __getitem__(self, k):
        return tuple.__getitem__(self, k)


def _outcome(call, *args):
    try:
        call(*args)
        return "launched"
    except Exception as e:  # noqa: BLE001 - compared, type and message, with the other path's
        return type(e), str(e)


@pytest.mark.parametrize("problem,raises", [
    (((64, 3, 5, 1), (1 << 40, "tag"), 1.5, True, None), True),           # an inner tuple of another length
    (((64, 3, 200), (1 << 40, "tag"), 1.5, True, None), True),            # too large for an Int8
    (((64, 3, 5), (1 << 40, "tag"), 1.5, True), True),                    # the outer one shorter
    (((64, 3, 5), (1 << 40, "tag"), 1.5, True, None, 0), True),           # longer
    ((64, (1 << 40, "tag"), 1.5, True, None), True),                      # a number where a tuple was
    ((((64,), 3, 5), (1 << 40, "tag"), 1.5, True, None), True),           # a tuple where a number was
    (((3.5, 3, 5), (1 << 40, "tag"), 1.5, True, None), True),             # a float where an Int32 was
    (((1 << 40, 3, 5), (1 << 40, "tag"), 1.5, True, None), True),         # too large for an Int32
    (((64, 3, 5), (1 << 70, "tag"), 1.5, True, None), True),              # too large for an Int64
    (((64, "3", 5), (1 << 40, "tag"), 1.5, True, None), True),            # a string where an Int32 was
    (((64, 3, 5), (1 << 40, "other"), 1.5, True, None), True),            # another compile-time value
    (((64, 3, 5), (1 << 40, "tag"), 1.5, True, 0), True),                 # 0 where None was compiled in
    (((64, 3, 5), (1 << 40, "tag"), "x", True, None), True),              # a string where a Float32 was
    (((64, 3, 5), (1 << 40, "tag"), 1e300, True, None), True),            # too large for a Float32
    (((64.0, 3, 5), (1 << 40, "tag"), 1.5, True, None), False),           # an integral float: the Python call takes it
    ((Indexed((64, 3, 5)), (1 << 40, "tag"), 1.5, True, None), False),    # read through its own __getitem__
])
def test_a_tuple_that_does_not_match_is_left_to_the_python_call(recorded, problem, raises):
    launched, ready = recorded
    c = compiled_mixed(ready)
    y = tensor()
    assert c._native.packed(y, problem) is None
    launched.clear()
    python = _outcome(c._fast, y, problem)   # the generated Python fast path: what such a call gave before
    from_python = list(launched)
    before = c._native.stats
    launched.clear()
    assert _outcome(c, y, problem) == python
    assert c._native.stats == (before[0], before[1] + 1)   # left to the Python call
    assert (python != "launched") == raises
    assert launched == from_python
    if not raises:
        assert launched == general(c, y, problem)


@cute.kernel
def three_kernel(y: cute.Tensor, a: cutlass.Int32, b: cutlass.Int64, w: cutlass.Float32):
    tidx, _, _ = cute.arch.thread_idx()
    y[tidx] = a + cutlass.Int32(b) + cutlass.Int32(w)


@cute.jit
def from_list(y: cute.Tensor, sizes):
    three_kernel(y, sizes[0], sizes[1], sizes[2]).launch(grid=[sizes[0], 1, 1], block=[32, 1, 1])


def test_a_list_of_numbers_as_the_whole_argument(recorded):
    launched, ready = recorded
    y = tensor()
    with target("sm_80"):
        c = ready(cute.compile(from_list, y, [5, 1 << 40, 2.5]))
    for sizes in ([7, 3, 0.5], (9, -(1 << 41), 1), [1, 2, 3.0]):
        want = general(c, y, sizes)
        assert c._native.packed(y, sizes) == want
        launched.clear()
        c(y, sizes)
        assert launched == want
    assert c._native.stats == (3, 0)
    assert c._native.packed(y, [7, 3]) is None and c._native.packed(y, [7, 3, 0.5, 1]) is None


@cute.kernel
def fill_kernel(y: cute.Tensor, v: cutlass.Int32, w: cutlass.Float32):
    tidx, _, _ = cute.arch.thread_idx()
    y[tidx] = v + cutlass.Int32(w)


@cute.jit
def host_computed(y: cute.Tensor, problem):
    # host code on the tuple's numbers (a branch on m, a product of alpha): the host program, run natively
    (m, n), alpha = problem
    per = 1
    if m > 8:
        per = 2
    fill_kernel(y, per * n, alpha * 0.5).launch(grid=[(m + per - 1) // per, 1, 1], block=[32, 1, 1])


@pytest.mark.parametrize("compiled", ["traced", "read back from the function cache"])
def test_host_code_computes_from_the_numbers_of_the_tuple_natively(recorded, monkeypatch, compiled):
    launched, _ = recorded
    y = tensor()
    with target("sm_80"):
        c = cute.compile(host_computed, y, ((16, 3), 2.0))
        if compiled != "traced":
            c = cute.compile(host_computed, y, ((5, 9), 1.0))
            assert c.info.get("level") == "function"
    assert c.host_program
    monkeypatch.setattr(c, "_load", lambda: None)
    c._functions = {l.kernel: object() for l in c.launches}
    assert c._build_fast_call() is False and isinstance(c._native, _core.FastCall)  # the native path alone
    rng = random.Random(2)
    for _ in range(50):
        problem = ((rng.randint(1, 64), rng.randint(1, 1000)), rng.choice([rng.uniform(-4, 4), 3, -0.0]))
        want = general(c, y, problem)
        (m, n), alpha = problem
        per = 2 if m > 8 else 1
        assert want[0][0] == (-(-m // per), 1, 1)
        # n and per (the kernel multiplies them), then alpha * 0.5 computed on the host
        assert np.array([n, per], np.int32).tobytes() + np.float32(alpha * 0.5).tobytes() in want[0][2]
        assert c._native.packed(y, problem) == want, problem
        launched.clear()
        c(y, problem)
        assert launched == want
    assert c._native.stats == (50, 0)


@cute.jit
def with_tile(y: cute.Tensor, n, tile: cute.Shape):  # a layout algebra annotation: the tile is compiled in
    three_kernel(y, n, n, 1.0).launch(grid=[n, 1, 1], block=[32, 1, 1])


def test_compile_time_values_equal_by_value_are_taken_natively(recorded):
    # An equal tuple of numbers or string made for the call (another object) is the compiled value, as const_key
    # compares it; others go to the Python call, which compares (and takes or refuses) as it does.
    launched, ready = recorded
    y = tensor()
    tile = (1000, (2, 3), "k")
    with target("sm_80"):
        c = ready(cute.compile(with_tile, y, 7, tile))
    assert c.plans[2].kind == "const"
    fresh = (int("1000"), tuple([2, 3]), "".join("k"))
    assert fresh == tile and fresh is not tile and fresh[0] is not tile[0]
    want = general(c, y, 9, tile)
    assert c._native.packed(y, 9, fresh) == want
    launched.clear()
    c(y, 9, fresh)
    assert launched == want and c._native.stats == (1, 0)
    for other in [(1000.0, (2, 3), "k"), (1000, (2, 4), "k"), (1000, [2, 3], "k"), (1000, (2, 3))]:
        assert c._native.packed(y, 9, other) is None
        assert _outcome(c, y, 9, other) == _outcome(c._fast, y, 9, other)
    assert c._native.stats == (1, 4)
    assert _outcome(c, y, 9, (1000.0, (2, 3), "k")) == "launched"   # equal as the Python call compares


@pytest.fixture
def jit_calls(monkeypatch):
    """@cute.jit functions called directly, with launches recorded as (block, grid, parameter bytes) by stand-ins
    of the launcher (the native and the Python fast path's) and of _core.launch (the general path's)."""
    launched = []

    class Launcher:
        def __init__(self, fn, block, cluster, smem, offsets):
            self.block = tuple(block)

        def __call__(self, gx, gy, gz, stream, params):
            launched.append((self.block, (gx, gy, gz), params))

    class Function:
        def set_max_dynamic_shared_memory(self, n):
            pass

    def launch(f, grid, block, cluster, smem, stream, params, offsets, *options):
        launched.append((tuple(block), tuple(grid), params))

    def load(self):
        self._functions = {l.kernel: Function() for l in self.launches}
        self._module = self._module or object()
        return self._module

    monkeypatch.setattr(_core, "Launcher", Launcher)
    monkeypatch.setattr(_core, "launch", launch)
    monkeypatch.setattr(JitCompiledFunction, "_load", load)
    return launched


@cute.jit
def fill_shape(y: cute.Tensor, problem):
    (m, n), w = problem
    fill_kernel(y, n, w).launch(grid=[m, 1, 1], block=[32, 1, 1])


def test_a_jit_call_takes_the_native_path_and_compiles_again_for_another_structure(jit_calls):
    y = tensor()
    with target("sm_80"):
        fill_shape(y, ((8, 5), 1.0))    # compiled, the general path
        fill_shape(y, ((9, 6), 2.0))    # natively
        (first,) = fill_shape._compiled.values()
        assert first._native.stats == (1, 0)
        fill_shape(y, ((2, 7), 3))      # an Int32 where a Float32 was: another key, compiled again
        fill_shape(y, [[4, 7], 3.0])    # lists where tuples were: another key
        fill_shape(y, ((5, 7), 3.0))    # the first again, natively
    assert len(fill_shape._compiled) == 3 and first._native.stats == (2, 0)
    assert [g for _, g, _ in jit_calls] == [(8, 1, 1), (9, 1, 1), (2, 1, 1), (4, 1, 1), (5, 1, 1)]
    assert np.int32(6).tobytes() + np.float32(2.0).tobytes() in jit_calls[1][2]
    assert np.int32(7).tobytes() + np.int32(3).tobytes() in jit_calls[2][2]   # the Int32, as an Int32
    assert np.int32(7).tobytes() + np.float32(3.0).tobytes() in jit_calls[4][2]
