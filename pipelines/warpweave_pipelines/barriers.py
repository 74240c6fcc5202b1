"""Barriers the pipelines are made of, from the backends' primitives."""
from __future__ import annotations

import copy
from dataclasses import dataclass

import warpweave as cutlass
import warpweave.cute as cute

from warpweave.ext import when

from .agents import CooperativeGroup, PipelineOp


MAX_CLUSTER = 16   # CTAs of the largest (non-portable) cluster: ranks 0..15, masks of 16 bits
MAX_ARRIVAL_COUNT = (1 << 20) - 1   # the most arrivals an mbarrier's phase can expect (its count field's width)

_TX_OPS = (PipelineOp.TmaLoad, PipelineOp.ClcLoad)


def _is_dsl_integer(value):
    return isinstance(value, cutlass.Numeric) and type(value).is_integer


def _static_int(value):
    """value as a Python int when it is known while tracing (a Python int or a DSL constant), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if _is_dsl_integer(value) and value.is_static:
        return int(value.value)
    return None


class MbarrierArray:
    """A pipeline's sync object: `num` 8-byte mbarriers in shared memory at `ptr` (a pointer to Int64 values), one
    per stage, that one agent of the pipeline arrives on (CuTe DSL's sync objects: PipelineAsync._make_sync_object).

    op_type says how that agent arrives (PipelineOp) and so what arrive()'s dst is: thread arrivals take a CTA rank
    (None: this CTA), TMA and CLC loads and MMA commits a multicast mask of CTAs (bit r: the CTA of rank r).
    tx_count: the bytes a stage's loads bring (TmaLoad, ClcLoad). cta_group: the CTAs of one MMA (TCGen05Mma)."""

    def __init__(self, ptr, num: int, op_type: PipelineOp = PipelineOp.AsyncThread, cg: CooperativeGroup | None = None,
                 tx_count=None, cta_group: int = 1):
        if ptr.dtype is not cutlass.Int64 and ptr.dtype is not cutlass.Uint64:
            raise TypeError(f"mbarriers are 64-bit: give a pointer to Int64 values, got {ptr}")
        if ptr.memspace != "smem":
            raise TypeError(f"mbarriers live in shared memory, got {ptr}")
        if not isinstance(op_type, PipelineOp) or op_type is PipelineOp.TmaStore:
            raise ValueError(f"a pipeline's barriers are arrived on by a PipelineOp other than TmaStore, got "
                             f"{op_type!r}")
        if op_type in _TX_OPS and (not isinstance(tx_count, int) or isinstance(tx_count, bool) or tx_count <= 0):
            raise ValueError(f"{op_type} barriers expect the positive static byte count of a stage (tx_count), got "
                             f"{tx_count!r}")
        self.ptr = ptr
        self.num = num
        self.op_type = op_type
        self.cg = cg
        self.tx_count = tx_count
        self.cta_group = cta_group

    def get_barrier(self, index, *, loc=None, ip=None):
        """The barrier of stage `index` (a pointer: TMA copies take it as tma_bar_ptr)."""
        return self.ptr + index

    at = get_barrier

    def init(self, count):
        """Every barrier expects `count` arrivals per phase. Call from one thread, then sync the block."""
        for i in cutlass.range_constexpr(self.num):
            cute.arch.mbarrier_init(self.get_barrier(i), cutlass.Int32(count))

    def wait(self, index, phase, *, loc=None, ip=None):
        cute.arch.mbarrier_wait(self.get_barrier(index), cutlass.Int32(phase))

    def try_wait(self, index, phase, *, loc=None, ip=None):
        """Whether stage `index` completed `phase` already (may wait a while first, as the hardware's bounded
        wait does; never for good)."""
        return cute.arch.mbarrier_try_wait(self.get_barrier(index), cutlass.Int32(phase))

    def test_wait(self, index, phase, *, loc=None, ip=None):
        """Whether stage `index` completed `phase` already, looked at once: no waiting at all (CuTe DSL 4.8.1's
        test_wait; try_wait may suspend the thread for a while first)."""
        return cute.arch.mbarrier_test_wait(self.get_barrier(index), cutlass.Int32(phase))

    def max(self) -> int:
        """The largest arrival count an mbarrier can be initialized with (2**20 - 1), as CuTe DSL 4.8.1's max()
        answers: a Python int."""
        return MAX_ARRIVAL_COUNT

    def recast_to_new_op_type(self, new_op_type: PipelineOp) -> "MbarrierArray":
        """A sync object over the same barriers (not initialized again) whose agent arrives as new_op_type does;
        tx_count, cta_group and the group are kept. As in CuTe DSL 4.8.1, a load's arrival through a recast
        object that had no tx_count expects no bytes (an elected lane's plain arrival)."""
        if not isinstance(new_op_type, PipelineOp) or new_op_type is PipelineOp.TmaStore:
            raise ValueError(f"recast_to_new_op_type: a pipeline's barriers are arrived on by a PipelineOp other "
                             f"than TmaStore, got {new_op_type!r}")
        other = copy.copy(self)
        other.op_type = new_op_type
        return other

    def arrive(self, index, dst=None, cta_group=None, *, loc=None, ip=None):
        """This agent's arrival for stage `index`, as its op_type arrives: thread arrivals on this CTA's barrier
        (dst None) or on that of the CTA of rank dst; MMA commits on this CTA's or on those of the CTAs of the mask
        dst (static or run-time), for the MMAs of cta_group CTAs (given here, or the sync object's); a TMA load's
        producer arms this CTA's barrier whatever dst says (each CTA's producer arms its own: the multicast copies
        complete bytes on every destination's barrier), as CuTe DSL's sync objects do."""
        if self.op_type is PipelineOp.TCGen05Mma:
            self.arrive_tcgen05mma(index, dst, self.cta_group if cta_group is None else cta_group)
        elif self.op_type is PipelineOp.TmaLoad:
            self.arrive_and_expect_tx(index, self.tx_count)
        elif self.op_type in _TX_OPS:
            self.arrive_and_expect_tx(index, self.tx_count, dst)
        else:
            self.arrive_mbarrier(index, dst)

    def arrive_and_wait(self, index, phase, dst=None, cta_group=None, *, loc=None, ip=None):
        """arrive(index, dst, cta_group), then wait(index, phase): this agent's arrival, then waiting for stage
        `index` to complete `phase` (which this arrival may be the last of)."""
        self.arrive(index, dst, cta_group)
        self.wait(index, phase)

    def arrive_and_drop(self, *, loc=None, ip=None):
        """Not offered, as in CuTe DSL 4.8.1 (whose arrive_and_drop raises NotImplementedError)."""
        raise NotImplementedError("MbarrierArray.arrive_and_drop is not supported (nor is it by CuTe DSL 4.8.1)")

    def arrive_tcgen05mma(self, index, mask, cta_group, *, loc=None, ip=None):
        """The MMAs' commit: once the tcgen05 operations this thread issued so far completed, one arrival on stage
        `index`'s barrier of this CTA (mask None) or of each CTA of mask (a static or run-time mask of ranks)."""
        cute.arch.umma_commit_arrive(self.get_barrier(index), mask=_mask(mask, dynamic=True),
                                     cta_group=int(cta_group))

    def arrive_mbarrier(self, index, dst_rank=None, *, loc=None, ip=None):
        """Each calling thread's arrival on stage `index`'s barrier of this CTA (dst_rank None) or of the CTA of
        rank dst_rank (static or run-time)."""
        bar = self.get_barrier(index)
        rank = _rank(dst_rank)
        if rank is None:
            cute.arch.mbarrier_arrive(bar)
        else:
            cute.arch.mbarrier_arrive_cluster(bar, rank)

    def arrive_and_expect_tx_with_dst(self, index, tx_count, dst=None, *, loc=None, ip=None):
        """Each calling thread's arrival that also expects tx_count more bytes (static or run-time), on stage
        `index`'s barrier of this CTA (dst None) or of the CTA of rank dst (static or run-time), whatever op_type
        says: no lane is elected, as in CuTe DSL 4.8.1 (a kernel calls it from the one thread that arms a
        peer's barrier)."""
        bar = self.get_barrier(index)
        tx = _byte_count(tx_count)
        rank = _rank(dst, "arrive_and_expect_tx_with_dst's dst")
        if rank is None:
            cute.arch.mbarrier_arrive_and_expect_tx(bar, tx)
        else:
            cute.arch.mbarrier_arrive_and_expect_tx_cluster(bar, tx, rank)

    def arrive_and_expect_tx(self, index, tx_count, dst=None, *, loc=None, ip=None):
        """An arrival that also expects tx_count more bytes this phase. For TMA and CLC loads one elected lane of the
        calling warp arrives (the barrier counts one arrival per phase), on this CTA's barrier or on each CTA's of
        the static mask dst; for other agents each calling thread arrives on this CTA's barrier."""
        bar = self.get_barrier(index)
        tx = _byte_count(tx_count)
        if self.op_type not in _TX_OPS:
            if dst is not None:
                raise ValueError(f"arrive_and_expect_tx: a {self.op_type} barrier expects bytes in this CTA only, "
                                 f"got dst={dst!r}")
            cute.arch.mbarrier_arrive_and_expect_tx(bar, tx)
            return
        mask = _mask(dst, dynamic=False)

        def expect():
            if mask is None:
                cute.arch.mbarrier_arrive_and_expect_tx(bar, tx)
                return
            for rank in range(MAX_CLUSTER):
                if mask >> rank & 1:
                    cute.arch.mbarrier_arrive_and_expect_tx_cluster(bar, tx, cutlass.Int32(rank))

        when(cute.arch.elect_one(), expect)

    def arrive_cp_async(self, index, *, loc=None, ip=None):
        """Arrives once this thread's cp.async copies issued so far have landed."""
        cute.nvgpu.cpasync.mbarrier_arrive_noinc(self.get_barrier(index))

    arrive_cp_async_mbarrier = arrive_cp_async  # CuTe DSL's other name for it (FlashAttention's Q loads)

    def __repr__(self):
        return f"MbarrierArray({self.op_type}, {self.num} stages, {self.cg})"


def _byte_count(tx_count):
    """The bytes an arrival expects, as an Int32: a static count, a run-time integer, or None (a recast sync
    object without a tx_count: no bytes)."""
    if tx_count is None:
        return cutlass.Int32(0)
    n = _static_int(tx_count)
    if n is not None:
        if n < 0:
            raise ValueError(f"an arrival expects a non-negative byte count, got {n}")
        return cutlass.Int32(n)
    if _is_dsl_integer(tx_count):
        return cutlass.Int32(tx_count)
    raise TypeError(f"an arrival's byte count is an integer, got {tx_count!r}")


def _rank(dst, what="a thread arrival's destination", ctas=MAX_CLUSTER):
    """dst of a thread arrival: None (this CTA) or the rank of a CTA of the cluster, as an Int32."""
    if dst is None:
        return None
    r = _static_int(dst)
    if r is not None:
        if not 0 <= r < ctas:
            raise ValueError(f"{what} is the rank of a CTA of the cluster (0..{ctas - 1}), got {r}")
        return cutlass.Int32(r)
    if _is_dsl_integer(dst):
        return cutlass.Int32(dst)
    raise TypeError(f"{what} is None (this CTA) or a CTA rank (an integer), got {dst!r}")


def _mask(dst, dynamic: bool, what="a multicast arrival's destination", ctas=MAX_CLUSTER):
    """dst of a load's arrival or an MMA commit: None (this CTA) or a mask of the cluster's CTAs (bit r: rank r),
    static, or also a run-time Int32 where the arrival takes one (dynamic)."""
    if dst is None:
        return None
    m = _static_int(dst)
    if m is not None:
        if not 0 < m < 1 << ctas:
            raise ValueError(f"{what} is a mask of 1 to {ctas} CTAs of the cluster (bit r: rank r), got {m:#x}")
        return cutlass.Int32(m) if dynamic else m
    if dynamic and _is_dsl_integer(dst):
        return dst
    kind = "a mask (an integer)" if dynamic else "a mask known while tracing (a Python int)"
    raise TypeError(f"{what} is None (this CTA) or {kind}, got {dst!r}")


def check_destination(op_type: PipelineOp, dst, name: str, cluster_size=None):
    """Refuses, where the pipeline is made, a producer_mask / consumer_mask that op_type's arrivals cannot take:
    a rank for thread arrivals, a mask for loads and MMA commits, within the cluster's CTAs when its size is known."""
    ctas = MAX_CLUSTER if cluster_size is None else cluster_size
    if op_type is PipelineOp.TCGen05Mma:
        _mask(dst, True, name, ctas)
    elif op_type in _TX_OPS:
        _mask(dst, False, name, ctas)
    else:
        _rank(dst, name, ctas)


@dataclass(frozen=True)
class NamedBarrier:
    """A hardware named barrier (ids 1..15; 0 is the block's __syncthreads) over num_threads threads. A frozen
    dataclass, so that libraries subclass it as they subclass CuTe DSL's."""

    barrier_id: int
    num_threads: int

    def __post_init__(self):
        # What is known while tracing is checked here; an id or count computed in the kernel (a phase added to a
        # base id) is the program's business, as for sync().
        _check_static_id(self.barrier_id)
        if isinstance(self.num_threads, int) and (self.num_threads <= 0 or self.num_threads % 32):
            raise ValueError(f"a named barrier counts whole warps, got {self.num_threads!r} threads")

    @classmethod
    def create(cls, barrier_id: int, num_threads: int, *, loc=None, ip=None):
        return cls(barrier_id, num_threads)

    def arrive_and_wait(self, *, loc=None, ip=None):
        cute.arch.barrier(barrier_id=self.barrier_id, number_of_threads=self.num_threads)

    def arrive(self, *, loc=None, ip=None):
        cute.arch.barrier_arrive(barrier_id=self.barrier_id, number_of_threads=self.num_threads)

    def sync(self, *, loc=None, ip=None):
        self.arrive_and_wait()

    def wait(self, *, loc=None, ip=None):
        # A named barrier has no wait that does not count the waiting thread (the hardware's wait is an arrival
        # too), so the threads that wait are among num_threads, as with arrive_and_wait.
        self.arrive_and_wait()


def _check_static_id(barrier_id):
    # An id known while tracing is checked here; a dynamic one (e.g. a warpgroup's index) is the program's business.
    if isinstance(barrier_id, int) and not 0 <= barrier_id < 16:
        raise ValueError(f"named barrier ids are 0..15, got {barrier_id}")


def sync(barrier_id: int = 0, num_threads: int | None = None, *, loc=None, ip=None):
    """All threads of the block (or num_threads of them) meet at hardware barrier barrier_id (CuTe DSL's
    pipeline.sync)."""
    _check_static_id(barrier_id)
    if num_threads is None:
        cute.arch.barrier(barrier_id=barrier_id)
    else:
        cute.arch.barrier(barrier_id=barrier_id, number_of_threads=num_threads)


def arrive_and_wait(barrier_id, num_threads, *, loc=None, ip=None):
    """num_threads threads meet at named barrier barrier_id (CuTe DSL's pipeline.arrive_and_wait); the id may be
    dynamic, e.g. one barrier per warpgroup."""
    _check_static_id(barrier_id)
    cute.arch.barrier(barrier_id=barrier_id, number_of_threads=num_threads)


def arrive(barrier_id, num_threads, *, loc=None, ip=None):
    """Arrives at named barrier barrier_id of num_threads threads without waiting (the producer's half)."""
    _check_static_id(barrier_id)
    cute.arch.barrier_arrive(barrier_id=barrier_id, number_of_threads=num_threads)


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
    """Shared memory for a pipeline's barriers: num_stages * multiplier Int64 words, 8-byte aligned, as a
    pointer, in the RESERVED partition: in the alignment padding below the user's buffers where it fits, so that
    a kernel sized to the capacity by CuTe DSL's layout fits here too."""
    if not isinstance(num_stages, int) or num_stages <= 0 or not isinstance(multiplier, int) or multiplier <= 0:
        raise ValueError(f"alloc_reserved_mbarrier: positive integers expected, got {num_stages!r}, {multiplier!r}")
    return cutlass.utils.SmemAllocator().allocate_array(cutlass.Int64, num_stages * multiplier, byte_alignment=8,
                                                        partition=cutlass.utils.SmemPartition.RESERVED)


def own_barriers(barrier_storage, num_stages: int, per_stage: int = 2):
    """A pipeline's mbarrier storage: the one given, or (CuTe DSL's create() without barrier_storage) its own,
    carved from the kernel's shared memory where the pipeline is made."""
    if barrier_storage is not None:
        return barrier_storage
    if not isinstance(num_stages, int) or num_stages <= 0:
        raise ValueError(f"a pipeline needs a positive number of stages, got {num_stages!r}")
    return alloc_reserved_mbarrier(num_stages, multiplier=per_stage)
