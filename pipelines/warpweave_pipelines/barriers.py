"""Barriers the pipelines are made of, from the backends' primitives."""
from __future__ import annotations

import warpweave as cutlass
import warpweave.cute as cute


class MbarrierArray:
    """`num` 8-byte mbarriers in shared memory, at `ptr` (a pointer to Int64 values)."""

    def __init__(self, ptr, num: int):
        if ptr.dtype is not cutlass.Int64 and ptr.dtype is not cutlass.Uint64:
            raise TypeError(f"mbarriers are 64-bit: give a pointer to Int64 values, got {ptr}")
        if ptr.memspace != "smem":
            raise TypeError(f"mbarriers live in shared memory, got {ptr}")
        self.ptr = ptr
        self.num = num

    def at(self, i):
        return self.ptr + i

    def init(self, count):
        """Every barrier expects `count` arrivals per phase. Call from one thread, then sync the block."""
        for i in cutlass.range_constexpr(self.num):
            cute.arch.mbarrier_init(self.at(i), cutlass.Int32(count))

    def arrive(self, i):
        cute.arch.mbarrier_arrive(self.at(i))

    def arrive_cp_async(self, i):
        """Arrives once this thread's cp.async copies issued so far have landed."""
        cute.nvgpu.cpasync.mbarrier_arrive_noinc(self.at(i))

    def wait(self, i, phase):
        cute.arch.mbarrier_wait(self.at(i), cutlass.Int32(phase))


class NamedBarrier:
    """A hardware named barrier (ids 1..15; 0 is the block's __syncthreads) over num_threads threads."""

    def __init__(self, barrier_id: int, num_threads: int):
        if not 0 <= barrier_id < 16:
            raise ValueError(f"named barrier ids are 0..15, got {barrier_id}")
        if num_threads % 32:
            raise ValueError(f"a named barrier counts whole warps, got {num_threads} threads")
        self.barrier_id = barrier_id
        self.num_threads = num_threads

    def arrive_and_wait(self):
        cute.arch.barrier(barrier_id=self.barrier_id, number_of_threads=self.num_threads)

    def arrive(self):
        cute.arch.barrier_arrive(barrier_id=self.barrier_id, number_of_threads=self.num_threads)

    def sync(self):
        self.arrive_and_wait()


def sync(barrier_id: int = 0, num_threads: int | None = None):
    """All threads of the block (or num_threads of them) meet at hardware barrier barrier_id (CuTe DSL's
    pipeline.sync)."""
    if not 0 <= barrier_id < 16:
        raise ValueError(f"named barrier ids are 0..15, got {barrier_id}")
    if num_threads is None:
        cute.arch.barrier(barrier_id=barrier_id)
    else:
        cute.arch.barrier(barrier_id=barrier_id, number_of_threads=num_threads)


def agent_sync(group, is_relaxed: bool = False):
    """All members of an agent meet: a warp's lanes (warp sync), a CTA's threads (block barrier), or every thread
    of the cluster (cluster arrive, relaxed where asked, then wait). A thread alone has nothing to wait for."""
    kind = getattr(group, "value", group)
    if kind == "thread":
        return
    if kind == "warp":
        cute.arch.sync_warp()
    elif kind == "threadblock":
        cute.arch.sync_threads()
    elif kind == "threadblockcluster":
        if is_relaxed:
            cute.arch.cluster_arrive_relaxed()
        else:
            cute.arch.cluster_arrive()
        cute.arch.cluster_wait()
    else:
        raise ValueError(f"agent_sync: {group!r} is no pipeline Agent (Thread, Warp, ThreadBlock, ThreadBlockCluster)")


def alloc_reserved_mbarrier(num_stages: int, *, multiplier: int = 2):
    """Shared memory for a pipeline's mbarriers: num_stages * multiplier Int64 words, 8-byte aligned, as a
    pointer. The kernel's shared memory is laid out once for its whole life here (it is never resized while the
    kernel runs), so the storage needs no placement of its own to stay valid."""
    if not isinstance(num_stages, int) or num_stages <= 0 or not isinstance(multiplier, int) or multiplier <= 0:
        raise ValueError(f"alloc_reserved_mbarrier: positive integers expected, got {num_stages!r}, {multiplier!r}")
    return cutlass.utils.SmemAllocator().allocate_array(cutlass.Int64, num_stages * multiplier, byte_alignment=8)


def own_barriers(barrier_storage, num_stages: int, per_stage: int = 2):
    """A pipeline's mbarrier storage: the one given, or (CuTe DSL's create() without barrier_storage) its own,
    carved from the kernel's shared memory where the pipeline is made."""
    if barrier_storage is not None:
        return barrier_storage
    if not isinstance(num_stages, int) or num_stages <= 0:
        raise ValueError(f"a pipeline needs a positive number of stages, got {num_stages!r}")
    return alloc_reserved_mbarrier(num_stages, multiplier=per_stage)
