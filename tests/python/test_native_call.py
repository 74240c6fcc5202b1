"""The native fast path of a compiled call (_core.FastCall, _dsl/call/native_call.py), without a GPU.

A compiled call tries the native path first: one C++ call reads the arguments, evaluates the grids, packs the
parameters and launches; whatever it does not accept goes to the Python call. Properties checked here:
- over random shapes, strides and addresses, of from_dlpack views and of torch tensors passed directly (stand-ins
  read through attributes here; real CPU torch tensors, read through torch's DLPack exchange table, in a
  subprocess with a Python that has torch), a call launches exactly what the general path (prepare) computes for
  the same arguments: grid, stream and parameter bytes;
- torch tensors take the native path once the Python call has accepted their specialisation key, and a tensor
  whose specialisation differs is still refused with the general path's message;
- mismatching arguments (other types, values out of their field's range, a different compile-time value, an
  empty grid, keywords) fall back and give the Python call's results and errors;
- grid programs evaluate as Python evaluates the expressions _core.python_expr writes;
- a call enters through the vectorcall slot of JitCompiledFunction's C base, whose `_native` field takes only a
  FastCall or None.
The launches are recorded by a stand-in of _core.Launcher (the native path calls it as it would the real one).
"""
import os
import random
import subprocess
import sys
import warnings

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import _core
from warpweave._dsl.call import native_call
from warpweave._dsl.values.runtime import runtime_view
from warpweave._dsl.values.runtime import RuntimeTensor
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu, target
from test_export import axpy, axpy_cluster
from test_gpu_kernels import scale_on_stream
from test_torch_call_key import Tensor  # a torch.Tensor stand-in: attributes only, no DLPack exchange table
from torch_interpreter import torch_python

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "frontend_python", "examples"))
import elementwise_add as ew  # noqa: E402


F16 = "torch.float16"


class Stream:
    def __init__(self, handle):
        self.cuda_stream = handle


@pytest.fixture
def recorded(monkeypatch):
    """Launches recorded as (grid, stream, parameter bytes); the compiled function made ready for fast calls."""
    launched = []

    class Launcher:
        def __init__(self, fn, block, cluster, smem, offsets):
            pass

        def __call__(self, gx, gy, gz, stream, params):
            launched.append(((gx, gy, gz), stream, params))

    class Function:
        def set_max_dynamic_shared_memory(self, n):
            pass

    def launch(f, grid, block, cluster, smem, stream, params, offsets, *options):  # the general path's
        launched.append((tuple(grid), stream, params))

    monkeypatch.setattr(_core, "Launcher", Launcher)
    monkeypatch.setattr(_core, "launch", launch)

    def ready(compiled):
        # (these tests hold the paths' checks to each other: a call whose tensors divide less than the compiled
        # ones is refused here instead of compiled for, test_runtime_tensor_marks.py)
        compiled.compile_again = None
        monkeypatch.setattr(compiled, "_load", lambda: None)
        compiled._functions = {l.kernel: Function() for l in compiled.launches}
        compiled._fast = compiled._build_fast_call()
        assert callable(compiled._fast), compiled._fast_source
        assert isinstance(compiled._native, _core.FastCall)
        return compiled

    return launched, ready


def general(compiled, *args, **kwargs):
    """What the general path launches for these arguments: [(grid, stream, parameter bytes)]."""
    return [(tuple(w[1]), w[5], w[6]) for w in compiled.prepare(*args, **kwargs)]


def view(ptr, shape, strides, dtype=cutlass.Float16):
    return RuntimeTensor(None, ptr, shape, strides, dtype, "cuda").mark_layout_dynamic()


def compiled_add(recorded, *args):
    _, ready = recorded
    with target("sm_80"):
        return ready(cute.compile(ew.elementwise_add, *args))


def test_views_launch_as_the_general_path(recorded):
    launched, _ = recorded
    compiled = compiled_add(recorded, *[view(1 << 40, (64, 96), (96, 1))] * 3)
    rng = random.Random(11)
    native = fallen = 0
    for _ in range(300):
        bad = rng.random() < 0.3   # some argument breaks the specialisation (most often)
        m, n = rng.randint(1, 5000), 16 * rng.randint(1, 400)
        rows = [n + rng.choice([0, 16, 32, 1 << 20]) for _ in range(3)]
        ptrs = [rng.choice([1 << 40, (1 << 47) + 4096, 256 * rng.randint(1, 1 << 30)]) +
                rng.choice([0, 16, 32, 48]) for _ in range(3)]
        if bad:
            k = rng.randrange(3)
            rows[k] += rng.choice([3, 8, 1])
            ptrs[rng.randrange(3)] += rng.choice([0, 2, 8])
        vs = [view(p, (m, n), (r, 1)) for p, r in zip(ptrs, rows)]
        try:
            want, err = general(compiled, *vs), None
        except ValueError as e:
            want, err = None, str(e)
        packed = compiled._native.packed(*vs)
        before = compiled._native.stats
        launched.clear()
        if err is None:
            compiled(*vs)
            assert launched == want
            assert packed == want   # taken natively, byte for byte
            native += 1
            assert compiled._native.stats == (before[0] + 1, before[1])
        else:
            with pytest.raises(ValueError) as info:
                compiled(*vs)
            assert str(info.value) == err and launched == []
            assert packed is None and compiled._native.stats == (before[0], before[1] + 1)
            fallen += 1
    assert native > 100 and fallen > 20   # the sample covered both


def test_torch_stand_ins_take_the_native_path_once_their_key_is_accepted(recorded):
    launched, _ = recorded
    a = Tensor(F16, 1 << 40, (64, 96), (96, 1))
    compiled = compiled_add(recorded, a, a, a)
    rng = random.Random(3)
    for _ in range(200):
        m, n = rng.randint(1, 3000), rng.choice([16 * rng.randint(1, 40), rng.randint(1, 700)])
        ts = [Tensor(F16, (1 << 40) + 4096 * k + rng.choice([0, 0, 16, 2]), (m, n),
                     (n + rng.choice([0, 16, 48, 1]), 1)) for k in range(3)]
        try:
            want, err = general(compiled, *[runtime_view(t) for t in ts]), None
        except ValueError as e:
            want, err = None, str(e)
        for attempt in range(2):
            stats = compiled._native.stats
            launched.clear()
            if err is None:
                compiled(*ts)
                assert launched == want
                if attempt == 1:  # the key was learned from the first call's Python check
                    assert compiled._native.stats == (stats[0] + 1, stats[1])
                    assert compiled._native.packed(*ts) == want
            else:
                with pytest.raises(ValueError, match="does not match the compiled specialisation") as info:
                    compiled(*ts)
                assert str(info.value) == err and launched == []
                assert compiled._native.stats == (stats[0], stats[1] + 1)   # never learned


def test_keys_are_per_argument_and_as_fine_as_the_python_ones(recorded):
    # A key accepted for one argument says nothing of another; the dtype is part of it (by identity).
    launched, _ = recorded
    a = Tensor(F16, 1 << 40, (64, 96), (96, 1))
    compiled = compiled_add(recorded, a, a, a)
    good = [Tensor(F16, (1 << 40) + 4096 * k, (32, 64), (64, 1)) for k in range(3)]
    compiled(*good)
    compiled(*good)
    assert compiled._native.stats[0] >= 1
    odd = Tensor(F16, 1 << 40, (32, 65), (65, 1))         # row stride not a multiple of 16 elements
    with pytest.raises(ValueError, match="does not match the compiled specialisation"):
        compiled(good[0], good[1], odd)
    with pytest.raises(ValueError, match="does not match"):
        compiled(good[0], good[1], Tensor("torch.float32", (1 << 40) + 8192, (32, 64), (64, 1)))
    misaligned = Tensor(F16, (1 << 40) + 2, (32, 64), (64, 1))
    with pytest.raises(ValueError, match="does not match"):
        compiled(misaligned, good[1], good[2])
    launched.clear()
    compiled(*good)
    assert launched == general(compiled, *[runtime_view(t) for t in good])


def test_scalars_ints_and_streams(recorded):
    launched, ready = recorded
    x, y = view(1 << 40, (4096,), (1,), cutlass.Float32), view((1 << 40) + 65536, (4096,), (1,), cutlass.Float32)
    with target("sm_80"):
        compiled = ready(cute.compile(axpy, x, y, 4096, 2.0, Stream(5)))
    with target("sm_90a"):
        clustered = ready(cute.compile(axpy_cluster, x, y, 4096, 2.0, Stream(5)))
    rng = random.Random(9)
    for c in (compiled, clustered):
        for _ in range(100):
            n = rng.randint(1, 1 << 24)
            alpha = rng.choice([rng.uniform(-1e30, 1e30), 0.0, -0.0, 1.5, 3, True, float("inf"),
                                cutlass.Float32(rng.uniform(-8, 8)), cutlass.Int32(rng.randint(-99, 99))])
            if rng.random() < 0.2:
                n = cutlass.Int32(n)
            stream = rng.choice([None, 0, 7, Stream(rng.randint(0, 1 << 48)), rng.randint(1, 1 << 63),
                                 np.uint64(rng.randint(0, 1 << 63))])   # a type read by int(), as CUstream
            args = (x, y, n, alpha, stream)
            want = general(c, *args)
            assert c._native.packed(*args) == want, args
            launched.clear()
            c(*args)
            assert launched == want
    # Taken the Python way, with its results and errors: a float where an integer goes, a stream object with
    # another attribute, keywords, a value too large for its field.
    class Handle:
        def __init__(self, h):
            self.handle = h

    stats = compiled._native.stats
    for args, kw in [((x, y, cutlass.Float32(100.0), 2.0, None), {}), ((x, y, 100, 2.0), {"stream": 3}),
                     ((x, y, 100, 2.0, Handle(3)), {})]:
        if not kw:
            assert compiled._native.packed(*args) is None
        launched.clear()
        compiled(*args, **kw)
        assert launched == general(compiled, *args, **kw)
    assert compiled._native.stats[0] == stats[0]
    with pytest.raises(Exception) as info:
        compiled(x, y, 1 << 40, 2.0, None)     # an Int32 out of range: the Python call's error
    assert compiled._native.packed(x, y, 1 << 40, 2.0, None) is None
    with pytest.raises(type(info.value)):
        compiled._fast(x, y, 1 << 40, 2.0, None)
    with pytest.raises(Exception) as info:
        compiled(x, y, 100, 1e300, None)       # too large for a float32: the Python call's error
    assert "float" in str(info.value)
    with pytest.raises(TypeError, match="CUDA stream"):
        compiled(x, y, 100, 2.0, object())
    with pytest.raises(TypeError, match="must be a tensor"):
        compiled(x, np.zeros(4096, np.float32), 100, 2.0, None)


def test_empty_grids_and_argument_counts_go_the_python_way(recorded):
    launched, _ = recorded
    compiled = compiled_add(recorded, *[view(1 << 40, (64, 96), (96, 1))] * 3)
    empty = [view((1 << 40) + 4096 * k, (0, 96), (96, 1)) for k in range(3)]
    assert compiled._native.packed(*empty) is None
    launched.clear()
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        compiled(*empty)
    assert launched == []
    vs = [view((1 << 40) + 4096 * k, (64, 96), (96, 1)) for k in range(3)]
    with pytest.raises(TypeError):
        compiled(*vs[:2])
    with pytest.raises(TypeError):
        compiled(*vs, 128, 5)
    launched.clear()
    compiled(*vs, 128)   # the Constexpr passed as compiled
    compiled(*vs)        # left out
    compiled(vs[0], vs[1], mC=vs[2])
    assert launched == general(compiled, *vs) * 3
    with pytest.raises(ValueError, match="compile-time constant"):
        compiled(*vs, 64)
    assert compiled.__call__.__self__ is compiled    # binds like a method
    launched.clear()
    compiled.__call__(*vs)
    type(compiled).__call__(compiled, *vs)
    assert launched == general(compiled, *vs) * 2


@cute.jit
def add_with_layout(mA, mB, mC, tile: cute.Tile, copy_bits: cutlass.Constexpr = 128):  # a tile: compiled in
    ew.elementwise_add(mA, mB, mC, copy_bits)


def test_a_compile_time_argument_is_checked_when_a_constexpr_is_left_out(recorded):
    # The entry of calls that leave the Constexpr out sets only that one: a different value of another
    # compile-time argument is still refused (in the native and in the Python fast path).
    launched, ready = recorded
    vs = [view((1 << 40) + 4096 * k, (64, 96), (96, 1)) for k in range(3)]
    tile = (4, 8)
    with target("sm_80"):
        compiled = ready(cute.compile(add_with_layout, *vs, tile))
    launched.clear()
    compiled(*vs, tile)
    compiled(*vs, tuple([4, 8]))       # equal, another object: the Python call compares by value
    assert launched == general(compiled, *vs, tile) * 2
    for call in (compiled, compiled._fast_omitting):
        with pytest.raises(ValueError, match="compile-time constant"):
            call(*vs, (8, 8))


def test_grid_programs_evaluate_as_python():
    rng = random.Random(1)

    def expr(depth):
        if depth == 0 or rng.random() < 0.2:
            return rng.choice([f"s{rng.randint(0, 3)}", f"({rng.randint(-300, 300)})"])
        op = rng.choice([" + ", " - ", "*", " // ", " % ", " ^ ", "min", "max", "neg"])
        a, b = expr(depth - 1), expr(depth - 1)
        if op in ("min", "max"):
            return f"{op}({a}, {b})"
        if op == "neg":
            return f"(-{a})"
        return f"({a}{op}{b})"

    checked = 0
    for _ in range(3000):
        src = expr(rng.randint(1, 6))
        slots = {k: k for k in range(4)}
        prog = native_call.grid_program(src, slots)
        assert prog is not None, src
        vals = [rng.choice([0, 1, -1, 7, -13, 1 << 20, rng.randint(-(1 << 62), 1 << 62)]) for _ in range(4)]
        try:
            want = eval(src, {"__builtins__": {}, "min": min, "max": max}, {f"s{k}": v for k, v in enumerate(vals)})
        except ZeroDivisionError:
            want = None
        got = _core.fast_call_eval(prog, vals)
        if want is not None and -(1 << 63) <= want < (1 << 63):
            # in range at the end: equal, unless an intermediate left 64 bits (then the Python way: None)
            assert got == want or got is None, (src, vals, got, want)
            checked += got is not None
        else:
            assert got is None, (src, vals, got, want)
    assert checked > 1500
    # What _core.python_expr writes for real launches parses; anything else is left to the Python fast path.
    assert native_call.grid_program("((1)*(((1)*s7 + (15)) // (16)))", {7: 0}) is not None
    for src in ("s1.bit_length()", "s1 / 2", "s1 if s2 else 3", "abs(s1)", "s9"):
        assert native_call.grid_program(src, {1: 0, 2: 1}) is None


def test_views_and_torch_stand_ins_mixed_and_a_new_view_object_each_call(recorded):
    launched, _ = recorded
    a = Tensor(F16, 1 << 40, (64, 96), (96, 1))
    compiled = compiled_add(recorded, a, a, a)
    t = Tensor(F16, 1 << 41, (128, 256), (256, 1))
    for _ in range(3):
        vs = [from_dlpack(np.zeros((128, 256), np.float16)).mark_layout_dynamic() for _ in range(2)]
        launched.clear()
        compiled(vs[0], t, vs[1])
        assert launched == general(compiled, vs[0], runtime_view(t), vs[1])
    assert compiled._native.stats[0] >= 1


_TORCH_SCRIPT = r"""
import json, random, sys, warnings
root = sys.argv[1]
sys.path[:0] = [root + "/frontend_python", root + "/tests/python", root + "/frontend_python/examples"]
import torch
import warpweave.cute as cute
from warpweave import _core
from warpweave._dsl.values.runtime import runtime_view
from dsl_helpers import target
import elementwise_add as ew

launched = []
class Launcher:
    def __init__(self, *a): pass
    def __call__(self, gx, gy, gz, stream, params): launched.append(((gx, gy, gz), stream, params))
class Function:
    def set_max_dynamic_shared_memory(self, n): pass
_core.Launcher = Launcher
base = torch.zeros(1 << 22, dtype=torch.float16)
a = base.as_strided((64, 96), (96, 1), 0)
with target("sm_80"):
    compiled = cute.compile(ew.elementwise_add, a, a, a)
compiled.compile_again = None   # refused, not compiled for: the paths' checks are compared
compiled._load = lambda: None
compiled._functions = {l.kernel: Function() for l in compiled.launches}
compiled._fast = compiled._build_fast_call()
rng = random.Random(int(sys.argv[2]))
out = {"same": 0, "errors": 0, "empty": 0}
for i in range(400):
    good = rng.random() < 0.6   # a specialisation the kernel takes, else (mostly) one it refuses
    m = rng.choice([0, 1, rng.randint(1, 300), rng.randint(1, 300)])
    n = 16 * rng.randint(1, 30) if good else rng.choice([1, 16 * rng.randint(1, 30), rng.randint(1, 400)])
    ts = []
    for k in range(3):
        if good:
            row, col, off = rng.choice([n, n + 16, n + 64]), 1, 8 * rng.randint(0, 4000)
        else:
            row = rng.choice([n, n + 16, n + 3, 1, 7, 0])
            col = rng.choice([1, 1, 1, 2, row or 1])
            off = rng.choice([0, 8, 16, 3, 64 * rng.randint(0, 1000)])
        ts.append(base.as_strided((m, n), (row, col), off))
    if rng.random() < 0.1:
        ts[2] = ts[2].to(torch.float32)
    try:
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            want = [(tuple(w[1]), w[5], w[6]) for w in compiled.prepare(*[runtime_view(t) for t in ts])]
        err = None
    except Exception as e:
        want, err = None, f"{type(e).__name__}: {e}"
    for attempt in range(2):
        launched.clear()
        try:
            with warnings.catch_warnings(record=True):
                warnings.simplefilter("always")
                compiled(*ts)
            got = None
        except Exception as e:
            got = f"{type(e).__name__}: {e}"
        if err is not None:
            assert got == err, (got, err)
        else:
            assert got is None, got
            assert launched == want, (m, n, [t.stride() for t in ts])
    out["errors" if err else "empty" if not want else "same"] += 1
out["stats"] = compiled._native.stats
out["dlpack"] = [(t.__module__ + "." + t.__name__, dl) for t, dl in _core.fast_call_torch_types()]
print(json.dumps(out))
"""


def test_real_torch_tensors_through_dlpack_launch_as_the_general_path():
    py = torch_python()
    p = subprocess.run([py, "-c", _TORCH_SCRIPT, ROOT, "4"], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-4000:]
    import json

    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["same"] > 50 and r["errors"] > 50, r
    assert r["stats"][0] > 40, r      # second calls of accepted keys went natively
    has_exchange = subprocess.run([py, "-c", "import torch, sys; sys.exit(not hasattr(torch.Tensor, "
                                   "'__dlpack_c_exchange_api__'))"]).returncode == 0
    assert r["dlpack"] == [["torch.Tensor", has_exchange]], r


def test_a_view_changed_after_a_call_is_read_again(recorded):
    # The native path keeps what it last read from each view; any change of a view's fields is seen.
    launched, _ = recorded
    compiled = compiled_add(recorded, *[view(1 << 40, (64, 96), (96, 1))] * 3)
    vs = [view((1 << 40) + (1 << 24) * k, (64, 96), (96, 1)) for k in range(3)]
    compiled(*vs)   # no _spec yet: the native path computes it
    for change in [lambda v: setattr(v, "data_ptr", v.data_ptr + 4096), lambda v: setattr(v, "_shape", (32, 160)),
                   lambda v: setattr(v, "_strides", (192, 1)), lambda v: v.__dict__.update(data_ptr=1 << 44),
                   lambda v: setattr(v, "_spec", None), lambda v: setattr(v, "data_ptr", v.data_ptr + 2)]:
        change(vs[1])
        launched.clear()
        try:
            want, err = general(compiled, *vs), None
        except ValueError as e:
            want, err = None, str(e)
        if err is None:
            compiled(*vs)
            assert launched == want
            compiled(*vs)
            assert launched == want * 2
        else:   # an address no longer 16-byte aligned: refused
            with pytest.raises(ValueError, match="does not match"):
                compiled(*vs)
    stats = compiled._native.stats
    vs[1].data_ptr -= 2
    for _ in range(3):
        compiled(*vs)
    assert compiled._native.stats[0] == stats[0] + 3


def test_views_made_and_dropped_each_call(recorded):
    # Views die between calls and new ones may take their addresses: each call reads its own.
    launched, _ = recorded
    compiled = compiled_add(recorded, *[view(1 << 40, (64, 96), (96, 1))] * 3)
    rng = random.Random(2)
    for i in range(300):
        m, n = rng.randint(1, 999), 16 * rng.randint(1, 99)
        ptrs = [(1 << 40) + (1 << 30) * k + 16 * rng.randint(0, 1 << 20) for k in range(3)]
        launched.clear()
        compiled(*[view(p, (m, n), (n, 1)) for p in ptrs])
        assert launched == general(compiled, *[view(p, (m, n), (n, 1)) for p in ptrs]), i


_MOCK_SCRIPT = r"""
import sys
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/../../frontend_python/examples"]
import warpweave.cute as cute
import elementwise_add as ew
from test_native_call import view
from dsl_helpers import target
shapes = [(64, 96), (64, 96), (100, 48), (3, 16), (64, 96)]
with target("sm_90a"):
    compiled = cute.compile(ew.elementwise_add, *[view(1 << 40, (64, 96), (96, 1))] * 3)
for m, n in shapes:
    compiled(*[view((1 << 40) + (1 << 24) * k, (m, n), (n, 1)) for k in range(3)])
print("stats", *compiled._native.stats)
"""


def test_the_real_launcher_through_a_stand_in_driver(tmp_path):
    # The native path with warpweave's own Launcher (cuLaunchKernel) against the stand-in driver of
    # data/mock_libcuda.c, which prints each launch: what it prints is the general path's launch plan.
    import struct

    import aot_helpers as aot

    mock = aot.build_mock_driver(str(tmp_path))
    with target("sm_90a"):
        plain = cute.compile(ew.elementwise_add, *[view(1 << 40, (64, 96), (96, 1))] * 3)
    sizes = ",".join(str(struct.calcsize("=" + p.fmt)) for p in plain.launches[0].params)
    env = dict(os.environ, WARPWEAVE_LIBCUDA=os.path.join(mock, "libcuda.so.1"), WW_MOCK_PARAM_SIZES=sizes)
    p = subprocess.run([sys.executable, "-c", _MOCK_SCRIPT, HERE], capture_output=True, text=True, env=env,
                       timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    out = aot.parse_mock_output(p.stdout + "\nrc call 0\n")
    shapes = [(64, 96), (64, 96), (100, 48), (3, 16), (64, 96)]
    want = []
    for m, n in shapes:
        want += aot.python_launches(plain, *[view((1 << 40) + (1 << 24) * k, (m, n), (n, 1)) for k in range(3)])
    assert [{k: v for k, v in l.items() if k != "attrs"} for l in out["calls"][0][2]] == want
    assert "stats 4 0" in p.stdout   # the first call went the general way, the others natively


def test_a_jit_method_takes_the_native_path_with_its_object(recorded):
    # sgemm's SGemm.__call__ is a @cute.jit method: the object is the first argument, compiled in.
    import sgemm

    launched, ready = recorded

    def mat(ptr, rows, cols):   # K-major (mode 1 contiguous), as sgemm's run() marks it
        return (RuntimeTensor(None, ptr, (rows, cols), (cols, 1), cutlass.Float32, "cuda", 16)
                .mark_layout_dynamic(leading_dim=1).mark_compact_shape_dynamic(mode=1, divisibility=4))

    gemm = sgemm.SGemm((128, 128, 8), 3)
    with target("sm_80"):
        compiled = ready(cute.compile(gemm, mat(1 << 40, 260, 68), mat(1 << 41, 260, 68), mat(1 << 42, 260, 260)))
    assert compiled.bound_self == (gemm,)
    rng = random.Random(8)
    for _ in range(20):
        m, n, k = (4 * rng.randint(1, 300) for _ in range(3))
        args = (mat(1 << 40, m, k), mat(1 << 41, n, k), mat(1 << 42, m, n))
        want = general(compiled, *args)
        assert compiled._native.packed(*args) == want
        launched.clear()
        compiled(*args)
        assert launched == want
    assert compiled._native.stats[0] == 20


@cute.kernel
def _fill_kernel(p: cute.Pointer, n: cutlass.Int32):
    t = cute.make_tensor(p, cute.make_layout(128))
    tidx, _, _ = cute.arch.thread_idx()
    if tidx < n:
        t[tidx] = 1.0


@cute.jit
def _fill(p: cute.Pointer, n: cutlass.Int32, stream):
    _fill_kernel(p, n).launch(grid=[(n + 127) // 128, 1, 1], block=[128, 1, 1], stream=stream)


def test_pointer_arguments(recorded):
    from warpweave.cute.runtime import make_ptr

    launched, ready = recorded
    with target("sm_80"):
        compiled = ready(cute.compile(_fill, make_ptr(cutlass.Float32, 1 << 40, cute.AddressSpace.gmem, 16), 100,
                                      Stream(3)))
    rng = random.Random(4)
    for _ in range(50):
        args = (make_ptr(cutlass.Float32, 16 * rng.randint(0, 1 << 40), cute.AddressSpace.gmem, 16),
                rng.randint(1, 1 << 20), rng.choice([None, 5]))
        want = general(compiled, *args)
        assert compiled._native.packed(*args) == want
        launched.clear()
        compiled(*args)
        assert launched == want
    # Another alignment, element type or memory space: the Python call's check and error.
    for p in (make_ptr(cutlass.Float32, 1 << 40, cute.AddressSpace.gmem, 8),
              make_ptr(cutlass.Int32, 1 << 40, cute.AddressSpace.gmem, 16),
              make_ptr(cutlass.Float32, 1 << 40, cute.AddressSpace.generic, 16)):
        assert compiled._native.packed(p, 10, None) is None
        with pytest.raises(ValueError, match="must be a pointer like the one compiled for"):
            compiled(p, 10, None)
    with pytest.raises(ValueError, match="must be a pointer"):
        compiled(view(1 << 40, (128,), (1,), cutlass.Float32), 10, None)


@requires_gpu
def test_on_the_gpu_native_calls_compute_what_torch_does():
    import torch

    x = torch.zeros(64, 96, device="cuda", dtype=torch.float16)
    compiled = cute.compile(ew.elementwise_add, x, x, x)   # torch tensors passed directly
    for m, n in [(64, 96), (1, 16), (333, 160), (1024, 1024), (5, 4096), (64, 96)]:
        a, b = (torch.randn(m, n, device="cuda", dtype=torch.float16) for _ in range(2))
        for call in range(3):
            c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
            if call < 2:
                compiled(a, b, c)
            else:
                compiled(*[from_dlpack(t).mark_layout_dynamic() for t in (a, b, c)])
            torch.cuda.synchronize()
            torch.testing.assert_close(c, a + b, rtol=0, atol=0)
    assert compiled._native is not None and compiled._native.stats[0] >= 8, compiled._native.stats


def test_a_fake_tensor_is_refused_by_every_path(recorded):
    from warpweave.cute.runtime import make_fake_tensor

    launched, _ = recorded
    compiled = compiled_add(recorded, *[view(1 << 40, (64, 96), (96, 1))] * 3)
    real = [view((1 << 40) + 4096 * k, (64, 96), (96, 1)) for k in range(3)]
    fake = make_fake_tensor(cutlass.Float16, (64, 96), (96, 1)).mark_layout_dynamic()
    launched.clear()
    for call in (compiled, compiled._fast_omitting, compiled.prepare):
        with pytest.raises(ValueError, match="is a fake tensor"):
            call(real[0], fake, real[2])
    assert launched == []


# --- calls that leave out a Constexpr before the stream (CuTe DSL sgemm: compiled(a, b, c, stream)) -------------
# scale_on_stream(mA, mC, op: Constexpr = ..., stream=None), the function test_gpu_kernels runs on the GPU.

def test_calls_without_the_constexpr_read_the_stream_as_the_stream(recorded):
    # Native, and the Python fast path's omitting entry (its fallback), launch what the general path computes;
    # the stream is read as the stream, not as the left-out op.
    launched, ready = recorded
    n = 1 << 10
    a, c = (view((1 << 40) + 4096 * k, (n,), (1,), cutlass.Float32) for k in range(2))
    with target("sm_80"):
        compiled = ready(cute.compile(scale_on_stream, a, c, stream=Stream(7)))
    assert "def fast_call_omitting(a0, a1, a3)" in compiled._fast_source
    op = compiled._constexprs[2]                                        # the compiled-in value
    for n, handle in [(1 << 10, 11), (1 << 12, 12), (256, 0)]:
        a, c = (view((1 << 40) + 65536 * k, (n,), (1,), cutlass.Float32) for k in range(2))
        want = general(compiled, a, c, op, Stream(handle))
        for call in [lambda: compiled(a, c, Stream(handle)),                   # the Constexpr left out
                     lambda: compiled._fast_omitting(a, c, Stream(handle)),    # the Python entry for that
                     lambda: compiled(a, c, op, Stream(handle))]:              # passed as compiled
            launched.clear()
            call()
            assert launched == want and launched[0][1] == handle
    with pytest.raises(ValueError, match="compile-time constant"):
        compiled(a, c, lambda x: x + 1.0, Stream(3))                        # another Constexpr value: refused


def test_the_call_enters_through_the_c_base_and_its_native_field(recorded):
    # A call of a compiled function goes through the vectorcall slot of its C base (no __call__ of its own could
    # keep it: one would replace the slot); `_native` is a field of that base that takes a FastCall or None, and
    # without one (or with keywords) the call is the Python one, with the same launches. The base takes part in
    # garbage collection: a compiled function in a reference cycle is freed.
    import gc
    import weakref

    from warpweave._dsl.call.compiled_function import JitCompiledFunction

    launched, _ = recorded
    assert JitCompiledFunction.__flags__ & (1 << 11)   # Py_TPFLAGS_HAVE_VECTORCALL, inherited from the base
    assert "__call__" not in JitCompiledFunction.__dict__
    vs = [view((1 << 40) + 4096 * k, (64, 96), (96, 1)) for k in range(3)]
    compiled = compiled_add(recorded, *vs)
    want = general(compiled, *vs)
    native = compiled._native
    with pytest.raises(TypeError, match="FastCall or None"):
        compiled._native = object()
    assert compiled._native is native                  # a refused value leaves the field as it was
    for setting in (native, None):
        compiled._native = setting
        launched.clear()
        before = native.stats
        compiled(*vs)
        compiled(vs[0], vs[1], mC=vs[2])               # keywords: always the Python call
        assert launched == want * 2
        # the keyword call never reaches the FastCall: not even as a fallback
        assert native.stats == (before[0] + (setting is not None), before[1])
    compiled._native = native
    with pytest.raises(TypeError):
        compiled(*vs[:2])                              # the Python call's error, through the base
    with target("sm_80"):
        cyclic = cute.compile(ew.elementwise_add, *vs)   # not made ready: the fixture's patches hold that one
    cyclic.cycle = cyclic
    ref = weakref.ref(cyclic)
    del cyclic
    gc.collect()
    assert ref() is None
