"""A thread's slice of a tiled copy (or tiled MMA) is also the tiled copy (MMA), as in CuTe DSL where ThrCopy derives
from TiledCopy: cute.copy(thr_copy, ...) copies as cute.copy(tiled_copy, ...) does (QuACK's epilogue loads its
bias row with the slice it partitioned with), cute.gemm takes a ThrMma, and the partition methods take the loc/ip
keywords a @dsl_user_op helper passes on (QuACK's partition_for_epilogue)."""
import numpy as np

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack
from warpweave.cute.nvgpu import warp

from dsl_helpers import target


def strip_locations(ir):
    return "\n".join(line.split(" loc(")[0] for line in ir.splitlines())


def copy_kernel(through_slice):
    @cute.kernel
    def kern(src: cute.Tensor, dst: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32, num_bits_per_copy=64)
        tiled = cute.make_tiled_copy_tv(atom, cute.make_layout(32), cute.make_layout(2))
        thr = tiled.get_slice(tidx)
        s = thr.partition_S(src, loc=None, ip=None)
        d = thr.partition_D(dst, loc=None, ip=None)
        pred = cute.make_rmem_tensor(1, cutlass.Boolean)
        pred[0] = tidx < 16
        cute.copy(thr if through_slice else tiled, s[None, 0], d[None, 0], pred=pred)

    @cute.jit
    def host(src: cute.Tensor, dst: cute.Tensor):
        kern(src, dst).launch(grid=[1, 1, 1], block=[32, 1, 1])
    return host


def test_copy_through_a_thread_slice_is_the_tiled_copy():
    args = [from_dlpack(np.zeros(64, np.float32)) for _ in range(2)]
    with target("sm_90a"):
        by_slice = cute.compile(copy_kernel(True), *args).ir
        by_tiled = cute.compile(copy_kernel(False), *args).ir
    assert strip_locations(by_slice) == strip_locations(by_tiled)
    assert '"llvm.load"' in by_slice and '"llvm.store"' in by_slice


def test_a_slice_reads_as_its_tiled_copy():
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float16, num_bits_per_copy=32)
    tiled = cute.make_tiled_copy_tv(atom, cute.make_layout((4, 8), stride=(8, 1)), cute.make_layout((1, 2)))
    thr = tiled.get_slice(5)
    assert isinstance(thr, cute.TiledCopy) and isinstance(thr, cute.ThrCopy)
    assert thr.atom is tiled.atom and thr.size == tiled.size and thr.tiler_mn == tiled.tiler_mn
    assert str(thr.layout_tv) == str(tiled.layout_tv)
    assert str(thr.get_layoutS_TV()) == str(tiled.get_layoutS_TV())
    # a slice of a slice is the same thread's view of the same tiled copy
    again = thr.get_slice(5)
    assert again.tiled is tiled
    ident = cute.make_identity_tensor((4, 16))
    part = lambda p: [p[i] for i in range(cute.size(p))]
    assert part(again.partition_S(ident)) == part(thr.partition_S(ident, loc=None, ip=None))


def test_gemm_takes_a_thread_slice_of_a_tiled_mma():
    op = warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16))

    def mma_kernel(through_slice):
        @cute.kernel
        def kern(out: cute.Tensor):
            tidx, _, _ = cute.arch.thread_idx()
            tm = cute.make_tiled_mma(op, cute.make_layout((1, 1, 1)))
            thr = tm.get_slice(tidx)
            a = thr.make_fragment_A(thr.partition_A(cute.make_identity_tensor((16, 16)), loc=None, ip=None).layout)
            b = thr.make_fragment_B(thr.partition_B(cute.make_identity_tensor((8, 16)), loc=None, ip=None).layout)
            c = tm.make_fragment_C(thr.partition_C(cute.make_identity_tensor((16, 8)), loc=None, ip=None).layout)
            a.fill(1.0)
            b.fill(1.0)
            c.fill(0.0)
            cute.gemm(thr if through_slice else tm, c, a, b, c)
            out[tidx] = c[0]

        @cute.jit
        def host(out: cute.Tensor):
            kern(out).launch(grid=[1, 1, 1], block=[32, 1, 1])
        return host

    arg = from_dlpack(np.zeros(32, np.float32))
    with target("sm_80"):
        by_slice = cute.compile(mma_kernel(True), arg)
        by_tiled = cute.compile(mma_kernel(False), arg)
    assert strip_locations(by_slice.ir) == strip_locations(by_tiled.ir)
    assert by_slice.ptx.count("mma.sync.aligned.m16n8k16") == 1
