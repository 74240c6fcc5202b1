"""Pipelines (warpweave.pipeline) built from the backends' mbarrier primitives: compiled for each target on the
CPU, run on the GPU. The kernel streams T tiles through a ring of shared-memory stages with cp.async, the
producer running S-1 tiles ahead; each consumer thread reads a neighbour's element, so a missing or early barrier
shows up as a wrong sum."""
import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
import warpweave.pipeline as pipeline
import warpweave.utils as utils
from warpweave.cute.runtime import from_dlpack, make_fake_tensor

from dsl_helpers import requires_gpu, target

THREADS = 128


def make_kernel(stages):
    @cute.struct
    class Storage:
        bars: cute.struct.MemRange[cutlass.Int64, 2 * stages]
        buf: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, THREADS * stages], 128]

    @cute.kernel
    def staged_sum(gX: cute.Tensor, gOut: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        s = utils.SmemAllocator().allocate(Storage)
        group = pipeline.CooperativeGroup(pipeline.Agent.Thread, THREADS)
        pipe = pipeline.PipelineCpAsync.create(barrier_storage=s.bars.data_ptr(), num_stages=stages,
                                               producer_group=group, consumer_group=group)
        sbuf = s.buf.get_tensor(cute.make_layout((THREADS, stages)))
        atom = cute.make_copy_atom(cute.nvgpu.cpasync.CopyG2SOp(), cutlass.Float32, num_bits_per_copy=32)

        def mine(t):  # this thread's element, as a one-element tensor
            return cute.local_tile(t, (1,), (tidx,))

        prod = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, stages)
        cons = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)
        T = cute.size(gX, mode=[1])
        for k in cutlass.range_constexpr(stages - 1):
            if k < T:
                pipe.producer_acquire(prod)
                cute.copy(atom, mine(gX[None, k]), mine(sbuf[None, prod.index]))
                pipe.producer_commit(prod)
                prod.advance()
        acc = cutlass.Float32(0.0)
        for t in range(T):
            if t + stages - 1 < T:
                pipe.producer_acquire(prod)
                cute.copy(atom, mine(gX[None, t + stages - 1]), mine(sbuf[None, prod.index]))
                pipe.producer_commit(prod)
                prod.advance()
            pipe.consumer_wait(cons)
            acc = acc + sbuf[(tidx + 1) % THREADS, cons.index]
            pipe.consumer_release(cons)
            cons.advance()
        gOut[tidx] = acc

    @cute.jit
    def run(mX: cute.Tensor, mOut: cute.Tensor):
        staged_sum(mX, mOut).launch(grid=[1, 1, 1], block=[THREADS, 1, 1])

    return run, Storage


def fake_args(T=10):
    x = make_fake_tensor(cutlass.Float32, (THREADS, T), (1, THREADS)).mark_layout_dynamic(leading_dim=0)
    out = make_fake_tensor(cutlass.Float32, (THREADS,))
    return x, out


def test_struct_layout_and_size():
    _, Storage = make_kernel(3)
    # 6 barriers (48 bytes), then the buffer at the next 128-byte boundary.
    assert Storage.size_in_bytes() == 128 + 4 * THREADS * 3
    assert Storage.alignment() == 128


@pytest.mark.parametrize("arch,wait", [("sm_80", "mbarrier.test_wait.parity"),
                                       ("sm_90a", "mbarrier.try_wait.parity")])
def test_pipeline_compiles_from_the_backends_primitives(arch, wait):
    run, _ = make_kernel(3)
    with target(arch):
        compiled = cute.compile(run, *fake_args())
    ptx = compiled.ptx
    assert "mbarrier.init.shared" in ptx
    assert "cp.async.mbarrier.arrive.noinc.shared.b64" in ptx
    assert wait in ptx
    assert compiled.launches[0].smem >= 128 + 4 * THREADS * 3


@requires_gpu
@pytest.mark.parametrize("stages,T", [(1, 5), (2, 7), (3, 1), (3, 2), (4, 37)])
def test_pipeline_streams_every_tile_once(stages, T):
    import torch

    run, _ = make_kernel(stages)
    x = torch.randn(T, THREADS, device="cuda").t()  # (THREADS, T), column-major
    out = torch.full((THREADS,), float("nan"), device="cuda")
    run(from_dlpack(x).mark_layout_dynamic(leading_dim=0), from_dlpack(out))
    torch.cuda.synchronize()
    ref = x.double().roll(-1, dims=0).sum(dim=1)
    np.testing.assert_allclose(out.cpu().numpy(), ref.cpu().numpy(), rtol=1e-5, atol=1e-5)
