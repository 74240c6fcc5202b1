"""cute.arch.exp2 and cute.arch.exp (CuTe DSL's NVVM wrappers): the hardware's approximate base-2 exponential of
a Float32 (flushing subnormals), exp as exp2 of x log2(e); what attention kernels use for their softmax. They are
cute.math's fastmath forms, of Float32 values (a Python number is one)."""
from __future__ import annotations

from ..values.numeric import Float32
from . import math as _math


def exp2(a, *, loc=None, ip=None) -> Float32:
    """2 ** a, approximately, for a Float32 a."""
    return _math.exp2(Float32(a), fastmath=True)


def exp(a, *, loc=None, ip=None) -> Float32:
    """e ** a, approximately (2 ** (a log2(e))), for a Float32 a."""
    return _math.exp(Float32(a), fastmath=True)
