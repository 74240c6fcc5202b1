"""`cutlass._mlir.dialects.math`: elementwise math on float (absi: integer) scalars and vectors, with an optional
fastmath flag; the compiler rewrites what NVPTX cannot select (exp, log, tanh, ...) into what it can."""
from ..._dsl.base.ir_ops import (
    math_absf as absf, math_absi as absi, math_ceil as ceil, math_copysign as copysign, math_cos as cos,
    math_erf as erf, math_exp as exp, math_exp2 as exp2, math_floor as floor, math_fma as fma, math_log as log,
    math_log2 as log2, math_log10 as log10, math_powf as powf, math_round as round, math_rsqrt as rsqrt,
    math_sin as sin, math_sqrt as sqrt, math_tanh as tanh, math_trunc as trunc,
)

__all__ = ["absf", "absi", "ceil", "copysign", "cos", "erf", "exp", "exp2", "floor", "fma", "log", "log2", "log10",
           "powf", "round", "rsqrt", "sin", "sqrt", "tanh", "trunc"]
