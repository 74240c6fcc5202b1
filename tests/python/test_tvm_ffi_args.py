"""The TVM FFI entry's parameters (export/tvm_ffi_args.py), as CuTe DSL libraries see and extend them through
`cutlass.cute._tvm_ffi_args_spec_converter` and `cutlass.base_dsl.tvm_ffi_builder.spec`.

Properties: every argument has one parameter, in order; a None argument and a NamedTuple's Constexpr field are
compiled in and the caller passes None there; a stream compiled for TVM FFI's environment and a Constexpr parameter
have no position; a tuple is one argument whose elements the entry reads from its array. A library's replacement of
`_convert_single_arg` decides the entry built after it (QuACK's), and one that contradicts the trace is refused. The
entry's checks run before anything is launched, so they are tested without a GPU.
"""
import dataclasses
import enum
import typing
from typing import NamedTuple, get_origin

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base.errors import DSLTypeError, DSLValueError
from warpweave.cute.runtime import make_fake_stream, make_fake_tensor

from dsl_helpers import has_gpu, target
from test_tvm_ffi import CudaLike

tvm_ffi = pytest.importorskip("tvm_ffi")


class Operands(NamedTuple):
    y: cute.Tensor
    unroll: cutlass.Constexpr[int]


@cute.kernel
def _scale_kernel(x: cute.Tensor, y: cute.Tensor, n: cutlass.Int32, unroll: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    for k in cutlass.range_constexpr(unroll):
        i = tidx * unroll + k
        if i < n:
            y[i] = x[i] * 2.0


@cute.jit
def scale(x: cute.Tensor, bias, ops: Operands, n: cutlass.Int32, stream):
    _scale_kernel(x, ops.y, n, ops.unroll).launch(grid=[1, 1, 1], block=[128, 1, 1], stream=stream)


def compiled_scale(unroll=2):
    with target("sm_80"):
        t = make_fake_tensor(cutlass.Float32, (cute.sym_int(),), (1,), assumed_align=16)
        return cute.compile(scale, t, None, Operands(t, unroll), 64, make_fake_stream(use_tvm_ffi_env_stream=True),
                            options="--enable-tvm-ffi")


def test_the_library_modules_are_the_converter_itself():
    import warpweave.cute._tvm_ffi_args_spec_converter as cv
    from warpweave._dsl.export import tvm_ffi_args
    from warpweave.base_dsl.tvm_ffi_builder import spec

    assert cv is tvm_ffi_args
    assert isinstance(cv._convert_single_arg(None, "b", None, cv.ConvertContext(None)), spec.ConstNone)
    assert get_origin(cutlass.Constexpr[int]) is cutlass.Constexpr  # as libraries test an annotation


def test_each_argument_has_its_parameter():
    from warpweave.base_dsl.tvm_ffi_builder import spec

    f = compiled_scale()
    kinds = [type(p).__name__ for p in f.params]
    assert kinds == ["Tensor", "ConstNone", "Tuple", "Scalar", "EnvStream"]
    assert [type(p) for p in f.params[2].params] == [spec.Tensor, spec.ConstNone]
    assert f.params[3].dtype == "int32" and f.params[0].dtype == "Float32" and f.params[0].ndim == 1
    assert [p.positional for p in f.params] == [True, True, True, True, False]


def test_the_entry_checks_the_tuple_and_the_compiled_in_positions():
    f = compiled_scale()
    x = tvm_ffi.from_dlpack(CudaLike(1 << 32, (64,)))
    y = tvm_ffi.from_dlpack(CudaLike(1 << 33, (64,)))
    with pytest.raises(TypeError, match=r"scale\(\) takes 4 arguments \(x, bias, ops, n\)"):
        f(x, None, (y, None))
    with pytest.raises(TypeError, match="argument bias is compiled in: pass None"):
        f(x, 3, (y, None), 64)
    with pytest.raises(TypeError, match="argument ops must be a tuple of 2 elements"):
        f(x, None, (y,), 64)
    with pytest.raises(TypeError, match="argument ops must be a tuple of 2 elements"):
        f(x, None, y, 64)
    with pytest.raises(TypeError, match=r"argument ops.unroll is compiled in: pass None"):
        f(x, None, (y, 2), 64)
    with pytest.raises(TypeError, match="argument ops_0 must be a tensor"):
        f(x, None, (7, None), 64)
    host = tvm_ffi.from_dlpack(np.zeros(16, np.float32))
    with pytest.raises(ValueError, match="argument ops_0 is not in CUDA memory"):
        f(x, None, [host, None], 64)
    if not has_gpu():  # every check passed: the call goes on to load the module, which needs a driver
        with pytest.raises(RuntimeError, match="no CUDA driver"):
            f(x, None, (y, None), 64)


def test_a_library_replacing_the_converter_decides_the_entry(monkeypatch):
    """QuACK's patch: a field or parameter annotated Constexpr[...] is ConstNone wherever it is; here the top-level
    Constexpr parameter becomes a position that takes None."""
    import warpweave.cute._tvm_ffi_args_spec_converter as cv
    from warpweave.base_dsl.tvm_ffi_builder import spec

    original = cv._convert_single_arg
    seen = []

    def patched(arg, arg_name, arg_type, ctx):
        seen.append(arg_name)
        if arg_type is not None and get_origin(arg_type) is cutlass.Constexpr or arg_type is cutlass.Constexpr:
            return spec.ConstNone(arg_name)
        return original(arg, arg_name, arg_type, ctx)

    monkeypatch.setattr(cv, "_convert_single_arg", patched)

    @cute.jit
    def scale_k(x: cute.Tensor, n: cutlass.Int32, unroll: cutlass.Constexpr[int], stream):
        _scale_kernel(x, x, n, unroll).launch(grid=[1, 1, 1], block=[128, 1, 1], stream=stream)

    with target("sm_80"):
        t = make_fake_tensor(cutlass.Float32, (cute.sym_int(),), (1,), assumed_align=16)
        f = cute.compile(scale_k, t, 64, 4, make_fake_stream(use_tvm_ffi_env_stream=True), options="--enable-tvm-ffi")
        g = cute.compile(scale, t, None, Operands(t, 3), 64, make_fake_stream(use_tvm_ffi_env_stream=True),
                         options="--enable-tvm-ffi")
    assert [type(p).__name__ for p in f.params] == ["Tensor", "Scalar", "ConstNone", "EnvStream"]
    assert "ops.y" in seen and "ops.unroll" in seen  # the recursion goes through the replacement too
    x = tvm_ffi.from_dlpack(CudaLike(1 << 32, (64,)))
    with pytest.raises(TypeError, match="argument unroll is compiled in: pass None"):
        f(x, 64, 4)
    with pytest.raises(TypeError, match=r"ops.unroll is compiled in"):
        g(x, None, (x, 3), 64)


def test_a_converter_contradicting_the_trace_is_refused(monkeypatch):
    import warpweave.cute._tvm_ffi_args_spec_converter as cv
    from warpweave.base_dsl.tvm_ffi_builder import spec

    original = cv._convert_single_arg
    monkeypatch.setattr(cv, "_convert_single_arg", lambda arg, name, typ, ctx: spec.ConstNone(name) if name == "n"
                        else original(arg, name, typ, ctx))
    with pytest.raises(DSLValueError, match="makes argument 'n' compile-time .* traced as a runtime int"):
        compiled_scale(unroll=5)


def test_a_scalar_type_the_table_lacks_is_refused(monkeypatch):
    import warpweave.cute._tvm_ffi_args_spec_converter as cv

    monkeypatch.setattr(cv, "AcceptableNumericTypesForScalar",
                        [t for t in cv.AcceptableNumericTypesForScalar if t is not cutlass.Int32])
    with pytest.raises(DSLTypeError, match="argument 'n' is a Int32, which a TVM FFI scalar cannot be"):
        compiled_scale(unroll=6)


@cute.jit
def scale_mode(x: cute.Tensor, n: cutlass.Int32, mode, stream):
    _scale_kernel(x, x, n, 2 if mode == "double" else 1).launch(grid=[1, 1, 1], block=[128, 1, 1], stream=stream)


def test_a_compile_time_value_is_left_out_of_the_call():
    """A parameter given a compile-time value that is not None (an enumeration, a string, a Python number the trace
    keeps) has no position: the call passes the others (CuTe DSL's TMA programs call their host with the tensors
    and the stream only)."""
    with target("sm_80"):
        t = make_fake_tensor(cutlass.Float32, (cute.sym_int(),), (1,), assumed_align=16)
        f = cute.compile(scale_mode, t, 64, "double", make_fake_stream(use_tvm_ffi_env_stream=True),
                         options="--enable-tvm-ffi")
    assert [type(p).__name__ for p in f.params] == ["Tensor", "Scalar", "Absent", "EnvStream"]
    x = tvm_ffi.from_dlpack(CudaLike(1 << 32, (64,)))
    with pytest.raises(TypeError, match=r"scale_mode\(\) takes 2 arguments \(x, n\)"):
        f(x, 64, "double")
    if not has_gpu():
        with pytest.raises(RuntimeError, match="no CUDA driver"):
            f(x, 64)


class Mode(enum.Enum):
    EXACT = 1
    FAST = 2


@dataclasses.dataclass(frozen=True)
class Window:
    left: int = 2
    right: typing.Optional[int] = None
    unroll: cutlass.Constexpr[int] = 2
    mode: Mode = Mode.EXACT


@cute.jit
def scale_window(x: cute.Tensor, n: cutlass.Int32, window, stream):
    _scale_kernel(x, x, n - window.left, window.unroll).launch(grid=[1, 1, 1], block=[128, 1, 1], stream=stream)


def test_a_dataclass_passes_its_numbers_at_each_call():
    """A dataclass argument is a tuple of its fields, as CuTe DSL's entry takes it: its int field a runtime int32
    read at each call (another value is no new compilation), its None, Constexpr and enumeration fields compiled
    in and checked; the caller passes the dataclass itself."""
    with target("sm_80"):
        t = make_fake_tensor(cutlass.Float32, (cute.sym_int(),), (1,), assumed_align=16)
        f = cute.compile(scale_window, t, 64, Window(), make_fake_stream(use_tvm_ffi_env_stream=True),
                         options="--enable-tvm-ffi")
    assert [type(p).__name__ for p in f.params] == ["Tensor", "Scalar", "Tuple", "EnvStream"]
    assert [(type(p).__name__, getattr(p, "dtype", None)) for p in f.params[2].params] == [
        ("Scalar", "int32"), ("ConstNone", None), ("Const", None), ("Const", None)]
    x = tvm_ffi.from_dlpack(CudaLike(1 << 32, (64,)))
    with pytest.raises(TypeError, match=r"scale_window\(\) takes 3 arguments \(x, n, window\)"):
        f(x, 64)
    with pytest.raises(ValueError, match="argument window.unroll is compiled in as 2"):
        f(x, 64, Window(unroll=4))
    with pytest.raises(ValueError, match="argument window.mode is compiled in as <Mode.EXACT: 1>"):
        f(x, 64, Window(mode=Mode.FAST))
    with pytest.raises(TypeError, match="argument window.right is compiled in: pass None"):
        f(x, 64, Window(right=3))
    with pytest.raises(TypeError, match="argument window.left must be"):
        f(x, 64, Window(left="wide"))
    with pytest.raises(TypeError, match="argument window must be a Window"):
        f(x, 64, None)
    if not has_gpu():  # every check passed, another left included: the call goes on to load the module
        for w in (Window(), Window(left=7), (7, None, 2, None)):
            with pytest.raises(RuntimeError, match="no CUDA driver"):
                f(x, 64, w)


@cute.jit
def scale_with_epilogue(x: cute.Tensor, epilogue_args: tuple, n: cutlass.Int32, stream):
    _scale_kernel(x, x, n, 2).launch(grid=[1, 1, 1], block=[128, 1, 1], stream=stream)


@pytest.mark.parametrize("epilogue_args", [(), ("relu", None)])
def test_a_tuple_compiled_in_keeps_its_position(epilogue_args):
    """A tuple argument traced as one compile-time value (an empty epilogue-arguments tuple, or one of names and
    None) still has its position, as every declared parameter has in CuTe DSL's entry: libraries pass it at each
    call (QuACK's GEMM launch passes its empty epilogue arguments between C and the scheduler's)."""
    with target("sm_80"):
        t = make_fake_tensor(cutlass.Float32, (cute.sym_int(),), (1,), assumed_align=16)
        f = cute.compile(scale_with_epilogue, t, epilogue_args, 64, make_fake_stream(use_tvm_ffi_env_stream=True),
                         options="--enable-tvm-ffi")
    assert [type(p).__name__ for p in f.params] == ["Tensor", "Tuple", "Scalar", "EnvStream"]
    assert len(f.params[1].params) == len(epilogue_args)
    x = tvm_ffi.from_dlpack(CudaLike(1 << 32, (64,)))
    with pytest.raises(TypeError, match=r"scale_with_epilogue\(\) takes 3 arguments \(x, epilogue_args, n\)"):
        f(x, 64)
    with pytest.raises(TypeError, match=f"argument epilogue_args must be a tuple of {len(epilogue_args)} elements"):
        f(x, ("relu", None, 3), 64)
    if not has_gpu():  # every check passed: the call goes on to load the module, which needs a driver
        with pytest.raises(RuntimeError, match="no CUDA driver"):
            f(x, epilogue_args, 64)


@cute.jit
def scale_tiled(x: cute.Tensor, tile: cute.Shape, n: cutlass.Int32, stream):
    _scale_kernel(x, x, n, cute.size(tile)).launch(grid=[1, 1, 1], block=[128, 1, 1], stream=stream)


def test_a_layout_annotated_tuple_is_compiled_in_and_checked():
    """A parameter annotated cute.Shape takes its Python numbers as compile-time values (values/layout_annotations.py):
    the tuple keeps its position, and the entry refuses other numbers than those compiled in."""
    with target("sm_80"):
        t = make_fake_tensor(cutlass.Float32, (cute.sym_int(),), (1,), assumed_align=16)
        f = cute.compile(scale_tiled, t, (2, 4), 64, make_fake_stream(use_tvm_ffi_env_stream=True),
                         options="--enable-tvm-ffi")
    assert [type(p).__name__ for p in f.params[1].params] == ["Const", "Const"]
    x = tvm_ffi.from_dlpack(CudaLike(1 << 32, (64,)))
    with pytest.raises(ValueError, match=r"argument tile.1 is compiled in as 4"):
        f(x, (2, 8), 64)
    if not has_gpu():
        with pytest.raises(RuntimeError, match="no CUDA driver"):
            f(x, (2, 4), 64)


def test_the_numbers_of_a_tuple_are_its_runtime_elements():
    """A Python number in a tuple is a runtime value (the tuple rule of call/arg_tensor.py): the entry reads it from
    the tuple's array as a scalar, beside the None compiled in, and takes another number at the next call."""
    with target("sm_80"):
        t = make_fake_tensor(cutlass.Float32, (cute.sym_int(),), (1,), assumed_align=16)
        f = cute.compile(scale_with_epilogue, t, (1.5, None), 64, make_fake_stream(use_tvm_ffi_env_stream=True),
                         options="--enable-tvm-ffi")
    assert [type(p).__name__ for p in f.params[1].params] == ["Scalar", "ConstNone"]
    x = tvm_ffi.from_dlpack(CudaLike(1 << 32, (64,)))
    with pytest.raises(TypeError, match="argument epilogue_args.0 must be a number"):
        f(x, ("relu", None), 64)
    if not has_gpu():  # 2.5 is no compiled-in 1.5 to refuse: the call goes on to load the module
        with pytest.raises(RuntimeError, match="no CUDA driver"):
            f(x, (2.5, None), 64)