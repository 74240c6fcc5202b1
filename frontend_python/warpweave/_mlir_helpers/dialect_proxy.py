"""`cutlass._mlir_helpers.dialect_proxy`: `DialectAutoConvertProxy(dialect)`, a dialect module whose ops take DSL
values where IR values go (a number, a Vector, a pointer, a cutlass.Array: each by its `ir_value()`), so a program
writes `llvm.addrspacecast(t, smem.ir_value())` or passes the DSL value itself."""
from .._dsl.base.ir_values import Value


def _converted(x):
    if isinstance(x, Value) or isinstance(x, type):
        return x
    if isinstance(x, (list, tuple)):
        return type(x)(_converted(v) for v in x)
    to_ir = getattr(x, "ir_value", None)
    return to_ir() if callable(to_ir) else x


class DialectAutoConvertProxy:
    """The ops of `dialect`, their arguments converted to IR values; its other names (types, enums) as they are."""

    def __init__(self, dialect):
        self._dialect = dialect

    def __getattr__(self, name):
        attr = getattr(self._dialect, name)
        if not callable(attr) or isinstance(attr, type):
            return attr

        def op(*args, **kwargs):
            return attr(*(_converted(a) for a in args), **{k: _converted(v) for k, v in kwargs.items()})

        op.__name__ = getattr(attr, "__name__", name)
        op.__doc__ = getattr(attr, "__doc__", None)
        return op

    def __repr__(self):
        return f"DialectAutoConvertProxy({getattr(self._dialect, '__name__', self._dialect)})"


__all__ = ["DialectAutoConvertProxy"]
