"""TMA atoms made inside a kernel (cpasync.make_tiled_tma_atom called in device code), for kernels that write the
tensor maps of tensors known only at run time into memory (a grouped GEMM's per-group maps, each group's extents
read from an offsets tensor): cpasync.copy_tensormap(atom, ptr) writes the map to global or shared memory, and
copies then take it through tma_desc_ptr=.

A tensor map's encoding is the driver's (cuTensorMapEncodeTiled), which a kernel cannot call; PTX edits the fields
of an existing map (tensormap.replace: address, extents, strides, box, element strides, type, swizzle). So the atom
made in a kernel holds a template: a map the host encodes at each call (the backend's host hook, as for any atom)
with the atom's static choices (data type, rank, box, swizzle) over a nominal tensor of one box, passed to the
kernel as a grid-constant parameter it gets as its tracing asks for it (ext.kernel_host_argument); copy_tensormap
copies the template and replaces its address, extents and strides with those of the atom's tensor.
"""
from __future__ import annotations

import warpweave as cutlass
from warpweave import ext

_TENSOR_FIELDS = ("extent", "gstride")


class KernelMap:
    """The tensor map of an atom made in a kernel: `template` (a DeviceHostArgument) and the tensor whose address,
    extents and strides complete it."""

    def __init__(self, template, tensor):
        self.template = template
        self.tensor = tensor

    def __repr__(self):
        return f"KernelMap(template {self.template.host!r})"


def template_attributes(attrs: dict) -> dict:
    """The encoder's attributes for the template of an atom's map: its static choices, over a compact tensor of one
    box at offset 0 (each stride a multiple of 16 bytes, as the encoder asks); what depends on the tensor is
    replaced in the kernel. A tiled map's encoder takes the tensor's extents and element strides (extent{i},
    gstride{i}); a blocked one's (tma_blocked.py) its dimensions and byte strides (dim{i}, stride{i})."""
    if "extent0" not in attrs:
        return _blocked_template(attrs)
    rank, pack, ebytes = int(attrs["rank"]), int(attrs["pack"]), int(attrs["ebytes"])
    out = {k: v for k, v in attrs.items() if not k.startswith(_TENSOR_FIELDS) and k != "offset"}
    step = 0
    for i in range(rank):
        box = int(attrs[f"box{i}"])
        if i == 0:
            out["extent0"], out["gstride0"] = box * pack, 1
            step = -(-box * ebytes // 16) * 16   # the map's units along dimension 0: bytes for a packed type
        else:
            out[f"extent{i}"], out[f"gstride{i}"] = box, step * pack // ebytes
            step *= box
    out["offset"] = 0
    return out


def _blocked_template(attrs: dict) -> dict:
    out = {k: v for k, v in attrs.items() if not k.startswith(("dim", "stride"))}
    step = -(-int(attrs["box0"]) * int(attrs["ebytes"]) // 16) * 16
    out["dim0"] = attrs["dim0"]    # the block, in the moved type's units: static, as is
    for i in range(1, int(attrs["rank"])):
        box = int(attrs[f"box{i}"])
        out[f"dim{i}"], out[f"stride{i}"] = box, step
        step *= box
    return out


def kernel_descriptor(gmem_tensor):
    """make_tiled_tma_atom's descriptor(producer, attrs) inside a kernel: a KernelMap over a template parameter."""
    def descriptor(name, attrs):
        # the template's nominal address is a tensor argument's: one the encoder takes (16-byte aligned)
        return KernelMap(ext.kernel_host_argument(name, min_align=16, **template_attributes(attrs)), gmem_tensor)
    return descriptor


def not_in_memory_error():
    return ext.user_error("this TMA atom was made inside the kernel: its tensor map is not in memory yet; write it "
                          "with cpasync.copy_tensormap(atom, ptr) (global or shared memory, 128 bytes, 64-byte "
                          "aligned) and copy with cute.copy(..., tma_desc_ptr=ptr)", ext.DSLTypeError)


class TmaDescriptorTiledType:
    """cute_nvgpu.TmaDescriptorTiledType: what a pointer to a tiled tensor map points to, for
    cute.recast_iter(cute.PtrType.get(TmaDescriptorTiledType.get(), ...), ptr); such a pointer is one to the map's
    64-bit words, and cute.copy(..., tma_desc_ptr=) takes it."""
    pointee_dtype = cutlass.Int64

    @staticmethod
    def get(context=None):
        return TmaDescriptorTiledType

    def __repr__(self):
        return "!cute_nvgpu.tma_descriptor_tiled"


NAMES = {"cute_nvgpu.TmaDescriptorTiledType": TmaDescriptorTiledType}
