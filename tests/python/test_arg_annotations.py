"""A number argument of a parameter annotated with a numeric type takes that type, as in CuTe DSL (issue 31, item
4): `n: cutlass.Int32` is a 32-bit kernel parameter whether the value passed is 5 or 2**40 (too wide: refused) or
2.7 (not an integer: refused), and an `alpha: cutlass.Float32` passed 3 is a float. A value that does not fit an
integer annotation is a DSL error at the user's line, when compiling and at each call of the compiled function
(through the native call, the generated Python fast path and the general path alike). Without a GPU: the launches
are recorded (test_native_call's stand-in Launcher)."""
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base.errors import DSLError, DSLValueError
from warpweave._dsl.call.arg_values import IntArg, ScalarArg

from dsl_helpers import line_in, target
from test_export import axpy, tensor
from test_native_call import Stream, general, recorded  # noqa: F401 - the fixture


@cute.jit
def axpy_unannotated(x: cute.Tensor, y: cute.Tensor, n, alpha, stream):
    axpy(x, y, n, alpha, stream)


def _args(n, alpha=2.5):
    return tensor(1 << 20, (256,), (1,)), tensor(2 << 20, (256,), (1,)), n, alpha, Stream(0)


def _kernel_param(compiled, kind, source):
    """The IR type of the kernel parameter read from `source` (a symbol id, or a scalar argument's index)."""
    (ir_type,) = [p.ir_type for p in compiled.launches[0].params if p.kind == kind and p.source == source]
    return ir_type


@pytest.mark.parametrize("n", [5, 3.0, cutlass.Int64(7), (1 << 31) - 1])
def test_an_integer_annotation_is_its_type_whatever_the_value(n):
    with target("sm_80"):
        compiled = cute.compile(axpy, *_args(n, alpha=3))
    plan_n, plan_alpha = compiled.plans[2], compiled.plans[3]
    assert isinstance(plan_n, IntArg) and plan_n.dtype is cutlass.Int32
    assert compiled.host_symbols[plan_n.symbols[0]].bits == 32
    assert isinstance(plan_alpha, ScalarArg) and plan_alpha.dtype is cutlass.Float32  # 3, yet a float
    assert _kernel_param(compiled, "sym", plan_n.symbols[0]) == "i32"
    assert _kernel_param(compiled, "scalar", 3) == "f32"


def test_without_annotations_the_value_decides_as_before():
    with target("sm_80"):
        wide = cute.compile(axpy_unannotated, *_args(1 << 40, alpha=3))
        narrow = cute.compile(axpy_unannotated, *_args(5, alpha=3))
    assert wide.plans[2].dtype is cutlass.Int64 and narrow.plans[2].dtype is cutlass.Int32
    assert isinstance(narrow.plans[3], IntArg)


@pytest.mark.parametrize("n, what", [(1 << 40, "does not fit"), (-(1 << 31) - 1, "does not fit"),
                                     (2.7, "takes integers"), (float("inf"), "takes integers")])
def test_a_value_outside_an_integer_annotation_is_refused_when_compiling(n, what):
    with target("sm_80"), pytest.raises(DSLValueError, match=what) as e:
        cute.compile(axpy, *_args(n))  # the compile line
    assert e.value.location == (__file__, line_in(__file__, "cute.compile(axpy, *_args(n))  # the compile line"))
    with target("sm_80"), pytest.raises(DSLValueError, match=what) as e:
        axpy(*_args(n))  # the call line
    assert e.value.location == (__file__, line_in(__file__, "axpy(*_args(n))  # the call line"))


@pytest.mark.parametrize("path", ["native", "python", "general"])
@pytest.mark.parametrize("n, what", [(1 << 40, "does not fit"), (2.7, "takes integers"), ("7", "takes integers")])
def test_a_value_outside_an_integer_annotation_is_refused_at_each_call(recorded, path, n, what):
    launched, ready = recorded
    with target("sm_80"):
        compiled = ready(cute.compile(axpy, *_args(5)))
    if path != "native":
        compiled._native = None
    if path == "general":
        compiled._fast = None
    compiled(*_args(7))  # a value of the type passes on every path
    assert launched[-1] == general(compiled, *_args(7))[0]
    before = len(launched)
    with pytest.raises(DSLError, match=what) as e:
        compiled(*_args(n))  # the compiled call's line
    assert e.value.location == (__file__, line_in(__file__, "compiled(*_args(n))  # the compiled call's line"))
    assert len(launched) == before  # nothing launched


def test_a_narrow_integer_annotation_is_checked_against_its_own_range(recorded):
    @cute.jit
    def narrow(x: cute.Tensor, y: cute.Tensor, k: cutlass.Int8, stream):
        axpy(x, y, 256, k, stream)

    _, ready = recorded
    x, y = tensor(1 << 20, (256,), (1,)), tensor(2 << 20, (256,), (1,))
    with target("sm_80"):
        with pytest.raises(DSLValueError, match="does not fit"):
            cute.compile(narrow, x, y, 200, Stream(0))
        compiled = ready(cute.compile(narrow, x, y, 100, Stream(0)))
    assert isinstance(compiled.plans[2], ScalarArg) and compiled.plans[2].dtype is cutlass.Int8
    compiled(x, y, -128, Stream(0))
    with pytest.raises(DSLValueError, match="does not fit"):
        compiled(x, y, 128, Stream(0))
