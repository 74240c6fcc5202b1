"""utils.blackwell_helpers.get_tmem_copy_properties(atom): (data paths, bits, repetitions, packing) of a
tensor-memory load or store atom, as CuTe DSL gives them: the lanes and bits per lane of the op's shape (.32x32b:
32 and 32; .16x256b: 16 and 256), its Repetition's count, and its Pack (loads) or Unpack (stores) mode.

- Every shape of both directions, at several repetitions and element types: the values above, stated here from
  the shapes' names; the same helper under utils.sm100.
- Atoms that are no tensor-memory load or store (a universal copy, a shared-to-tensor-memory copy) are refused.
- A library's use: a tiled copy whose layout is built from the properties (32 lanes x 32 bits, num_rep columns
  per thread) compiles for sm_100a into loads of that repetition.
"""
from __future__ import annotations

import pytest

import warpweave as cutlass
import warpweave.cute as cute

from dsl_helpers import target

# op name -> (data paths, bits per lane)
SHAPES = {"Ld32x32bOp": (32, 32), "Ld16x64bOp": (16, 64), "Ld16x128bOp": (16, 128), "Ld16x256bOp": (16, 256),
          "St32x32bOp": (32, 32), "St16x64bOp": (16, 64), "St16x128bOp": (16, 128), "St16x256bOp": (16, 256)}


def tc():
    from warpweave.cute.nvgpu import tcgen05

    return tcgen05


@pytest.mark.parametrize("name", sorted(SHAPES))
@pytest.mark.parametrize("rep", [1, 4, 32])
@pytest.mark.parametrize("dtype", ["Float32", "Float16"])
def test_properties_of_each_shape(name, rep, dtype):
    import warpweave.utils.blackwell_helpers as bh
    import warpweave.utils.sm100 as sm100

    t = tc()
    with target("sm_100a"):
        atom = cute.make_copy_atom(getattr(t, name)(t.Repetition(rep)), getattr(cutlass, dtype))
        got = bh.get_tmem_copy_properties(atom)
        assert sm100.get_tmem_copy_properties(atom) == got
    dp, bits = SHAPES[name]
    mode = t.Pack.NONE if name.startswith("Ld") else t.Unpack.NONE
    assert got == (dp, bits, rep, mode)
    assert all(type(v) is int for v in got[:3])


def test_other_atoms_are_refused():
    import warpweave.utils.blackwell_helpers as bh

    t = tc()
    with target("sm_100a"):
        for atom in (cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32),
                     cute.make_copy_atom(t.Cp128x256bOp(t.CtaGroup.ONE), cutlass.Float32)):
            with pytest.raises(ValueError, match=r"test_tmem_copy_properties.py:\d+: .*tensor-memory load or store"):
                bh.get_tmem_copy_properties(atom)


@pytest.mark.parametrize("rep", [4, 16])
def test_a_tiled_copy_built_from_the_properties_compiles(rep):
    import numpy as np

    import warpweave.pipeline as pipeline
    import warpweave.utils.blackwell_helpers as bh
    from warpweave import utils
    from warpweave.cute.runtime import from_dlpack

    t = tc()

    @cute.kernel
    def kern(g: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        smem = utils.SmemAllocator()
        hold = smem.allocate_array(cutlass.Int32, 1, byte_alignment=4)
        tmem = utils.TmemAllocator(hold, barrier_for_retrieve=pipeline.NamedBarrier(1, 128))
        tmem.allocate(32)
        tmem.wait_for_alloc()
        atom = cute.make_copy_atom(t.Ld32x32bOp(t.Repetition(rep)), cutlass.Float32)
        num_dp, num_bits, num_rep, _ = bh.get_tmem_copy_properties(atom)
        assert num_dp == 32 and num_bits == 32
        # each thread one lane (row) of 4 warps x 32 lanes, num_rep consecutive columns
        tiler = (cute.make_layout((128 * num_rep // 32, 32), stride=(32, 1)),)
        tv = cute.make_layout(((32, 4), (num_rep, 32)), stride=((0, 1), (4, 4 * num_rep)))
        cute.make_tiled_copy(atom, tv, tiler)
        acc = cute.make_tensor(tmem.retrieve_ptr(cutlass.Float32), cute.make_layout((128, num_rep), stride=(65536, 1)))
        t2r = t.make_tmem_copy(atom, acc)
        thr = t2r.get_slice(tidx)
        r = cute.make_rmem_tensor(thr.partition_D(g).shape, cutlass.Float32)
        cute.copy(t2r, thr.partition_S(acc), r)
        cute.autovec_copy(r, thr.partition_D(g))
        tmem.relinquish_alloc_permit()
        pipeline.sync(barrier_id=1, num_threads=128)
        tmem.free(acc.iterator)

    @cute.jit
    def host(g: cute.Tensor):
        kern(g).launch(grid=[1, 1, 1], block=[128, 1, 1])

    with target("sm_100a"):
        ptx = cute.compile(host, from_dlpack(np.zeros((128, rep), np.float32))).info["ptx"]
    assert f"tcgen05.ld.sync.aligned.32x32b.x{rep}.b32" in ptx
