"""JIT argument adapters (cutlass.base_dsl.runtime.jit_arg_adapters): an argument of a registered type is
converted by its adapter at @cute.jit calls, cute.compile and calls of the compiled function, inside lists and
tuples too; scopes and lazy registrations as CuTe DSL has them; mistakes refused at the user's line."""
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.base_dsl.runtime.jit_arg_adapters import JitArgAdapterRegistry as R
from warpweave.base_dsl.runtime.jit_arg_adapters import implements_dynamic_expression, implements_jit_argument

from dsl_helpers import line_in, target


@pytest.fixture(autouse=True)
def clean_registry(monkeypatch):
    monkeypatch.setattr(R, "jit_arg_adapter_registry", {})
    monkeypatch.setattr(R, "scoped_jit_arg_adapter_registries", {})
    monkeypatch.setattr(R, "lazy_jit_arg_adapter_registry", {})


class Celsius:
    def __init__(self, degrees):
        self.degrees = degrees


@cute.jit
def show(t, scale: cutlass.Constexpr):
    cute.printf("{}", t * scale)


@cute.jit
def show_pair(ts):
    cute.printf("{} {}", ts[0], ts[1])


def test_adapter_converts_at_compile_and_each_call(capsys):
    seen = []

    @cutlass.register_jit_arg_adapter(Celsius)
    def to_int(c):
        seen.append(c.degrees)
        return cutlass.Int32(c.degrees)

    assert R.get_registered_adapter(Celsius(1)) is to_int
    with target("sm_80"):
        f = cute.compile(show, Celsius(5), 2)
        f(Celsius(7))
        f(Celsius(-3))
        show(Celsius(4), 3)  # through the @cute.jit call
    # each value read at its call: a runtime Int32, not the compile's 5
    assert capsys.readouterr().out.splitlines() == ["14", "-6", "12"]
    assert 7 in seen and -3 in seen and 4 in seen


def test_elements_of_a_tuple_are_converted(capsys):
    R.register_jit_arg_adapter(Celsius)(lambda c: cutlass.Int32(c.degrees))
    with target("sm_80"):
        f = cute.compile(show_pair, (Celsius(1), Celsius(2)))
        f((Celsius(10), Celsius(20)))
    assert capsys.readouterr().out.splitlines() == ["10 20"]


def test_without_an_adapter_the_type_is_a_compile_time_value():
    assert R.get_registered_adapter(Celsius(1)) is None


class Sub(Celsius):
    pass


def test_exact_type_scopes_and_lazy():
    a, b = (lambda c: 1), (lambda c: 2)
    R.register_jit_arg_adapter(Celsius, scope="s1")(a)
    assert R.get_registered_adapter(Celsius(0)) is a      # the one scoped adapter, found unscoped
    assert R.get_registered_adapter(Sub(0)) is None        # by exact type, as CuTe DSL looks up
    R.register_jit_arg_adapter(Celsius, scope="s2")(b)
    with pytest.raises(RuntimeError, match="ambiguous"):
        R.get_registered_adapter(Celsius(0))
    with R.using_scope("s2"):
        assert R.get_registered_adapter(Celsius(0)) is b
    assert R.call_with_scope("s1", R.get_registered_adapter, Celsius(0)) is a
    with R.using_scope("other"):
        assert R.get_registered_adapter(Celsius(0)) is None
    import fractions
    R.register_jit_arg_adapter("fractions.Fraction", lazy=True)(a)
    assert R.get_registered_adapter(fractions.Fraction(1, 2)) is a


def test_registration_mistakes_at_the_users_line():
    R.register_jit_arg_adapter(Celsius)(lambda c: c)
    with pytest.raises(RuntimeError, match="already registered") as e:
        R.register_jit_arg_adapter(Celsius)(lambda c: c)  # twice
    assert e.value.location == (__file__, line_in(__file__, "R.register_jit_arg_adapter(Celsius)(lambda c: c)  # twice"))
    with pytest.raises(RuntimeError, match="a Python type must be provided"):
        R.register_jit_arg_adapter()
    with pytest.raises(RuntimeError, match="must be registered with a Python type"):
        R.register_jit_arg_adapter("fractions.Fraction")
    with pytest.raises(RuntimeError, match="module.QualName"):
        R.register_jit_arg_adapter(Sub, lazy=True)
    with pytest.raises(RuntimeError, match="already registered"):
        R.register_jit_arg_adapter(int)


def test_protocol_helpers():
    class J:
        def __c_pointers__(self): return []
        def __get_mlir_types__(self): return []
        def __new_from_mlir_values__(self, v): return self

    class D:
        def __extract_mlir_values__(self): return []

    assert implements_jit_argument(J()) and not implements_jit_argument(D())
    assert not implements_dynamic_expression(D()) and implements_dynamic_expression(D(), partial=True)
