"""`cutlass._mlir_helpers.arith`: CuTe DSL's helpers over the arith dialect: the dialect's ops, and `bitcast` with
the value first (`bitcast(value, type)`: QuACK's complex numbers pack two f32 lanes into one f64 so)."""
from .._mlir.dialects import arith as _dialect
from .._mlir.dialects.arith import *  # noqa: F401,F403 - the dialect's ops, under the helpers' module too
from .._mlir.dialects.arith import __all__ as _dialect_names


def bitcast(value, to_type, *, loc=None, ip=None):
    """value's bits as a to_type (the same width); value is an IR value or a DSL number."""
    return _dialect.bitcast(to_type, value, loc=loc, ip=ip)


__all__ = sorted(set(_dialect_names) | {"bitcast"})


def __getattr__(name):
    return getattr(_dialect, name)  # an op the dialect lacks is refused there, naming the op
