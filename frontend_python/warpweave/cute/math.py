"""cute.math: elementwise math on DSL numbers and TensorSSA values (exp, exp2, log, sqrt, rsqrt, sin, tanh, erf,
fma, ...), each with CuTe DSL's `fastmath=` flag."""
from .._dsl.device.math import *  # noqa: F401,F403
from .._dsl.device.math import __all__  # noqa: F401
