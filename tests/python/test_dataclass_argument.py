"""A dataclass argument of a @cute.jit function: its fields are runtime values where they hold numbers, as CuTe DSL
takes them (call/arg_dataclass.py).

Properties, without a GPU (compiled for sm_80; launches recorded by the launcher's stand-ins, test_native_call.py):
- an int field is an Int32, a float a Float32, a bool a Boolean while tracing, at any depth of nested dataclasses;
  a field annotated cutlass.Constexpr, None, a string or an enumeration stays a Python value;
- a call's numbers reach the kernel's parameters, whatever they are: one compilation serves every value (the jit
  call compiles once), and a compile-time field of another value is refused at the call, naming the field;
- the function sees the dataclass made through its own __init__: __post_init__ derives its init=False fields
  from the call's values, not from the ones compiled with;
- a dataclass of compile-time values only is one compile-time value, as before; a call with another type is refused.
"""
import dataclasses
import enum
import inspect
import struct
import typing

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base.errors import DSLTypeError, DSLValueError
from warpweave._dsl.call import arg_plan

from dsl_helpers import target
from test_native_call import general, recorded  # noqa: F401 - a fixture


class Mode(enum.Enum):
    ADD = 1
    SUB = 2


@dataclasses.dataclass(frozen=True)
class Inner:
    k: int = 3


@dataclasses.dataclass(frozen=True)
class Config:
    m: int = 5
    scale: float = 0.5
    flag: bool = True
    unroll: cutlass.Constexpr[int] = 2
    mode: Mode = Mode.ADD
    label: typing.Optional[str] = None
    inner: Inner = dataclasses.field(default_factory=Inner)
    twice: int = dataclasses.field(init=False, default=0)

    def __post_init__(self):
        object.__setattr__(self, "twice", self.m * 2)


@cute.kernel
def params_kernel(a: cutlass.Int32, b: cutlass.Float32, c: cutlass.Int32, d: cutlass.Int32,
                  flag: cutlass.Boolean):
    if flag:
        cute.printf("%d %f %d %d", a, b, c, d)


SEEN = []


@cute.jit
def takes_config(cfg):
    SEEN.append({f: type(getattr(cfg, f)).__name__ for f in ("m", "scale", "flag", "unroll", "mode", "label")} |
                {"inner.k": type(cfg.inner.k).__name__, "twice": type(cfg.twice).__name__})
    bump = cfg.m + 1 if cfg.mode == Mode.ADD else cfg.m - 1
    params_kernel(bump, cfg.scale, cfg.inner.k * cfg.unroll, cfg.twice, cfg.flag).launch(grid=[1, 1, 1],
                                                                                         block=[32, 1, 1])


def _scalars(c, params: bytes) -> list:
    """The kernel's runtime parameters (the integers of the host and the scalars), in order, read back from a
    launch's parameter bytes."""
    (launch,) = c.launches
    _, offsets = c._packers[launch.kernel]
    return [struct.unpack_from("=" + p.fmt, params, o)[0] for p, o in zip(launch.params, offsets)
            if p.kind in ("scalar", "sym")]


def _compiled(monkeypatch, fn, *args):
    """Compiled, its kernels' loading stood in for: its calls launch through the recorded launcher."""
    with target("sm_80"):
        c = cute.compile(fn, *args)
    c.compile_again = None
    monkeypatch.setattr(c, "_load", lambda: None)
    c._functions = {launch.kernel: object() for launch in c.launches}
    return c


def test_numbers_are_runtime_values_and_the_others_compiled_in(recorded, monkeypatch):
    SEEN.clear()
    _compiled(monkeypatch, takes_config, Config())
    assert SEEN == [{"m": "Int32", "scale": "Float32", "flag": "Boolean", "unroll": "int", "mode": "Mode",
                     "label": "NoneType", "inner.k": "Int32", "twice": "Int32"}]


@pytest.mark.parametrize("m,scale,flag,k", [(5, 0.5, True, 3), (-40, 2.25, False, 11), (1 << 20, -1.0, True, 0)])
def test_each_call_passes_its_own_numbers(recorded, monkeypatch, m, scale, flag, k):
    c = _compiled(monkeypatch, takes_config, Config())
    ((_, _, params),) = general(c, Config(m=m, scale=scale, flag=flag, inner=Inner(k)))
    # the call's fields, which the kernel's arithmetic (m + 1, k * unroll, twice = 2 * m) starts from
    assert _scalars(c, params) == [m, k, scale, flag]
    launched, _ = recorded
    launched.clear()
    c(Config(m=m, scale=scale, flag=flag, inner=Inner(k)))  # the call itself, which takes the general path
    ((_, _, params),) = launched
    assert _scalars(c, params) == [m, k, scale, flag]


def test_one_compilation_serves_every_value():
    """The jit call's key of a dataclass argument is its type and its compile-time fields, not its numbers."""
    def key(cfg):
        sig = inspect.signature(takes_config.fn if hasattr(takes_config, "fn") else takes_config)
        return (arg_plan.spec_key(sig, [cfg], {}), arg_plan.arguments_key(sig, [cfg], {}, repr))
    assert key(Config(m=1)) == key(Config(m=2, scale=3.0, flag=False, inner=Inner(9)))
    assert key(Config()) != key(Config(unroll=4))
    assert key(Config()) != key(Config(mode=Mode.SUB))


def test_a_compile_time_field_of_another_value_is_refused(recorded, monkeypatch):
    c = _compiled(monkeypatch, takes_config, Config())
    with pytest.raises(DSLValueError, match=r"cfg\.unroll"):
        general(c, Config(unroll=4))
    with pytest.raises(DSLValueError, match=r"cfg\.mode"):
        general(c, Config(mode=Mode.SUB))
    with pytest.raises(DSLTypeError, match="must be a Config"):
        general(c, Inner())


@dataclasses.dataclass
class Names:
    first: str = "a"
    mode: Mode = Mode.ADD


@cute.jit
def takes_names(names, n: cutlass.Int32):
    params_kernel(n, 1.0, n, n, names.mode == Mode.ADD).launch(grid=[1, 1, 1], block=[32, 1, 1])


def test_a_dataclass_of_compile_time_values_is_one(recorded, monkeypatch):
    """Compared by its fields (it is not hashable: eq without frozen), so that an equal one made for each call
    selects the same compilation, on the general path and the fast ones."""
    c = _compiled(monkeypatch, takes_names, Names(), 4)
    assert [p.kind for p in c.plans] == ["const", "int"]
    general(c, Names(), 9)
    with pytest.raises(DSLValueError, match="compile-time constant"):
        general(c, Names(first="b"), 9)
    launched, _ = recorded
    c._fast = c._build_fast_call()
    for _ in range(3):
        c(Names(), 9)
    assert len(launched) == 3
    with pytest.raises(DSLValueError, match="compile-time constant"):
        c(Names(mode=Mode.SUB), 9)


def test_an_equal_dataclass_keys_the_same_compilation():
    sig = inspect.signature(takes_names.fn if hasattr(takes_names, "fn") else takes_names)
    assert arg_plan.spec_key(sig, [Names(), 1], {}) == arg_plan.spec_key(sig, [Names(), 2], {})
    assert arg_plan.spec_key(sig, [Names(), 1], {}) != arg_plan.spec_key(sig, [Names(first="c"), 1], {})


def test_the_plan_read_back_from_the_cache_reads_calls_as_the_traced_one(recorded, monkeypatch):
    """The function cache stores a plan's fields and completes it with the values of the call that finds it
    (function_cache.rebuild): the dataclass's plan read back launches as the one traced."""
    c = _compiled(monkeypatch, takes_config, Config())
    (plan,) = c.plans
    fields = {"kind": plan.kind, **plan.stored_fields()}
    kind = arg_plan.kind_named(fields.pop("kind"))
    back = kind.__new__(kind)
    back.__dict__.update(fields)
    call = Config(m=77, scale=1.5, inner=Inner(4))
    back.restore([call])
    assert back.spec == plan.spec
    c.plans = [back]
    ((_, _, params),) = general(c, call)
    assert _scalars(c, params) == [77, 4, 1.5, True]
