"""CuTe DSL's kernels written as its grouped GEMMs write them, compiled for sm_80 (no GPU):
- `go = cutlass.Boolean(1)`, `while go:` is a loop at run time (CuTe DSL's Boolean is an IR value), whose body sets
  the flag from run-time values; a loop on a comparison of static values still runs while tracing;
- a coordinate tensor's iterator is its origin, indexed by mode, and make_tensor of such a tuple is the coordinate
  tensor at that origin (a TMA tensor moved along one mode);
- a pipeline consumer that waits inside a run-time loop releases, after it, the stage it waited for last;
- packed 4-bit tensors are copied as the bytes holding them."""
import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
import warpweave.pipeline as pipeline
from warpweave.cute.runtime import from_dlpack
from warpweave.ext import DSLTypeError

from dsl_helpers import target

SEEN = {}


def launcher(kernel):
    """A @cute.jit function launching `kernel(a, n)` on one warp."""
    @cute.jit
    def run(a, n: cutlass.Int32):
        kernel(a, n).launch(grid=[1, 1, 1], block=[32, 1, 1])

    return run


@cute.kernel
def flag_kernel(g: cute.Tensor, n: cutlass.Int32):
    go = cutlass.Boolean(1)
    count = cutlass.Int32(0)
    while go:
        count = count + 1
        go = count < n
    unrolled = 0
    i = cutlass.Int32(0)
    while i < 3:           # static: runs while tracing
        unrolled += 1
        i = i + 1
    SEEN["unrolled"] = unrolled
    g[0] = count


flag_loop = launcher(flag_kernel)


def test_a_loop_on_a_boolean_flag_runs_at_run_time():
    with target("sm_80"):
        c = cute.compile(flag_loop, from_dlpack(np.zeros(4, np.int32)), 3)
    assert c.ir.count("scf.while") == 1 and SEEN["unrolled"] == 3


@cute.kernel
def coord_kernel(g: cute.Tensor, off: cutlass.Int32):
    c = cute.make_identity_tensor((64, 32, 2))
    tile = c[None, None, 1]
    SEEN["origin"] = (tile.iterator[0], tile.iterator[1], tile.iterator[2])
    moved = cute.make_tensor((tile.iterator[0], tile.iterator[1] + off, tile.iterator[2]), tile.layout)
    SEEN["moved"] = moved
    g[0] = moved[(3, 5)][1]


coord_origin = launcher(coord_kernel)


def test_a_coordinate_tensors_origin_by_mode():
    with target("sm_80"):
        cute.compile(coord_origin, from_dlpack(np.zeros(4, np.int32)), 7)
    assert SEEN["origin"] == (0, 0, 1)
    moved = SEEN["moved"]
    assert moved.is_coordinate_tensor and moved.shape == (64, 32)
    # the origin moved along mode 1 only, by the run-time offset
    assert moved.iterator[0] == 0 and moved.iterator[2] == 1 and not isinstance(moved.iterator[1], int)


@cute.kernel
def release_kernel(g: cute.Tensor, n: cutlass.Int32):
    smem = cutlass.utils.SmemAllocator()
    bars = smem.allocate_array(cutlass.Int64, 4)
    producer, consumer = pipeline.PipelineAsync.create(
        barrier_storage=bars, num_stages=2, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread)).make_participants()
    for _ in cutlass.range(n):
        consumer.wait()
        if n > 1:
            consumer.release()
            consumer.advance()
    consumer.release()        # the stage the loop's last trip waited for
    g[0] = n


release_after = launcher(release_kernel)


def test_release_after_a_loop_uses_the_loops_last_stage():
    with target("sm_80"):
        c = cute.compile(release_after, from_dlpack(np.zeros(4, np.int32)), 3)
    assert "mbarrier" in c.info["ptx"]


def packed_kernel(stride):
    @cute.kernel
    def k(g: cute.Tensor, n: cutlass.Int32):
        smem = cutlass.utils.SmemAllocator()
        s = smem.allocate_tensor(cutlass.Int4, cute.make_layout((16, 32), stride=(stride, 1)), 16)
        tidx, _, _ = cute.arch.thread_idx()
        r = cute.make_rmem_tensor((32,), cutlass.Int4)
        cute.autovec_copy(s[tidx % 16, None], r)
        g[0] = n + r.load().to(cutlass.Int32).reduce(cute.ReductionOp.ADD, 0, 0)

    return k


def test_packed_4bit_copies_move_whole_bytes():
    # a row of 32 int4 (16 bytes, rows 16-byte aligned) is one 16-byte access; rows that start inside a byte
    # (a row stride of 33 elements) cannot be copied as bytes and are refused at the user's line
    with target("sm_80"):
        c = cute.compile(launcher(packed_kernel(32)), from_dlpack(np.zeros(4, np.int32)), 3)
        assert "alignment = 16 : i64}> : (!llvm.ptr<3>) -> (vector<16xi8>)" in c.ir
        with pytest.raises(DSLTypeError, match="even number of elements"):
            cute.compile(launcher(packed_kernel(33)), from_dlpack(np.zeros(4, np.int32)), 3)
