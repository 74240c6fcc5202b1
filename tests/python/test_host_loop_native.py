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

from dsl_helpers import line_in, requires_gpu, target
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


# ---- exported C (export_to_c; TVM FFI's entry is the same C) ------------------------------------------------

@cute.jit
def chunked(c: cute.Tensor, chunk: cutlass.Int32, rounds: cutlass.Int32):
    m = cute.size(c, mode=[0])
    done = 0
    if chunk > 0:
        for r in range(rounds):
            for start in range(0, m, chunk):
                if start % 2 == 0:
                    mark(c, start).launch(grid=(min(chunk, m - start), 1, 1), block=(32, 1, 1))
                done = done + 1
    v = done
    while v > 1:
        v = v // 3
        mark(c, v).launch(grid=(done + 1, 1, 1), block=(32, 1, 1))


def test_exported_c_runs_host_loops_and_makes_the_python_calls_launches(tmp_path):
    import aot_helpers as aot
    from test_export import build_harness, run_harness
    from warpweave._dsl.values.runtime import RuntimeTensor
    from warpweave.cute.runtime import make_fake_tensor

    if not (aot.cc() and aot.cxx()):
        pytest.skip("needs a C and a C++ compiler")
    with target("sm_80"):
        t = make_fake_tensor(cutlass.Float32, (cute.sym_int(),), (1,), assumed_align=16)
        c = cute.compile(chunked, t, 3, 2)
        s = cute.compile(stepped, t, 1, 2)
    mock = aot.build_mock_driver(str(tmp_path))
    exe, meta = build_harness(tmp_path, c, "chunked", mock)
    rng = np.random.default_rng(2)
    calls, expected = [], []
    for m, chunk, rounds in [(9, 4, 2), (1, 4, 1), (0, 3, 2), (30, 7, 3), (5, 0, 2)] + \
            [tuple(int(x) for x in rng.integers((0, -2, -1), (40, 9, 4))) for _ in range(6)]:
        x = RuntimeTensor(None, 0x30000000, (m,), (1,), cutlass.Float32, "cuda", 16).mark_layout_dynamic()
        calls.append({"c": x, "chunk": chunk, "rounds": rounds})
        expected.append(aot.python_launches(c, x, chunk, rounds))
    out = run_harness(exe, meta, calls, c)
    assert len(out["calls"]) == len(calls)
    for (rc, msg, launches), exp in zip(out["calls"], expected):
        assert rc == 0, msg
        assert [{k: v for k, v in l.items() if k != "attrs"} for l in launches] == exp
    assert sum(len(e) for e in expected) > 2 * len(calls)  # the loops launched at several trips
    exe, meta = build_harness(tmp_path, s, "stepped", mock)
    x = RuntimeTensor(None, 0x30000000, (4,), (1,), cutlass.Float32, "cuda", 16).mark_layout_dynamic()
    out = run_harness(exe, meta, [{"c": x, "step": 0, "n": 2}, {"c": x, "step": 1, "n": 4},
                                  {"c": x, "step": -1, "n": -3}], s)
    (rc0, msg0, l0), (rc1, msg1, l1), (rc2, msg2, l2) = out["calls"]
    assert rc0 != 0 and "step is 0" in msg0 and f":{line_in(HERE, 'for i in range(0, n, step)')}" in msg0
    assert rc1 != 0 and "by zero" in msg1 and l1 == []  # the trip i = 2 divides by zero: nothing launched
    assert rc2 == 0 and [l["grid"][0] for l in l2] == [100 // (i - 2) + 200 for i in (0, -1, -2)]


_TVM_SCRIPT = r"""
import sys
sys.path.insert(0, sys.argv[1])
import tvm_ffi
import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import make_fake_tensor
from test_tvm_ffi import CudaLike
from test_host_loop_native import chunked
from dsl_helpers import target
with target("sm_80"):
    t = make_fake_tensor(cutlass.Float32, (cute.sym_int(),), (1,), assumed_align=16)
    f = cute.compile(chunked, t, 3, 2, options="--enable-tvm-ffi")
for m, chunk, rounds in ((9, 4, 2), (30, 7, 3)):
    f(tvm_ffi.from_dlpack(CudaLike(0x30000000, (m,))), chunk, rounds)
"""


def test_the_tvm_ffi_entry_runs_host_loops_as_the_python_call_does(tmp_path):
    import os
    import subprocess
    import sys

    import aot_helpers as aot
    from warpweave._dsl.values.runtime import RuntimeTensor
    from warpweave.cute.runtime import make_fake_tensor

    pytest.importorskip("tvm_ffi")
    if not aot.cc():
        pytest.skip("needs a C compiler")
    with target("sm_80"):
        c = cute.compile(chunked, make_fake_tensor(cutlass.Float32, (cute.sym_int(),), (1,), assumed_align=16), 3, 2)
    mock = aot.build_mock_driver(str(tmp_path))
    sizes = ",".join(str(__import__("struct").calcsize("=" + p.fmt)) for p in c.launches[0].params)
    env = dict(os.environ, WARPWEAVE_LIBCUDA=os.path.join(mock, "libcuda.so.1"), WW_MOCK_PARAM_SIZES=sizes)
    p = subprocess.run([sys.executable, "-c", _TVM_SCRIPT, os.path.dirname(__file__)], capture_output=True,
                       text=True, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    out = aot.parse_mock_output(p.stdout + "\nrc call 0\n")
    expected = []
    for m, chunk, rounds in ((9, 4, 2), (30, 7, 3)):
        x = RuntimeTensor(None, 0x30000000, (m,), (1,), cutlass.Float32, "cuda", 16).mark_layout_dynamic()
        expected += aot.python_launches(c, x, chunk, rounds)
    assert len(expected) > 4
    assert [{k: v for k, v in l.items() if k != "attrs"} for l in out["calls"][0][2]] == expected


@requires_gpu
def test_the_gpu_computes_what_a_native_loop_of_launches_launches():
    """The benchmark's function (bench_host_loop_overhead.py): a division, a branch and a loop of 1 to 4 launches
    over the extent, each launch a chunk of c = 2.0 * 0.5 * a + b, all calls after the first native."""
    import os
    import sys

    import torch
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "..", "..", "benchmarks", "python"))
    import bench_host_loop_overhead as bench

    a = torch.randn(10_000, device="cuda")
    b = torch.randn_like(a)
    views = lambda *ts: [dyn(t) for t in ts]  # noqa: E731
    c = cute.compile(bench.host_loop_function(), *views(a, b, torch.empty_like(a)), cutlass.Float32(2.0),
                     cutlass.Int32(2))
    for n in (1, 127, 128, 1000, 10_000):
        for parts in (1, 2, 3, 4):
            out = torch.full((n,), -1.0, device="cuda")
            c(*views(a[:n], b[:n], out), 2.0, parts)
            torch.cuda.synchronize()
            torch.testing.assert_close(out, a[:n] + b[:n])
    assert c._native.stats[0] == 19 and c._native.stats[1] == 0


_CACHED_SCRIPT = r"""
import sys
sys.path.insert(0, sys.argv[1])
import warpweave as cutlass
import warpweave.cute as cute
from test_host_loop_native import chunked, stepped
from dsl_helpers import target
from warpweave._dsl.values.runtime import RuntimeTensor


def dyn(m):  # at the same address in both processes: the same parameter bytes
    return RuntimeTensor(None, 0x30000000, (m,), (1,), cutlass.Float32, "cuda", 16).mark_layout_dynamic()


with target("sm_80"):
    fns = [cute.compile(chunked, dyn(16), 3, 2), cute.compile(stepped, dyn(4), 1, 2)]
for f in fns:
    print("cache", "function" if f.info.get("level") == "function" else f.info["cache"], f.info.get("function_cache"),
          flush=True)
cases = [[(9, 4, 2), (1, 4, 1), (0, 3, 2), (30, 7, 3), (5, 0, 2), (17, 2, 1)], [(4, 1, 2), (4, -1, -3), (6, 3, 11)]]
for f, fcases in zip(fns, cases):
    for case in fcases:
        args = (dyn(case[0]),) + tuple(cutlass.Int32(x) for x in case[1:])
        f(*args)
        f(*args)
        python = [(list(l[1]), bytes(l[6]).hex()) for l in f.prepare(*args)]
        native = [(list(g), bytes(p).hex()) for g, _, p in f._native.packed(*args)]
        print("launches", case, python == native, python, flush=True)
    print("native", *f._native.stats, flush=True)
try:
    fns[1](dyn(4), cutlass.Int32(1), cutlass.Int32(4))  # the trip i = 2 divides by zero
except cutlass.DSLError as e:
    print("error", str(e).splitlines()[0], flush=True)
"""


def test_host_loops_are_stored_in_the_jit_cache_and_run_from_it_in_another_process(tmp_path):
    # A second process reads both functions from the cache (no tracing, no compilation) and makes the launches
    # the first one made, on the Python call and natively.
    import os

    import aot_helpers as aot

    if not aot.cc():
        pytest.skip("needs a C compiler for the stand-in driver")
    outs = []
    tests = os.path.dirname(os.path.abspath(HERE))
    for _ in range(2):
        out = aot.run_on_stand_in(tmp_path, "cached_loops.py", _CACHED_SCRIPT, [tests], WW_MOCK_QUIET="1",
                                  WARPWEAVE_CACHE_DIR=str(tmp_path / "cache"), WARPWEAVE_DISABLE_CACHE=None)
        outs.append([line.split(" ", 1) for line in out.splitlines()
                     if line.split(" ", 1)[0] in ("cache", "launches", "native", "error")])
    first, second = outs
    assert [x for k, x in first if k == "cache"] == ["miss stored"] * 2
    assert [x for k, x in second if k == "cache"] == ["function None"] * 2  # read back: nothing traced
    assert [x for k, x in first if k != "cache"] == [x for k, x in second if k != "cache"]
    launches = [x for k, x in second if k == "launches"]
    assert len(launches) == 9 and all(" True [" in x for x in launches)
    assert sum(x.count("], '") for x in launches) > 9  # several trips launched
    assert [x for k, x in second if k == "native"] == ["11 0", "5 0"]  # all but the first call: natively
    (error,) = [x for k, x in second if k == "error"]  # the trip's division refused at the user's line
    assert "by zero" in error and f"test_host_loop_native.py:{line_in(HERE, 'grid=(100 // (i - 2)')}" in error


@cute.jit
def invariant_values(c: cute.Tensor, n: cutlass.Int32, rounds: cutlass.Int32):
    # In the inner loop: x is the same at each of its trips (computed at its first), but not at each outer trip;
    # y is the same everywhere; z changes at each trip. The while loop's w is the same at each of its trips.
    m = cute.size(c, mode=[0])
    for r in range(rounds):
        for i in range(0, m, 2):
            x = r * 10 + n
            y = n * 3 // (n + 1)
            z = x + i
            mark(c, z).launch(grid=(x + y + 1, 1, 1), block=(32, 1, 1))
    v = n
    while v > 1:
        w = m + rounds
        v = v // 2
        mark(c, w).launch(grid=(v + w, 1, 1), block=(32, 1, 1))


def test_values_every_trip_computes_alike_are_computed_once_a_run_of_the_loop(stand_in):
    from warpweave._dsl.call.native_code import split_invariant

    with target("sm_80"):
        c = stand_in(cute.compile(invariant_values, dyn(np.zeros(4, np.float32)), cutlass.Int32(2),
                                  cutlass.Int32(2)))
    for k, (m, n, rounds) in enumerate([(4, 2, 2), (5, 7, 3), (0, 1, 2), (3, 0, 1), (9, 40, 0), (1, -1, 0)]):
        args = (dyn(np.zeros(m, np.float32)), cutlass.Int32(n), cutlass.Int32(rounds))
        stand_in.launched.clear()
        c(*args)
        assert {path for *_, path in stand_in.launched} <= {"python" if k == 0 else "native"}
        _same_launches(c, args)
    # n + 1 == 0 with a trip to run: the Python call raises at the first trip, the native path leaves it to it
    with pytest.raises(DSLError, match="by zero"):
        c(dyn(np.zeros(2, np.float32)), cutlass.Int32(-1), cutlass.Int32(1))
    assert c._native.packed(dyn(np.zeros(2, np.float32)), cutlass.Int32(-1), cutlass.Int32(1)) is None
    # a value reading only what the loop leaves alone goes first, in order; one reading the loop's variable,
    # a value that does, or what an inner loop writes, stays in the trips
    loops = [([], False, [], [], [], 7, [(8, 9, [], [])], [(10, [("sym", 7)], [], False)])]
    body = [(1, [("sym", 0)], [], False), (2, [("sym", 5)], [], False), (3, [("sym", 2), ("sym", 1)], [], False),
            ("loop", 0), (4, [("sym", 10)], [], False), (5, [("sym", 1)], [3], False)]
    first, rest = split_invariant(body, loops, {5})
    assert first == [body[0]] and rest == body[1:]
