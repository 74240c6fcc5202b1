"""Tensor maps in memory, updated while a kernel runs (CuTe DSL's utils.TensorMapManager and its cpasync
operations), for kernels whose TMA copies move to another tensor per work unit: a grouped GEMM's A, B and C
change with each group.

A TMA atom's tensor map is a kernel parameter, computed on the host for the tensor it was made for. Such a kernel
copies it into a workspace of its own (128 bytes per map and CTA, in global memory) and rewrites the fields that
differ between the tensors (global address, extents, byte strides) with tensormap.replace, then publishes the
map to the TMA unit (the tensormap proxy): the writer releases its generic-proxy writes
(fence.proxy.tensormap::generic.release), each thread that copies with the map acquires its 128 bytes
(fence.proxy.tensormap::generic.acquire) and passes cute.copy the map's address (tma_desc_ptr=).

TensorMapUpdateMode.GMEM edits the map where it lives, in global memory; SMEM edits a copy in shared memory (the
replace instructions' latency is a shared-memory access's) and writes the 128 bytes back to global memory before
the release.
"""
from __future__ import annotations

import enum

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import ext

from . import primitives as _prims
from . import tma_blocked
from .tma import TmaCopyAtom, global_modes
from .tma_in_kernel import KernelMap, not_in_memory_error
from .tma_primitives import TensormapField, tensormap_replace

TENSORMAP_BYTES = 128
_WORDS = TENSORMAP_BYTES // 8        # the map as 64-bit words, one a lane


class TensorMapUpdateMode(enum.Enum):
    """Where a kernel edits its tensor maps: in place in global memory, or in a shared-memory copy."""
    GMEM = enum.auto()
    SMEM = enum.auto()


def _pointer(x, what):
    p = getattr(x, "iterator", x)
    if not (hasattr(p, "memspace") and hasattr(p, "address")):
        raise ext.user_error(f"{what} is a pointer (or a tensor) to a tensor map, got {x!r}", ext.DSLTypeError)
    return p


def _words(p):
    """The pointer as one to 64-bit words (a tensor map is 16 of them)."""
    return cute.recast_ptr(p, dtype=cutlass.Int64)


def _copy_map(src, dst):
    """The 128 bytes of the map at src copied to dst by the calling warp, a 64-bit word a lane."""
    lane = cute.arch.lane_idx()
    s, d = _words(src), _words(dst)
    ext.when(lane < _WORDS, lambda: (d + lane).store((s + lane).load()))
    cute.arch.sync_warp()


def _atom_map(atom):
    """A pointer (generic) to the tensor map the atom was made with: its kernel parameter."""
    d = atom.tma_desc
    if isinstance(d, KernelMap):
        raise not_in_memory_error()
    if not isinstance(d, ext.DeviceHostArgument):
        raise ext.user_error("the TMA atom's tensor map is read inside a kernel: pass the atom to the kernel",
                             ext.DSLTypeError)
    addr = cutlass.Int64.from_ir(ext.builder().op1("llvm.ptrtoint", [d.address], "i64"))
    return cute.make_ptr(cutlass.Int64, addr, cute.AddressSpace.generic, assumed_align=64)


def _atom_and_map(atom, ptr, what: str, name: str):
    """The pointer to the tensor map an operation of a TMA atom writes (global or shared memory), checked."""
    if not isinstance(atom, TmaCopyAtom):
        raise ext.user_error(f"{what}: expected a TMA atom (make_tiled_tma_atom), got {atom!r}", ext.DSLTypeError)
    p = _pointer(ptr, f"{what}: {name}")
    if p.memspace not in ("gmem", "smem", "generic"):
        raise ext.user_error(f"{what}: the tensor map is in global or shared memory, got a {p.memspace} pointer",
                             ext.DSLTypeError)
    return p


# --- cute.nvgpu.cpasync ---------------------------------------------------------------------------------------------

def update_tma_descriptor(tma_atom, gmem_tensor, tma_desc_ptr, *, loc=None, ip=None):
    """Rewrites the tensor map at tma_desc_ptr (global or shared memory), made from tma_atom, to describe gmem_tensor:
    a tensor of the atom's element type and of the same modes (flattened) as the tensor the atom was made for,
    elsewhere and of other extents and strides. Each calling thread writes the fields (call it from one thread, or
    from a warp under an elected lane)."""
    p = _atom_and_map(tma_atom, tma_desc_ptr, "update_tma_descriptor", "tma_desc_ptr")
    layout = getattr(gmem_tensor, "layout", None)
    it = getattr(gmem_tensor, "iterator", None)
    if layout is None or getattr(it, "memspace", None) not in ("gmem", "generic"):
        raise ext.user_error(f"update_tma_descriptor: gmem_tensor is a tensor in global memory, got {gmem_tensor!r}",
                             ext.DSLTypeError)
    if getattr(tma_atom, "blocks", None) is not None:
        tma_blocked.replace_fields(tma_atom, gmem_tensor, p, tensormap_replace, TensormapField)
        return
    merged = getattr(tma_atom, "merged", {})    # modes the atom read as one run (global_modes): so are the tensor's
    shape, stride = global_modes(layout, max(merged) + 1 if merged else 0)
    if len(shape) <= max(tma_atom.dims):
        raise ext.user_error(f"update_tma_descriptor: the tensor has {len(shape)} modes (flattened), the atom's "
                             f"tensor map was made for a tensor of at least {max(tma_atom.dims) + 1}",
                             ext.DSLValueError)
    c = tma_atom.dims[0]
    if isinstance(stride[c], int) and stride[c] != 1:
        # a run-time stride there is the program's promise (a group's strides read from memory)
        raise ext.user_error(f"update_tma_descriptor: mode {c} of the tensor is the map's contiguous one and must "
                             f"have stride 1, got strides {stride}", ext.DSLValueError)
    ebytes = max(1, tma_atom.element_type.width // 8)
    pack = getattr(tma_atom, "pack", 1)
    tensormap_replace(TensormapField.GLOBAL_ADDRESS, p, it.toint(cutlass.Int64))
    for i, mode in enumerate(tma_atom.dims):
        extent = cutlass.Int32(shape[mode])
        if i == 0 and pack > 1:
            extent = extent // pack
        tensormap_replace(TensormapField.GLOBAL_DIM, p, extent, ord=i)
        if i and not (isinstance(shape[mode], int) and shape[mode] == 1):
            # ord i - 1: the byte stride of dimension i (dimension 0 is contiguous); a mode of one element is
            # never stepped along and keeps the map's (legal) stride
            step = cutlass.Int64(stride[mode]) * ebytes // pack
            tensormap_replace(TensormapField.GLOBAL_STRIDE, p, step, ord=i - 1)


def _copy_whole_map(src, dst):
    """The 128 bytes at src copied to dst by the calling thread alone, a 64-bit word a trip of a loop kept rolled:
    src is a kernel parameter, whose words, unrolled, the compiler would read all at once ahead of the stores and
    hold in 32 registers (a kernel that only writes maps would need twice the registers of one that encodes them)."""
    s, d = _words(src), _words(dst)
    for w in ext.rolled_range(_WORDS):
        (d + w).store((s + w).load())


def copy_tensormap(tma_atom, tensormap_ptr, *, loc=None, ip=None):
    """Writes the atom's tensor map at tensormap_ptr (global or shared memory, 64-byte aligned), each calling
    thread the whole map: an atom made in host code its parameter as it is; one made in this kernel its template
    completed with the address, extents and strides of the tensor it was made for (tma_in_kernel.py). The map is
    the generic proxy's until released (fence_tma_desc_release) or, for a later kernel, until this one ends."""
    p = _atom_and_map(tma_atom, tensormap_ptr, "copy_tensormap", "tensormap_ptr")
    d = tma_atom.tma_desc
    if isinstance(d, KernelMap):
        template = cute.make_ptr(cutlass.Int64, cutlass.Int64.from_ir(
            ext.builder().op1("llvm.ptrtoint", [d.template.address], "i64")), cute.AddressSpace.generic,
            assumed_align=64)
        _copy_whole_map(template, p)
        update_tma_descriptor(tma_atom, d.tensor, p)
    else:
        _copy_whole_map(_atom_map(tma_atom), p)


def fence_tma_desc_release(*, loc=None, ip=None):
    """Publishes this thread's writes of tensor maps (generic proxy) to later TMA uses of them, GPU-wide."""
    _prims.fence_proxy_release("gpu")


def fence_tma_desc_acquire(tma_desc_ptr, *, loc=None, ip=None):
    """Makes the tensor map at tma_desc_ptr, released by its writer, visible to this thread's TMA copies."""
    _prims.fence_proxy_acquire("gpu", _pointer(tma_desc_ptr, "fence_tma_desc_acquire: tma_desc_ptr"))


def cp_fence_tma_desc_release(tma_desc_global_ptr, tma_desc_shared_ptr, *, loc=None, ip=None):
    """Copies the tensor map edited in shared memory to its place in global memory and releases it (the calling
    warp, together)."""
    g = _pointer(tma_desc_global_ptr, "cp_fence_tma_desc_release: tma_desc_global_ptr")
    s = _pointer(tma_desc_shared_ptr, "cp_fence_tma_desc_release: tma_desc_shared_ptr")
    if s.memspace != "smem" or g.memspace not in ("gmem", "generic"):
        raise ext.user_error(f"cp_fence_tma_desc_release: copies a map from shared to global memory, got {s!r} -> "
                             f"{g!r}", ext.DSLTypeError)
    _copy_map(s, g)
    fence_tma_desc_release()


# --- utils ------------------------------------------------------------------------------------------------------

class TensorMapManager:
    """The tensor maps of a kernel that retargets its TMA copies (see the module's description)."""

    def __init__(self, tensormap_update_mode: TensorMapUpdateMode = TensorMapUpdateMode.GMEM,
                 bytes_per_tensormap: int = TENSORMAP_BYTES):
        if not isinstance(tensormap_update_mode, TensorMapUpdateMode):
            raise ext.user_error(f"TensorMapManager: the update mode is a TensorMapUpdateMode, got "
                                 f"{tensormap_update_mode!r}", ext.DSLTypeError)
        if bytes_per_tensormap != TENSORMAP_BYTES:
            raise ext.user_error(f"TensorMapManager: a tensor map is {TENSORMAP_BYTES} bytes, got "
                                 f"{bytes_per_tensormap}", ext.DSLValueError)
        self.tensormap_update_mode = tensormap_update_mode
        self.bytes_per_tensormap = bytes_per_tensormap

    def get_tensormap_ptr(self, ptr, address_space=None, *, loc=None, ip=None):
        """The tensor map at ptr (a workspace slot's first element) as a 64-byte-aligned pointer in address_space
        (global memory by default; generic for cute.copy's tma_desc_ptr=)."""
        space = cute.AddressSpace.gmem if address_space is None else address_space
        p = _pointer(ptr, "get_tensormap_ptr: ptr")
        q = cute.recast_ptr(p, dtype=cutlass.Int64)
        if q.memspace != space.name and not (space == cute.AddressSpace.generic and q.memspace == "generic"):
            q = q.tospace(space)
        return q.align(64)

    def init_tensormap_from_atom(self, copy_atom, dst_ptr, warp_id: int, *, loc=None, ip=None):
        """Warp warp_id copies the atom's tensor map (its kernel parameter) to dst_ptr."""
        if not isinstance(copy_atom, TmaCopyAtom):
            raise ext.user_error(f"init_tensormap_from_atom: expected a TMA atom, got {copy_atom!r}",
                                 ext.DSLTypeError)
        dst = _pointer(dst_ptr, "init_tensormap_from_atom: dst_ptr")
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        ext.when(warp == warp_id, lambda: _copy_map(_atom_map(copy_atom), dst))

    def fence_tensormap_initialization(self, *, loc=None, ip=None):
        """The writer's release of the maps it initialized."""
        fence_tma_desc_release()

    def fence_tensormap_update(self, tensormap_ptr, *, loc=None, ip=None):
        """A user's acquire of the map at tensormap_ptr before copying with it."""
        fence_tma_desc_acquire(tensormap_ptr)

    def update_tensormap(self, tensor_gmem, tma_copy_atom, tensormap_gmem_ptr, warp_id: int,
                         tensormap_smem_ptr=None, *, loc=None, ip=None):
        """Warp warp_id retargets each map of tensormap_gmem_ptr (made from the matching atom) to the matching
        tensor (tuples of one or more), edited in place (GMEM) or in the shared-memory copies at
        tensormap_smem_ptr (SMEM), and releases them."""
        tensors, atoms, gptrs = (tuple(x) if isinstance(x, (tuple, list)) else (x,)
                                 for x in (tensor_gmem, tma_copy_atom, tensormap_gmem_ptr))
        if not len(tensors) == len(atoms) == len(gptrs):
            raise ext.user_error(f"update_tensormap: {len(tensors)} tensors, {len(atoms)} atoms and {len(gptrs)} "
                                 "maps; give one of each per map", ext.DSLValueError)
        smem = self.tensormap_update_mode == TensorMapUpdateMode.SMEM
        if smem:
            sptrs = tuple(tensormap_smem_ptr) if isinstance(tensormap_smem_ptr, (tuple, list)) else \
                (tensormap_smem_ptr,)
            if len(sptrs) != len(gptrs) or any(s is None for s in sptrs):
                raise ext.user_error("update_tensormap: the SMEM mode edits shared-memory copies; give one "
                                     "tensormap_smem_ptr per map", ext.DSLValueError)
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())

        def update():
            if smem:
                for g, s in zip(gptrs, sptrs):
                    _copy_map(_pointer(g, "update_tensormap: a map"), _pointer(s, "update_tensormap: a copy"))
            targets = sptrs if smem else gptrs

            def edit():
                for atom, tensor, t in zip(atoms, tensors, targets):
                    update_tma_descriptor(atom, tensor, t)

            ext.when(cute.arch.lane_idx() == 0, edit)
            cute.arch.sync_warp()
            if smem:
                for g, s in zip(gptrs, sptrs):
                    _copy_map(_pointer(s, "update_tensormap: a copy"), _pointer(g, "update_tensormap: a map"))
            fence_tma_desc_release()

        ext.when(warp == warp_id, update)


NAMES = {"utils.TensorMapManager": TensorMapManager, "utils.TensorMapUpdateMode": TensorMapUpdateMode,
         "cpasync.update_tma_descriptor": update_tma_descriptor, "cpasync.copy_tensormap": copy_tensormap,
         "cpasync.fence_tma_desc_release": fence_tma_desc_release,
         "cpasync.fence_tma_desc_acquire": fence_tma_desc_acquire,
         "cpasync.cp_fence_tma_desc_release": cp_fence_tma_desc_release}
