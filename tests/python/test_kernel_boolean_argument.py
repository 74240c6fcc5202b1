"""A runtime Boolean passed on from a @cute.jit function to a @cute.kernel parameter.

A kernel parameter has no 1-bit type: a Boolean travels as a byte, and the kernel takes its low bit where it starts
(kernel_trace.py, in code emitted at the kernel's entry). The host packs that byte as 0 or 1 whatever the argument's
value (launch_plan.BOOL_FMT): a byte 2 would read as false.

Properties, without a GPU (compiled for sm_80; launches recorded by the launcher's stand-ins):
- a runtime Boolean reaches a kernel parameter whatever its origin: an argument annotated Boolean, a Python bool
  given to an unannotated argument, a comparison computed in the host function, an element of a tuple argument, a
  tuple argument holding one passed whole to the kernel, a tuple built in the host function; it is a parameter of the
  kernel (one byte), not a value compiled in;
- that byte is 0 or 1, the truth of the value passed (True, 1, 2, -1, 256, 0.5, a DSL Boolean or integer), on each
  path that packs it: the general call, the generated Python fast path and the native fast path; a Boolean the host
  function computes likewise;
- the IR builder: a function's arguments (those it begins with and those added while tracing its body) are visible
  in code emitted at its entry as in its body; values of the body or of another function stay refused there.
"""
import struct

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import _core

import aot_helpers as aot
from dsl_helpers import requires_gpu, target
from test_export import build_harness, needs_compilers, run_harness, stand_in_driver
from test_native_call import general, recorded  # noqa: F401 - a fixture


@cute.kernel
def flag_kernel(flag: cutlass.Boolean, n: cutlass.Int32):
    if flag:
        cute.printf("%d", n)


@cute.kernel
def pair_kernel(t, n: cutlass.Int32):
    if t[0]:
        cute.printf("%d", n)


@cute.jit
def annotated(flag: cutlass.Boolean, n: cutlass.Int32):
    flag_kernel(flag, n).launch(grid=[1, 1, 1], block=[32, 1, 1])


@cute.jit
def unannotated(flag, n: cutlass.Int32):
    flag_kernel(flag, n).launch(grid=[1, 1, 1], block=[32, 1, 1])


@cute.jit
def computed(n: cutlass.Int32):
    flag_kernel(n > 0, n).launch(grid=[1, 1, 1], block=[32, 1, 1])


@cute.jit
def tuple_element(t: tuple, n: cutlass.Int32):
    flag_kernel(t[0], n).launch(grid=[1, 1, 1], block=[32, 1, 1])


@cute.jit
def whole_tuple(t: tuple, n: cutlass.Int32):
    pair_kernel(t, n).launch(grid=[1, 1, 1], block=[32, 1, 1])


@cute.jit
def built_tuple(flag: cutlass.Boolean, n: cutlass.Int32):
    pair_kernel((flag, n), n).launch(grid=[1, 1, 1], block=[32, 1, 1])


# (function, compiled with, [(arguments of a call, the flag's truth)])
CASES = {
    "annotated": (annotated, (True, 3), [((False, 3), 0), ((True, 3), 1)]),
    "unannotated": (unannotated, (True, 3), [((False, 3), 0), ((True, 3), 1)]),
    "computed": (computed, (3,), [((0,), 0), ((-5,), 0), ((7,), 1)]),
    "tuple element": (tuple_element, ((True, 1), 3), [(((False, 1), 3), 0), (((True, 2), 3), 1)]),
    "whole tuple": (whole_tuple, ((True, 1), 3), [(((False, 1), 3), 0), (((True, 2), 3), 1)]),
    "built tuple": (built_tuple, (True, 3), [((False, 3), 0), ((True, 3), 1)]),
}


def _compile(monkeypatch, fn, args):
    """Compiled and made ready for fast calls: the generated Python fast path where it has one (none for host code
    with runtime values, whose program the native path runs), the native one always."""
    with target("sm_80"):
        c = cute.compile(fn, *args)
    monkeypatch.setattr(c, "_load", lambda: None)
    c._functions = {l.kernel: object() for l in c.launches}
    c._fast = c._build_fast_call()
    assert callable(c._fast) or c.host_program
    assert isinstance(c._native, _core.FastCall)
    return c


def _is_flag(p) -> bool:
    """The Boolean's parameter: the kernels here take no other scalar of one byte."""
    return p.kind == "scalar" and struct.calcsize("=" + p.fmt) == 1


def _flag_byte(c, params: bytes) -> int:
    """The Boolean parameter's byte in a launch's parameter bytes."""
    (launch,) = c.launches
    _, offsets = c._packers[launch.kernel]
    (off,) = [o for p, o in zip(launch.params, offsets) if _is_flag(p)]
    return params[off]


def _bytes_on_each_path(c, launched, args) -> dict:
    """The flag's byte as the general call, the generated Python fast path (where there is one), the native fast path
    and the call (which takes the native path) pack it."""
    out = {}
    ((_, _, params),) = general(c, *args)
    out["general"] = _flag_byte(c, params)
    if callable(c._fast):
        launched.clear()
        c._fast(*args)
        ((_, _, params),) = launched
        out["python fast path"] = _flag_byte(c, params)
    native = c._native.packed(*args)
    assert native is not None, args  # taken natively
    ((_, _, params),) = native
    out["native"] = _flag_byte(c, params)
    before = c._native.stats
    launched.clear()
    c(*args)
    ((_, _, params),) = launched
    out["call"] = _flag_byte(c, params)
    assert c._native.stats == (before[0] + 1, before[1]), args
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_a_runtime_boolean_is_a_kernel_parameter_whatever_its_origin(recorded, monkeypatch, case):
    launched, _ = recorded
    fn, compiled_with, calls = CASES[case]
    c = _compile(monkeypatch, fn, compiled_with)
    (launch,) = c.launches
    assert len([p for p in launch.params if _is_flag(p)]) == 1
    for args, truth in calls:  # one compiled function: the flag is read at each call, not compiled in
        assert set(_bytes_on_each_path(c, launched, args).values()) == {truth}, args


TRUTHS = [True, False, 1, 0, 2, -1, 255, 256, 1 << 40, 0.5, 0.0, -0.0,
          cutlass.Boolean(True), cutlass.Boolean(False), cutlass.Int32(2), cutlass.Int32(0)]


@pytest.mark.parametrize("value", TRUTHS, ids=repr)
def test_the_boolean_byte_is_0_or_1_on_every_path(recorded, monkeypatch, value):
    launched, _ = recorded
    c = _compile(monkeypatch, annotated, (True, 3))
    want = 1 if bool(value.value if isinstance(value, cutlass.Numeric) else value) else 0
    assert _bytes_on_each_path(c, launched, (value, 3)) == dict.fromkeys(
        ("general", "python fast path", "native", "call"), want)


# --- the IR builder ------------------------------------------------------------------------------------------------

def test_function_arguments_are_visible_in_code_at_the_entry():
    b = _core.IRBuilder()
    flag, n = b.begin_function("entry_args", ["i8", "i32"], "nvvm.kernel")
    body = b.op1("arith.addi", [n, n], "i32")             # a value of the body
    added = b.add_function_argument("i32")                # an argument added while tracing the body
    b.set_emit_at_entry(True)
    bit = b.op1("arith.trunci", [flag], "i1")             # what a Boolean parameter becomes, at the entry
    b.op1("arith.addi", [added, n], "i32")
    with pytest.raises(_core.IRError, match="another kernel or function"):
        b.op1("arith.addi", [body, n], "i32")             # the body's values are not the entry's
    b.set_emit_at_entry(False)
    b.op1("arith.select", [bit, body, added], "i32")      # the entry's values are the body's
    b.end_function()
    b.begin_function("other", ["i32"], "nvvm.kernel")
    with pytest.raises(_core.IRError, match="another kernel or function"):
        b.op1("arith.addi", [n, n], "i32")                # nor is another function's argument
    b.set_emit_at_entry(True)
    with pytest.raises(_core.IRError, match="another kernel or function"):
        b.op1("arith.trunci", [flag], "i1")
    b.set_emit_at_entry(False)
    b.end_function()


# --- an exported function ------------------------------------------------------------------------------------------

@stand_in_driver
@needs_compilers
@pytest.mark.parametrize("fn,compiled_with,calls", [
    (annotated, (True, 3), [({"flag": v, "n": 3}, bool(v)) for v in (0, 1, 2, -1, 256)]),
    (computed, (3,), [({"n": v}, v > 0) for v in (0, 1, 7, -5)]),
])
def test_an_exported_function_packs_the_boolean_as_python_does(tmp_path, fn, compiled_with, calls):
    # The C wrapper's Boolean argument is a C bool; a Boolean computed on the host is 0 or 1 there too.
    with target("sm_80"):
        c = cute.compile(fn, *compiled_with)
    exe, meta = build_harness(tmp_path, c, "flagged", aot.build_mock_driver(str(tmp_path)))
    out = run_harness(exe, meta, [values for values, _ in calls], c)
    assert len(out["calls"]) == len(calls)
    for (rc, msg, launches), (values, truth) in zip(out["calls"], calls):
        assert rc == 0, msg
        want = aot.python_launches(c, *values.values())
        assert [{k: v for k, v in l.items() if k != "attrs"} for l in launches] == want
        flag = [x for x, p in zip(want[0]["params"], c.launches[0].params) if _is_flag(p)]
        assert flag == ["01" if truth else "00"], values


# --- on the GPU ------------------------------------------------------------------------------------------------------

@cute.kernel
def _select_kernel(out: cute.Tensor, flag: cutlass.Boolean):
    if flag:
        out[0] = cutlass.Int32(7)
    else:
        out[0] = cutlass.Int32(3)


@cute.jit
def _select(out: cute.Tensor, flag: cutlass.Boolean):
    _select_kernel(out, flag).launch(grid=[1, 1, 1], block=[1, 1, 1])


@cute.jit
def _select_positive(out: cute.Tensor, n: cutlass.Int32):
    _select_kernel(out, n > 0).launch(grid=[1, 1, 1], block=[1, 1, 1])


@requires_gpu
def test_the_kernel_reads_the_truth_of_the_value_passed():
    """One compiled function, called with values of each truth (a byte 2 would read as false in the kernel): the
    kernel takes the branch the value's truth names; the output is poisoned before each call."""
    import torch
    from warpweave.cute.runtime import from_dlpack

    out = torch.full((1,), -1, dtype=torch.int32, device="cuda")
    view = from_dlpack(out)
    c = cute.compile(_select, view, True)
    for value in (True, False, 2, 0, -1, 0.5, 256, cutlass.Boolean(False), cutlass.Int32(2)):
        out.fill_(-1)
        c(view, value)
        torch.cuda.synchronize()
        truth = bool(value.value if isinstance(value, cutlass.Numeric) else value)
        assert out.item() == (7 if truth else 3), value
    p = cute.compile(_select_positive, view, 1)
    for n, want in ((5, 7), (0, 3), (-4, 3)):
        out.fill_(-1)
        p(view, n)
        torch.cuda.synchronize()
        assert out.item() == want, n
