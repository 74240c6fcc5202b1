"""A list or tuple of Python numbers passed to a @cute.jit function (directly, or through cute.compile) is read at
each call, as CuTe DSL 4.8.1 reads it: each int becomes a runtime Int32 (an int beyond 32 bits an Int64), each
float a Float32 and each bool a Boolean, at any depth, whatever the parameter's tuple annotation says of its
elements (`tuple[int, int]`, `Tuple[Int64, Float32]`); DSL numbers stay what they are; anything else in the tuple
(None, a string, an atom) is compiled in, in its place. A parameter annotated with a layout algebra type
(cute.Shape, IntTuple, Stride, Coord, Tile, Tiler, or a Union holding one's tuple) takes its Python numbers as
compile-time values instead (values/layout_annotations.py).

Properties: the traced function sees runtime numbers; the kernel holds no constant for them; one compilation
serves two tuples of other values (the in-process key, the function cache across processes, the generated fast
path and the general path alike, and an exported wrapper); where a static value is needed (range_constexpr, a
Python index) such a number is refused as CuTe DSL refuses it; an annotation the tuple contradicts is refused.
Without a GPU: compiled for sm_80, launches recorded by stand-ins of the launcher.
"""
import typing
from typing import Optional, Tuple, Union

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base.errors import DSLTypeError, DSLValueError
from warpweave._dsl.call.arg_plan import spec_key
from warpweave._dsl.values.layout_annotations import compiles_numbers_in
from warpweave.cute.runtime import from_dlpack, make_fake_tensor

import aot_helpers as aot
from dsl_helpers import target
from host_stand_in import stand_in  # noqa: F401 - a fixture
from test_export import export, run_loading_script, stand_in_driver

SEEN = []


def _describe(x):
    """What a traced function sees: containers by type, DSL numbers by type and whether they are static."""
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [_describe(v) for v in x])
    if isinstance(x, cutlass.Numeric):
        return (type(x).__name__, "static" if x.is_static else "runtime")
    return x


@cute.jit
def look(t):
    SEEN.append(_describe(t))


@cute.jit
def look_shape(t: cute.Shape):
    SEEN.append(_describe(t))


def seen(fn, value):
    SEEN.clear()
    with target("sm_80"):
        cute.compile(fn, value)
    return SEEN[-1]


def test_the_numbers_of_a_tuple_are_runtime_values_at_any_depth():
    value = ((1, 2), 3.5, None, True, cutlass.Int64(7), "tag", [4], 1 << 40)
    assert seen(look, value) == ("tuple", [
        ("tuple", [("Int32", "runtime"), ("Int32", "runtime")]), ("Float32", "runtime"), None,
        ("Boolean", "runtime"), ("Int64", "runtime"), "tag", ("list", [("Int32", "runtime")]), ("Int64", "runtime")])


@pytest.mark.parametrize("annotation", [tuple, Tuple[int, int], tuple[cutlass.Int64, cutlass.Float32],
                                        Tuple[cute.Shape, ...], cute.XTuple, Union[int, Tuple[int, ...]],
                                        "tuple", "Tuple[int, int]"])
def test_a_tuple_annotation_does_not_type_or_compile_in_its_numbers(annotation):
    @cute.jit
    def annotated(t: annotation):
        SEEN.append(_describe(t))

    assert seen(annotated, (3, 4)) == ("tuple", [("Int32", "runtime"), ("Int32", "runtime")])


@pytest.mark.parametrize("annotation,compiled_in", [
    (cute.Shape, True), (cute.IntTuple, True), (cute.Stride, True), (cute.Coord, True), (cute.Tile, True),
    (cute.typing.Tiler, True), (Optional[cute.Shape], True), (Union[cute.Coord, None], True),
    (Union[int, Tuple["Shape", ...]], True), (Union[float, Tuple[typing.ForwardRef("Tile"), ...]], True),
    ("cute.Shape", True), ("Optional[cute.Tile]", True), ("cute.Coord | None", True), ("Tiler", True),
    (cute.XTuple, False), (tuple, False), (Tuple[cute.Shape, ...], False), (Tuple["Shape", ...], False),
    (Union[int, Tuple["Tiler", ...]], False), (Union[int, Tuple["MyShape", ...]], False),
    (Union[int, cutlass.Integer, Tuple[int, ...]], False), (int, False), ("tuple[int, int]", False),
    ("Tuple[cute.Shape, ...]", False), (None, False),
])
def test_which_annotations_compile_numbers_in(annotation, compiled_in):
    """CuTe DSL's rule, observed: a Union with a member that is a tuple of Shape, IntTuple, Stride, Coord or Tile
    (by name); a look-alike Union over another name, or a tuple of such Unions, leaves the numbers runtime."""
    assert compiles_numbers_in(annotation) is compiled_in


def test_a_layout_annotation_compiles_python_numbers_in_and_keeps_dsl_numbers_runtime():
    assert seen(look_shape, ((3, 4), 5)) == ("tuple", [("tuple", [3, 4]), 5])
    assert seen(look_shape, 3) == 3
    assert seen(look_shape, ((3, cutlass.Int32(4)), 5)) == (
        "tuple", [("tuple", [3, ("Int32", "runtime")]), 5])


@cute.jit
def look_named_tuple(t):
    SEEN.append(_describe(t))


class Problem(typing.NamedTuple):
    m: int
    tile: cute.Shape
    unroll: cutlass.Constexpr[int]


def test_a_named_tuple_reads_its_fields_by_their_annotations():
    assert seen(look_named_tuple, Problem(5, (2, 2), 4)) == (
        "Problem", [("Int32", "runtime"), ("tuple", [2, 2]), 4])


@cute.kernel
def fill_kernel(y: cute.Tensor, v: cutlass.Int32, w: cutlass.Float32):
    tidx, _, _ = cute.arch.thread_idx()
    y[tidx] = v + cutlass.Int32(w)


@cute.jit
def fill_shape(y: cute.Tensor, problem):
    (m, n), w = problem
    fill_kernel(y, m * n, w).launch(grid=[m, 1, 1], block=[32, 1, 1])


@cute.jit
def fill_tile(y: cute.Tensor, problem: cute.Shape):
    (m, n), w = problem
    fill_kernel(y, m * n, w).launch(grid=[m, 1, 1], block=[32, 1, 1])


def tensor():
    return from_dlpack(np.zeros(64, np.int32))


def test_the_kernel_has_no_constant_for_the_numbers():
    # neither the numbers nor what is computed of them (37 * 41 = 1517, + 3 = 1520) are known to the kernel
    with target("sm_80"):
        runtime = cute.compile(fill_shape, tensor(), ((37, 41), 3))
        static = cute.compile(fill_tile, tensor(), ((37, 41), 3))
    assert runtime.plans[1].kind == "tree" and static.plans[1].kind == "const"
    assert not any(str(k) in runtime.ptx for k in (37, 41, 1517, 1520))
    assert [l.static_grid for l in runtime.launches] == [None]  # the grid is read from the call's tuple
    assert static.launches[0].static_grid is not None


@pytest.fixture
def recorded(stand_in):
    """Launches recorded as (grid, parameter bytes) by the stand-in driver; a compiled function made ready (for its
    fast path, where `fast`)."""
    launched = _GridAndParams(stand_in.launched)

    def ready(compiled, fast=True):
        stand_in(compiled)
        if fast:
            compiled._fast = compiled._build_fast_call()
            assert callable(compiled._fast), "a tuple of numbers takes the generated fast path"
        return compiled

    return launched, ready


class _GridAndParams:
    """The stand-in's record of launches, seen as (grid, parameter bytes) pairs."""

    def __init__(self, records):
        self.records = records

    def clear(self):
        self.records.clear()

    def _pairs(self):
        return [(grid, params) for _, grid, params, _ in self.records]

    def __eq__(self, other):
        return self._pairs() == other

    def __getitem__(self, i):
        return self._pairs()[i]

    def __repr__(self):
        return repr(self._pairs())


def general(compiled, *args):
    return [(tuple(w[1]), w[6]) for w in compiled.prepare(*args)]


def test_one_compilation_serves_two_tuples_in_every_call_path(recorded):
    launched, ready = recorded
    y = tensor()
    assert spec_key(fill_shape.signature, (y, ((3, 5), 1.0)), {}) == \
        spec_key(fill_shape.signature, (y, ((4, 6), 2.5)), {})
    with target("sm_80"):
        compiled = ready(cute.compile(fill_shape, y, ((3, 5), 1.0)))
    for problem in (((3, 5), 1.0), ((4, 6), 2.5), [(7, 2), 0.5]):
        launched.clear()
        compiled(y, problem)
        (m, n), w = problem
        assert launched == general(compiled, y, problem)
        grid, params = launched[0]
        assert grid == (m, 1, 1)
        assert np.array([m, n], np.int32).tobytes() + np.float32(w).tobytes() in params  # read from the tuple
    for call in (compiled, compiled._fast, lambda *a: compiled.prepare(*a)):
        with pytest.raises(DSLTypeError, match=r"argument 'problem\[0\]' must be a tuple of 2 elements"):
            call(y, ((3, 5, 1), 1.0))
        with pytest.raises(DSLValueError, match=r"takes integers"):
            call(y, ((3.5, 5), 1.0))


def test_the_function_cache_serves_other_values_of_the_tuple(recorded):
    _, ready = recorded
    y = tensor()
    with target("sm_80"):
        first = ready(cute.compile(fill_shape, y, ((3, 5), 1.0)))
        second = ready(cute.compile(fill_shape, y, ((9, 9), 4.0)))  # found before tracing, for other numbers
    assert second.info.get("level") == "function"
    assert second.plans[1].spec == first.plans[1].spec
    assert [c.kind for c in second.plans[1].children] == ["tree", "scalar"]
    assert general(second, y, ((4, 6), 2.5)) == general(first, y, ((4, 6), 2.5))


@cute.jit
def fill_tiled(y: cute.Tensor, problem):
    (m, n), w = problem
    tiled = cute.tile_to_shape(cute.make_layout((4, 4)), (m, n), (0, 1))  # assumes that 4 divides m and n
    fill_kernel(y, cute.size(tiled), w).launch(grid=[1, 1, 1], block=[32, 1, 1])


def test_what_the_kernel_assumes_of_the_numbers_is_checked_at_each_call(recorded):
    launched, ready = recorded
    y = tensor()
    with target("sm_80"):
        compiled = ready(cute.compile(fill_tiled, y, ((8, 8), 1.0)))
    assert len(compiled.assumptions) == 2
    for call in (compiled, compiled._fast, lambda *a: compiled.prepare(*a)):
        call(y, ((12, 4), 1.0))
        with pytest.raises(DSLValueError, match=r"breaks? what the compiled kernel assumes"):
            call(y, ((8, 6), 1.0))


@cute.jit
def print_problem(y: cute.Tensor, problem):
    (m, n), w = problem
    cute.printf("m={} n={}", m, n)  # on the host, at each call
    fill_kernel(y, m * n, w).launch(grid=[m, 1, 1], block=[32, 1, 1])


def test_host_code_reads_the_numbers_of_each_call(recorded, capsys):
    _, ready = recorded
    y = tensor()
    with target("sm_80"):
        compiled = ready(cute.compile(print_problem, y, ((3, 5), 1.0)), fast=False)  # host prints: the general path
    compiled(y, ((3, 5), 1.0))
    compiled(y, ((4, 6), 2.0))
    assert capsys.readouterr().out.splitlines() == ["m=3 n=5", "m=4 n=6"]


def _is_big(m):
    return m > 3  # not rewritten: Python asks for the truth, decided with the value compiled for (a guard)


@cute.jit
def branch_on_problem(y: cute.Tensor, problem):
    (m, n), w = problem
    if cutlass.const_expr(_is_big(m)):
        fill_kernel(y, n, w).launch(grid=[1, 1, 1], block=[32, 1, 1])
    else:
        fill_kernel(y, n, w).launch(grid=[1, 1, 1], block=[64, 1, 1])


def test_a_cached_compilation_is_used_only_for_numbers_that_decide_its_host_comparisons_alike():
    y = tensor()
    with target("sm_80"):
        big = cute.compile(branch_on_problem, y, ((8, 5), 1.0))
        again = cute.compile(branch_on_problem, y, ((5, 7), 2.0))  # decides `m > 3` the same way
        small = cute.compile(branch_on_problem, y, ((2, 7), 2.0))  # otherwise: the entry does not apply
    assert big.host_guards and again.info.get("level") == "function"
    assert small.info.get("level") != "function"
    assert (again.launches[0].block[0], small.launches[0].block[0]) == (32, 64)


@cute.jit
def constexpr_loop(t):
    for _ in cutlass.range_constexpr(t[0]):
        pass


@cute.jit
def python_index(t):
    return [0, 1, 2][t[0]]


@pytest.mark.parametrize("fn,message", [(constexpr_loop, "range_constexpr needs bounds known while tracing"),
                                        (python_index, "cannot be used as a Python index")])
def test_a_use_that_needs_a_static_value_is_refused(fn, message):
    """CuTe DSL refuses these too (ARG_NON_CONSTANT, PHASE_DYNAMIC_INDEX): the tuple's numbers are runtime values
    whatever the function does with them; a Constexpr or cute.Shape annotation makes them static."""
    with target("sm_80"), pytest.raises(DSLTypeError, match=message):
        cute.compile(fn, (2, 3))


@cute.jit
def takes_int32(n: cutlass.Int32):
    pass


@cute.jit
def takes_int(n: int):
    pass


@pytest.mark.parametrize("fn,value,message", [
    (takes_int32, (3, 4), "annotated Int32, a number, but is a tuple"),
    (takes_int, (3, 4), "annotated int, a number, but is a tuple"),
    (look_shape, [3, 4], "layout algebra type, which takes a number or a tuple of them, but is a list"),
])
def test_a_tuple_its_annotation_does_not_describe_is_refused(fn, value, message):
    with target("sm_80"), pytest.raises(DSLTypeError, match=message):
        cute.compile(fn, value)


_LOAD_SCRIPT = r"""
import sys
sys.path.insert(0, sys.argv[2])
import warpweave as cutlass
from warpweave._dsl.values.runtime import RuntimeTensor
from warpweave.cute.runtime import load_module
f = load_module(sys.argv[1]).fill
y = RuntimeTensor(None, 0x30000000, (64,), (1,), cutlass.Int32, "cuda", 16)
f(y, ((4, 6), 2.5))
f(y, ((7, 2), 0.5))
"""


@stand_in_driver
@pytest.mark.skipif(not (aot.cc() and aot.cxx()), reason="needs a C and a C++ compiler")
def test_an_exported_function_takes_the_numbers_of_the_tuple(tmp_path):
    from warpweave._dsl.values.runtime import RuntimeTensor

    with target("sm_80"):
        compiled = cute.compile(fill_shape, make_fake_tensor(cutlass.Int32, (64,), (1,), assumed_align=16),
                                ((3, 5), 1.0))
    _, o = export(compiled, tmp_path, "fill")
    _, out = run_loading_script(compiled, tmp_path, o, _LOAD_SCRIPT)
    launches = out["calls"][0][2]
    y = RuntimeTensor(None, 0x30000000, (64,), (1,), cutlass.Int32, "cuda", 16)
    assert [{k: v for k, v in l.items() if k != "attrs"} for l in launches] == \
        aot.python_launches(compiled, y, ((4, 6), 2.5)) + aot.python_launches(compiled, y, ((7, 2), 0.5))
