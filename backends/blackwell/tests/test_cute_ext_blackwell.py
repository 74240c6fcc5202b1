"""cute.experimental's Blackwell operations without a GPU: a small GEMM written with them (TMA loads into a staged
buffer, tcgen05 MMAs into tensor memory, a tensor-memory load, a TMA store) compiles for sm_100a with the
instructions each name stands for, once each where the kernel issues them once; the tensor maps are the
arguments' parameter slots; the layouts the helpers give; mistakes refused at the user's line. The GEMM's numbers
run on a Blackwell GPU (the public cute_ext programs)."""
from __future__ import annotations

import os
import re

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute import experimental as cute_ext
from warpweave.cute.runtime import make_fake_compact_tensor

from dsl_helpers import line_in, target

THIS = os.path.abspath(__file__)


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")


def helpers():
    import warpweave.utils.blackwell_helpers as h

    return h


def gemm_kernel(stages=2, acc_stages=1, mistake=None, expect_tx=True, made_in_kernel=False):
    """D (M, N) = A (M, K) . B (N, K)^T, K-major, one 128x128 tile per CTA, 64 of K per stage. made_in_kernel: A
    and D are tensors the kernel makes over their arguments' addresses (as a pointer-array GEMM makes each
    batch's), so that their maps are written in the kernel's workspace."""
    import warpweave.utils as utils

    @cute_ext.kernel
    def k(mA: cute.Tensor, mB: cute.Tensor, mD: cute.Tensor):
        tcgen05 = cute.nvgpu.tcgen05
        h = helpers()
        tiled_mma = h.make_trivial_tiled_mma(cutlass.Float16, tcgen05.OperandMajorMode.K,
                                             tcgen05.OperandMajorMode.K, cutlass.Float32, tcgen05.CtaGroup.ONE,
                                             (128, 128))
        tiler = (128, 128, 64)
        bm, bn, _ = cute.arch.block_idx()
        tid, _, _ = cute.arch.thread_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if made_in_kernel:
            mA = cute.make_tensor(cute.make_ptr(cutlass.Float16, mA.iterator.toint(), cute.AddressSpace.gmem,
                                                assumed_align=16), cute.make_layout((256, 256), stride=(256, 1)))
            mD = cute.make_tensor(cute.make_ptr(cutlass.Float16, mD.iterator.toint(), cute.AddressSpace.gmem,
                                                assumed_align=16), cute.make_layout((256, 256), stride=(256, 1)))
        gA = cute.zipped_divide(mA, (128, 64))[(None, None), (bm, None)]
        gB = cute.zipped_divide(mB, (128, 64))[(None, None), (bn, None)]
        gD = cute.zipped_divide(mD, (128, 128))[(None, None), (bm, bn)]
        sA = cute_ext.allocate(cutlass.Float16, cute.AddressSpace.smem,
                               h.make_smem_layout_a(tiled_mma, tiler, cutlass.Float16, stages), alignment=1024)
        sB = cute_ext.allocate(cutlass.Float16, cute.AddressSpace.smem,
                               h.make_smem_layout_b(tiled_mma, tiler, cutlass.Float16, stages), alignment=1024)
        acc = cute_ext.allocate(cutlass.Float32, cute.AddressSpace.tmem,
                                cute_ext.make_tmem_layout_acc(tiled_mma, tiler, acc_stages))
        d_layout = utils.LayoutEnum.from_tensor(mD)
        epi = h.compute_epilogue_tile_shape((128, 128, 64), False, d_layout, cutlass.Float16)
        sD = cute_ext.allocate(cutlass.Float16, cute.AddressSpace.smem,
                               h.make_smem_layout_epi(cutlass.Float16, d_layout, epi, 1), alignment=1024)
        t2r = tcgen05.make_tmem_copy(
            h.get_tmem_load_op((128, 128, 64), d_layout, cutlass.Float16, cutlass.Float32, epi, False),
            cute.zipped_divide(acc, (epi, 1))[((None, None), 0), 0])
        gD_epi = cute.flat_divide(gD, epi)
        rAcc = cute_ext.allocate(cutlass.Float32, cute.AddressSpace.rmem,
                                 cute_ext.make_t2r_rmem_layout(t2r, gD_epi, tid))
        rD = cute_ext.allocate(cutlass.Float16, cute.AddressSpace.rmem, rAcc.layout)
        mma_kind = cute_ext.OperationTypeEnum.SM100_MMA_1SM_SS
        main = cute_ext.TMAToUMMAPipeline.create(num_stages=stages, mma_operation_type=mma_kind)
        accp = cute_ext.UMMAtoAsyncPipeline.create(num_stages=acc_stages, mma_operation_type=mma_kind,
                                                   consumer=cute_ext.OperationTypeEnum.SM100_COPY_T2R,
                                                   consumer_arv_count=128)
        store = cute_ext.TMAStorePipeline(stages=1, arv_count=128, barrier_id=1, tma_warp_id=0)
        k_tiles = cute.size(gA, mode=[2])
        if warp == 5:
            for kt in cutlass.range(0, k_tiles, 1, unroll=1):
                token, idx = main.producer_acquire_and_get_stage()
                mbar = cute_ext.get_mbarrier(token)
                if not expect_tx:  # the barrier as the pipeline handles' IR value, bytes expected elsewhere
                    mbar = mbar.value
                src = gA[None, None, kt] if mistake != "rank" else gA
                cute_ext.tma_load(src, sA[None, None, None, idx], mbar,  # tma-load
                                  cta_v_map=cute_ext.get_cta_v_map_ab(mA, tiler, tiled_mma, "A"),
                                  update_expect_tx=expect_tx)
                cute_ext.tma_load(gB[None, None, kt], sB[None, None, None, idx], mbar,
                                  cta_v_map=cute_ext.get_cta_v_map_ab(mB, tiler, tiled_mma, "B"),
                                  update_expect_tx=expect_tx)
                main.producer_commit_and_advance()
        if warp == 4:
            _, aidx = accp.producer_acquire_and_get_stage()
            atom = cute.make_mma_atom(tiled_mma.op)
            atom.set(tcgen05.Field.ACCUMULATE, False)
            for kt in cutlass.range(0, k_tiles, 1, unroll=1):
                _, idx = main.consumer_wait_and_get_stage()
                for kb in cutlass.range(4, unroll_full=True):
                    cute_ext.dot(atom, cute.append_ones(sA[None, None, kb, idx], up_to_rank=3),
                                 cute.append_ones(sB[None, None, kb, idx], up_to_rank=3), acc[None, None, None, aidx])
                    atom.set(tcgen05.Field.ACCUMULATE, True)
                main.consumer_release_and_advance()
            accp.producer_commit_and_advance()
        if warp < 4:
            _, aidx = accp.consumer_wait_and_get_stage()
            tiles = cute.flat_divide(acc[(None, None), 0, 0, aidx], epi)
            r2s = cute.make_tiled_copy_D(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float16), t2r)
            for mn in range(cute.size(tiles.shape, mode=[3])):
                cute_ext.partition_and_copy(t2r.get_slice(tid), tiles[None, None, 0, mn], rAcc)
                rD.store(rAcc.load().to(cutlass.Float16))
                store.acquire_sync()
                sidx = store.get_index()
                cute_ext.partition_and_copy(r2s.get_slice(tid), rD, sD[None, None, sidx])
                store.commit_sync()
                if warp == 0:
                    cute_ext.tma_store(sD[None, None, sidx], gD_epi[None, None, 0, mn],
                                       cta_v_map=cute_ext.get_cta_v_map_c(mD, epi))
                store.release_advance()
            store.tail()
            accp.consumer_release_and_advance()

    @cute_ext.jit
    def launch(mA: cute.Tensor, mB: cute.Tensor, mD: cute.Tensor):
        k(mA, mB, mD).launch(grid=(2, 2, 1), block=(192, 1, 1), cluster=(1, 1, 1))

    return launch


def operands():
    def t(shape):
        return make_fake_compact_tensor(cutlass.Float16, shape, stride_order=(1, 0), assumed_align=16)

    return t((256, 256)), t((256, 256)), t((256, 256))


def compile_gemm(**kw):
    with target("sm_100a"):
        return cute_ext.compile(gemm_kernel(**kw), *operands())


@pytest.fixture(scope="module")
def gemm():
    import os as _os
    prev = _os.environ.get("WARPWEAVE_DISABLE_CACHE")
    _os.environ["WARPWEAVE_DISABLE_CACHE"] = "1"
    try:
        return compile_gemm()
    finally:
        if prev is None:
            _os.environ.pop("WARPWEAVE_DISABLE_CACHE", None)


def count(pattern, text):
    return len(re.findall(pattern, text))


def test_the_gemm_issues_each_named_operation_as_its_instruction(gemm):
    ptx = gemm.ptx
    assert count(r"tcgen05\.mma\.cta_group::1\.kind::f16", ptx) >= 4          # four k-blocks per stage
    loads = count(r"cp\.async\.bulk\.tensor\.\dd\.shared::cluster\.global\.mbarrier", ptx)
    assert loads >= 2 and loads % 2 == 0                                   # A and B per k-tile (maybe unrolled)
    assert count(r"cp\.async\.bulk\.tensor\.\dd\.global\.shared::cta", ptx) >= 1     # the store
    assert count(r"tcgen05\.ld\.", ptx) >= 1
    # each load expects its own bytes (128x64 halves), the commit is the stage's one arrival
    assert count(r"mbarrier\.expect_tx", ptx) == loads and "16384" in ptx
    assert count(r"mbarrier\.arrive\.shared::cta", ptx) == loads // 2 + 1   # and the epilogue's release
    # tensor memory: allocated once, given back once after the epilogue's last load
    assert count(r"tcgen05\.alloc", ptx) == 1 and count(r"tcgen05\.dealloc", ptx) == 1
    assert ptx.index("tcgen05.dealloc") > ptx.rindex("tcgen05.ld.")


def test_each_tensor_map_is_a_parameter_slot_of_its_argument(gemm):
    from warpweave.backends.hopper import tma as hopper_tma

    slots = list(gemm.host_arguments.values())
    assert len(slots) == 3 * 2                                    # two slots per tensor argument
    maps = [h for h in slots if h.producer.name == hopper_tma.DESCRIPTOR]
    assert sorted(h.tensor_index for h in maps) == [0, 1, 2]      # A's and B's loads, D's store
    assert all(h.size == 128 for h in slots)


def test_the_accumulator_layout_has_the_mma_fragment_and_a_stage_mode():
    seen = []

    def body():
        tcgen05 = cute.nvgpu.tcgen05
        mma = helpers().make_trivial_tiled_mma(cutlass.Float16, tcgen05.OperandMajorMode.K,
                                               tcgen05.OperandMajorMode.K, cutlass.Float32, tcgen05.CtaGroup.ONE,
                                               (128, 256))
        for stages in (1, 2):
            lay = cute_ext.make_tmem_layout_acc(mma, (128, 256, 64), stages)
            seen.append((lay.shape, mma.partition_shape_C((128, 256))))

    run_in_kernel(body)
    (s1, c), (s2, _) = seen
    assert s1 == tuple(c) + (1,) and s2 == tuple(c) + (2,)


def run_in_kernel(body):
    @cute_ext.kernel
    def k(a: cute.Tensor):
        body()

    @cute_ext.jit
    def h(a: cute.Tensor):
        k(a).launch(grid=(1, 1, 1), block=(128, 1, 1))

    with target("sm_100a"):
        cute_ext.compile(h, make_fake_compact_tensor(cutlass.Float16, (64,), assumed_align=16))


def test_a_tma_load_of_a_whole_argument_view_of_the_wrong_rank_is_refused_at_its_line():
    with pytest.raises(Exception) as e:
        compile_gemm(mistake="rank")
    assert e.value.location == (THIS, line_in(THIS, "# tma-load")), str(e.value)


def test_an_operand_map_names_an_operand_or_its_scale_factors():
    def body():
        mma = helpers().make_trivial_tiled_mma(cutlass.Float16, cute.nvgpu.tcgen05.OperandMajorMode.K,
                                               cute.nvgpu.tcgen05.OperandMajorMode.K, cutlass.Float32,
                                               cute.nvgpu.tcgen05.CtaGroup.ONE, (128, 128))
        cute_ext.get_cta_v_map_ab(None, (128, 128, 64), mma, "C")  # operand-c

    with pytest.raises(Exception, match="\"SFA\" or \"SFB\"") as e:
        run_in_kernel(body)
    assert e.value.location == (THIS, line_in(THIS, "# operand-c"))


def test_a_pair_mma_pipeline_needs_a_cluster_of_pairs():
    def body():
        cute_ext.TMAToUMMAPipeline.create(num_stages=2,  # pair
                                          mma_operation_type=cute_ext.OperationTypeEnum.SM100_MMA_2SM_SS)

    with pytest.raises(Exception, match="spans 2 CTA") as e:
        run_in_kernel(body)
    assert e.value.location == (THIS, line_in(THIS, "# pair"))


def test_the_experimental_names_of_blackwell_are_absent_on_ampere():
    def body(a, b):
        cute_ext.tma_load(a, b, None)  # ampere

    @cute_ext.kernel
    def k(a: cute.Tensor, b: cute.Tensor):
        body(a, b)

    @cute_ext.jit
    def h(a: cute.Tensor, b: cute.Tensor):
        k(a, b).launch(grid=(1, 1, 1), block=(32, 1, 1))

    t = make_fake_compact_tensor(cutlass.Float16, (64,), assumed_align=16)
    with target("sm_80"):
        with pytest.raises(Exception, match="tma_load"):
            cute_ext.compile(h, t, t)


def test_loads_that_leave_the_bytes_to_their_pipeline_expect_none():
    ptx = compile_gemm(expect_tx=False).ptx
    assert count(r"cp\.async\.bulk\.tensor", ptx) >= 3 and count(r"mbarrier\.expect_tx", ptx) == 0


def test_a_kernel_argument_keeps_its_strides_for_the_helpers_that_read_them():
    import warpweave.utils as utils
    seen = []

    @cute_ext.kernel
    def k(a: cute.Tensor):
        seen.append((utils.LayoutEnum.from_tensor(a), cute.stride(a), a.leading_dim,
                     cute.zipped_divide(a, (16, 8)).shape))

    @cute_ext.jit
    def h(a: cute.Tensor):
        k(a).launch(grid=(1, 1, 1), block=(32, 1, 1))

    with target("sm_100a"):
        cute_ext.compile(h, make_fake_compact_tensor(cutlass.Float16, (64, 32), stride_order=(1, 0),
                                                     assumed_align=16))
    (enum_, stride, lead, divided), = seen
    assert enum_ is utils.LayoutEnum.ROW_MAJOR and stride == (32, 1) and lead == 1
    assert divided == ((16, 8), (4, 4))


def test_a_cta_pair_loads_its_halves_onto_the_leaders_barrier_and_issues_pair_mmas():
    """2-CTA MMAs over a (2, 1, 1) cluster: each CTA loads its half of A and B, the leader's barrier expects both
    halves' bytes, the MMAs and the tensor memory are the pair's."""
    @cute_ext.kernel
    def k(mA: cute.Tensor, mB: cute.Tensor, mD: cute.Tensor):
        tcgen05 = cute.nvgpu.tcgen05
        h = helpers()
        mma = h.make_trivial_tiled_mma(cutlass.Float16, tcgen05.OperandMajorMode.K, tcgen05.OperandMajorMode.K,
                                       cutlass.Float32, tcgen05.CtaGroup.TWO, (256, 128))
        tiler = (256, 128, 64)
        vmnk = cute.tiled_divide(cute.make_layout((2, 1, 1)), (2,))
        bm, bn, _ = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        gA = cute.zipped_divide(mA, (128, 64))[(None, None), (bm, None)]
        gB = cute.zipped_divide(mB, (64, 64))[(None, None), (2 * bn + bm % 2, None)]
        sA = cute_ext.allocate(cutlass.Float16, cute.AddressSpace.smem,
                               h.make_smem_layout_a(mma, tiler, cutlass.Float16, 2), alignment=1024)
        sB = cute_ext.allocate(cutlass.Float16, cute.AddressSpace.smem,
                               h.make_smem_layout_b(mma, tiler, cutlass.Float16, 2), alignment=1024)
        acc = cute_ext.allocate(cutlass.Float32, cute.AddressSpace.tmem,
                                cute_ext.make_tmem_layout_acc(mma, tiler, 1), is2cta=True)
        kind = cute_ext.OperationTypeEnum.SM100_MMA_2SM_SS
        load = cute_ext.OperationTypeEnum.SM100_TMA_LOAD_2SM
        main = cute_ext.TMAToUMMAPipeline.create(num_stages=2, mma_operation_type=kind, tma_operation_type=load,
                                                 cluster_layout_vmnk=vmnk)
        leader = bm % 2 == 0
        if warp == 5:
            for kt in cutlass.range(0, cute.size(gA, mode=[2]), 1, unroll=1):
                token, idx = main.producer_acquire_and_get_stage()
                mbar = cute_ext.get_mbarrier(token)
                cute_ext.tma_load(gA[None, None, kt], sA[None, None, None, idx], mbar, tma_operation_type=load,
                                  cta_v_map=cute_ext.get_cta_v_map_ab(mA, tiler, mma, "A"))
                cute_ext.tma_load(gB[None, None, kt], sB[None, None, None, idx], mbar, tma_operation_type=load,
                                  cta_v_map=cute_ext.get_cta_v_map_ab(mB, tiler, mma, "B"))
                if leader:
                    main.producer_commit()
                main.producer_state = cute_ext.pipeline_advance_iterator(main.raw_pipeline, main.producer_state)
        if warp == 4 and leader:
            atom = cute.make_mma_atom(mma.op)
            for kt in cutlass.range(0, cute.size(gA, mode=[2]), 1, unroll=1):
                _, idx = main.consumer_wait_and_get_stage()
                for kb in cutlass.range(4, unroll_full=True):
                    cute_ext.dot(atom, cute.append_ones(sA[None, None, kb, idx], up_to_rank=3),
                                 cute.append_ones(sB[None, None, kb, idx], up_to_rank=3), acc[None, None, None, 0])
                    atom.set(tcgen05.Field.ACCUMULATE, True)
                main.consumer_release_and_advance()

    @cute_ext.jit
    def launch(mA: cute.Tensor, mB: cute.Tensor, mD: cute.Tensor):
        k(mA, mB, mD).launch(grid=(2, 2, 1), block=(192, 1, 1), cluster=(2, 1, 1))

    with target("sm_100a"):
        ptx = cute_ext.compile(launch, *operands()).ptx
    loads = re.findall(r"cp\.async\.bulk\.tensor\.\dd\.(\S+)", ptx)
    assert loads and all("cta_group::2" in x for x in loads)
    assert count(r"tcgen05\.mma\.cta_group::2", ptx) >= 4 and count(r"tcgen05\.mma\.cta_group::1", ptx) == 0
    assert count(r"tcgen05\.alloc\.cta_group::2", ptx) == 1 and count(r"tcgen05\.dealloc\.cta_group::2", ptx) == 1
    # the leader expects both CTAs' halves: A 2 x 128x64 halves, B 2 x 64x64
    assert "32768" in ptx and "16384" in ptx


def test_a_multicast_load_takes_this_ctas_share_of_the_rows_and_sends_it_to_the_cluster_row():
    """1-CTA MMAs over a (1, 2, 1) cluster: A's tile is shared by the two CTAs along N, each loading half of its
    rows for both; B is each CTA's own."""
    @cute_ext.kernel
    def k(mA: cute.Tensor, mB: cute.Tensor, mD: cute.Tensor):
        tcgen05 = cute.nvgpu.tcgen05
        h = helpers()
        mma = h.make_trivial_tiled_mma(cutlass.Float16, tcgen05.OperandMajorMode.K, tcgen05.OperandMajorMode.K,
                                       cutlass.Float32, tcgen05.CtaGroup.ONE, (128, 128))
        tiler = (128, 128, 64)
        vmnk = cute.tiled_divide(cute.make_layout((1, 2, 1)), (1,))
        bm, bn, _ = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        gA = cute.zipped_divide(mA, (128, 64))[(None, None), (bm, None)]
        gB = cute.zipped_divide(mB, (128, 64))[(None, None), (bn, None)]
        sA = cute_ext.allocate(cutlass.Float16, cute.AddressSpace.smem,
                               h.make_smem_layout_a(mma, tiler, cutlass.Float16, 2), alignment=1024)
        sB = cute_ext.allocate(cutlass.Float16, cute.AddressSpace.smem,
                               h.make_smem_layout_b(mma, tiler, cutlass.Float16, 2), alignment=1024)
        kind = cute_ext.OperationTypeEnum.SM100_MMA_1SM_SS
        main = cute_ext.TMAToUMMAPipeline.create_with_mask(num_stages=2, mma_operation_type=kind,
                                                           cluster_layout_vmnk=vmnk)
        if warp == 5:
            for kt in cutlass.range(0, cute.size(gA, mode=[2]), 1, unroll=1):
                token, idx = main.producer_acquire_and_get_stage()
                mbar = cute_ext.get_mbarrier(token)
                cute_ext.tma_load_multicast(gA[None, None, kt], sA[None, None, None, idx], mbar, vmnk_layout=vmnk,
                                            cta_v_map=cute_ext.get_cta_v_map_ab(mA, tiler, mma, "A"),
                                            tma_operation_type=cute_ext.OperationTypeEnum.SM90_TMA_LOAD_MULTICAST,
                                            multicast_mode=2)
                cute_ext.tma_load_multicast(gB[None, None, kt], sB[None, None, None, idx], mbar, vmnk_layout=vmnk,
                                            cta_v_map=cute_ext.get_cta_v_map_ab(mB, tiler, mma, "B"),
                                            tma_operation_type=cute_ext.OperationTypeEnum.SM90_TMA_LOAD_MULTICAST,
                                            multicast_mode=1)
                main.producer_commit_and_advance()

    @cute_ext.jit
    def launch(mA: cute.Tensor, mB: cute.Tensor, mD: cute.Tensor):
        k(mA, mB, mD).launch(grid=(2, 2, 1), block=(192, 1, 1), cluster=(1, 2, 1))

    shares = []
    from warpweave.backends.hopper import tma as hopper_tma
    original = hopper_tma.tma_partition

    def spy(atom, coord, layout, smem, gmem, **kw):
        shares.append((atom.num_multicast, atom.box, cute.size(layout)))
        return original(atom, coord, layout, smem, gmem, **kw)

    hopper_tma.tma_partition = spy
    try:
        with target("sm_100a"):
            ptx = cute_ext.compile(launch, *operands()).ptx
    finally:
        hopper_tma.tma_partition = original
    assert shares == [(2, (64, 64), 2)]           # A: two CTAs, 64 of the 128 rows each
    loads = re.findall(r"cp\.async\.bulk\.tensor\.\dd\.(\S+)", ptx)
    assert sum("multicast::cluster" in x for x in loads) * 2 == len(loads)   # A multicast, B not
    assert "16384" in ptx                          # each CTA's barrier expects the whole tile of each operand


def test_a_tensor_over_an_arguments_pointer_is_a_bounded_view_of_it():
    """cute.make_tensor(mA.iterator, layout): another layout of the argument's memory (the scale factors' blocked
    layout over a flat argument), bounded with the argument's parameter slots; arithmetic on the pointer is plain."""
    seen = {}

    @cute_ext.kernel
    def k(a: cute.Tensor):
        view = cute.make_tensor(a.iterator, cute.make_layout((8, 8), stride=(8, 1)))
        seen["view"], seen["arg"] = view, a
        seen["moved"] = a.iterator + 8

    @cute_ext.jit
    def h(a: cute.Tensor):
        k(a).launch(grid=(1, 1, 1), block=(32, 1, 1))

    with target("sm_100a"):
        cute_ext.compile(h, make_fake_compact_tensor(cutlass.Float16, (64,), assumed_align=16))
    view, arg = seen["view"], seen["arg"]
    assert isinstance(view, cute_ext.BoundedTensor) and view.slots == arg.slots and len(view.slots) == 2
    assert view.shape == (8, 8) and view.tensor.layout((1, 2)) == 10
    assert type(seen["moved"]) is type(arg.tensor.iterator)


def test_dot_block_scaled_takes_scale_factors_in_tensor_memory():
    def body():
        tcgen05 = cute.nvgpu.tcgen05
        op = tcgen05.MmaMXF8Op(cutlass.Float8E4M3FN, (128, 128, 32), tcgen05.CtaGroup.ONE, tcgen05.OperandSource.SMEM)
        atom = cute.make_mma_atom(op)
        sf = cute.make_rmem_tensor((4,), cutlass.Float8E8M0FNU)
        cute_ext.dot_block_scaled(atom, None, sf, None, sf, None)  # sf-in-registers

    with pytest.raises(Exception, match="sfa is a tensor in tensor memory") as e:
        run_in_kernel(body)
    assert e.value.location == (THIS, line_in(THIS, "# sf-in-registers"))


def test_tensors_made_in_the_kernel_have_their_maps_written_in_the_workspace():
    """A's loads and D's store name maps the kernel writes in its workspace (a template parameter completed with
    the tensor's address, extents and strides, released to the tensormap proxy and acquired before the copy);
    B's stay its argument's parameter slot. The compiled function takes the workspace as its last argument:
    per CTA, one map per store site and one per stage for a load site."""
    from warpweave.cute.experimental.host_runtime import QueryDeviceWorkspaceFunc

    from warpweave._dsl.values.runtime import RuntimeTensor
    real = [RuntimeTensor(None, (k + 1) << 24, (256, 256), (256, 1), cutlass.Float16, "cuda") for k in range(3)]
    with target("sm_100a"):
        compiled = cute_ext.compile(gemm_kernel(made_in_kernel=True), *real)
    ptx = compiled.ptx
    replaced = re.findall(r"tensormap\.replace\.tile\.(\w+)", ptx)
    stores = count(r"cp\.async\.bulk\.tensor\.\dd\.global\.shared::cta", ptx)   # one a subtile, unrolled
    sites = 1 + stores                                     # A's load site (in a run-time loop) and the stores
    assert stores >= 1 and replaced.count("global_address") == sites
    assert count(r"fence\.proxy\.tensormap::generic\.release", ptx) == sites
    assert count(r"fence\.proxy\.tensormap::generic\.acquire", ptx) == sites
    assert count(r"cp\.async\.bulk\.tensor\.\dd\.shared::cluster\.global\.mbarrier", ptx) == 2   # A's and B's
    # a load's map has a place per pipeline stage (rewritten once the stage's earlier load completed); a
    # store's map is rewritten after the earlier stores completed (not only read shared memory)
    assert count(r"cp\.async\.bulk\.wait_group \d", ptx) >= stores
    ctas, stages = 4, 2   # the 2 x 2 grid, gemm_kernel's stages
    req = compiled.get_aux_func(QueryDeviceWorkspaceFunc)(*real)
    assert req.size_in_bytes == (stages + stores) * 128 * ctas and req.alignment == 64
    with pytest.raises(Exception, match="device workspace"):   # the workspace argument left out
        compiled.prepare(*real)
    # the kernel's workspace parameter is computed from the call's last argument (the maps' templates need the
    # driver's encoder: the bytes are checked in tests/python/test_device_workspace.py)
    (launch,) = compiled.launches
    hosts = [compiled.host_arguments[p.source] for p in launch.params if p.kind == "host"]
    assert [h.tensor_index for h in hosts].count("workspace") == 1


def test_a_made_tensor_is_loaded_by_one_cta():
    with target("sm_100a"), pytest.raises(Exception, match="made in the kernel|one CTA") as e:
        @cute_ext.kernel
        def k(mA: cute.Tensor):
            mbar = cute_ext.allocate(cutlass.Int64, cute.AddressSpace.smem, cute.make_layout(1), alignment=8)
            s = cute_ext.allocate(cutlass.Float16, cute.AddressSpace.smem, cute.make_layout((64, 64)),
                                  alignment=1024)
            m = cute.make_tensor(cute.make_ptr(cutlass.Float16, mA.iterator.toint(), cute.AddressSpace.gmem,
                                               assumed_align=16), cute.make_layout((64, 64), stride=(64, 1)))
            vmnk = cute.make_layout((1, 2, 1, 1))
            cute_ext.tma_load_multicast(m, s, mbar.iterator, vmnk_layout=vmnk)

        @cute_ext.jit
        def launch(mA: cute.Tensor):
            k(mA).launch(grid=(2, 1, 1), block=(128, 1, 1), cluster=(2, 1, 1))

        cute_ext.compile(launch, operands()[0])
    assert "one CTA" in str(e.value)
