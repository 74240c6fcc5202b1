"""make_tmem_copy tiles as CuTe does (make_cotiled_copy of one instruction per warp over the tile): a tile larger
than what one instruction in each warp reaches is partitioned into (that instruction's values, the tile's rest
modes), the partitions CuTe DSL 4.8.1 gives; 16-bit values are copied two to a 32-bit column and register, the
first in the low half; fragments made from a shape sit at tensor-memory address 0, as CuTe's do."""
from __future__ import annotations

import re

import numpy as np

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.nvgpu import tcgen05 as t
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import target

LANE = 1 << 16


def test_a_tile_wider_than_one_instruction_is_partitioned_into_instructions_as_cute_dsl_does():
    op = t.MmaF16BF16Op(cutlass.BFloat16, cutlass.Float32, (256, 128, 16), t.CtaGroup.TWO)
    tm = cute.make_tiled_mma(op)
    frag = tm.make_fragment_C(tm.partition_shape_C((256, 128)))
    tile = cute.zipped_divide(frag[((None, None), 0, 0)], (128, 128))
    assert str(tile.layout) == "((128,128),(1,1)):((65536,1),(0,0))"
    atom = cute.make_copy_atom(t.Ld32x32bOp(t.Repetition.x16), cutlass.Float32)
    copy = t.make_tmem_copy(atom, tile)
    coords = cute.zipped_divide(cute.make_identity_tensor((128, 128)), (128, 128))
    thr = copy.get_slice(3)
    # CuTe DSL 4.8.1: partition_D of the coordinates ((16,1),8,1):((1@1,0),16@1,0), the 8 being the instructions
    # along the columns
    d = thr.partition_D(coords)
    assert str(d.layout) == "((16,1),8,1):((1@1,0),16@1,0)"
    s = thr.partition_S(tile)
    assert cute.size(s, mode=[0]) == 16 and cute.size(s, mode=[1]) == 8
    for v in range(16):
        for j in range(8):
            row, col = d[((v, 0), j, 0)]
            assert s.iterator.offset + s.layout(((v, 0), j, 0)) == row * LANE + col   # a register beside its element


def _bf16_store_kernel():
    @cute.kernel
    def k(g: cute.Tensor):
        op = t.MmaF16BF16Op(cutlass.BFloat16, cutlass.Float32, (128, 64, 16), t.CtaGroup.ONE, t.OperandSource.TMEM,
                            t.OperandMajorMode.K, t.OperandMajorMode.K)
        tm = cute.make_tiled_mma(op)
        a = tm.make_fragment_A(tm.partition_shape_A((128, 64)))      # 128 rows x 64 bf16 = 32 columns, at 0
        atom = cute.make_copy_atom(t.St32x32bOp(t.Repetition.x16), cutlass.BFloat16)
        copy = t.make_tmem_copy(atom, a)
        tidx, _, _ = cute.arch.thread_idx()
        dst = copy.get_slice(tidx).partition_D(a)
        r = cute.make_rmem_tensor(dst.shape, cutlass.BFloat16)
        for i in cutlass.range_constexpr(cute.size(r)):
            r[i] = cutlass.BFloat16(float(i))
        cute.copy(copy, r, dst)

    @cute.jit
    def h(g: cute.Tensor):
        k(g).launch(grid=[1, 1, 1], block=[128, 1, 1])

    with target("sm_100a"):
        return cute.compile(h, from_dlpack(np.zeros(4, np.float32))).info["ptx"]


def test_16_bit_values_are_stored_two_to_a_register_low_half_first():
    ptx = _bf16_store_kernel()
    stores = re.findall(r"tcgen05\.st\.sync\.aligned\.32x32b\.x16\.b32 \[([^\]]+)\], \{([^}]*)\}", ptx)
    # 32 bf16 columns' worth: 64 values per row in two instructions of 16 registers
    assert len(stores) == 2
    # registers 0 and 1 of the first: (bf16 1.0 << 16) | bf16 0.0 and (3.0 << 16) | 2.0
    first = [x.strip() for x in stores[0][1].split(",")]
    assert len(first) == 16
    values = {m.group(1): int(m.group(2)) for m in re.finditer(r"mov\.b32 \t(%r\d+), (-?\d+);", ptx)}
    got = [values.get(x, int(x) if x.lstrip("-").isdigit() else None) for x in first[:2]]
    assert got == [0x3F800000, 0x40404000]


def test_a_128_row_mma_with_a_in_tensor_memory_takes_n_8():
    # CuTe DSL's attention decode: M = 128, N = 8 with A in tensor memory (CuTe's SM100 TS traits take N in steps
    # of 8, as the shared-memory A does)
    op = t.MmaF16BF16Op(cutlass.BFloat16, cutlass.Float32, (128, 8, 16), t.CtaGroup.ONE, t.OperandSource.TMEM,
                        t.OperandMajorMode.K, t.OperandMajorMode.K)
    assert cute.make_tiled_mma(op).op is op
    assert "n8" in cute.make_mma_atom(op).manifest["id"]


def test_the_mma_names_are_in_tcgen05_mma_too():
    # tcgen05.mma.SmemLayoutAtomKind.MN_SW128, as CuTe DSL's programs spell them
    for name in ("SmemLayoutAtomKind", "CtaGroup", "OperandMajorMode", "OperandSource", "MmaF16BF16Op",
                 "make_smem_layout_atom"):
        assert getattr(t.mma, name) is getattr(t, name)


def test_an_operand_kept_in_another_major_mode_than_the_mma_reads():
    import warpweave.utils.blackwell_helpers as sm100

    tm = sm100.make_trivial_tiled_mma(cutlass.BFloat16, t.OperandMajorMode.K, t.OperandMajorMode.K, cutlass.Float32,
                                      t.CtaGroup.ONE, (128, 128))
    k_major = sm100.make_smem_layout_a(tm, (128, 128, 64), cutlass.BFloat16, 2)
    m_major = sm100.make_smem_layout_a(tm, (128, 128, 64), cutlass.BFloat16, 2, is_k_major=False)
    assert str(k_major) == str(sm100.make_smem_layout_a(tm, (128, 128, 64), cutlass.BFloat16, 2, is_k_major=True))
    # the same ((MMA M, MMA K), rest M, rest K, stages) shape, M contiguous instead of K
    assert [cute.size(m_major.outer, mode=[i]) for i in range(4)] == \
        [cute.size(k_major.outer, mode=[i]) for i in range(4)]
    assert m_major.outer(((1, 0), 0, 0, 0)) == 1
    assert k_major.outer(((0, 1), 0, 0, 0)) == 1


def test_a_one_column_tile_takes_the_one_value_32x32b_x1():
    # attention's row scale: one column of the accumulators (a composition of shape (128, 1)), stored by .32x32b.x1,
    # one value a thread, thread t at lane t
    op = t.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (128, 128, 16), t.CtaGroup.ONE)
    tm = cute.make_tiled_mma(op)
    acc = tm.make_fragment_C(tm.partition_shape_C((128, 128)))[((None, None), 0, 0)]
    col = cute.composition(acc, cute.make_layout((128, 1)))
    for op_cls in (t.St32x32bOp, t.Ld32x32bOp):
        copy = t.make_tmem_copy(cute.make_copy_atom(op_cls(t.Repetition.x1), cutlass.Float32), col)
        for tidx in (0, 37, 127):
            part = copy.get_slice(tidx).partition_D(col) if op_cls is t.St32x32bOp else \
                copy.get_slice(tidx).partition_S(col)
            assert cute.size(part) == 1 and part.iterator.offset + part.layout(0) == tidx * LANE


def test_a_tile_of_64_lanes_is_copied_by_two_warps_and_repeated_by_the_other_two():
    # one CTA's accumulator rows of a two-CTA M = 128 MMA (lanes 0-63): CuTe DSL 4.8.1 tiles it with warps 2 and 3
    # repeating warps 0 and 1 (TV layout ((32,(2,2)),(4,32)):((0,(1,0)),(64,2))), not as a tile too small for the
    # warpgroup
    import warpweave.pipeline as pipeline
    from warpweave import utils

    atom = cute.make_copy_atom(t.Ld32x32bOp(t.Repetition(4)), cutlass.Float32)
    layout = cute.make_layout((64, 4, 2), stride=(LANE, 1, 4))
    coords = cute.make_identity_tensor((64, 4, 2))
    seen = {}

    @cute.kernel
    def kern(g: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        hold = utils.SmemAllocator().allocate_array(cutlass.Int32, 1, byte_alignment=4)
        tmem = utils.TmemAllocator(hold, barrier_for_retrieve=pipeline.NamedBarrier(1, 128))
        tmem.allocate(32)
        tmem.wait_for_alloc()
        tile = cute.make_tensor(tmem.retrieve_ptr(cutlass.Float32), layout)
        copy = t.make_tmem_copy(atom, tile)
        for th in (0, 33, 64, 97):
            d = copy.get_slice(th).partition_D(coords)
            seen[th] = [d[(v, 0, 0, s)] for v in range(4) for s in range(2)]
        thr = copy.get_slice(tidx)
        r = cute.make_rmem_tensor(thr.partition_D(coords).shape, cutlass.Float32)
        cute.copy(copy, thr.partition_S(tile), r)
        g[tidx] = r[0]
        tmem.relinquish_alloc_permit()
        pipeline.sync(barrier_id=1, num_threads=128)
        tmem.free(tile.iterator)

    @cute.jit
    def host(g: cute.Tensor):
        kern(g).launch(grid=[1, 1, 1], block=[128, 1, 1])

    with target("sm_100a"):
        ptx = cute.compile(host, from_dlpack(np.zeros(128, np.float32))).info["ptx"]
    assert "tcgen05.ld.sync.aligned.32x32b.x4.b32" in ptx
    assert seen[64] == seen[0] and seen[97] == seen[33] and seen[0] != seen[33]
    assert [c[0] for c in seen[33][::2]] == [33] * 4   # thread 33: row 33, of warp 1
