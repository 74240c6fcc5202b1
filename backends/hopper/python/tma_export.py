"""The C form of the TMA descriptor host argument (tma.encode_descriptor), for exported functions and TVM FFI calls:
the same tensor map, encoded at each call by the driver's cuTensorMapEncodeTiled from the call's tensor, with the
same checks and the same choice of strides (warpweave.ext.register_host_argument's export_c)."""
from __future__ import annotations

# CUtensorMapDataType by the names the plugin's encoder reads (plugins_api tma_encoding.hpp: index = value).
_DATA_TYPES = ["u8", "u16", "u32", "s32", "u64", "s64", "f16", "f32", "f64", "bf16", "f32_ftz", "tf32", "tf32_ftz"]
# CUtensorMapSwizzle of Hopper's four modes (index = value).
_SWIZZLES = ["none", "32B", "64B", "128B"]
_L2_PROMOTIONS = ["none", "64B", "128B", "256B"]

DECLARATIONS = """\
/* cuTensorMapEncodeTiled, as cuda.h declares it (the enumerations as int, the CUtensorMap as its 128 bytes). */
WW_DRIVER_ENTRY int cuTensorMapEncodeTiled(void *tensorMap, int dataType, unsigned rank, void *globalAddress,
                                           const unsigned long long *globalDim,
                                           const unsigned long long *globalStrides, const unsigned *boxDim,
                                           const unsigned *elementStrides, int interleave, int swizzle,
                                           int l2Promotion, int oobFill);
"""


def _enum(value, names, what):
    if isinstance(value, int):
        return value
    if value not in names:
        raise ValueError(f"TMA descriptor: unknown {what} {value!r}")
    return names.index(value)


def descriptor_c(tensor, dst, *, data_type, rank, swizzle, dims, ebytes, pack=1, offset=0, backend=None, hook=None,
                 gbits=0, l2_promotion="none", **boxes):
    """(declarations, statements) writing the tensor map of `tensor` (an export_c.CTensor) at dst: of the atom's view
    of it (extent{i}/gstride{i}, numbers or C expressions of the call, at `offset` elements) where given, else of
    the tensor's own modes in `dims` order."""
    order = [int(x) for x in dims.split(",")]
    rank = int(rank)
    name = tensor.name
    fail = 'return ww_fail(WW_INVALID_VALUE, "TMA descriptor of ' + name + ': {}");'
    if "extent0" in boxes:
        extents = [f"(int64_t)({boxes[f'extent{i}']})" for i in range(rank)]
        strides = [f"(int64_t)({boxes[f'gstride{i}']})" for i in range(rank)]
        o = []
    else:
        extents = [tensor.shape(m) for m in order]
        strides = [tensor.stride(m) for m in order]
        o = [f"if ({tensor.rank} != {rank}) "
             f"{fail.format(f'the tensor has {tensor.rank} modes, the atom was made for {rank}')}"]
    pack, gbits = int(pack), int(gbits)
    # an unpacked narrow type (tma.unpacked_bits) counts its offset and strides in elements of gbits
    scale = f"{gbits} / 8" if gbits else f"{int(ebytes)} / {pack}"
    o += [f"if ({strides[0]} != 1) {fail.format(f'mode {order[0]} must be contiguous (stride 1)')}",
          "{",
          f"  const char *address = (const char *){tensor.data} + (int64_t)({offset}) * {scale};",
          f"  _Alignas(64) unsigned char map[128];",
          f"  unsigned long long dims[{rank}], strides[{max(rank - 1, 1)}];",
          f"  const unsigned box[{rank}] = {{{', '.join(str(int(boxes[f'box{i}'])) for i in range(rank))}}};",
          f"  const unsigned elem[{rank}] = {{{', '.join('1' for _ in range(rank))}}};",
          f"  int64_t compact = {int(ebytes)}, s = 0;",
          "  int r;",
          f"  if ((uintptr_t)address % 16 != 0) {fail.format('the address is not 16-byte aligned')}"]
    for i, mode in enumerate(order):
        extent = extents[i]
        o.append(f"  if ({extent} < 1) {fail.format(f'mode {mode} has no elements')}")
        o.append(f"  dims[{i}] = (unsigned long long)({extent}) / {pack if i == 0 else 1};")
        if i:
            # A mode of extent 1 is never stepped along: it gets a legal stride, as the Python producer gives it.
            # as tma.unpacked_stride: whole bytes, else the nearest 16-byte step within a byte of the exact length
            step = (f"((int64_t)({strides[i]}) * {gbits} % 8 == 0 ? (int64_t)({strides[i]}) * {gbits} / 8 : "
                    f"((int64_t)({strides[i]}) * {gbits} + 64) / 128 * 16)" if gbits
                    else f"{strides[i]} / {pack} * {int(ebytes)}")
            o.append(f"  s = {extent} == 1 ? (compact + 15) / 16 * 16 : {step};")
            if gbits:
                o.append(f"  if ({extent} != 1 && (s * 8 - (int64_t)({strides[i]}) * {gbits} >= 8 || "
                         f"(int64_t)({strides[i]}) * {gbits} - s * 8 >= 8)) "
                         f"{fail.format(f'mode {mode} has a stride that is not within a byte of whole bytes')}")
            o.append(f"  if (s % 16 != 0) {fail.format(f'mode {mode} has a stride that is not a multiple of 16 bytes')}")
            o.append(f"  strides[{i - 1}] = (unsigned long long)s;")
            o.append(f"  if ((int64_t)dims[{i}] * s > compact) compact = (int64_t)dims[{i}] * s;")
        else:
            o.append(f"  if ((int64_t)dims[0] * {int(ebytes)} > compact) compact = (int64_t)dims[0] * {int(ebytes)};")
    o += ["  (void)s; (void)compact;",
          f"  r = cuTensorMapEncodeTiled(map, {_enum(data_type, _DATA_TYPES, 'data type')}, {rank}, (void *)address, "
          f"dims, strides, box, elem, 0, {_enum(swizzle, _SWIZZLES, 'swizzle')}, "
          f"{_enum(l2_promotion, _L2_PROMOTIONS, 'L2 promotion')}, 0);",
          f'  if (r != 0) return ww_driver(r, "cuTensorMapEncodeTiled of {name}");',
          f"  memcpy({dst}, map, 128);",
          "}"]
    return DECLARATIONS, "\n".join("        " + line for line in o)


def tensor_map_c(tensor, dst, *, data_type, rank, swizzle, interleave, l2_promotion, oob_fill, backend, hook,
                 byte_offset=0, **fields):
    """(declarations, statements) writing the tensor map of cutlass.experimental.cuda (tensor_map.py) at dst: its
    extents and strides are C expressions of the call (the runtime ones) or numbers."""
    name = tensor.name
    fail = 'return ww_fail(WW_INVALID_VALUE, "tensor map of ' + name + ': {}");'
    rank = int(rank)
    o = _map_head(rank, [fields[f"box{i}"] for i in range(rank)], [fields[f"elem_stride{i}"] for i in range(rank)],
                  f"(const char *){tensor.data} + (int64_t)({byte_offset})", fail, "the global address")
    for i in range(rank):
        o.append(f"  if ((int64_t)({fields[f'dim{i}']}) < 1) {fail.format(f'dimension {i} has no elements')}")
        o.append(f"  dims[{i}] = (unsigned long long)({fields[f'dim{i}']});")
        if i:
            s = fields[f"stride{i}"]
            o.append(f"  if ((int64_t)({s}) <= 0 || (int64_t)({s}) % 16 != 0) "
                     f"{fail.format(f'the stride of dimension {i} is not a positive multiple of 16 bytes')}")
            o.append(f"  strides[{i - 1}] = (unsigned long long)({s});")
    o += _map_tail(f"{int(data_type)}, {rank}", f"{int(interleave)}, {int(swizzle)}, {int(l2_promotion)}, "
                   f"{int(oob_fill)}", f"the tensor map of {name}", dst)
    return DECLARATIONS, "\n".join("        " + line for line in o)


def _map_head(rank, boxes, elems, address, fail, what):
    """The opening lines of a block encoding one tensor map: its arrays, box and element strides, the address."""
    return ["{",
            "  _Alignas(64) unsigned char map[128];",
            f"  unsigned long long dims[{rank}], strides[{max(rank - 1, 1)}];",
            f"  const unsigned box[{rank}] = {{{', '.join(str(int(b)) for b in boxes)}}};",
            f"  const unsigned elem[{rank}] = {{{', '.join(str(int(e)) for e in elems)}}};",
            f"  const char *address = {address};",
            "  int r;",
            f"  if ((uintptr_t)address % 16 != 0) {fail.format(what + ' is not 16-byte aligned')}"]


def _map_tail(type_and_rank, modes, what, dst):
    """The closing lines: cuTensorMapEncodeTiled (interleave, swizzle, L2 promotion, OOB fill given as `modes`)."""
    return [f"  r = cuTensorMapEncodeTiled(map, {type_and_rank}, (void *)address, dims, strides, box, elem, {modes});",
            f'  if (r != 0) return ww_driver(r, "cuTensorMapEncodeTiled of {what}");',
            f"  memcpy({dst}, map, 128);",
            "}"]


def blocked_c(tensor, dst, *, data_type, rank, backend=None, hook=None, ebytes=None, **dims):
    """(declarations, statements) writing the tensor map of a tensor stored in blocks (tma_blocked.encode) at dst:
    dimension 0 the block in the moved type's units, the others the rest modes with their byte strides (numbers or
    C expressions of the call), a dimension of extent 1 (never stepped along) given a legal stride as encode
    gives it."""
    name = tensor.name
    fail = 'return ww_fail(WW_INVALID_VALUE, "TMA descriptor of ' + name + ' (stored in blocks): {}");'
    rank = int(rank)
    o = _map_head(rank, [dims[f"box{i}"] for i in range(rank)], [1] * rank, f"(const char *){tensor.data}", fail,
                  "the address") + ["  int64_t s = 0;"]
    for i in range(rank):
        extent = f"(int64_t)({dims[f'dim{i}']})"
        o.append(f"  if ({extent} < 1) {fail.format(f'dimension {i} has no elements')}")
        o.append(f"  dims[{i}] = (unsigned long long){extent};")
        if i:
            o.append(f"  s = (int64_t)({dims[f'stride{i}']});")
            o.append(f"  if ({extent} == 1) {{ s = (s + 15) / 16 * 16; if (s <= 0) s = 16; }}")
            o.append(f"  if (s <= 0 || s % 16 != 0) "
                     f"{fail.format(f'dimension {i} has a stride that is not a positive multiple of 16 bytes')}")
            o.append(f"  strides[{i - 1}] = (unsigned long long)s;")
    o += ["  (void)s;"] + _map_tail(f"{_enum(data_type, _DATA_TYPES, 'data type')}, {rank}", "0, 0, 0, 0", name, dst)
    return DECLARATIONS, "\n".join("        " + line for line in o)
