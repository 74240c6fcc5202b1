"""cutlass.experimental.primitives' tensor-copy (TMA) operations, one instruction each, CuTe DSL's signatures:

    cp_async_bulk_tensor_shared_cta_global(dst, tensormap, coords, mbar)
    cp_async_bulk_tensor_shared_cluster_global(dst, tensormap, coords, mbar, im2col_offsets=(), *,
                                               multicast_mask=None, group=CTAGroup.CTA_1)
    cp_async_bulk_tensor_global_shared_cta(tensormap, src, coords)
    prefetch_tensormap(tensormap)
    tensormap_replace(field, tensormap, new_value=..., ord=None)

dst / src / mbar are shared-memory arrays, tensors or pointers (an array's first element), tensormap a
TensorMap.get_ptr() (or a pointer to a tensor map in global or shared memory), coords the box's coordinates in the
tensor map's order (innermost first). The copies are the backend's TMA entries (those of cute.nvgpu.cpasync's
atoms), selected for the target: with group=CTA_2 or a multicast mask, the generations that have them. The calling
thread issues the instruction (elect one first, as the examples do).
"""
from __future__ import annotations

import enum

import warpweave as cutlass
from warpweave import ext


class CTAGroup(enum.Enum):
    """The CTAs one operation works for: one, or the pair of a 2-CTA MMA (.cta_group::1 / ::2)."""
    CTA_1 = "cta_1"
    CTA_2 = "cta_2"


class TensormapField(enum.Enum):
    """The fields of a tensor map that tensormap_replace sets."""
    GLOBAL_ADDRESS = "global_address"
    RANK = "rank"
    BOX_DIM = "box_dim"
    GLOBAL_DIM = "global_dim"
    GLOBAL_STRIDE = "global_stride"
    ELEMENT_STRIDE = "element_stride"


# cta_group -> fn(builder, mbar i32) -> the mbarrier address the loads of that group complete on; a generation
# whose copies serve 2-CTA MMAs registers its rule for group 2 (Blackwell: the pair's even CTA's barrier).
MBARRIER_OF_GROUP: dict = {}


def pointer(x, what):
    """The pointer an argument stands for: a pointer, a tensor's iterator, an array's first element."""
    if isinstance(x, (cutlass.Numeric, int, float, bool)) or x is None:
        raise ext.user_error(f"{what} is a pointer, an array or a tensor, got {x!r}", ext.DSLTypeError)
    data_ptr = getattr(x, "data_ptr", None)
    if callable(data_ptr):
        x = data_ptr()
    x = getattr(x, "iterator", x)
    if not (hasattr(x, "memspace") and hasattr(x, "address")):
        raise ext.user_error(f"{what} is a pointer, an array or a tensor, got {x!r}", ext.DSLTypeError)
    return x


def shared_address(b, x, what):
    p = pointer(x, what)
    if p.memspace != "smem":
        raise ext.user_error(f"{what} must be in shared memory, got a {p.memspace} pointer", ext.DSLTypeError)
    return b.op1("llvm.ptrtoint", [p.address(0)], "i32")


def _tensormap(b, x, what="tensormap"):
    p = pointer(x, what)
    if p.memspace not in ("generic", "gmem"):
        raise ext.user_error(f"{what} is the generic or global address of a tensor map (TensorMap.get_ptr()), got a "
                             f"{p.memspace} pointer", ext.DSLTypeError)
    return b.op1("llvm.ptrtoint", [p.address(0)], "i64")


def _coords(coords):
    cs = tuple(coords) if isinstance(coords, (tuple, list)) else (coords,)
    if not 1 <= len(cs) <= 5:
        raise ext.user_error(f"coords: a tensor map has 1 to 5 dimensions, got {len(cs)} coordinates",
                             ext.DSLValueError)
    return [cutlass.Int32(c).ir() for c in cs]


def cta_group(group) -> int:
    """1 or 2 for a CTAGroup (or its value, "cta_1" / "cta_2"); None is CTA_1."""
    if group is None:
        return 1
    name = getattr(group, "value", group)
    if name in ("cta_1", "cta_2"):
        return int(name[-1])
    raise ext.user_error(f"group must be a CTAGroup (CTA_1 or CTA_2), got {group!r}", ext.DSLTypeError)


def _select(name, params, what):
    try:
        return ext.select_instruction(name, params)
    except ext.DSLError:
        raise
    except Exception as e:  # no instruction of these parameters on the target
        raise ext.user_error(f"{what}: {e}", ext.DSLValueError) from None


def cp_async_bulk_tensor_shared_cta_global(dst, tensormap, coords, mbar, *, loc=None, ip=None):
    """A box of the tensor map at coords into this CTA's shared memory at dst, its bytes completing on mbar."""
    b = ext.builder()
    cs = _coords(coords)
    backend, entry = _select("cpasync.CopyBulkTensorTileG2SOp", {"rank": len(cs), "cta_group": 1},
                             "cp_async_bulk_tensor_shared_cta_global")
    ext.emit_instruction(b, backend, entry, {"dst": [shared_address(b, dst, "dst")], "tmap": [_tensormap(b, tensormap)],
                                             "mbar": [shared_address(b, mbar, "mbar")], "coords": cs})


def cp_async_bulk_tensor_shared_cluster_global(dst, tensormap, coords, mbar, im2col_offsets=(), *,
                                               multicast_mask=None, group=CTAGroup.CTA_1, loc=None, ip=None):
    """A box of the tensor map at coords into shared memory at dst: of this CTA, or with multicast_mask of every
    CTA of the cluster whose bit is set (same offsets); with group=CTA_2 for a 2-CTA MMA's pair."""
    if im2col_offsets:
        raise ext.user_error("cp_async_bulk_tensor_shared_cluster_global: im2col copies are not supported; pass "
                             "im2col_offsets=[] for a tiled tensor map", ext.DSLNotImplementedError)
    b = ext.builder()
    cs = _coords(coords)
    g = cta_group(group)
    mc = multicast_mask is not None
    name = "cpasync.CopyBulkTensorTileG2SMulticastOp" if mc else "cpasync.CopyBulkTensorTileG2SOp"
    backend, entry = _select(name, {"rank": len(cs), "cta_group": g}, "cp_async_bulk_tensor_shared_cluster_global"
                             + (" with multicast" if mc else "") + (" for CTAGroup.CTA_2" if g == 2 else ""))
    bar = shared_address(b, mbar, "mbar")
    if g in MBARRIER_OF_GROUP:
        bar = MBARRIER_OF_GROUP[g](b, bar)
    inputs = {"dst": [shared_address(b, dst, "dst")], "tmap": [_tensormap(b, tensormap)], "mbar": [bar], "coords": cs}
    if mc:
        inputs["cta_mask"] = [cutlass.Int32(multicast_mask).ir()]
    ext.emit_instruction(b, backend, entry, inputs)


def cp_async_bulk_tensor_global_shared_cta(tensormap, src, coords, *, loc=None, ip=None):
    """This CTA's shared memory at src to the box of the tensor map at coords (completing with the thread's bulk
    groups: cp_async_bulk_commit_group / wait_group)."""
    b = ext.builder()
    cs = _coords(coords)
    backend, entry = _select("cpasync.CopyBulkTensorTileS2GOp", {"rank": len(cs)},
                             "cp_async_bulk_tensor_global_shared_cta")
    ext.emit_instruction(b, backend, entry, {"tmap": [_tensormap(b, tensormap)], "src": [shared_address(b, src, "src")],
                                             "coords": cs})


def prefetch_tensormap(tensormap, *, loc=None, ip=None):
    """Brings the tensor map into the cache (before its first use)."""
    b = ext.builder()
    backend, entry = ext.select_instruction("cpasync.prefetch_descriptor", {}, {"tmap"})
    ext.emit_instruction(b, backend, entry, {"tmap": [_tensormap(b, tensormap)]})


def prefetch(address, *, tensormap: bool = False, loc=None, ip=None, **kwargs):
    """cute.arch.prefetch(address, tensormap=True): brings the tensor map at address (a pointer, or an IR pointer
    value of generic or global memory) into the cache; the prefetch of data into a cache level is not among the
    backend's instructions."""
    if not tensormap or kwargs:
        raise ext.user_error("cute.arch.prefetch: only a tensor map's (tensormap=True) is available on this target; "
                             "a data prefetch into a cache level is not", ext.DSLValueError)
    b = ext.builder()
    if isinstance(address, ext.ir.Value):
        ptr = ext.ir_llvm.PointerType
        if not ptr.isinstance(address.type) or ptr(str(address.type)).address_space not in (0, 1):
            raise ext.user_error(f"cute.arch.prefetch: the address is a generic or global pointer, got a value of "
                                 f"type {address.type}", ext.DSLTypeError)
        addr = b.op1("llvm.ptrtoint", [address.use()], "i64")
    else:
        addr = _tensormap(b, address, "cute.arch.prefetch's address")
    backend, entry = ext.select_instruction("cpasync.prefetch_descriptor", {}, {"tmap"})
    ext.emit_instruction(b, backend, entry, {"tmap": [addr]})


def tensormap_replace(field, tensormap, new_value=None, ord=None, *, loc=None, ip=None):
    """Sets a field of the tensor map at tensormap (generic or shared memory) to new_value; ord: the dimension
    (innermost first) for BOX_DIM, GLOBAL_DIM, GLOBAL_STRIDE and ELEMENT_STRIDE."""
    if not isinstance(field, TensormapField):
        raise ext.user_error(f"tensormap_replace: field must be a TensormapField, got {field!r}", ext.DSLTypeError)
    if new_value is None:
        raise ext.user_error("tensormap_replace: new_value= is required", ext.DSLTypeError)
    per_dim = field.name in ("BOX_DIM", "GLOBAL_DIM", "GLOBAL_STRIDE", "ELEMENT_STRIDE")
    if per_dim != (ord is not None):
        raise ext.user_error(f"tensormap_replace: {field.name} " + ("needs ord= (the dimension, 0..4)" if per_dim
                             else "takes no ord="), ext.DSLTypeError)
    attrs = {}
    if per_dim:
        o = ord.value if isinstance(ord, cutlass.Numeric) and ord.is_static else ord
        if not isinstance(o, int) or not 0 <= o <= 4:
            raise ext.user_error(f"tensormap_replace: ord must be a static dimension 0..4, got {ord!r}",
                                 ext.DSLValueError)
        attrs["ord"] = o
    b = ext.builder()
    p = pointer(tensormap, "tensormap")
    space = {"smem": "shared::cta", "gmem": "global", "generic": "generic"}.get(p.memspace)
    if space is None:
        raise ext.user_error(f"tensormap_replace: the tensor map is in global or shared memory, got a {p.memspace} "
                             "pointer", ext.DSLTypeError)
    addr = b.op1("llvm.ptrtoint", [p.address(0)], "i32" if space == "shared::cta" else "i64")
    backend, entry = _select("tensormap.replace", {"field": field.value, "space": space}, "tensormap_replace")
    wide = field.name in ("GLOBAL_ADDRESS", "GLOBAL_STRIDE")
    value = (cutlass.Int64 if wide else cutlass.Int32)(new_value).ir()
    ext.emit_instruction(b, backend, entry, {"addr": [addr], "new_value": [value]}, attrs)


NAMES = ("CTAGroup", "TensormapField", "cp_async_bulk_tensor_shared_cta_global",
         "cp_async_bulk_tensor_shared_cluster_global", "cp_async_bulk_tensor_global_shared_cta", "prefetch_tensormap",
         "tensormap_replace")
