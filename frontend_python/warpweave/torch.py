"""PyTorch interop (CuTe DSL's cutlass.torch): dtypes, streams, and making test tensors for kernels.

`matrix(l, mode0, mode1, is_mode0_major, dtype)` makes an (mode0, mode1, l) tensor on the host with the given
majorness; `cute_tensor_like(t, dtype, is_dynamic_layout)` copies it to the GPU and wraps it for a kernel;
`create_and_permute_torch_tensor` and `convert_cute_tensor` do the same pieces for any rank. Element types that
torch stores differently (fp8 held as uint8) are converted here, so that the kernel sees the values asked for.
"""
from __future__ import annotations

import ctypes
import enum
import math
from dataclasses import dataclass

import numpy as np

from . import _core
from ._dsl.values import fp8 as _fp8
from ._dsl.values import numeric as _n
from ._dsl.base.errors import DSLTypeError, DSLValueError, user_location
from ._dsl.values.runtime import RuntimeTensor, from_dlpack, leading_dim_candidates


def _torch():
    import torch

    return torch


def _table():
    torch = _torch()
    table = {_n.Float16: torch.float16, _n.BFloat16: torch.bfloat16, _n.Float32: torch.float32,
             _n.TFloat32: torch.float32, _n.Float64: torch.float64, _n.Int8: torch.int8, _n.Int16: torch.int16,
             _n.Int32: torch.int32, _n.Int64: torch.int64, _n.Uint8: torch.uint8, _n.Boolean: torch.bool,
             _n.Float8E4M3FN: torch.float8_e4m3fn, _n.Float8E5M2: torch.float8_e5m2}
    for name, tname in (("Uint16", "uint16"), ("Uint32", "uint32"), ("Uint64", "uint64"),
                        ("Float8E8M0FNU", "float8_e8m0fnu"), ("Float4E2M1FN", "float4_e2m1fn_x2")):
        t, tt = getattr(_n, name, None), getattr(torch, tname, None)
        if t is not None and tt is not None:
            table[t] = tt
    return table


def dtype(t):
    """The torch dtype of a warpweave numeric type."""
    table = _table()
    t = _n.dtype(t)
    if t not in table:
        raise DSLTypeError(f"cutlass.torch.dtype: torch has no dtype for {t.__name__}", user_location(2))
    return table[t]


def current_stream():
    """torch's current CUDA stream (usable wherever a kernel takes a stream)."""
    return _torch().cuda.current_stream()


def default_stream():
    """torch's default CUDA stream."""
    return _torch().cuda.default_stream()


class TensorInitType(enum.Enum):
    SKIP = "skip"          # uninitialised (torch.empty)
    SCALAR = "scalar"      # every element ScalarInitConfig.value
    RANDOM = "random"      # integers uniform in [min_val, max_val] (exact in every element type)
    GAUSSIAN = "gaussian"  # normal(mean, std) * scale


@dataclass
class ScalarInitConfig:
    value: float = 0.0


@dataclass
class RandomInitConfig:
    min_val: int = -2
    max_val: int = 2


@dataclass
class GaussianInitConfig:
    mean: float = 0.0
    std: float = 1.0
    scale: float = 1.0


def _fill(t, init_type, init_config):
    torch = _torch()
    if init_type is TensorInitType.SKIP:
        return t
    if init_type is TensorInitType.SCALAR:
        cfg = init_config or ScalarInitConfig()
        return t.fill_(cfg.value)
    if init_type is TensorInitType.RANDOM:
        cfg = init_config or RandomInitConfig()
        if cfg.max_val < cfg.min_val:
            raise DSLValueError(f"RandomInitConfig: max_val {cfg.max_val} < min_val {cfg.min_val}", user_location(3))
        src = torch.randint(int(cfg.min_val), int(cfg.max_val) + 1, tuple(t.shape), dtype=torch.int64)
        return t.copy_(src.to(t.dtype))
    if init_type is TensorInitType.GAUSSIAN:
        cfg = init_config or GaussianInitConfig()
        src = torch.randn(tuple(t.shape), dtype=torch.float32) * cfg.std + cfg.mean
        return t.copy_((src * cfg.scale).to(t.dtype))
    raise DSLTypeError(f"init_type is a TensorInitType, got {init_type!r}", user_location(3))


def create_and_permute_torch_tensor(shape, dtype, permute_order=None, init_type=TensorInitType.RANDOM,
                                    init_config=None, device=None):
    """A compact (row-major) torch tensor of `shape` and torch dtype, filled, then permuted: the result is
    `torch.empty(shape).permute(permute_order)`, so its mode i is mode permute_order[i] of `shape`, and the mode
    for which permute_order names the last one of `shape` is contiguous. E.g. shape (l, n, m) with order (2, 1, 0)
    gives an (m, n, l) tensor with m contiguous."""
    torch = _torch()
    shape = tuple(int(s) for s in shape)
    order = tuple(range(len(shape))) if permute_order is None else tuple(permute_order)
    if sorted(order) != list(range(len(shape))):
        raise DSLValueError(f"create_and_permute_torch_tensor: permute_order {order} is not a permutation of "
                            f"0..{len(shape) - 1}", user_location(2))
    t = torch.empty(shape, dtype=dtype, device=device or "cpu").permute(*order)
    _fill(t, init_type, init_config)
    return t


def matrix(l, mode0, mode1, is_mode0_major, cutlass_dtype, init_type=TensorInitType.RANDOM, init_config=None,
           device=None):
    """An (mode0, mode1, l) matrix batch in host memory (float32 values, exact in cutlass_dtype for the default
    integer fill): mode 0 contiguous when is_mode0_major, else mode 1."""
    torch = _torch()
    shape = (l, mode1, mode0) if is_mode0_major else (l, mode0, mode1)
    order = (2, 1, 0) if is_mode0_major else (1, 2, 0)
    t = create_and_permute_torch_tensor(shape, torch.float32, permute_order=order, init_type=init_type,
                                        init_config=init_config, device=device)
    if cutlass_dtype is not None and _n.dtype(cutlass_dtype).is_integer and init_type is TensorInitType.GAUSSIAN:
        t.round_()
    return t


def get_leading_dim(t) -> int | None:
    """The mode of a torch tensor whose stride is 1 (of those, the one of extent above 1), or None when there is
    none or several. Where every unit-stride mode has one element (a (1, 1, 1) scalar), any is the leading one:
    the innermost (torch's last in its dimension order)."""
    ones = leading_dim_candidates(t.shape, t.stride())
    if len(ones) == 1 or ones and all(t.shape[i] == 1 for i in ones):
        return ones[-1]
    return None


def _e2m1_codes(values):
    """The 4-bit e2m1 code of each value (a torch tensor), rounded to nearest even and saturated to +-6 (the type
    has neither infinities nor NaN: those become +-6 too), as uint8."""
    torch = _torch()
    v = values.to(torch.float32)
    a = v.abs().nan_to_num_(nan=6.0)
    # The magnitudes are steps of 0.5 below 2, of 1 in [2, 4), of 2 from 4: scaled exactly (by a power of two)
    # to steps of 1, torch.round (half to even) rounds each band as e2m1 does, and the band's first code is added
    # (a band's codes alternate in parity with the steps, so ties still go to the even code).
    upper = a >= 2
    top = a >= 4
    scaled = torch.where(upper, a, a * 2)
    scaled[top] *= 0.5
    code = scaled.round_().clamp_(max=8).to(torch.uint8)
    code += upper.to(torch.uint8) * 2
    code += top.to(torch.uint8) * 2
    code.clamp_(max=7)
    return code | (torch.signbit(v).to(torch.uint8) << 3)


# Elements (values, or groups of packed fields) handled per step when converting or packing a whole tensor: the
# float64 and int64 temporaries of a step stay a few MB however large the tensor is.
_STEP = 1 << 18


def _float_codes(values, t):
    """The codes of a narrow float type t (one without infinities or NaN, as fp6) nearest each value (a torch
    tensor), ties to the even code, saturated to the largest finite magnitude (NaN and infinities too), as uint8:
    fp8.encode_static over a tensor."""
    torch = _torch()
    half = 1 << (t.width - 1)              # the sign bit; codes below it are the magnitudes, ascending
    mags = torch.tensor([_fp8.decode_static(t, c) for c in range(half)], dtype=torch.float64, device=values.device)
    flat = values.reshape(-1)
    out = torch.empty(flat.shape, dtype=torch.uint8, device=values.device)
    for s in range(0, flat.numel(), _STEP):
        v = flat[s:s + _STEP].to(torch.float64)
        a = v.abs().nan_to_num_(nan=math.inf).clamp_(max=float(mags[-1]))
        hi = torch.searchsorted(mags, a).clamp_(max=half - 1)
        lo = (hi - 1).clamp_(min=0)
        d_lo, d_hi = a - mags[lo], mags[hi] - a
        code = torch.where((d_lo < d_hi) | (d_lo == d_hi) & (lo % 2 == 0), lo, hi)
        out[s:s + _STEP] = code | (torch.signbit(v).to(torch.int64) << (t.width - 1))
    return out.reshape(values.shape)


def _field_group(width):
    """(fields, bytes, word type) of the smallest run of `width`-bit fields that fills whole bytes (fp6: four in
    three), the word type an integer type that holds the run."""
    torch = _torch()
    bits = math.lcm(width, 8)
    return bits // width, bits // 8, torch.int32 if bits < 32 else torch.int64


def _unpack_fields(raw, width):
    """The `width`-bit fields of raw (uint8, whole groups of _field_group(width) bytes), low bits first, as uint8."""
    torch = _torch()
    per, nb, word_type = _field_group(width)
    groups = raw.reshape(-1, nb)
    out = torch.empty((groups.shape[0], per), dtype=torch.uint8, device=raw.device)
    for s in range(0, groups.shape[0], _STEP):
        word = torch.zeros(groups[s:s + _STEP].shape[0], dtype=word_type, device=raw.device)
        for j in range(nb):
            word |= groups[s:s + _STEP, j].to(word_type) << (8 * j)
        for i in range(per):
            out[s:s + _STEP, i] = (word >> (width * i)) & ((1 << width) - 1)
    return out.reshape(-1)


def _pack_fields(fields, width, raw):
    """The inverse of _unpack_fields: fields (uint8, whole groups, each below 2**width) into the bytes raw."""
    torch = _torch()
    per, nb, word_type = _field_group(width)
    groups = fields.reshape(-1, per)
    out = raw.view(-1, nb)
    for s in range(0, groups.shape[0], _STEP):
        word = torch.zeros(groups[s:s + _STEP].shape[0], dtype=word_type, device=fields.device)
        for i in range(per):
            word |= groups[s:s + _STEP, i].to(word_type) << (width * i)
        for j in range(nb):
            out[s:s + _STEP, j] = (word >> (8 * j)) & 255


def _element_offsets(t, start=0, stop=None):
    """The element offsets of t's elements start..stop (row-major order of their indices), as int64."""
    torch = _torch()
    stop = t.numel() if stop is None else stop
    index = torch.unravel_index(torch.arange(start, stop, device=t.device), tuple(t.shape))
    off = torch.full((stop - start,), t.storage_offset(), dtype=torch.int64, device=t.device)
    for i, stride in zip(index, t.stride()):
        off += i * stride
    return off


def _store_bits(dst, codes, width):
    """Writes `width`-bit codes (width up to 8) into dst's storage as a bit string, low bits first: the value at
    element offset o (dst's strides, in elements) takes bits [o * width, (o + 1) * width) of the storage, as a
    cute tensor of a sub-byte type over the same strides reads them (CuTe's packing of fp6: four values in three
    bytes). Only the whole byte groups around dst's elements are unpacked and packed again, a byte per field, so
    bits no element covers keep their values and the memory used stays near the storage's own size."""
    torch = _torch()
    nbytes = dst.untyped_storage().nbytes()
    raw = torch.empty(0, dtype=torch.uint8, device=dst.device).set_(dst.untyped_storage())
    if width > 8:    # below it, a torch view (a byte or more per element) always has room for its fields
        raise DSLValueError(f"{width}-bit fields are not sub-byte: store them through a wider dtype",
                            user_location(4))
    if dst.numel() == 0:
        return dst
    per, nb, _ = _field_group(width)
    order = _storage_order(dst)
    first = dst.storage_offset() + sum((n - 1) * st for n, st in zip(dst.shape, dst.stride()) if st < 0)
    last = dst.storage_offset() + sum((n - 1) * st for n, st in zip(dst.shape, dst.stride()) if st > 0)
    g0, g1 = first // per, last // per + 1
    window = raw[g0 * nb:min(g1 * nb, nbytes)]
    padded = window
    if window.numel() < (g1 - g0) * nb:    # the storage ends inside the last group: its missing bytes read as 0
        padded = torch.zeros((g1 - g0) * nb, dtype=torch.uint8, device=dst.device)
        padded[:window.numel()] = window
    fields = _unpack_fields(padded, width)
    mask = (1 << width) - 1
    if order is not None:          # dense: the codes in memory order fill one run of fields, no scatter
        run = fields[first - g0 * per:last + 1 - g0 * per]
        run.copy_(codes.permute(order).reshape(-1))
        run &= mask
    else:                          # scattered a step at a time, so the offsets take no more than a step's room
        flat = codes.reshape(-1)
        for s in range(0, flat.numel(), _STEP):
            at = _element_offsets(dst, s, min(s + _STEP, flat.numel()))
            at -= g0 * per
            fields[at] = flat[s:s + _STEP].to(torch.uint8) & mask
    _pack_fields(fields, width, padded)
    if padded is not window:
        window.copy_(padded[:window.numel()])
    return dst


def _storage_order(t):
    """The permutation of t's modes that lists its elements in memory order, where t covers a dense run of
    memory from its storage offset without gaps or overlaps (else None)."""
    modes = sorted((i for i in range(t.dim()) if t.shape[i] != 1), key=lambda i: t.stride(i))
    expect = 1
    for i in modes:
        if t.stride(i) != expect:
            return None
        expect *= t.shape[i]
    rest = [i for i in range(t.dim()) if t.shape[i] == 1]
    return rest + modes[::-1]


def _store_nibbles(dst, codes):
    """Writes 4-bit codes into dst's storage, two to a byte, low nibble first: the value at element offset o
    (dst's strides, in elements) is nibble o of the storage, which is how a cute tensor of a 4-bit type (Float4E2M1FN,
    Int4, Uint4) over the same strides reads it. Made with ordinary integer ops, so it works where torch has no
    conversion kernel for the packed type (none on the CPU, which a compile-only run uses for "cuda" tensors)."""
    torch = _torch()
    nbytes = dst.untyped_storage().nbytes()
    raw = torch.empty(0, dtype=torch.uint8, device=dst.device).set_(dst.untyped_storage())
    order = _storage_order(dst)
    first = dst.storage_offset()
    if order is not None and first % 2 == 0 and dst.numel() % 2 == 0:
        # a dense tensor (the usual case): its codes in memory order pair up byte by byte, no scatter
        nib = codes.permute(order).reshape(-1)
        raw[first // 2:(first + dst.numel()) // 2] = nib[0::2] | (nib[1::2] << 4)
        return dst
    index = torch.int32 if 2 * nbytes < 2 ** 31 else torch.int64
    offsets = torch.as_strided(torch.arange(2 * nbytes, dtype=index, device=dst.device), tuple(dst.shape),
                               tuple(dst.stride()), first).reshape(-1)
    nibbles = torch.stack((raw & 15, raw >> 4), dim=1).reshape(-1)   # keep the nibbles dst does not cover
    nibbles[offsets.to(torch.int64)] = codes.reshape(-1)
    raw.copy_(nibbles[0::2] | (nibbles[1::2] << 4))
    return dst


def _store(dst, values, cutlass_dtype):
    """Writes float values into dst (a torch tensor) as cutlass_dtype, through its storage type."""
    torch = _torch()
    t = _n.dtype(cutlass_dtype)
    if t is getattr(_n, "Float4E2M1FN", None):
        return _store_nibbles(dst, _e2m1_codes(values.to(device=dst.device)))
    if t in (_n.Int4, _n.Uint4):   # integers in the type's range, two's complement in a nibble
        return _store_nibbles(dst, values.to(device=dst.device).round().to(torch.int64) & 15)
    if t.width == 6:
        return _store_bits(dst, _float_codes(values.to(device=dst.device), t), 6)
    want = dtype(cutlass_dtype)
    converted = values.to(device=dst.device).to(want)
    if dst.dtype == want:
        dst.copy_(converted)
    elif converted.element_size() == dst.element_size():
        dst.copy_(converted.view(dst.dtype))
    else:
        raise DSLTypeError(f"cannot store {cutlass_dtype.__name__} values in a torch {dst.dtype} tensor",
                           user_location(3))
    return dst


def convert_cute_tensor(f32_torch_tensor, cute_tensor, dtype, is_dynamic_layout=True):
    """Fills the memory of cute_tensor (made by from_dlpack over a torch tensor, possibly of a storage type such
    as uint8 for fp8) with f32_torch_tensor's values converted to `dtype`; returns cute_tensor with that element
    type."""
    if not isinstance(cute_tensor, RuntimeTensor) or cute_tensor.source is None:
        raise DSLTypeError("convert_cute_tensor: cute_tensor must come from from_dlpack over a torch tensor",
                           user_location(2))
    src = cute_tensor.source
    if tuple(src.shape) != tuple(f32_torch_tensor.shape):
        raise DSLValueError(f"convert_cute_tensor: shapes differ ({tuple(f32_torch_tensor.shape)} vs "
                            f"{tuple(src.shape)})", user_location(2))
    _store(src, f32_torch_tensor, _n.dtype(dtype))
    cute_tensor.element_type = _n.dtype(dtype)
    return cute_tensor


def cute_tensor_like(data_ref, cutlass_dtype, is_dynamic_layout, assumed_align=None, device=None):
    """(cute tensor, torch tensor): a copy of data_ref on the GPU (or `device`) holding cutlass_dtype values, and
    its cute.runtime view, with a dynamic layout (leading mode kept static) when is_dynamic_layout."""
    torch = _torch()
    t = _n.dtype(cutlass_dtype)
    if t in (_n.Int4, _n.Uint4):
        # torch has no 4-bit integers; its packed fp4 is a container of nibbles (element offset o is nibble o, as
        # from_dlpack reads it), which the integers' codes fill the same way (_store_nibbles)
        storage = getattr(torch, "float4_e2m1fn_x2", None)
        if storage is None:
            raise DSLTypeError(f"cute_tensor_like: {t.__name__} needs torch's packed 4-bit storage "
                               "(torch.float4_e2m1fn_x2, torch 2.8 or later)", user_location(2))
    elif t.width == 6:
        # a byte for each value (CuTe DSL's host helpers do so), the values packed from the start (_store_bits)
        storage = torch.uint8
    else:
        storage = dtype(t)
    if t.is_float and t.width == 8:
        storage = torch.uint8  # DLPack carries no fp8: kernels see the element type set below
    dev = device if device is not None else "cuda"
    gpu = torch.empty_strided(tuple(data_ref.shape), tuple(data_ref.stride()), dtype=storage, device=dev)
    _store(gpu, data_ref, t)
    cute_tensor = from_dlpack(gpu, assumed_align=assumed_align)
    cute_tensor.element_type = t
    if is_dynamic_layout:
        cute_tensor = cute_tensor.mark_layout_dynamic(leading_dim=get_leading_dim(gpu))
    return cute_tensor, gpu


def _is_device_memory(address: int) -> bool:
    """Whether the driver knows the address as device memory (False without a driver: host memory)."""
    return _core.pointer_memory_type(address) == _core.MemoryType.device


class _DeviceBytes:
    """n bytes of device memory at an address, as torch.as_tensor reads them (the CUDA array interface)."""

    def __init__(self, address: int, n: int):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "|u1", "data": (address, False), "version": 3,
                                         "strides": None}


def as_tensor(pointer, shape, torch_type):
    """A contiguous (row-major) torch tensor of `shape` over the memory at `pointer` (an address, or an object with
    data_ptr() or ptr), of torch_type (a torch dtype or a warpweave numeric type). The tensor does not own the
    memory, which must outlive it: device memory gives a CUDA tensor, host memory a CPU one."""
    torch = _torch()
    address = pointer
    if not isinstance(address, int):
        for attr in ("data_ptr", "ptr", "address"):
            v = getattr(pointer, attr, None)
            if v is not None:
                address = v() if callable(v) else v
                break
    if not isinstance(address, int) or isinstance(address, bool) or address <= 0:
        raise DSLTypeError(f"as_tensor: the pointer is a positive address, got {pointer!r}", user_location(2))
    tt = torch_type if isinstance(torch_type, torch.dtype) else dtype(torch_type)
    shape = (int(shape),) if isinstance(shape, int) else tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise DSLValueError(f"as_tensor: the shape {shape} has a negative extent", user_location(2))
    count = 1
    for s in shape:
        count *= s
    nbytes = count * torch.empty((), dtype=tt).element_size()
    if _is_device_memory(address):
        raw = torch.as_tensor(_DeviceBytes(address, nbytes), device="cuda")
    else:
        raw = torch.from_numpy(np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(address)))
    return raw.view(tt).view(shape)
