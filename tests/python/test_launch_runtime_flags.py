"""launch(use_pdl=..., cooperative=...) given a Boolean argument of the jit function (CuTe DSL's `use_pdl: bool`
parameter of a host function): each call sets the launch attribute from the value it is given. The stand-in
driver (data/mock_libcuda.c) prints each launch with its attributes, for the Python call and for the exported C
wrapper; a Python bool keeps the attribute fixed when compiled."""
import os

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

import aot_helpers as aot
from dsl_helpers import fresh_compilations, line_in, requires_gpu, target

pytestmark = pytest.mark.usefixtures("fresh_compilations")

THIS = os.path.abspath(__file__)
PDL, COOPERATIVE = 6, 2  # CUlaunchAttributeID of programmatic stream serialization, of a cooperative launch

needs_cc = pytest.mark.skipif(not aot.cc(), reason="needs a C compiler for the stand-in driver")

HEADER = '''
import numpy as np
import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack


@cute.kernel
def k(a: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    a[tidx] = 1
'''

PROGRAM = HEADER + '''

@cute.jit
def host(a: cute.Tensor, pdl: bool, coop: cutlass.Boolean):
    k(a).launch(grid=[1, 1, 1], block=[32, 1, 1], use_pdl=pdl)
    k(a).launch(grid=[2, 1, 1], block=[32, 1, 1], cooperative=coop, use_pdl=True)


a = from_dlpack(np.zeros(32, np.int32))
c = cute.compile(host, a, True, False)
for pdl, coop in [(True, False), (False, True), (False, False), (True, True), (True, False)]:
    print("call", int(pdl), int(coop), flush=True)
    c(a, pdl, coop)
print("fast", bool(c._fast), c._native is not None, flush=True)
print("native", *c._native.stats, flush=True)
print("call", 0, 1, flush=True)
host(a, False, True)  # the jit function itself: compiled for the first call, then its cached compilation
print("call", 1, 0, flush=True)
host(a, True, False)
'''


def _calls(stdout):
    """[(pdl, coop, [attribute ids of each launch])] of the program's calls, in order."""
    out = []
    for line in stdout.splitlines():
        w = line.split()
        if w and w[0] == "call":
            out.append((bool(int(w[1])), bool(int(w[2])), []))
        elif w and w[0] == "launch":
            out[-1][2].append([])
        elif w and w[0] == "attr":
            out[-1][2][-1].append(int(w[1]))
    return out


@pytest.mark.stand_in_driver
@needs_cc
def test_a_boolean_argument_sets_the_attribute_at_each_python_call(tmp_path):
    for run in ("compiled", "read back from the cache"):
        out = aot.run_on_stand_in(tmp_path, "flags.py", PROGRAM, WARPWEAVE_CACHE_DIR=str(tmp_path / "cache"),
                                  WARPWEAVE_DISABLE_CACHE=None)
        calls = _calls(out)
        assert len(calls) == 7, run
        for pdl, coop, launches in calls:
            assert len(launches) == 2, run
            # the first launch: the attribute exactly where the call's value holds
            assert (PDL in launches[0]) == pdl and COOPERATIVE not in launches[0], run
            # the second: a fixed use_pdl=True on every call, cooperative as the call says
            assert PDL in launches[1] and (COOPERATIVE in launches[1]) == coop, run
        # the native path takes the calls after the first, reading the flags at each (the Python fast path,
        # which gives no attributes, is not built)
        assert "fast False True" in out, run
        native = [line.split()[1:] for line in out.splitlines() if line.startswith("native ")]
        assert native and int(native[0][0]) == 4 and int(native[0][1]) == 0, (run, native)


def test_a_python_bool_keeps_the_attribute_fixed():
    @cute.kernel
    def k(a: cute.Tensor):
        a[0] = 1

    def compiled(flag):
        @cute.jit
        def host(a: cute.Tensor):
            k(a).launch(grid=[1, 1, 1], block=[32, 1, 1], use_pdl=flag, cooperative=cutlass.Boolean(flag))

        with target("sm_90a"):
            return cute.compile(host, from_dlpack(np.zeros(32, np.int32)))

    (on,), (off,) = compiled(True).launches, compiled(False).launches
    assert on.pdl is True and on.cooperative is True and getattr(on, "pdl_symbol", None) is None
    assert off.pdl is False and off.cooperative is False and getattr(off, "cooperative_symbol", None) is None


@cute.kernel
def k_any(a: cute.Tensor):
    a[0] = 1


@cute.jit
def pdl_by_integer(a: cute.Tensor, n: cutlass.Int32):
    k_any(a).launch(grid=[1, 1, 1], block=[32, 1, 1], use_pdl=n)  # not a Boolean


@cute.jit
def cooperative_by_text(a: cute.Tensor):
    k_any(a).launch(grid=[1, 1, 1], block=[32, 1, 1], cooperative="yes")  # not a Boolean


@pytest.mark.parametrize("fn,args,marker,text", [
    (pdl_by_integer, (cutlass.Int32(1),), "use_pdl=n)  # not a Boolean", "launch(use_pdl=...) is True, False or a "
                                                                         "Boolean, got Int32"),
    (cooperative_by_text, (), 'cooperative="yes")  # not a Boolean', "launch(cooperative=...) is True, False"),
])
def test_other_values_are_refused_at_the_launch_line(fn, args, marker, text):
    with target("sm_90a"), pytest.raises(TypeError, match=text.replace("(", r"\(").replace(")", r"\)")
                                         .replace(".", r"\.")) as info:
        cute.compile(fn, from_dlpack(np.zeros(32, np.int32)), *args)
    assert isinstance(info.value, cutlass.DSLError)
    assert info.value.location == (THIS, line_in(THIS, marker))


@cute.jit
def exported(a: cute.Tensor, pdl: cutlass.Boolean):
    k_any(a).launch(grid=[1, 1, 1], block=[32, 1, 1], use_pdl=pdl)


@pytest.mark.stand_in_driver
@needs_cc
def test_the_exported_wrapper_sets_the_attribute_at_each_call(tmp_path):
    from test_export import build_harness, run_harness, tensor

    with target("sm_90a"):
        compiled = cute.compile(exported, from_dlpack(np.zeros(32, np.int32)).mark_layout_dynamic(),
                                cutlass.Boolean(True))
    exe, meta = build_harness(tmp_path, compiled, "pdlflag", aot.build_mock_driver(str(tmp_path)))
    a = tensor(1 << 40, (32,), (1,), cutlass.Int32)
    flags = [True, False, True, False]
    out = run_harness(exe, meta, [{"a": a, "pdl": int(f)} for f in flags], compiled)
    launches = [ls for rc, _, ls in out["calls"]]
    assert all(rc == 0 for rc, _, _ in out["calls"]) and [len(ls) for ls in launches] == [1] * len(flags)
    assert [any(at[0] == PDL for at in ls[0]["attrs"]) for ls in launches] == flags


@cute.kernel
def add_one(a: cute.Tensor):
    cute.arch.griddepcontrol_wait()  # a dependent launch reads what the one before it wrote
    tidx, _, _ = cute.arch.thread_idx()
    a[tidx] = a[tidx] + 1


@cute.jit
def add_twice(a: cute.Tensor, pdl: bool, coop: bool):
    add_one(a).launch(grid=[1, 1, 1], block=[32, 1, 1], use_pdl=pdl)
    add_one(a).launch(grid=[1, 1, 1], block=[32, 1, 1], use_pdl=pdl, cooperative=coop)


@requires_gpu
def test_the_driver_takes_each_calls_attributes_on_the_gpu():
    import torch

    x = torch.zeros(32, dtype=torch.int32, device="cuda")
    c = cute.compile(add_twice, from_dlpack(x), True, False)
    for pdl, coop in [(True, False), (False, True), (False, False), (True, True)]:
        c(from_dlpack(x), pdl, coop)
    torch.cuda.synchronize()
    assert bool((x == 8).all())  # same stream: each launch saw the one before it


LOOP_PROGRAM = HEADER + '''

@cute.jit
def looped(a: cute.Tensor, n: cutlass.Int32, pdl: bool):
    for i in range(n):
        k(a).launch(grid=[i + 1, 1, 1], block=[32, 1, 1], use_pdl=pdl, cooperative=True)


@cute.jit
def fixed(a: cute.Tensor):
    k(a).launch(grid=[1, 1, 1], block=[32, 1, 1], use_pdl=True)


a = from_dlpack(np.zeros(32, np.int32))
c = cute.compile(looped, a, 2, True)
for n, pdl in [(2, True), (3, False), (1, True), (0, False), (2, False)]:
    print("call", n, int(pdl), flush=True)
    c(a, n, pdl)
f = cute.compile(fixed, a)
for _ in range(3):
    print("call", 1, 1, flush=True)
    f(a)
print("native", *c._native.stats, *f._native.stats, flush=True)
'''


@pytest.mark.stand_in_driver
@needs_cc
def test_the_native_path_gives_each_trip_and_call_its_attributes(tmp_path):
    # A host loop's launches take the call's use_pdl= at each trip, with the fixed cooperative=True; a launch
    # whose use_pdl=True is fixed when compiled has it at each call. Calls after the first take the native path.
    out = aot.run_on_stand_in(tmp_path, "loop_flags.py", LOOP_PROGRAM, WARPWEAVE_DISABLE_CACHE="1")
    calls = _calls(out)
    assert [len(ls) for _, _, ls in calls] == [2, 3, 1, 0, 2, 1, 1, 1]
    for k, (n, pdl, launches) in enumerate(calls):
        for attrs in launches:
            assert (PDL in attrs) == pdl, (k, attrs)
            assert (COOPERATIVE in attrs) == (k < 5), (k, attrs)
    native = [line.split()[1:] for line in out.splitlines() if line.startswith("native ")][0]
    assert [int(x) for x in native] == [4, 0, 2, 0]
