"""PyTorch interop: dtypes and the current stream."""
from __future__ import annotations

from ._dsl import numeric as _n


def dtype(t):
    """The torch dtype of a warpweave numeric type."""
    import torch

    table = {_n.Float16: torch.float16, _n.BFloat16: torch.bfloat16, _n.Float32: torch.float32,
             _n.TFloat32: torch.float32, _n.Float64: torch.float64, _n.Int8: torch.int8, _n.Int16: torch.int16,
             _n.Int32: torch.int32, _n.Int64: torch.int64, _n.Uint8: torch.uint8, _n.Boolean: torch.bool,
             _n.Float8E4M3FN: torch.float8_e4m3fn, _n.Float8E5M2: torch.float8_e5m2}
    return table[_n.dtype(t)]


def current_stream():
    import torch

    return torch.cuda.current_stream()
