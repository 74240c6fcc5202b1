"""Host code with runtime values (host/host_program.py, host/host_branch.py): a @cute.jit function compiled once
with dynamic shapes branches on them, computes with them and passes the results to its launches at each call.

Checked without a GPU, on a stand-in driver that records what each call would launch:
- a tensorop-GEMM-like host function (rasterisation picked by `if grid_n > 5 / elif` on a dynamic extent, a grid
  computed from it, a kernel launched only in one branch), compiled once with fake tensors, launches for three
  shapes taking different branches exactly what a Python model of the same host code computes, through both
  the native fast path and the general Python call;
- a scale computed from a Float32 argument reaches the kernel as the call's value;
- the C++ evaluation of host programs agrees with the Python one on random programs;
- user mistakes are errors at the user's line: a division by zero at a call, a non-number that differs between
  the branches.
"""
import os
import random
import struct
import sys

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import _core
from warpweave._dsl.base.errors import DSLError
from warpweave._dsl.call import native_call
from warpweave._dsl.host import host_program
from warpweave.cute.runtime import from_dlpack, make_fake_compact_tensor

from dsl_helpers import target
from host_stand_in import stand_in  # noqa: F401 (a fixture)


@cute.kernel
def gemm_like(c: cute.Tensor, raster: cutlass.Int32):
    tid, _, _ = cute.arch.thread_idx()
    c[tid] = cutlass.Float32(raster)


@cute.kernel
def clear_first(c: cute.Tensor):
    c[0] = cutlass.Float32(0.0)


BM, BN = 128, 64


@cute.jit
def rasterised(mC: cute.Tensor):
    grid_dim = cute.ceil_div(mC.shape, (BM, BN))
    grid_n = cute.size(grid_dim[1])
    raster = 1
    if grid_n > 5:
        raster = 8
    elif grid_n > 2:
        raster = 4
    elif grid_n > 1:
        raster = 2
    if cute.size(grid_dim[0]) > 16:  # only large problems clear first (a launch under a host branch)
        clear_first(mC).launch(grid=(1, 1, 1), block=(32, 1, 1))
    gemm_like(mC, raster).launch(grid=(cute.size(grid_dim[0]) * raster, (grid_n + raster - 1) // raster, 1),
                                 block=(128, 1, 1))


def model(m, n):
    """The host code above, in Python."""
    gm, gn = -(-m // BM), -(-n // BN)
    raster = 8 if gn > 5 else 4 if gn > 2 else 2 if gn > 1 else 1
    out = [("clear_first", (1, 1, 1))] if gm > 16 else []
    return out + [("gemm_like", (gm * raster, (gn + raster - 1) // raster, 1), raster)]


def _raster_of(params):
    return struct.unpack_from("i", params, len(params) - 4)[0]  # the kernel's last parameter


def test_one_compilation_takes_each_calls_branch_natively_and_in_python(stand_in):
    fake = make_fake_compact_tensor(cutlass.Float32, (cute.sym_int(), cute.sym_int()), stride_order=(1, 0))
    with target("sm_80"):
        c = stand_in(cute.compile(rasterised, fake))
    assert len(c.launches) == 2 and c.host_program
    shapes = [(256, 64), (2300, 200), (512, 1000), (4096, 130)]  # rasters 1, 4, 8, 4; the clear for 2300, 4096
    for path in ("python", "native"):
        for m, n in shapes:
            stand_in.launched.clear()
            c(from_dlpack(np.zeros((m, n), np.float32)).mark_layout_dynamic())
            want = model(m, n)
            got = stand_in.launched
            assert [(k, g) for k, g, _, _ in got] == [w[:2] for w in want], (m, n)
            assert _raster_of(got[-1][2]) == want[-1][2]
            if path == "native":
                assert all(p == "native" for *_, p in got), (m, n)
    assert c._native is not None and c._native.stats[0] >= len(shapes)


@cute.kernel
def scaled(x: cute.Tensor, scale_log2: cutlass.Float32):
    tid, _, _ = cute.arch.thread_idx()
    x[tid] = x[tid] * scale_log2


@cute.jit
def scale_host(x: cute.Tensor, scale: cutlass.Float32):
    scale_log2 = scale * 1.4426950408889634
    scaled(x, scale_log2).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_a_scale_computed_from_a_float32_argument_is_each_calls(stand_in):
    x = np.zeros(32, np.float32)
    with target("sm_80"):
        c = stand_in(cute.compile(scale_host, from_dlpack(x), cutlass.Float32(1.0)))
    paths = []
    for s in (0.125, 3.0, -7.5, 1e-3):
        stand_in.launched.clear()
        c(from_dlpack(x), cutlass.Float32(s))
        (_, _, params, path), = stand_in.launched
        paths.append(path)
        want = np.float32(np.float32(s) * np.float32(1.4426950408889634))
        assert struct.unpack_from("f", params, len(params) - 4)[0] == want
    assert paths == ["python", "native", "native", "native"]  # after the first call, the C++ path computes it


@cute.jit
def divides(x: cute.Tensor, d: cutlass.Int32):
    n = cute.size(x, mode=[0])
    per = 1
    if d > 0:
        per = n // d
    else:
        per = n % d  # the branch a call with d == 0 takes: its value is computed under the `if`
    scaled(x, cutlass.Float32(1.0)).launch(grid=(per, 1, 1), block=(32, 1, 1))


def test_a_division_by_zero_at_a_call_names_the_users_line_and_only_the_taken_branch_computes(stand_in):
    x = np.zeros(64, np.float32)
    with target("sm_80"):
        c = stand_in(cute.compile(divides, from_dlpack(x).mark_layout_dynamic(), cutlass.Int32(4)))
    c(from_dlpack(x).mark_layout_dynamic(), cutlass.Int32(4))
    assert stand_in.launched[-1][1] == (16, 1, 1)
    with pytest.raises(DSLError, match=r"test_host_programs.py:\d+: host-side modulo by zero") as e:
        c(from_dlpack(x).mark_layout_dynamic(), cutlass.Int32(0))
    line = int(str(e.value).split("test_host_programs.py:")[1].split(":")[0])
    # An extent's arithmetic keeps no line of its own: the error names the `if` whose taken branch computes it.
    assert "if d > 0:" in open(__file__).read().splitlines()[line - 1]


@cute.jit
def layouts_differ(x: cute.Tensor):
    lay = cute.make_layout(4)
    if cute.size(x, mode=[0]) > 8:
        lay = cute.make_layout(8)
    scaled(x, cutlass.Float32(cute.size(lay))).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_a_non_number_differing_between_branches_is_an_error_at_the_if():
    with target("sm_80"):
        with pytest.raises(DSLError, match=r"test_host_programs.py:\d+: after this `if` on a runtime value, 'lay'"):
            cute.compile(layouts_differ, from_dlpack(np.zeros(16, np.float32)).mark_layout_dynamic())


# --- the examples, compiled once with symbolic shapes ----------------------------------------------------------------

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "frontend_python",
                                "examples"))
import elementwise_add  # noqa: E402
import sgemm  # noqa: E402
import tensorop_gemm  # noqa: E402


def _fake_mnl(dtype, mode0_major, divisibility):
    """A fake (mode0, mode1, L) tensor with symbolic extents, its mode 0 or mode 1 contiguous (CuTe DSL's
    fake-tensor path: make_fake_compact_tensor over cute.sym_int extents)."""
    shape = (cute.sym_int(divisibility=divisibility if mode0_major else 1),
             cute.sym_int(divisibility=1 if mode0_major else divisibility), cute.sym_int())
    return make_fake_compact_tensor(dtype, shape, stride_order=(0, 1, 2) if mode0_major else (1, 0, 2))


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_the_architecture_neutral_examples_compile_with_symbolic_shapes(arch):
    f16, f32 = cutlass.Float16, cutlass.Float32
    with target(arch):
        gemm = tensorop_gemm.TensorOpGemm(f16, f16, f32, (2, 2, 1), raster_factor=None)
        tc = cute.compile(gemm, _fake_mnl(f16, False, 8), _fake_mnl(f16, False, 8), _fake_mnl(f16, False, 8))
        mk = lambda: make_fake_compact_tensor(f32, (cute.sym_int(divisibility=4), cute.sym_int()),  # noqa: E731
                                              stride_order=(0, 1))
        sg = cute.compile(sgemm.SGemm(), mk(), mk(), mk())
        two = (cute.sym_int(), cute.sym_int(divisibility=8))
        add = cute.compile(elementwise_add.elementwise_add, *[make_fake_compact_tensor(f16, two) for _ in range(3)])
    for c in (tc, sg, add):
        assert c.cubin and c.launches
    assert tc.host_program and len(tc.launches) == 1


@pytest.mark.parametrize("n, raster", [(128, 1), (384, 4), (1024, 8)])
def test_tensorop_gemm_host_code_chooses_the_rasterisation_at_each_call(stand_in, n, raster):
    # Compiled once for symbolic shapes; each N takes another branch of its host code (1, 2 < tiles <= 5, > 5).
    f16, f32 = cutlass.Float16, cutlass.Float32
    with target("sm_80"):
        gemm = tensorop_gemm.TensorOpGemm(f16, f16, f32, (2, 2, 1), raster_factor=None)
        c = stand_in(cute.compile(gemm, _fake_mnl(f16, False, 8), _fake_mnl(f16, False, 8),
                                  _fake_mnl(f16, False, 8)))
    m, k, l = 512, 64, 2

    def t(mode0, mode1):
        return tensorop_gemm._as_runtime(np.zeros((l, mode0, mode1), np.float16).transpose(1, 2, 0), False, f16)

    for _ in range(2):  # the general Python call, then the native path
        stand_in.launched.clear()
        c(t(m, k), t(n, k), t(m, n))
        (name, grid, params, _), = stand_in.launched
        tiles_m, tiles_n = m // 128, -(-n // 128)
        assert grid == (tiles_m * raster, (tiles_n + raster - 1) // raster, l)
        assert _raster_of(params) == raster
    assert stand_in.launched[0][3] == "native"


# --- the native evaluator against the Python one -------------------------------------------------------------------

_OPS = ["add", "sub", "mul", "floordiv", "mod", "min", "max", "lt", "le", "gt", "ge", "eq", "ne", "and", "or", "xor"]
_CASTS = ["i32", "u32", "i8", "u16", "i64", "b"]


def _random_program(rng, nsyms, depth):
    if depth == 0 or rng.random() < 0.25:
        if rng.random() < 0.5:
            return [("sym", rng.randrange(nsyms))]
        return [("const", rng.choice([0, 1, -1, 3, 7, 255, 1 << 31, -(1 << 31), rng.randrange(-1000, 1000)]))]
    r = rng.random()
    if r < 0.15:
        return _random_program(rng, nsyms, depth - 1) + [("cast", rng.choice(_CASTS))]
    if r < 0.25:
        return _random_program(rng, nsyms, depth - 1) + [(rng.choice(["neg", "not", "abs"]), 0)]
    if r < 0.35:
        return (_random_program(rng, nsyms, depth - 1) + _random_program(rng, nsyms, depth - 1)
                + _random_program(rng, nsyms, depth - 1) + [("select", 0)])
    return _random_program(rng, nsyms, depth - 1) + _random_program(rng, nsyms, depth - 1) + \
        [(rng.choice(_OPS), 0)]


def _native_form(code):
    return [("cast", 0 if x == "b" else int(x[1:]) + (256 if x[0] == "i" else 0)) if op == "cast" else (op, x)
            for op, x in code]


def test_native_host_programs_evaluate_as_python_does():
    rng = random.Random(20261206)
    checked = 0
    for _ in range(3000):
        code = _random_program(rng, 4, 4)
        syms = [rng.choice([0, 1, -1, 5, 64, 1000, -77, rng.randrange(-(1 << 20), 1 << 20)]) for _ in range(4)]
        try:
            want = host_program.run_code(code, (), dict(enumerate(syms)))
        except DSLError:  # a division by zero: the native path must leave it to Python too
            want = None
        if want is not None and not -(1 << 63) <= int(want) < (1 << 63):
            want = None
        got = _core.fast_call_eval(_native_form(code), syms)
        if got is None:
            continue  # the native path leaves the call to Python (division by zero, beyond 64 bits)
        assert want is not None and got == int(want), (code, syms)
        checked += 1
    assert checked > 2000
    assert native_call.grid_program("s1 // 2", {1: 0}) == [("sym", 0), ("const", 2), ("floordiv", 0)]


_FOPS = ["add", "sub", "mul", "truediv", "floordiv", "mod", "min", "max", "lt", "ge", "eq", "ne"]


def _random_float_program(rng, depth):
    if depth == 0 or rng.random() < 0.25:
        r = rng.random()
        if r < 0.3:
            return [("arg", rng.randrange(3))]
        if r < 0.5:
            return [("sym", rng.randrange(3))]
        if r < 0.75:
            return [("const", rng.choice([0.0, 1.5, -2.25, 3.0e38, 1e-3, rng.uniform(-100, 100)]))]
        return [("const", rng.choice([0, 2, -3, 1000]))]
    r = rng.random()
    if r < 0.25:
        return _random_float_program(rng, depth - 1) + [("cast", rng.choice(["f32", "f64", "i32", "b", "u8"]))]
    if r < 0.35:
        return _random_float_program(rng, depth - 1) + [(rng.choice(["neg", "abs", "not"]), 0)]
    if r < 0.45:
        return (_random_float_program(rng, depth - 1) + _random_float_program(rng, depth - 1)
                + _random_float_program(rng, depth - 1) + [("select", 0)])
    return _random_float_program(rng, depth - 1) + _random_float_program(rng, depth - 1) + [(rng.choice(_FOPS), 0)]


def test_native_float_host_programs_evaluate_as_python_does():
    rng = random.Random(61206)
    checked = 0
    for _ in range(3000):
        code = _random_float_program(rng, 4) + [("cast", "f32")]
        syms = [rng.randrange(-50, 50) for _ in range(3)]
        args = [rng.choice([0.5, -1.25, 7.0, float(rng.uniform(-10, 10)), 3, 0])for _ in range(3)]
        try:
            want = host_program.run_code(code, args, dict(enumerate(syms)))
        except (DSLError, OverflowError, ValueError):
            want = None
        native = [("fconst", struct.unpack("q", struct.pack("d", x))[0]) if op == "const" and isinstance(x, float)
                  else ("cast", 512 + int(x[1:])) if op == "cast" and x[0] == "f"
                  else ("cast", 0 if x == "b" else int(x[1:]) + (256 if x[0] == "i" else 0)) if op == "cast"
                  else (op, x) for op, x in code]
        got = _core.fast_call_eval_host(native, syms, args, True)
        if got is None:
            continue  # left to the Python call
        assert want is not None, (code, syms, args)
        assert got == want or (got != got and want != want), (code, syms, args, got, want)
        checked += 1
    assert checked > 1500


# --- launch event attributes ------------------------------------------------------------------------------------

_EVENTS_SCRIPT = r"""
import sys
sys.path[:0] = [sys.argv[1]]
import numpy as np
import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack
from dsl_helpers import target
from host_stand_in import stand_in  # noqa: F401 (a fixture)


class CUevent:  # a cuda.bindings event handle: int() of it
    def __init__(self, h):
        self.h = h

    def __int__(self):
        return self.h


@cute.kernel
def touch(x: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    cute.arch.griddepcontrol_launch_dependents()
    x[tidx] = 1.0


@cute.jit
def with_events(x: cute.Tensor, done: CUevent, ready: CUevent):
    touch(x).launch(grid=(1, 1, 1), block=(32, 1, 1), launch_completion_event=done,
                    launch_completion_event_flags=0, programmatic_event=ready, programmatic_event_flags=1,
                    programmatic_event_trigger_at_block_start=1, use_pdl=True)


x = from_dlpack(np.zeros(32, np.float32))
with target("sm_90a"):
    c = cute.compile(with_events, x, CUevent(0x1234), CUevent(0x5678))
c(x, CUevent(0xABCD00000001), CUevent(0x99))
"""


def test_launch_event_attributes_reach_the_driver(tmp_path):
    # launch_completion_event= and programmatic_event= (CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT, 12, and
    # _PROGRAMMATIC_EVENT, 7) carry each call's event handles, flags and trigger to cuLaunchKernelEx.
    import subprocess

    import aot_helpers as aot

    mock = aot.build_mock_driver(str(tmp_path))
    env = dict(os.environ, WARPWEAVE_LIBCUDA=os.path.join(mock, "libcuda.so.1"), WW_MOCK_PARAM_SIZES="8")
    here = os.path.dirname(os.path.abspath(__file__))
    script = tmp_path / "events.py"  # a file: a @cute.jit function's source is read
    script.write_text(_EVENTS_SCRIPT)
    p = subprocess.run([sys.executable, str(script), here], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    (launch,) = aot.parse_mock_output(p.stdout + "\nrc call 0\n")["calls"][0][2]
    attrs = {a[0]: a[1:] for a in launch["attrs"]}
    assert attrs[12] == [0x00000001, 0xABCD, 0, 0]  # the event's 64 bits, then its flags
    assert attrs[7] == [0x99, 0, 1, 1]              # the event, flags 1, trigger at block start
    assert 6 in attrs                               # use_pdl: programmatic stream serialisation


# --- IR ops on host values (a library's launch-time arithmetic) ------------------------------------------------------

from warpweave._mlir.dialects import llvm  # noqa: E402


def _ceil_log2(x):
    # as libraries write it: ctlz of an IR value, which CuTe DSL compiles into host code too
    xm1 = (cutlass.Int32(x) - 1).ir_value()
    return cutlass.Int32(32) - cutlass.Int32(llvm.intr_ctlz(xm1, False))


@cute.kernel
def _magic_kernel(x: cute.Tensor, shift: cutlass.Uint32, magic: cutlass.Uint32):
    tidx, _, _ = cute.arch.thread_idx()
    x[tidx] = cutlass.Float32(shift + magic)


@cute.jit
def fast_divisor(x: cute.Tensor):
    d = cute.size(x, mode=[0])  # a runtime extent
    s = cutlass.max(_ceil_log2(d) - 1, cutlass.Int32(0))
    pow_s = cutlass.Uint64(cutlass.Uint32(1) << cutlass.Uint32(s))
    magic = (cutlass.Uint64(0x100000000) * pow_s + cutlass.Uint64(cutlass.Uint32(d)) - 1) // \
        cutlass.Uint64(cutlass.Uint32(d))
    _magic_kernel(x, cutlass.Uint32(s), cutlass.Uint32(magic & 0xFFFFFFFF)).launch(grid=(1, 1, 1),
                                                                                 block=(32, 1, 1))


def test_ir_ops_on_host_values_are_computed_at_each_call(stand_in):
    # A fast divisor's shift and magic number from ctlz of a runtime extent, computed by the host program.
    with target("sm_80"):
        c = stand_in(cute.compile(fast_divisor, from_dlpack(np.zeros(40, np.float32)).mark_layout_dynamic()))
    for d in (1, 2, 3, 40, 1000, (1 << 20) + 7):
        stand_in.launched.clear()
        c(from_dlpack(np.zeros(d, np.float32)).mark_layout_dynamic())
        (_, _, params, _), = stand_in.launched
        shift, magic = struct.unpack_from("II", params, len(params) - 8)
        s = max((d - 1).bit_length() - 1, 0)
        assert shift == s and magic == ((1 << (32 + s)) + d - 1) // d & 0xFFFFFFFF, d


@cute.jit
def static_ceil_log2s(x: cute.Tensor, out: list):
    # ctlz of IR values of constants of the host side: known while tracing, so they stay constants
    out += [_ceil_log2(v) for v in (1, 2, 3, 4, 5, 1 << 30, (1 << 30) + 1, (1 << 31) - 1)]


def test_ir_ops_on_host_constants_are_constants():
    out = []
    with target("sm_80"):
        cute.compile(static_ceil_log2s, from_dlpack(np.zeros(8, np.float32)), out)
    assert all(type(r) is cutlass.Int32 and r.is_static for r in out)
    assert [r.value for r in out] == [max(v - 1, 0).bit_length() for v in (1, 2, 3, 4, 5, 1 << 30, (1 << 30) + 1,
                                                                            (1 << 31) - 1)]


@cute.jit
def host_constant_ir_not_on_host(x: cute.Tensor):
    v = cutlass.Float32(2.0).ir_value()
    llvm.inline_asm(cutlass.Float32.mlir_type, [v], "mov.b32 $0, $1;", "=f,f")  # device code on a host value


@cute.jit
def host_ir_not_on_host(x: cute.Tensor):
    v = cutlass.Float32(cute.size(x, mode=[0])).ir_value()
    llvm.inline_asm(cutlass.Float32.mlir_type, [v], "mov.b32 $0, $1;", "=f,f")  # device code on a host value


def test_an_ir_op_the_host_cannot_compute_is_an_error_at_its_line():
    with target("sm_80"), pytest.raises(DSLError, match=r"test_host_programs.py:\d+: llvm.inline_asm on a value of "
                                                         r"the host side"):
        cute.compile(host_ir_not_on_host, from_dlpack(np.zeros(8, np.float32)).mark_layout_dynamic())
    with target("sm_80"), pytest.raises(DSLError, match=r"test_host_programs.py:\d+: llvm.inline_asm on a value of "
                                                         r"the host side"):
        cute.compile(host_constant_ir_not_on_host, from_dlpack(np.zeros(8, np.float32)))


# --- a NamedTuple argument holding DSL numbers ----------------------------------------------------------------------

from typing import NamedTuple  # noqa: E402


class _SchedulerArgs(NamedTuple):
    tiles: cutlass.Int32
    semaphore: object


@cute.kernel
def _named_kernel(x: cute.Tensor, args: _SchedulerArgs):
    x[0] = cutlass.Float32(args.tiles)  # read by field name in the kernel


@cute.jit
def named_arguments(x: cute.Tensor, args: _SchedulerArgs):
    if cutlass.const_expr(args.semaphore is None):  # a library's field test on the host
        _named_kernel(x, args).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_a_named_tuple_argument_keeps_its_type_on_the_host_and_in_the_kernel(stand_in):
    x = from_dlpack(np.zeros(8, np.float32))
    with target("sm_80"):
        c = stand_in(cute.compile(named_arguments, x, _SchedulerArgs(cutlass.Int32(6), None)))
    c(x, _SchedulerArgs(cutlass.Int32(11), None))
    (_, _, params, _), = stand_in.launched
    assert struct.unpack_from("i", params, len(params) - 4)[0] == 11  # the number is each call's
