"""The native fast path computes the host programs that make a fast divisor (cute.fast_divmod_create_divisor of a
run-time extent: its shift from the divisor's leading zeros, its multiplier from shifts), as the persistent GEMMs'
tile schedulers make theirs at each call. Before, the native path had no shifts and no bit counts, so every call of
CuTe DSL's dense_gemm_persistent and dense_gemm_fp8_gelu_persistent went the Python way (85 and 140 us a call on a
shared 2-core host, against 0.5 us natively for dense_gemm, whose host code makes no divisor).

Checked: shifts and bit counts evaluate natively as the host program's Python does (random programs, both ways);
a call making a divisor from a run-time extent launches natively with the very parameters the Python call packs."""
import random
from types import SimpleNamespace

import numpy as np

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import _core
from warpweave._dsl.base.errors import DSLError
from warpweave._dsl.call import native_call
from warpweave._dsl.host import host_program
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import target
from host_stand_in import stand_in  # noqa: F401 (a fixture)

_BITS = ["ctlz", "cttz", "popc"]
_OPS = ["add", "sub", "mul", "floordiv", "shl", "shl", "shr", "and", "or", "xor", "min", "lt"]


def _program(rng, depth):
    if depth == 0 or rng.random() < 0.2:
        if rng.random() < 0.5:
            return [("sym", rng.randrange(3))]
        return [("const", rng.choice([0, 1, -1, 5, 31, 32, 63, 64, 65, -64, 1 << 31, -(1 << 40),
                                      rng.randrange(-3000, 3000)]))]
    r = rng.random()
    if r < 0.25:
        return _program(rng, depth - 1) + [(rng.choice(_BITS), rng.choice([1, 8, 16, 32, 63, 64]))]
    if r < 0.35:
        return _program(rng, depth - 1) + [("cast", rng.choice(["i32", "u32", "i64", "u8"]))]
    op = rng.choice(_OPS)
    # a shift converted next (as a fast divisor's packing is): the native path may then drop what leaves 64 bits
    cast = [("cast", rng.choice(["i64", "u64", "i32"]))] if op == "shl" and rng.random() < 0.5 else []
    return _program(rng, depth - 1) + _program(rng, depth - 1) + [(op, 0)] + cast


def _native_form(code):
    """The program as the native path is given it (native_call's translation and shortening)."""
    return native_call._native_code(code, SimpleNamespace(syms={0: 0, 1: 1, 2: 2}, objs={}, ranges={}))


def test_shifts_and_bit_counts_evaluate_natively_as_in_python():
    rng = random.Random(20261207)
    checked = {op: 0 for op in _BITS + ["shl", "shlw", "shr"]}
    for _ in range(4000):
        code = _program(rng, 4)
        syms = [rng.choice([0, 1, -1, 7, 33, 4096, -(1 << 20), rng.randrange(-(1 << 34), 1 << 34)]) for _ in range(3)]
        try:
            want = host_program.run_code(code, (), dict(enumerate(syms)))
        except DSLError:
            want = None
        if want is not None and not -(1 << 63) <= int(want) < (1 << 63):
            want = None
        native = _native_form(code)
        for got in (_core.fast_call_eval(native, syms), _core.fast_call_eval_host(native, syms, [], False)):
            if got is None:
                continue  # the call goes the Python way (a division by zero, a value beyond 64 bits)
            assert want is not None and got == int(want), (code, native, syms)
            for op, _ in native:
                if op in checked:
                    checked[op] += 1
    assert all(n > 300 for n in checked.values()), checked


@cute.kernel
def _divide(fdd: cute.FastDivmodDivisor, x: cutlass.Int32, out: cute.Tensor):
    q, r = divmod(x, fdd)
    out[0] = q
    out[1] = r


@cute.jit
def _host_made(a: cute.Tensor, x: cutlass.Int32, out: cute.Tensor):
    # as a persistent tile scheduler's: a divisor of a run-time extent, made on the host at each call
    _divide(cute.fast_divmod_create_divisor(a.shape[0]), x, out).launch(grid=[1, 1, 1], block=[32, 1, 1])


def test_a_divisor_made_from_a_runtime_extent_launches_natively(stand_in):  # noqa: F811 (the fixture)
    def extent(n):
        return from_dlpack(np.zeros(n, np.float32)).mark_layout_dynamic()
    out = from_dlpack(np.zeros(2, np.int32))
    with target("sm_90a"):
        c = stand_in(cute.compile(_host_made, extent(7), 100, out))
    c(extent(7), 100, out)  # the first call builds the native path
    native = c._native
    assert c.host_program and native is not None  # the native path takes the divisor's set-up
    extents = [1, 2, 3, 7, 100, 641, 4096, (1 << 20) + 1]
    packed = []
    for n in extents:
        both = []
        for way in ("python", "native"):
            c._native = native if way == "native" else None
            stand_in.launched.clear()
            c(extent(n), 100, out)
            ((_, _, params, took),) = stand_in.launched
            assert took == way, (n, took)
            both.append(bytes(params))
        assert both[0] == both[1], n  # the same parameters either way
        packed.append(both[0])
    assert len(set(packed)) == len(extents)  # a divisor of each extent
    assert native.stats[0] >= len(extents)
