"""The world of ranks of a compile-only run: a multi-GPU program (one process per GPU, started by torchrun) compiles
its kernels in one process without a GPU, as rank RANK of a world of WORLD_SIZE ranks on one node.

What changes inside `emulated_world()` (compile_only enters it where PyTorch is installed):
- The launcher's environment: RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT, each
  where the caller has not set it. The world's size is WORLD_SIZE where set, else WARPWEAVE_COMPILE_ONLY_WORLD_SIZE
  (default 2, the smallest world the multi-GPU programs accept); the rank is RANK where set, else 0.
- torch.distributed.init_process_group makes a group of PyTorch's fake backend, whatever backend, rendezvous and
  device were asked for: the world's size and this rank as the group's, collectives that move nothing (the other
  ranks are not there; what a collective would compute is not needed to compile).
- torch.cuda has one device per rank (device_count), each reaching every other's memory (can_device_access_peer)
  and multicast (NVLink SHARP) capable; set_device picks one of them.
- torch.distributed._symmetric_memory: empty() gives host memory (as every "cuda" tensor of the run), and
  rendezvous() a handle over the world's buffers: this rank's is the tensor's own storage, each peer's is host
  memory of the same size, and the multicast address is host memory too. Pointers and tensors of the handle
  (get_buffer, buffer_ptrs, multicast_ptr, signal pads) are real addresses, which is what compiling needs; nothing
  is shared between ranks. torch.ops.symm_mem's all-reduce through the multicast address adds the world's
  buffers up in place.
- nvshmem4py (nvshmem.core), where installed: init and finalize set up nothing (the world is this process);
  tensor() allocates symmetric memory as symm_mem.empty does, get_peer_tensor and get_multicast_tensor give the
  same view of a peer's buffer or of the multicast buffer, free_tensor releases nothing (host memory lives as
  long as its tensors).
- cuda.core's Device, where no CUDA driver can be loaded: one of the world's devices; set_current picks it as
  torch.cuda.set_device does, create_stream gives a stream whose handle is 0 (the launches on it are not made).

Kernels written for such a world compile for the rank and world size the program computes from it; nothing of the
devices' actual topology enters the code.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os

from ... import _core
from .target import select_target

DEFAULT_WORLD_SIZE = 2
# Host memory that stands in for device allocations starts where cudaMalloc's would (compile_only's alignment).
_ALIGNMENT = 256


def env_positive_int(name: str, default: int) -> int:
    """The positive integer of environment variable `name`, or default where it is unset or empty."""
    v = os.environ.get(name, "")
    if not v:
        return default
    if not v.isdigit() or int(v) <= 0:
        raise ValueError(f"{name} must be a positive integer, got {v!r}")
    return int(v)


def world_shape() -> tuple[int, int]:
    """(world size, this rank) of the emulated world, from the environment (module note)."""
    size = env_positive_int("WORLD_SIZE", 0) or env_positive_int("WARPWEAVE_COMPILE_ONLY_WORLD_SIZE",
                                                                  DEFAULT_WORLD_SIZE)
    rank = os.environ.get("RANK", "0") or "0"
    if not rank.isdigit() or int(rank) >= size:
        raise ValueError(f"RANK must be an integer in [0, {size}) (the world has {size} ranks), got {rank!r}")
    return size, int(rank)


def _host_bytes(torch, nbytes: int):
    """A uint8 tensor of nbytes host memory starting at an aligned address."""
    raw = torch.empty(nbytes + _ALIGNMENT, dtype=torch.uint8, device="cpu")
    off = -raw.data_ptr() % _ALIGNMENT
    return raw[off:off + nbytes]


class HostSymmetricMemory:
    """What symm_mem.rendezvous returns in an emulated world (module note): the world's buffers of one symmetric
    allocation, this rank's being the allocation itself."""

    def __init__(self, torch, storage_bytes, rank: int, world_size: int, signal_pad_size: int):
        self._torch = torch
        self.rank, self.world_size = rank, world_size
        self.buffer_size = storage_bytes.numel()
        self.signal_pad_size = signal_pad_size
        self._buffers = [storage_bytes if r == rank else _host_bytes(torch, self.buffer_size)
                         for r in range(world_size)]
        self._multicast = _host_bytes(torch, self.buffer_size)
        self._signal_pads = [_host_bytes(torch, signal_pad_size).zero_() for _ in range(world_size)]
        self.buffer_ptrs = [b.data_ptr() for b in self._buffers]
        self.signal_pad_ptrs = [p.data_ptr() for p in self._signal_pads]
        # the pointer arrays as a kernel reads them (device pointers to the ranks' pointers)
        self._ptr_tables = (torch.tensor(self.buffer_ptrs, dtype=torch.int64),
                            torch.tensor(self.signal_pad_ptrs, dtype=torch.int64))
        self.buffer_ptrs_dev = self._ptr_tables[0].data_ptr()
        self.signal_pad_ptrs_dev = self._ptr_tables[1].data_ptr()
        self.multicast_ptr = self._multicast.data_ptr()

    def _view(self, what, pool, rank, sizes, dtype, storage_offset):
        if not 0 <= int(rank) < self.world_size:
            raise ValueError(f"{what}: rank {rank} is not in the world of {self.world_size} ranks")
        torch = self._torch
        sizes = [int(s) for s in ((sizes,) if isinstance(sizes, int) else sizes)]
        esize = torch.empty((), dtype=dtype).element_size()
        numel = 1
        for s in sizes:
            numel *= s
        begin, size = int(storage_offset) * esize, len(pool[int(rank)])
        if begin + numel * esize > size:
            raise ValueError(f"{what}: {numel} elements of {dtype} from element {storage_offset} exceed the "
                             f"{size} bytes of the buffer")
        return pool[int(rank)][begin:begin + numel * esize].view(dtype).view(sizes)

    def get_buffer(self, rank, sizes, dtype, storage_offset=0):
        return self._view("get_buffer", self._buffers, rank, sizes, dtype, storage_offset)

    def get_signal_pad(self, rank, sizes=None, dtype=None, storage_offset=0):
        dtype = dtype or self._torch.uint32
        if sizes is None:
            sizes = [self.signal_pad_size // self._torch.empty((), dtype=dtype).element_size() - storage_offset]
        return self._view("get_signal_pad", self._signal_pads, rank, sizes, dtype, storage_offset)

    def barrier(self, channel=0, timeout_ms=0):
        """Every rank of the emulated world is this process: there is no one to wait for."""

    def view_in(self, buffer, tensor):
        """The view `tensor` (into this rank's buffer) has, into `buffer` (a peer's, or the multicast one)."""
        offset = tensor.data_ptr() - self.buffer_ptrs[self.rank]
        if not 0 <= offset < max(self.buffer_size, 1):
            raise ValueError("the tensor is not a view into this rank's symmetric buffer")
        typed = buffer.view(tensor.dtype)   # as_strided counts from its storage's start, not from the view's
        return self._torch.as_strided(typed, tensor.shape, tensor.stride(),
                                      typed.storage_offset() + offset // tensor.element_size())

    def peer_view(self, rank, tensor):
        if not 0 <= int(rank) < self.world_size:
            raise ValueError(f"rank {rank} is not in the world of {self.world_size} ranks")
        return self.view_in(self._buffers[int(rank)], tensor)

    def multicast_view(self, tensor):
        return self.view_in(self._multicast, tensor)

    def all_reduce_in_place(self, tensor):
        """The sum over the world's buffers of `tensor`'s elements (a view into this rank's), stored in each."""
        views = [self.view_in(b, tensor) for b in self._buffers]
        total = sum(v.clone() for v in views)
        for v in views:
            v.copy_(total)
        return tensor


class _World:
    def __init__(self, torch, size: int, rank: int):
        self.torch = torch
        self.size, self.rank = size, rank
        self.device = rank
        self.handles: dict[int, HostSymmetricMemory] = {}   # storage address -> its rendezvous

    def handle_of(self, tensor):
        return self.handles.get(tensor.untyped_storage().data_ptr())

    def symmetric(self, tensor, signal_pad_size: int = 0):
        """The handle of tensor's storage, made on first use."""
        handle = self.handle_of(tensor)
        if handle is None:
            storage = tensor.untyped_storage()
            raw = self.torch.empty(0, dtype=self.torch.uint8).set_(storage)
            handle = HostSymmetricMemory(self.torch, raw, self.rank, self.size, signal_pad_size)
            self.handles[storage.data_ptr()] = handle
        return handle


def _launcher_environment(size: int, rank: int) -> dict:
    return {"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(size), "LOCAL_WORLD_SIZE": str(size),
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}


@contextlib.contextmanager
def _environment(values: dict):
    added = [k for k in values if k not in os.environ]
    for k in added:
        os.environ[k] = values[k]
    try:
        yield
    finally:
        for k in added:
            os.environ.pop(k, None)


def _patched(table):
    """Sets each (owner, name) of table to its value; returns what to restore."""
    saved = [(owner, name, owner.__dict__.get(name, getattr(owner, name))) for (owner, name) in table]
    for (owner, name), value in table.items():
        setattr(owner, name, value)
    return saved


@contextlib.contextmanager
def emulated_world():
    """The world of the module note, for the duration of the context. Yields its (size, rank)."""
    import torch
    import torch.distributed as dist

    size, rank = world_shape()
    world = _World(torch, size, rank)
    with contextlib.ExitStack() as stack:
        stack.enter_context(_environment(_launcher_environment(size, rank)))
        table = {(torch.cuda, "device_count"): lambda: world.size,
                 (torch.cuda, "current_device"): lambda: world.device,
                 (torch.cuda, "set_device"): lambda device: _set_device(world, device),
                 (torch.cuda, "can_device_access_peer"): lambda device, peer: True}
        if dist.is_available():
            table.update(_distributed_table(world))
        if importlib.util.find_spec("nvshmem") is not None:
            table.update(_nvshmem_table(world))
        if not _core.driver_available():
            table.update(_cuda_core_table(world))
        saved = _patched(table)
        try:
            if dist.is_available():
                stack.enter_context(_symmetric_ops(world))
            yield size, rank
        finally:
            if dist.is_available() and dist.is_initialized():
                dist.destroy_process_group()
            for owner, name, value in saved:
                setattr(owner, name, value)


def _set_device(world, device):
    index = device if isinstance(device, int) else getattr(device, "index", None)
    if isinstance(device, str):
        index = int(device.split(":")[1]) if ":" in device else 0
    index = 0 if index is None else index
    if not 0 <= index < world.size:
        raise ValueError(f"torch.cuda.set_device({device!r}): the compile-only world has devices 0..{world.size - 1}")
    world.device = index


def _distributed_table(world) -> dict:
    import torch.distributed as dist
    import torch.distributed._symmetric_memory as symm_mem
    from torch._C._distributed_c10d import _SymmetricMemory
    from torch.testing._internal.distributed.fake_pg import FakeStore

    torch = world.torch
    init = dist.init_process_group

    def init_process_group(*args, **kwargs):
        # Rank and size are the world's: a program asking for others (its own arguments) gets them where they fit.
        size = kwargs.get("world_size", -1)
        rank = kwargs.get("rank", -1)
        size = size if isinstance(size, int) and size > 0 else world.size
        rank = rank if isinstance(rank, int) and rank >= 0 else world.rank
        return init(backend="fake", store=FakeStore(), rank=rank, world_size=size)

    def empty(*size, dtype=None, device=None):
        shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)) else size
        return torch.empty(shape, dtype=dtype, device="cuda")   # host memory, as every CUDA tensor of the run

    def rendezvous(tensor, group=None):
        return world.symmetric(tensor, symm_mem.get_signal_pad_size())

    return {(dist, "init_process_group"): init_process_group,
            (symm_mem, "empty"): empty, (symm_mem, "rendezvous"): rendezvous,
            (_SymmetricMemory, "has_multicast_support"): staticmethod(lambda device_type, device_idx: True)}


@contextlib.contextmanager
def _symmetric_ops(world):
    """torch.ops.symm_mem's all-reduce through the multicast address, on the world's host buffers (the CUDA operator
    needs a device)."""
    from torch.overrides import TorchFunctionMode

    class SymmetricOps(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if str(func).startswith("symm_mem.multimem_all_reduce_"):
                return _multicast_all_reduce(world, *args, **(kwargs or {}))
            return func(*args, **(kwargs or {}))

    with SymmetricOps():
        yield


def _multicast_all_reduce(world, tensor, reduce_op, group_name=None):
    if reduce_op != "sum":
        raise ValueError(f"multimem_all_reduce_: the compile-only world adds ('sum'), got {reduce_op!r}")
    handle = world.handle_of(tensor)
    if handle is None:
        raise ValueError("multimem_all_reduce_: the tensor is not in symmetric memory (symm_mem.rendezvous)")
    return handle.all_reduce_in_place(tensor)


def _nvshmem_table(world) -> dict:
    import nvshmem.core as nvshmem

    torch = world.torch

    def init(device=None, uid=None, rank=None, nranks=None, mpi_comm=None, initializer_method=""):
        if rank is not None and nranks is not None and (int(nranks) != world.size or int(rank) != world.rank):
            raise ValueError(f"nvshmem.core.init(rank={rank}, nranks={nranks}): the compile-only world is rank "
                             f"{world.rank} of {world.size}")

    def tensor(shape, dtype=torch.float32, release=False, morder="C", except_on_del=True):
        shape = (int(shape),) if isinstance(shape, int) else tuple(int(x) for x in shape)
        if morder not in ("C", "F"):
            raise ValueError(f"nvshmem.core.tensor: morder is 'C' or 'F', got {morder!r}")
        if morder == "F":
            t = torch.empty(shape[::-1], dtype=dtype, device="cuda").permute(*range(len(shape) - 1, -1, -1))
        else:
            t = torch.empty(shape, dtype=dtype, device="cuda")
        world.symmetric(t)
        return t

    def handle(t, what):
        h = world.handle_of(t)
        if h is None:
            raise ValueError(f"nvshmem.core.{what}: the tensor is not symmetric memory (nvshmem.core.tensor)")
        return h

    return {(nvshmem, "init"): init, (nvshmem, "finalize"): lambda: None, (nvshmem, "tensor"): tensor,
            (nvshmem, "get_peer_tensor"):
                lambda t, peer_pe=None: handle(t, "get_peer_tensor").peer_view(
                    world.rank if peer_pe is None else peer_pe, t),
            (nvshmem, "get_multicast_tensor"): lambda team, t: handle(t, "get_multicast_tensor").multicast_view(t),
            (nvshmem, "free_tensor"): lambda t: None,
            (nvshmem, "my_pe"): lambda: world.rank, (nvshmem, "n_pes"): lambda: world.size}


class _HostCoreStream:
    """A stream of cuda.core's stand-in device: the default stream's handle, 0."""
    handle = 0

    def __cuda_stream__(self):
        return (0, 0)

    def sync(self):
        pass


def _cuda_core_table(world) -> dict:
    modules = [m for m in ("cuda.core", "cuda.core.experimental") if _importable(m)]
    if not modules:
        return {}

    class Device:
        """cuda.core.Device in a compile-only run without a driver: one of the world's devices."""

        def __init__(self, device_id=None):
            self.device_id = world.device if device_id is None else int(device_id)
            if not 0 <= self.device_id < world.size:
                raise ValueError(f"Device({device_id}): the compile-only world has devices 0..{world.size - 1}")

        @property
        def compute_capability(self):
            cc = select_target().compute_capability
            return (cc // 10, cc % 10)

        def set_current(self, ctx=None):
            world.device = self.device_id

        def create_stream(self, obj=None, options=None):
            return _HostCoreStream()

        def sync(self):
            pass

    return {(importlib.import_module(m), "Device"): Device for m in modules}


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
