"""cute.arch.exp2 and cute.arch.exp (CuTe DSL's NVVM wrappers): the hardware's approximate base-2 exponential of
a Float32 (flushing subnormals), exp as exp2 of x log2(e); what attention kernels use for their softmax. They are
cute.math's fastmath forms, of Float32 values (a Python number is one); exp_packed_f32x2 is exp of a pair."""
from __future__ import annotations

from ..atoms.atoms import current_cc, entries_named, entry_usable
from ..base import trace
from ..base.errors import DSLTypeError, user_location
from ..values.numeric import Float32
from . import math as _math
from .arch import mul_packed_f32x2


def exp2(a, *, loc=None, ip=None) -> Float32:
    """2 ** a, approximately, for a Float32 a."""
    return _math.exp2(Float32(a), fastmath=True)


def exp(a, *, loc=None, ip=None) -> Float32:
    """e ** a, approximately (2 ** (a log2(e))), for a Float32 a."""
    return _math.exp(Float32(a), fastmath=True)


_LOG2_E = 1.4426950408889634


def _packed_mul_usable() -> bool:
    cc = current_cc()
    return any(entry_usable(b, ins, cc) for b, ins in entries_named("arch.mul_packed_f32x2"))


def exp_packed_f32x2(a, *, loc=None, ip=None):
    """(e ** a0, e ** a1), approximately, of a pair of Float32: both scaled by log2(e) in one packed multiply where
    the target's backend has one (else two multiplies), then each through exp2."""
    if not isinstance(a, (tuple, list)) or len(a) != 2:
        raise DSLTypeError(f"cute.arch.exp_packed_f32x2 takes a pair (a0, a1) of Float32, got {a!r}",
                           user_location(2))
    x = (Float32(a[0]), Float32(a[1]))
    if trace.in_kernel() and _packed_mul_usable():
        y = mul_packed_f32x2(x, (Float32(_LOG2_E), Float32(_LOG2_E)))
    else:
        y = (x[0] * _LOG2_E, x[1] * _LOG2_E)
    return tuple(_math.exp2(v, fastmath=True) for v in y)
