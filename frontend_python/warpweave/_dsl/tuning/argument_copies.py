"""The tensors among a tuned function's arguments: snapshots to restore them after the search, copies that each
timed call reads (a kernel that accumulates into its output must not see another candidate's results), and the
comparison of a candidate's results with the reference configuration's."""
from __future__ import annotations

import copy
import sys

import numpy as np

from ..values.runtime import RuntimeTensor, is_torch_tensor


def _is_array(v) -> bool:
    if is_torch_tensor(v):
        return True
    return type(v).__module__ == "numpy" and type(v).__name__ == "ndarray"


def arrays_among(values):
    """The torch tensors (and numpy arrays) among the arguments, in argument order."""
    out = []

    def walk(v):
        if _is_array(v):
            out.append(v)
        elif isinstance(v, RuntimeTensor) and _is_array(getattr(v, "source", None)):
            out.append(v.source)  # from_dlpack's view of a torch tensor (or numpy array)
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
    walk(values)
    return out


def clone_array(a):
    """A copy of a torch tensor with the same strides (a view into a larger buffer included: a kernel reads the
    copy by the strides it was compiled for); numpy arrays (host data, tests) are copied plainly."""
    if hasattr(a, "clone"):
        import torch

        return torch.empty_strided(a.size(), a.stride(), dtype=a.dtype, device=a.device).copy_(a)
    return a.copy()


def _copy_into(dst, src) -> None:
    if hasattr(dst, "copy_"):
        dst.copy_(src)
    else:
        dst[...] = src


def clone_tree(v):
    if _is_array(v):
        return clone_array(v)
    if isinstance(v, RuntimeTensor) and _is_array(getattr(v, "source", None)):
        # the same view (marks, alignment) of a copy of its memory
        c = clone_array(v.source)
        out = copy.copy(v)
        out.source = c
        out.data_ptr = int(c.data_ptr() if hasattr(c, "data_ptr") else c.ctypes.data)
        for k, val in vars(out).items():
            if isinstance(val, list):  # the marks: the copy's own
                setattr(out, k, list(val))
        out._spec = None
        return out
    if isinstance(v, tuple):
        return tuple(clone_tree(x) for x in v)
    if isinstance(v, list):
        return [clone_tree(x) for x in v]
    if isinstance(v, dict):
        return {k: clone_tree(x) for k, x in v.items()}
    return v


def tolerance(dtype_name: str, itemsize: int, is_float: bool) -> tuple[float, float]:
    """(rtol, atol) between two configurations of one kernel: their summation orders may differ."""
    if not is_float:
        return 0.0, 0.0
    if itemsize == 1:  # fp8
        return 0.125, 0.125
    if itemsize == 2:  # fp16, bf16
        return 2e-2, 2e-2
    return 1e-4, 1e-5


def same_results(ref: list, got: list) -> str | None:
    """None when every tensor of `got` matches `ref` within tolerance, else what differs."""
    for i, (a, b) in enumerate(zip(ref, got)):
        if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
            return f"tensor {i}: {tuple(b.shape)} {b.dtype} against {tuple(a.shape)} {a.dtype}"
        if hasattr(a, "clone"):  # torch
            import torch

            is_float, itemsize = a.dtype.is_floating_point, a.element_size()
            x, y = (a.float(), b.float()) if is_float and itemsize == 1 else (a, b)
            rtol, atol = tolerance(str(a.dtype), itemsize, is_float)
            close = torch.isclose(x, y, rtol=rtol, atol=atol, equal_nan=True)
            bad, n = int((~close).sum().item()), a.numel()
        else:
            is_float = np.issubdtype(a.dtype, np.floating)
            rtol, atol = tolerance(str(a.dtype), a.dtype.itemsize, is_float)
            close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True) if is_float else a == b
            bad, n = int((~close).sum()), a.size
        if bad:
            return f"tensor {i}: {bad} of {n} elements differ from the reference configuration's"
    return None


def sync_torch():
    torch = sys.modules.get("torch")  # only a program that uses torch has device work of torch's to wait for
    if torch is not None and torch.cuda.is_available():
        torch.cuda.synchronize()


def restorer(values):
    """(the arrays among `values`, a function that copies back into them the values they hold now)."""
    arrays = arrays_among(values)
    saved = [clone_array(a) for a in arrays]

    def restore():
        for a, s in zip(arrays, saved):
            _copy_into(a, s)
        if arrays:
            sync_torch()
    return arrays, restore
