"""@cute.experimental.kernel, .jit and .compile: CuTe DSL's extension API declares kernels as @cute.kernel does;
what differs is what a kernel sees. Its global-memory tensor arguments arrive bounded (bounded.py), so that the
copies of cute.experimental predicate themselves against the argument's shape."""
from __future__ import annotations

from ..._dsl.call.jit import compile, jit  # noqa: F401,A004 - the same host functions and compile
from ..._dsl.host.kernel_trace import KernelFunction
from .bounded import bound_argument


class BoundedKernel(KernelFunction):
    """A @cute.experimental.kernel: a @cute.kernel whose global-memory tensor arguments are bounded tensors."""

    @property
    def rewritten(self):
        body = KernelFunction.rewritten.fget(self)

        def entry(*args, **kwargs):
            return body(*(bound_argument(a) for a in args), **{k: bound_argument(v) for k, v in kwargs.items()})

        entry.__name__ = self.fn.__name__
        return entry


def _decorate(fn, preprocessor: bool):
    k = BoundedKernel(fn)
    if not preprocessor:
        k._rewritten = fn
    return k


def kernel(fn=None, *, preprocessor: bool = True):
    """@cute.experimental.kernel / @cute.experimental.kernel(preprocessor=False): launched as a @cute.kernel."""
    if fn is None:
        return lambda f: _decorate(f, preprocessor)
    return _decorate(fn, preprocessor)
