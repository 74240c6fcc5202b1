"""Compile-only runs: PyTorch operations that have no CPU kernel.

A compile-only run makes a program's "cuda" tensors in host memory (compile_only.py), so its host code runs on
PyTorch's CPU kernels. Some operations have none: CUDA-only ones such as the grouped GEMMs a program computes its
reference result with (torch.nn.functional.scaled_grouped_mm). Such an operation is answered from its meta kernel
(PyTorch's shape function, which computes no values): its results have the shapes, strides and dtypes the real
operation gives (an out= tensor is resized as it would be), and their values are NaN, so that nothing computed from
them can pass for a result: a comparison with them fails, as it would with a wrong one. The run says so where it
happens and in its summary ("host result(s) not computed"), naming the operation and the program's line.

Only operations whose results are all floating-point tensors of a type with a NaN are answered (integer results
have no value that could not be mistaken for a computed one); for others, or where the meta kernel cannot tell the
shapes either (a shape read from the values), the run stops at the operation with PyTorch's error.
"""
from __future__ import annotations

import os
import sys

_NO_CPU_KERNEL = "from the 'CPU' backend"


def lacks_cpu_kernel(exc: BaseException) -> bool:
    """PyTorch's error for an operation with no kernel for CPU tensors."""
    return isinstance(exc, NotImplementedError) and _NO_CPU_KERNEL in str(exc)


def _nan_fillable(torch, t) -> bool:
    if not t.dtype.is_floating_point:
        return False
    try:
        torch.empty(1, dtype=t.dtype).fill_(float("nan"))
    except (RuntimeError, TypeError, NotImplementedError):
        return False
    return True


def answer_on_meta(torch, func, args, kwargs, exc, session, aligned):
    """func(*args, **kwargs) failed with exc for want of a CPU kernel: its results from the meta kernel, NaN-filled
    host tensors (`aligned` places a new one as CUDA would), noted in session."""
    originals = {}

    def to_meta(x):
        if isinstance(x, torch.Tensor) and x.device.type == "cpu":
            m = x.to("meta")
            originals[id(m)] = x
            return m
        return x

    margs, mkwargs = _tree_map(to_meta, (tuple(args), dict(kwargs)))
    try:
        mout = func(*margs, **mkwargs)
    except Exception:
        raise exc from None    # PyTorch's own error: the shapes are not known without the values either
    outs = []
    _tree_map(lambda x: outs.append(x) if isinstance(x, torch.Tensor) else None, mout)
    if not outs or not all(_nan_fillable(torch, t) for t in outs):
        raise exc

    def on_host(m):
        if not isinstance(m, torch.Tensor):
            return m
        t = originals.get(id(m))
        if t is None:
            t = aligned(torch, torch.empty_strided(tuple(m.shape), tuple(m.stride()), dtype=m.dtype))
        elif tuple(t.shape) != tuple(m.shape):
            t.resize_(m.shape)  # an out= argument, resized as the operation would
        return t.fill_(float("nan"))

    out = _tree_map(on_host, mout)
    name = getattr(func, "__name__", None) or str(func)
    module = getattr(func, "__module__", None) or "torch"
    session.note_not_computed(f"{module}.{name}", [(tuple(t.shape), str(t.dtype).replace("torch.", ""))
                                                   for t in outs], _program_line(torch))
    return out


def _tree_map(fn, x):
    """fn over the leaves of nested tuples, lists and dicts (an operation's arguments and results), kept nested."""
    if isinstance(x, (tuple, list)):
        items = [_tree_map(fn, y) for y in x]
        return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)
    if isinstance(x, dict):
        return {k: _tree_map(fn, y) for k, y in x.items()}
    return fn(x)


def _program_line(torch):
    """The innermost line of the program's own code: not PyTorch's (torch.nn.functional calling the operation),
    nor warpweave's."""
    libs = tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep
                 for m in (torch, sys.modules.get("warpweave")) if m is not None)
    f = sys._getframe(1)
    while f is not None:
        path = os.path.abspath(f.f_code.co_filename)
        if not path.startswith(libs) and not f.f_code.co_filename.startswith("<"):
            return (f.f_code.co_filename, f.f_lineno)
        f = f.f_back
    return None
