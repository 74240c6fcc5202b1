"""Where resources' buffers live. SmemAllocator packs the SmemAllocations resources ask for
(get_smem_requirements) into one block of the kernel's shared memory, each at its byte `offset` from the block's
start (context.smem_base.data_ptr()); TmemAllocator packs TmemAllocations into tensor-memory columns. Layouts are
computed in Python while tracing (compute_layout); the block is carved when the TaskManager sets resources up."""
from __future__ import annotations

from ..._dsl.base.errors import DSLTypeError, DSLValueError, user_location
from ..._dsl.device.array import Array
from ..._dsl.device.smem import SmemAllocator as _KernelSmem
from ..._dsl.values.numeric import Numeric, Uint8
from ..._dsl.values.tensor import recast_ptr

__all__ = ["SmemAllocation", "SmemAllocator", "TmemAllocation", "TmemAllocator"]


def _pow2(n) -> bool:
    return isinstance(n, int) and n > 0 and not n & (n - 1)


class SmemAllocation:
    """`SmemAllocation(name, num_bytes)` or `SmemAllocation(name, dtype=T, count=n)`: a buffer of shared memory,
    aligned to `alignment` bytes; `offset` is its place in the block once the allocator's layout is computed."""

    def __init__(self, name: str, num_bytes: int | None = None, *, dtype=None, count: int = 1, alignment: int = 16):
        where = user_location()
        if dtype is not None:
            if not (isinstance(dtype, type) and issubclass(dtype, Numeric)) or dtype.width % 8:
                raise DSLTypeError(f"SmemAllocation {name}: dtype is a DSL numeric type of whole bytes, got "
                                   f"{dtype!r}", where)
            if num_bytes is not None:
                raise DSLValueError(f"SmemAllocation {name}: give a byte count or dtype and count, not both", where)
            num_bytes = count * dtype.width // 8
        if not isinstance(num_bytes, int) or num_bytes <= 0:
            raise DSLValueError(f"SmemAllocation {name}: the size is a static positive byte count, got {num_bytes!r}",
                                where)
        if not _pow2(alignment):
            raise DSLValueError(f"SmemAllocation {name}: alignment is a power of two, got {alignment!r}", where)
        self.name, self.num_bytes, self.dtype, self.alignment = name, num_bytes, dtype or Uint8, alignment
        self.offset = None

    def __repr__(self):
        return f"SmemAllocation({self.name!r}, {self.num_bytes} B at {self.offset})"


class _SmemBlock:
    """The carved block: data_ptr() is a shared-memory byte pointer to its start."""

    def __init__(self, ptr):
        self._ptr = ptr

    def data_ptr(self):
        return self._ptr


class SmemAllocator:
    """Packs allocations (of resources, or added one by one) into one shared-memory block, largest alignment
    first so that padding stays small; allocations of an alias group share their place."""

    def __init__(self):
        self.allocations, self.groups = [], []
        self._aliases = []  # alias groups: lists of sets of allocations that share one region
        self.total_bytes = None
        self.block = None
        self.tmem_ptr = None

    def _check_open(self, what):
        if self.total_bytes is not None:
            raise DSLValueError(f"SmemAllocator.{what} after compute_layout()", user_location(3))

    def add(self, allocation: SmemAllocation) -> SmemAllocation:
        self._check_open("add")
        if not isinstance(allocation, SmemAllocation):
            raise DSLTypeError(f"SmemAllocator.add takes a SmemAllocation, got {allocation!r}", user_location())
        if any(a is allocation for a in self.allocations):
            raise DSLValueError(f"SmemAllocation {allocation.name} is added twice", user_location())
        self.allocations.append(allocation)
        return allocation

    def add_tmem_ptr(self, allocation: SmemAllocation) -> SmemAllocation:
        """The shared-memory word the tensor-memory allocation writes its address into (stage_info.context's
        tmem_ptr_i32 once the block is carved)."""
        if self.tmem_ptr is not None:
            raise DSLValueError("SmemAllocator.add_tmem_ptr: the kernel has one tensor-memory address word",
                                user_location())
        self.tmem_ptr = self.add(allocation)
        return allocation

    def add_resource(self, resource) -> None:
        self._check_open("add_resource")
        for a in resource.get_smem_requirements():
            self.add(a)

    def add_pipeline_group(self, group) -> None:
        """A PipelineGroup's members: their buffers (their barriers are the group's pipeline's)."""
        self.groups.append(group)
        for m in group.members:
            if not any(a in self.allocations for a in m.get_smem_requirements()):
                self.add_resource(m)

    def add_alias_group(self, sets) -> None:
        """Buffers that never hold data at the same time share one region: `sets` lists allocations, or lists of
        allocations that live together (packed one after the other); the region is as large as its largest set."""
        norm = [list(x) if isinstance(x, (list, tuple)) else [x] for x in sets]
        if len(norm) < 2:
            raise DSLValueError("add_alias_group takes two or more allocations (or lists of them) to overlap",
                                user_location())
        for group in norm:
            for a in group:
                if not isinstance(a, SmemAllocation):
                    raise DSLTypeError(f"add_alias_group takes SmemAllocations, got {a!r}", user_location())
                if any(a is b for g in self._aliases for s_ in g for b in s_):
                    raise DSLValueError(f"SmemAllocation {a.name} is in two alias groups", user_location())
                if not any(a is b for b in self.allocations):
                    self.add(a)
        self._aliases.append(norm)

    def compute_layout(self) -> int:
        """Gives every allocation its offset; returns the block's size in bytes."""
        aliased = {id(a) for g in self._aliases for s_ in g for a in s_}
        offset = 0
        for a in sorted((a for a in self.allocations if id(a) not in aliased), key=lambda a: -a.alignment):
            offset = -(-offset // a.alignment) * a.alignment
            a.offset = offset
            offset += a.num_bytes
        for group in self._aliases:
            start = -(-offset // max(a.alignment for s_ in group for a in s_)) * max(
                a.alignment for s_ in group for a in s_)
            end = start
            for s_ in group:
                at = start
                for a in s_:
                    at = -(-at // a.alignment) * a.alignment
                    a.offset = at
                    at += a.num_bytes
                end = max(end, at)
            offset = end
        self.total_bytes = offset
        return offset

    @property
    def alignment(self) -> int:
        return max([a.alignment for a in self.allocations] + [16])

    def materialize(self):
        """Carves the block from the kernel's shared memory (at setup, in the kernel)."""
        if self.total_bytes is None:
            self.compute_layout()
        if self.block is None:
            self.block = _SmemBlock(_KernelSmem().allocate(max(self.total_bytes, 1), self.alignment))
        return self.block

    @property
    def smem_base(self):
        """The carved block (what works see as stage_info.context.smem_base): smem_base.data_ptr() + an
        allocation's offset is that allocation's address."""
        if self.block is None:
            raise DSLValueError("SmemAllocator.smem_base before TaskManager.setup_resources_and_tasks() carved the "
                                "block", user_location())
        return self.block

    def get(self, allocation: SmemAllocation):
        """The allocation as a shared-memory cutlass.Array of its element type, once the block is carved."""
        if self.block is None:
            raise DSLValueError("SmemAllocator.get before TaskManager.setup_resources_and_tasks() carved the block",
                                user_location())
        if allocation.offset is None:
            raise DSLValueError(f"SmemAllocation {allocation.name} is not in this allocator", user_location())
        ptr = recast_ptr(self.block.data_ptr() + allocation.offset, dtype=allocation.dtype)
        return Array(ptr, (allocation.num_bytes * 8 // allocation.dtype.width,), dtype=allocation.dtype)


class TmemAllocation:
    """`TmemAllocation(name, num_columns)`: columns of tensor memory; `offset` is its first column."""

    def __init__(self, name: str, num_columns: int):
        if not isinstance(num_columns, int) or num_columns <= 0:
            raise DSLValueError(f"TmemAllocation {name}: num_columns is a static positive integer, got "
                                f"{num_columns!r}", user_location())
        self.name, self.num_columns, self.offset = name, num_columns, None


class TmemAllocator:
    """Packs resources' TmemAllocations (get_tmem_requirements) into tensor-memory columns; total_columns is
    what the kernel allocates (a power of two, as the hardware allocates)."""

    def __init__(self, max_columns: int = 512):
        self.allocations, self.max_columns, self.total_columns = [], max_columns, None

    def add_resource(self, resource) -> None:
        for a in resource.get_tmem_requirements():
            self.add(a)

    def add(self, allocation: TmemAllocation) -> TmemAllocation:
        if not isinstance(allocation, TmemAllocation):
            raise DSLTypeError(f"TmemAllocator.add takes a TmemAllocation, got {allocation!r}", user_location())
        self.allocations.append(allocation)
        return allocation

    def compute_layout(self) -> int:
        col = 0
        for a in self.allocations:
            a.offset = col
            col += a.num_columns
        if col > self.max_columns:
            raise DSLValueError(f"TmemAllocator: {col} columns requested, {self.max_columns} exist", user_location())
        total = 32
        while total < col:
            total *= 2
        self.total_columns = total
        return total
