"""`cutlass._mlir_helpers.math`: CuTe DSL's math helpers over DSL numbers, whose keywords pick the hardware's
variants (rcp's approx / ftz), and the math dialect's ops on IR values under their own names."""
from .._dsl.base.errors import DSLValueError, user_location
from .._dsl.device.math import rcp as _rcp
from .._mlir.dialects import math as _dialect

__all__ = ["rcp"] + list(_dialect.__all__)


def rcp(x, fastmath=False, approx=False, rounding=None, ftz=False, *, loc=None, ip=None):
    """1/x of a float DSL number (or a tuple of them): correctly rounded, or with approx the hardware's
    approximate reciprocal (ftz flushes denormals, which only the approximation offers)."""
    if ftz and not approx:
        raise DSLValueError("rcp: ftz= needs approx=True (only the approximate reciprocal flushes denormals)",
                            user_location(2))
    if rounding is not None and str(getattr(rounding, "value", rounding)).lower() not in ("rn", "nearest"):
        raise DSLValueError(f"rcp: rounding {rounding} is not offered (the reciprocal rounds to nearest)",
                            user_location(2))
    return _rcp(x, approx=approx, ftz=ftz)


def __getattr__(name):
    return getattr(_dialect, name)
