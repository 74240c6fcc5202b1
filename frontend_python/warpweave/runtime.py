"""warpweave.runtime (CuTe DSL's cutlass.runtime): the host-side runtime objects, as in cute.runtime."""
from .cute.runtime import *  # noqa: F401,F403
from .cute.runtime import __all__  # noqa: F401
