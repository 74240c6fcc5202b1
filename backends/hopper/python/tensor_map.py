"""cutlass.experimental.cuda's tensor maps: TensorMap, create_tensor_map_tiled, create_tensor_map_tiled_from_view.

A tensor map made in @cute.jit host code is a host argument ("hopper.tensor_map"): its static fields (data type,
rank, boxes, swizzle, ...) are fixed when tracing, its address, extents and strides are those of a tensor argument
of the jit function and expressions of them, evaluated at each call; the map is encoded then by the host hook of
the target's TMA load (the plugin of that instruction's backend: Blackwell's on sm_100a, whose hardware has the
packed 4- and 6-bit formats and the 128-byte atom swizzles) and passed as a 128-byte grid-constant kernel
parameter. Inside a kernel, get_ptr() is the generic address of that parameter, what the tensor-copy primitives
take.

Orders: global_dims, global_strides and box_dims of create_tensor_map_tiled are the tensor map's, innermost
first, and global_strides are in 16-byte units for dimensions 1.. (dimension 0 is contiguous). For
create_tensor_map_tiled_from_view, stride_order names the tensor's modes in the tensor map's order (innermost
first; by default the contiguous mode, then the others by increasing stride) and box_dims are per mode of the
tensor, as its shape is written.
"""
from __future__ import annotations

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import ext
from warpweave.experimental import cuda

from . import tma

DESCRIPTOR = "hopper.tensor_map"

# TensorMapDataFormat -> CUtensorMapDataType, where the format fixes it (DEFAULT takes the element type's).
_FORMAT_TYPES = {"BYTE": 0, "F32_FTZ": 10, "TF32_FTZ": 12, "B4X16": 13, "B4X16_P64": 14, "B6X16_P32": 15}
# Bits one element takes in shared memory, where the format fixes it: 16 narrow elements padded to 16 bytes
# land one a byte.
_FORMAT_SMEM_BITS = {"BYTE": 8, "B4X16": 4, "B4X16_P64": 8, "B6X16_P32": 8}
_FORMAT_GMEM_BITS = {"BYTE": 8, "B4X16": 4, "B4X16_P64": 4, "B6X16_P32": 6}
_PACKED = ("B4X16", "B4X16_P64", "B6X16_P32")
# CUtensorMapDataType of the DSL's types (tma._TMA_TYPES's names, by value).
_TYPE_CODES = {"u8": 0, "u16": 1, "u32": 2, "s32": 3, "u64": 4, "s64": 5, "f16": 6, "f32": 7, "f64": 8, "bf16": 9,
               "tf32": 11}
_ELEMENT_BYTES = [1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4]
# Swizzles Hopper's copy engine has (CUtensorMapSwizzle values); Blackwell's adds the 128-byte atom modes.
_HOPPER_SWIZZLES = {"none", "s32b", "s64b", "s128b"}


def _enum(value, cls, what):
    if value is None:
        return list(cls)[0]
    if isinstance(value, cls):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return cls(value)
        except ValueError:
            pass
    raise ext.user_error(f"{what}: expected a cuda.{cls.__name__}, got {value!r}", ext.DSLTypeError)


def _static_int(x, what):
    v = x.value if isinstance(x, cutlass.Numeric) and x.is_static else x
    if not isinstance(v, int) or isinstance(v, bool):
        raise ext.user_error(f"{what} must be a static integer, got {x!r}", ext.DSLTypeError)
    return v


def _runtime_int(x, what):
    """A static or runtime integer of the host side (an extent, a stride, an expression of them)."""
    if isinstance(x, bool) or x is None:
        raise ext.user_error(f"{what} must be an integer, got {x!r}", ext.DSLTypeError)
    if isinstance(x, cutlass.Numeric):
        if not type(x).is_integer:
            raise ext.user_error(f"{what} must be an integer, got {type(x).__name__}", ext.DSLTypeError)
        return x.value if x.is_static else x
    if isinstance(x, int) or type(x).__name__ == "SymInt":
        return x
    raise ext.user_error(f"{what} must be an integer, got {x!r}", ext.DSLTypeError)


def _data_type(dtype, fmt, hoppers: bool) -> tuple:
    """(CUtensorMapDataType, bits of an element in global memory, bits in shared memory) of a format and type;
    hoppers: the map is encoded by this backend's hook (its hardware's formats)."""
    name = fmt.name
    if name in _PACKED and hoppers:
        raise ext.user_error(f"cuda.TensorMapDataFormat.{name}: the packed sub-byte formats are Blackwell's "
                             "(sm_100a); Hopper's copy engine moves whole bytes (TensorMapDataFormat.BYTE)",
                             ext.DSLValueError)
    if name in _FORMAT_TYPES:
        code = _FORMAT_TYPES[name]
        if name in ("F32_FTZ", "TF32_FTZ") and dtype.__name__ not in ("Float32", "TFloat32"):
            raise ext.user_error(f"cuda.TensorMapDataFormat.{name} moves 32-bit floats, not {dtype.__name__}",
                                 ext.DSLValueError)
        gbits = _FORMAT_GMEM_BITS.get(name, 32)
        return code, gbits, _FORMAT_SMEM_BITS.get(name, gbits)
    if dtype.width in (4, 6):
        # narrow elements move one to a byte of shared memory by default (the padded formats), as an MMA
        # operand of 8-bit holders reads them; B4X16 keeps 4-bit ones dense
        return _data_type(dtype, cuda.TensorMapDataFormat.B4X16_P64 if dtype.width == 4
                          else cuda.TensorMapDataFormat.B6X16_P32, hoppers)
    if dtype.width < 8:
        raise ext.user_error(f"a tensor map does not move {dtype.__name__} values", ext.DSLTypeError)
    t = "u8" if dtype.width == 8 and not dtype.is_integer else tma._TMA_TYPES.get(dtype.__name__)
    if t is None and dtype.width == 8:
        t = "u8"  # packed pairs of 4-bit values (x2 types) move as their bytes
    if t is None:
        raise ext.user_error(f"a tensor map does not move {dtype.__name__} values", ext.DSLTypeError)
    return _TYPE_CODES[t], dtype.width, dtype.width


def _hook() -> tuple:
    """(backend, host hook) encoding the target's tensor maps: those of its TMA load."""
    try:
        backend, entry = tma._select("load", 2)
    except ext.DSLError as e:
        raise ext.user_error("a tensor map is for a GPU with a tensor-copy engine (TMA; sm_90a and later): "
                             + str(e).split(": ", 1)[-1], ext.DSLValueError) from None
    if not entry.get("host_hook"):
        raise ext.user_error(f"{entry['id']} names no host hook that encodes its tensor map", ext.DSLValueError)
    return backend, entry["host_hook"]


class TensorMap:
    """A tiled tensor map (cuda.TensorMap): on the host what create_tensor_map_tiled* made, in a kernel (passed as
    an argument, `cutlass.GridConstant[cuda.TensorMap]`) its grid-constant parameter."""

    def __init__(self, desc, dtype, tma_format, swizzle, box_dims, smem_bits):
        self._desc = desc
        self.dtype = dtype
        self.tma_format = tma_format
        self.swizzle = swizzle
        self.box_dims = tuple(box_dims)   # the tensor map's order, innermost first
        self._smem_bits = smem_bits

    @property
    def element_type(self):
        return self.dtype

    @property
    def box_volume(self) -> int:
        v = 1
        for b in self.box_dims:
            v *= b
        return v

    @property
    def shared_storage_bytes(self) -> int:
        """Bytes one box takes in shared memory."""
        return self.box_volume * self._smem_bits // 8

    @property
    def shared_storage_dtype(self):
        """The type a shared-memory array of one box holds element for element."""
        return {4: cutlass.Float4E2M1FN, 8: cutlass.Uint8}.get(self._smem_bits, self.dtype) \
            if self.tma_format.name != "DEFAULT" else self.dtype

    def global_tx_bytes(self):
        """The transaction bytes one load of a box completes on its mbarrier (an Int32)."""
        return cutlass.Int32(self.shared_storage_bytes)

    def get_ptr(self):
        """In a kernel: the generic address of the tensor map (what the tensor-copy primitives take)."""
        if not isinstance(self._desc, ext.DeviceHostArgument):
            raise ext.user_error("TensorMap.get_ptr() is for kernels: pass the tensor map to the kernel as an "
                                 "argument (cutlass.GridConstant[cuda.TensorMap])", ext.DSLTypeError)
        return ext.make_pointer(self._desc.address, cutlass.Uint8, "generic", 64)

    def __repr__(self):
        return (f"TensorMap({self.dtype.__name__}, {self.tma_format.name}, box {self.box_dims}, "
                f"swizzle {self.swizzle.name})")


def _source(global_address):
    """(tensor argument, byte offset) a global address stands for: a tensor or pointer argument of the jit function,
    its iterator, or the integer of one (`tensor.iterator.toint()`)."""
    x = global_address
    src = getattr(x, "__ww_address_of__", None)
    if callable(src):
        x = src()
    it = getattr(x, "iterator", x)
    if getattr(it, "host", None) is None or not hasattr(it, "dtype"):
        raise ext.user_error(f"create_tensor_map_tiled: global_address must be the address of a tensor argument of "
                             f"the @cute.jit function (tensor.iterator.toint()), got {global_address!r}",
                             ext.DSLTypeError)
    tensor = x if hasattr(x, "iterator") else cute.make_tensor(it, cute.make_layout(1))
    off = it.offset
    bits = it.dtype.width
    return tensor, (off * bits // 8 if not isinstance(off, int) or off else 0)


def _make(tensor, byte_offset, dtype, fmt, dims, strides, boxes, elem_strides, interleave, swizzle, l2, oob):
    rank = len(dims)
    if not 1 <= rank <= 5:
        raise ext.user_error(f"a tensor map has 1 to 5 dimensions, got {rank}", ext.DSLValueError)
    if len(boxes) != rank or len(strides) != rank - 1 or len(elem_strides) != rank:
        raise ext.user_error(f"a tensor map of {rank} dimensions takes {rank} box extents, {rank - 1} strides and "
                             f"{rank} traversal strides; got {len(boxes)}, {len(strides)} and {len(elem_strides)}",
                             ext.DSLValueError)
    backend, hook = _hook()
    hoppers = backend == "hopper"
    if swizzle.name not in _HOPPER_SWIZZLES and hoppers:
        raise ext.user_error(f"cuda.TensorMapSwizzle.{swizzle.name} is a swizzle of Blackwell's copy engine "
                             "(sm_100a); Hopper's has none, s32b, s64b and s128b", ext.DSLValueError)
    code, gbits, sbits = _data_type(dtype, fmt, hoppers)
    for i, b in enumerate(boxes):
        if not 1 <= b <= 256:
            raise ext.user_error(f"box_dims: extent {b} of dimension {i} is not in 1..256", ext.DSLValueError)
    inner = boxes[0] * sbits // 8
    if interleave.name == "none" and inner % 16:
        raise ext.user_error(f"box_dims: the innermost box extent {boxes[0]} spans {boxes[0] * sbits / 8:g} bytes; "
                             "the copy engine moves rows of a multiple of 16 bytes", ext.DSLValueError)
    if swizzle.name != "none" and inner > {"s32b": 32, "s64b": 64}.get(swizzle.name, 128):
        raise ext.user_error(f"box_dims: an innermost box of {inner} bytes is wider than the {swizzle.name} swizzle "
                             "span", ext.DSLValueError)
    attrs = {"data_type": code, "rank": rank, "swizzle": swizzle.value, "interleave": interleave.value,
             "l2_promotion": l2.value, "oob_fill": oob.value, "backend": backend, "hook": hook,
             "byte_offset": byte_offset}
    for i in range(rank):
        attrs[f"dim{i}"] = dims[i]
        attrs[f"box{i}"] = boxes[i]
        attrs[f"elem_stride{i}"] = elem_strides[i]
        if i:
            attrs[f"stride{i}"] = strides[i - 1]
    desc = ext.host_argument(DESCRIPTOR, tensor, **attrs)
    return TensorMap(desc, dtype, fmt, swizzle, boxes, sbits)


def encode(tensor, *, backend, hook, byte_offset=0, **attrs) -> bytes:
    """The host-argument producer: the tensor map of the call, by host hook `hook` of `backend`."""
    address = int(tensor.data_ptr if hasattr(tensor, "data_ptr") else tensor.address) + int(byte_offset)
    if address % 16:
        raise ValueError(f"tensor map: the global address {address:#x} is not 16-byte aligned")
    for k, v in attrs.items():
        if k.startswith("stride") and int(v) % 16:
            raise ValueError(f"tensor map: {k} is {v} bytes, not a multiple of 16")
    return ext.host_call(backend, hook, {"address": address, **{k: int(v) for k, v in attrs.items()}},
                         tma.TMAP_BYTES)


def create_tensor_map_tiled(global_address, dtype, global_dims, global_strides, box_dims, *, traversal_strides=None,
                            interleave=None, swizzle=None, l2_promotion=None, oob_fill=None, tma_format=None,
                            loc=None, ip=None) -> TensorMap:
    """A tiled tensor map of the memory at global_address (a tensor argument's address): global_dims (elements),
    global_strides (16-byte units, dimensions 1..) and box_dims in the tensor map's order, innermost first."""
    dims = [_runtime_int(d, f"global_dims[{i}]") for i, d in enumerate(global_dims)]
    strides = [_runtime_int(s, f"global_strides[{i}]") * 16 for i, s in enumerate(global_strides)]
    boxes = [_static_int(b, f"box_dims[{i}]") for i, b in enumerate(box_dims)]
    elem = [_static_int(e, f"traversal_strides[{i}]") for i, e in enumerate(traversal_strides or [1] * len(dims))]
    tensor, off = _source(global_address)
    return _make(tensor, off, dtype, _enum(tma_format, cuda.TensorMapDataFormat, "tma_format"), dims, strides,
                 boxes, elem, _enum(interleave, cuda.TensorMapInterleave, "interleave"),
                 _enum(swizzle, cuda.TensorMapSwizzle, "swizzle"),
                 _enum(l2_promotion, cuda.TensorMapL2Promotion, "l2_promotion"),
                 _enum(oob_fill, cuda.TensorMapFloatOOBFill, "oob_fill"))


def _flat(x, what):
    t = x if isinstance(x, tuple) else (x,)
    if any(isinstance(e, tuple) for e in t):
        raise ext.user_error(f"create_tensor_map_tiled_from_view: the tensor's {what} {x} is not flat",
                             ext.DSLValueError)
    return t


def create_tensor_map_tiled_from_view(tensor, box_dims, *, stride_order=None, interleave=None, swizzle=None,
                                      l2_promotion=None, oob_fill=None, dtype=None, tma_format=None, loc=None,
                                      ip=None) -> TensorMap:
    """A tiled tensor map of a tensor argument (or a view of one): box_dims per mode of the tensor; stride_order
    the modes in the tensor map's order, innermost first (default: by increasing stride, the contiguous first)."""
    layout = getattr(tensor, "layout", None)
    if layout is None or getattr(getattr(tensor, "iterator", None), "host", None) is None:
        raise ext.user_error(f"create_tensor_map_tiled_from_view: expected a tensor argument of the @cute.jit "
                             f"function, got {tensor!r}", ext.DSLTypeError)
    outer = getattr(layout, "outer", layout)
    shape, stride = _flat(outer.shape, "shape"), _flat(outer.stride, "stride")
    rank = len(shape)
    boxes = tuple(box_dims) if isinstance(box_dims, (tuple, list)) else (box_dims,)
    if len(boxes) != rank:
        raise ext.user_error(f"create_tensor_map_tiled_from_view: box_dims {tuple(boxes)} has {len(boxes)} extents, "
                             f"the tensor {rank} modes", ext.DSLValueError)
    if stride_order is None:
        ones = [i for i, d in enumerate(stride) if isinstance(d, int) and d == 1]
        if not ones:
            raise ext.user_error(f"create_tensor_map_tiled_from_view: no mode of the tensor has a static stride of 1 "
                                 f"(strides {stride}); give stride_order", ext.DSLValueError)
        rest = [i for i in range(rank) if i != ones[0]]
        static = all(isinstance(stride[i], int) for i in rest)
        order = [ones[0]] + (sorted(rest, key=lambda i: stride[i]) if static else rest[::-1])
    else:
        order = [_static_int(m, "stride_order") for m in stride_order]
        if sorted(order) != list(range(rank)):
            raise ext.user_error(f"create_tensor_map_tiled_from_view: stride_order {tuple(order)} is not an order "
                                 f"of the tensor's {rank} modes", ext.DSLValueError)
        if isinstance(stride[order[0]], int) and stride[order[0]] != 1:
            raise ext.user_error(f"create_tensor_map_tiled_from_view: mode {order[0]} comes first in stride_order "
                                 f"but its stride is {stride[order[0]]}, not 1", ext.DSLValueError)
    et = tensor.element_type
    dtype = dtype or et
    fmt = _enum(tma_format, cuda.TensorMapDataFormat, "tma_format")
    mem_bits = _FORMAT_GMEM_BITS.get(fmt.name, et.width) if fmt.name in _PACKED else et.width
    dims, strides = [], []
    span = None  # bytes the dimensions so far cover
    for i, m in enumerate(order):
        extent = _runtime_int(shape[m], f"the extent of mode {m}")
        if i == 0 and fmt.name in _PACKED and et.width != mem_bits:
            extent = extent * et.width // mem_bits  # a container type of packed values: the map counts the values
        dims.append(extent)
        if i == 0:
            span = extent * mem_bits // 8
            continue
        s = _runtime_int(stride[m], f"the stride of mode {m}") * et.width // 8
        if isinstance(shape[m], int) and shape[m] == 1:
            # a mode of extent 1 is never stepped along, so its stride is arbitrary (torch gives such modes
            # stride 1): the tensor map gets a legal one, past what the inner dimensions cover
            s = (span + 15) // 16 * 16
        strides.append(s)
        span = s * extent
    box = [_static_int(boxes[m], f"box_dims[{m}]") for m in order]
    return _make(tensor, 0, dtype, fmt, dims, strides, box, [1] * rank,
                 _enum(interleave, cuda.TensorMapInterleave, "interleave"),
                 _enum(swizzle, cuda.TensorMapSwizzle, "swizzle"),
                 _enum(l2_promotion, cuda.TensorMapL2Promotion, "l2_promotion"),
                 _enum(oob_fill, cuda.TensorMapFloatOOBFill, "oob_fill"))


NAMES = ("TensorMap", "create_tensor_map_tiled", "create_tensor_map_tiled_from_view")
