"""PipelineTmaAsync.init_empty_barrier_arrive_signal(cta_layout_vmnk, tidx, mcast_mode_mn): the (dst_rank,
is_signalling_thread) pair a kernel that builds its own pipeline releases stages with (CuTe DSL 4.8.1's static
method), the same choice PipelineTmaAsync.create makes: lane r of a consumer warp releases a stage in the CTA of
rank r of the cluster when that CTA multicast loads here (its row for A, its column for B); with one CTA, lane 0
releases this CTA's own. Traced on the CPU (types, refusals); on a Hopper GPU every thread's pair of a 2x2 cluster
is held to that rule."""
import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
import warpweave.pipeline as pipeline
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import has_gpu, has_torch_cuda, target

CLUSTER_MN = (2, 2)
THREADS = 64


def make_program(mcast):
    @cute.kernel
    def signals(out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        layout = cute.make_layout((1, *CLUSTER_MN, 1))
        dst, signalling = pipeline.PipelineTmaAsync.init_empty_barrier_arrive_signal(layout, tidx, mcast)
        assert isinstance(dst, cutlass.Int32) and isinstance(signalling, cutlass.Boolean)
        out[bidx, tidx, 0] = dst
        out[bidx, tidx, 1] = cutlass.Int32(signalling)
        out[bidx, tidx, 2] = cute.arch.block_rank_in_cluster()

    @cute.jit
    def program(out: cute.Tensor):
        n = CLUSTER_MN[0] * CLUSTER_MN[1]
        signals(out).launch(grid=[n, 1, 1], block=[THREADS, 1, 1], cluster=[n, 1, 1])

    return program


def expected(rank, mcast):
    """(dst, signalling) of each thread of the CTA of this rank: the rule in the module's docstring."""
    cm, size = CLUSTER_MN[0], CLUSTER_MN[0] * CLUSTER_MN[1]
    out = []
    for t in range(THREADS):
        lane = t % 32
        same_m, same_n = lane % cm == rank % cm, lane // cm == rank // cm
        peer = {(1, 1): same_m or same_n, (1, 0): same_m, (0, 1): same_n}[mcast]
        out.append((lane, int(lane < size and peer)))
    return out


@pytest.mark.parametrize("mcast", [(1, 1), (1, 0), (0, 1)])
def test_it_traces_to_a_rank_and_a_truth(mcast):
    with target("sm_90a"):
        t = cute.runtime.make_fake_tensor(cutlass.Int32, (4, THREADS, 3), (THREADS * 3, 3, 1), assumed_align=16)
        cute.compile(make_program(mcast), t)


def test_bad_multicast_modes_and_layouts_are_refused():
    @cute.kernel
    def k(mcast: cutlass.Constexpr, shape: cutlass.Constexpr):
        pipeline.PipelineTmaAsync.init_empty_barrier_arrive_signal(cute.make_layout(shape), 0, mcast)

    @cute.jit
    def f(mcast: cutlass.Constexpr, shape: cutlass.Constexpr):
        k(mcast, shape).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_90a"):
        with pytest.raises(ValueError, match="not both 0"):
            cute.compile(f, (0, 0), (1, 2, 2, 1))
        with pytest.raises(ValueError, match=r"\(1, M, N, 1\) layout"):
            cute.compile(f, (1, 1), (2, 2))


@pytest.mark.skipif(not (has_gpu() and has_torch_cuda()), reason="needs a CUDA GPU and torch with CUDA")
@pytest.mark.parametrize("mcast", [(1, 1), (1, 0), (0, 1)])
def test_every_thread_of_a_cluster_gets_its_release(mcast):
    import torch
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("clusters need sm_90 or later")
    out = torch.full((4, THREADS, 3), -7, dtype=torch.int32, device="cuda")
    make_program(mcast)(from_dlpack(out))
    torch.cuda.synchronize()
    got = out.cpu().numpy()
    for b in range(4):
        rank = int(got[b, 0, 2])
        assert np.array_equal(got[b, :, :2], np.array(expected(rank, mcast))), (b, rank)
