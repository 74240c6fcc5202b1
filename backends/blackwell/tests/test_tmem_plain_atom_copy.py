"""cute.copy with the plain tcgen05.ld / tcgen05.st atom a tiled copy was made of (cute.make_copy_atom's), on that
tiled copy's partitions, as CuTe DSL programs write it in their loops: the same loads and stores, at the same
tensor-memory addresses, as cute.copy with the tiled copy; partitions of another layout are still refused."""
from __future__ import annotations

import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute

from dsl_helpers import target


def _ptx(rep, with_plain: bool, store: bool = False):
    import warpweave.pipeline as pipeline
    from warpweave import utils
    from warpweave.cute.nvgpu import tcgen05 as t
    from warpweave.cute.runtime import from_dlpack

    @cute.kernel
    def kern(g: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        hold = utils.SmemAllocator().allocate_array(cutlass.Int32, 1, byte_alignment=4)
        tmem = utils.TmemAllocator(hold, barrier_for_retrieve=pipeline.NamedBarrier(1, 128))
        tmem.allocate(32)
        tmem.wait_for_alloc()
        ld = cute.make_copy_atom(t.Ld32x32bOp(t.Repetition(rep)), cutlass.Float32)
        st = cute.make_copy_atom(t.St32x32bOp(t.Repetition(rep)), cutlass.Float32)
        acc = cute.make_tensor(tmem.retrieve_ptr(cutlass.Float32), cute.make_layout((128, 2 * rep), stride=(65536, 1)))
        t2r, r2t = t.make_tmem_copy(ld, acc), t.make_tmem_copy(st, acc)
        thr, thw = t2r.get_slice(tidx), r2t.get_slice(tidx)
        r = cute.make_rmem_tensor(thr.partition_D(g).shape, cutlass.Float32)
        cute.copy(ld if with_plain else t2r, thr.partition_S(acc), r)
        if store:
            cute.copy(st if with_plain else r2t, r, thw.partition_D(acc))
        cute.autovec_copy(r, thr.partition_D(g))
        tmem.relinquish_alloc_permit()
        pipeline.sync(barrier_id=1, num_threads=128)
        tmem.free(acc.iterator)

    @cute.jit
    def host(g: cute.Tensor):
        kern(g).launch(grid=[1, 1, 1], block=[128, 1, 1])

    with target("sm_100a"):
        return cute.compile(host, from_dlpack(np.zeros((128, 2 * rep), np.float32))).info["ptx"]


def _tmem_ops(ptx):
    return re.findall(r"tcgen05\.(?:ld|st)\.sync\.aligned\.32x32b\.x\d+\.b32[^;]*;", ptx)


@pytest.mark.parametrize("rep", [4, 16])
def test_a_plain_atom_copies_the_partitions_as_its_tiled_copy_does(rep, monkeypatch):
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")
    plain, tiled = _ptx(rep, True, store=True), _ptx(rep, False, store=True)
    ops = _tmem_ops(plain)
    assert len(ops) == 4 and ops == _tmem_ops(tiled), (ops, _tmem_ops(tiled))  # 2 loads, 2 stores of x{rep}


def test_a_partition_of_another_layout_is_refused():
    from warpweave.cute.nvgpu import tcgen05 as t
    from warpweave.cute.runtime import from_dlpack

    @cute.kernel
    def kern(g: cute.Tensor):
        from warpweave import utils
        hold = utils.SmemAllocator().allocate_array(cutlass.Int32, 1, byte_alignment=4)
        ptr = cute.arch.retrieve_tmem_ptr(cutlass.Float32, 16, hold)
        ld = cute.make_copy_atom(t.Ld32x32bOp(t.Repetition(4)), cutlass.Float32)
        strided = cute.make_tensor(ptr, cute.make_layout(4, stride=2))   # not where one x4 load puts its values
        cute.copy(ld, strided, cute.make_rmem_tensor(4, cutlass.Float32))

    @cute.jit
    def host(g: cute.Tensor):
        kern(g).launch(grid=[1, 1, 1], block=[128, 1, 1])

    with target("sm_100a"), pytest.raises(Exception, match="is not where instruction 0 puts it"):
        cute.compile(host, from_dlpack(np.zeros(8, np.float32)))
