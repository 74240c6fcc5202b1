"""Host loops on the native fast path (bindings/host_program_run.cpp): a compiled function whose host side loops
over runtime bounds, carries integers from trip to trip and launches kernels in its trips makes, on the native
path, the launches the Python call makes (same kernels, order, grids and parameter bytes) for every call; what
the native path does not take (a zero step, a division by zero in a trip) goes the Python way, which names the
user's line. Checked on the stand-in driver (no GPU)."""
import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base.errors import DSLError
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import line_in, target
from host_stand_in import stand_in  # noqa: F401 (a fixture)

HERE = __file__


def dyn(a):
    return from_dlpack(a).mark_layout_dynamic()


@cute.kernel
def mark(c: cute.Tensor, v: cutlass.Int32):
    c[0] = cutlass.Float32(v)


@cute.kernel
def clear(c: cute.Tensor):
    c[0] = cutlass.Float32(0.0)


@cute.jit
def rounds_of_chunks(c: cute.Tensor, chunk: cutlass.Int32, rounds: cutlass.Int32):
    # Rounds of one launch per chunk of rows, a clear after each round, then a launch sized by the count.
    m = cute.size(c, mode=[0])
    done = 0
    if chunk > 0:
        for r in range(rounds):
            for start in range(0, m, chunk):
                mark(c, start).launch(grid=(min(chunk, m - start), 1, 1), block=(32, 1, 1))
                done = done + 1
            clear(c).launch(grid=(1, 1, 1), block=(32, 1, 1))
    mark(c, done).launch(grid=(done + 1, 1, 1), block=(32, 1, 1))


def _rounds_model(m, chunk, rounds):
    out, done = [], 0
    if chunk > 0:
        for r in range(rounds):
            for start in range(0, m, chunk):
                out.append(("mark", (min(chunk, m - start), 1, 1), start))
                done += 1
            out.append(("clear", (1, 1, 1), None))
    return out + [("mark", (done + 1, 1, 1), done)]


@cute.jit
def halving_launches(c: cute.Tensor, n: cutlass.Int32):
    v = n
    k = 0
    while v > 1:
        v = v // 2
        k = k + 1
        if v % 2 == 1:
            mark(c, v).launch(grid=(k, 1, 1), block=(32, 1, 1))
    mark(c, k).launch(grid=(v + 1, 1, 1), block=(32, 1, 1))


def _halving_model(n):  # (kernel, grid) of each launch
    out, v, k = [], n, 0
    while v > 1:
        v //= 2
        k += 1
        if v % 2 == 1:
            out.append(("mark", (k, 1, 1)))
    return out + [("mark", (v + 1, 1, 1))]


def _seen(launched):
    """(kernel, grid, its Int32 parameter) of each launch (an integer a kernel takes is packed as the symbols it
    is made of: the parameters here are single values)."""
    return [(k.split("_")[0], g, int.from_bytes(p[-4:], "little", signed=True) if k.startswith("mark") else None)
            for k, g, p, _ in launched]


def _same_launches(c, args):
    """The native path's launches for args are the Python call's (grids and parameter bytes, in order)."""
    python = [(tuple(l[1]), bytes(l[6])) for l in c.prepare(*args)]
    native = c._native.packed(*args)
    assert native is not None, "the native path left the call to Python"
    assert [(tuple(g), bytes(p)) for g, _, p in native] == python


def test_loops_of_launches_make_the_same_launches_natively_as_in_python(stand_in):
    with target("sm_80"):
        c = stand_in(cute.compile(rounds_of_chunks, dyn(np.zeros(16, np.float32)), cutlass.Int32(3),
                                  cutlass.Int32(2)))
    rng = np.random.default_rng(1)
    cases = [(1, 4, 1), (9, 4, 2), (30, 7, 3), (0, 3, 2), (5, 0, 2), (8, 3, 0)] + \
        [tuple(int(x) for x in rng.integers((0, -2, -1), (40, 9, 4))) for _ in range(12)]
    for k, (m, chunk, rounds) in enumerate(cases):
        args = (dyn(np.zeros(m, np.float32)), cutlass.Int32(chunk), cutlass.Int32(rounds))
        stand_in.launched.clear()
        c(*args)
        assert _seen(stand_in.launched) == _rounds_model(m, chunk, rounds), (m, chunk, rounds)
        assert {path for *_, path in stand_in.launched} == {"python" if k == 0 else "native"}
        _same_launches(c, args)
    assert c._native.stats == (len(cases) - 1, 0)


def test_a_while_loop_carrying_integers_launches_natively_as_in_python(stand_in):
    with target("sm_80"):
        c = stand_in(cute.compile(halving_launches, dyn(np.zeros(4, np.float32)), cutlass.Int32(5)))
    for k, n in enumerate((5, 0, 1, 2, 7, 1000, 2**30 - 1, 12345)):
        args = (dyn(np.zeros(4, np.float32)), cutlass.Int32(n))
        stand_in.launched.clear()
        c(*args)
        assert [(k, g) for k, g, _ in _seen(stand_in.launched)] == _halving_model(n), n
        assert {path for *_, path in stand_in.launched} == {"python" if k == 0 else "native"}
        _same_launches(c, args)


@cute.jit
def stepped(c: cute.Tensor, step: cutlass.Int32, n: cutlass.Int32):
    for i in range(0, n, step):
        mark(c, i).launch(grid=(100 // (i - 2) + 200, 1, 1), block=(32, 1, 1))


def test_what_the_native_path_does_not_take_is_the_python_calls_error_at_the_users_line(stand_in):
    with target("sm_80"):
        c = stand_in(cute.compile(stepped, dyn(np.zeros(4, np.float32)), cutlass.Int32(1), cutlass.Int32(2)))
    x = dyn(np.zeros(4, np.float32))
    c(x, cutlass.Int32(1), cutlass.Int32(2))
    stand_in.launched.clear()
    c(x, cutlass.Int32(-1), cutlass.Int32(-3))  # i = 0, -1, -2: natively
    assert _seen(stand_in.launched) == [("mark", (100 // (i - 2) + 200, 1, 1), i) for i in (0, -1, -2)]
    assert {path for *_, path in stand_in.launched} == {"native"}
    stand_in.launched.clear()
    with pytest.raises(DSLError, match=r"the host loop's step is 0 for these arguments") as e:
        c(x, cutlass.Int32(0), cutlass.Int32(2))
    assert f":{line_in(HERE, 'for i in range(0, n, step)')}:" in str(e.value)
    with pytest.raises(DSLError, match=r"by zero") as e:
        c(x, cutlass.Int32(1), cutlass.Int32(4))  # the trip i = 2 divides by zero
    assert f":{line_in(HERE, 'grid=(100 // (i - 2) + 200')}:" in str(e.value)
    assert stand_in.launched == []  # no trip's launch is made when a later trip fails
    assert c._native.stats[1] == 2
