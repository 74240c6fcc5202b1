"""Blackwell's helpers, TMA atoms of MMA operands and the UMMA pipelines, without a GPU.

- blackwell_helpers: the op make_trivial_tiled_mma picks per input type, the MMA-shaped staged layouts (each stage
  slices to ((MMA MN, MMA K), rest MN, rest K), every instruction's tile one the descriptor reads), the epilogue
  tile and the tensor-memory load op per data path.
- make_tiled_tma_atom_A/B: boxes of this CTA's share of the MMA tile, the CTA group of the op, multicast counts
  from the cluster, the refusal of a CTA group that differs from the MMA's.
- PipelineTmaUmma / PipelineUmmaAsync / PipelineAsyncUmma in PTX: barrier counts, the leader-only expect_tx, the
  MMA commit (multicast to the CTAs whose loads the MMA read, both CTAs of a pair), remote arrivals at the leader.
"""
from __future__ import annotations

import re

import pytest

import warpweave as cutlass
import warpweave.cute as cute

from dsl_helpers import target


def tc():
    from warpweave.cute.nvgpu import tcgen05

    return tcgen05


def sm100():
    import warpweave.utils.blackwell_helpers as h

    return h


# --- helpers ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("ab,acc,kind,k", [(cutlass.Float16, cutlass.Float32, "f16", 16),
                                         (cutlass.BFloat16, cutlass.Float32, "f16", 16),
                                         (cutlass.TFloat32, cutlass.Float32, "tf32", 8),
                                         (cutlass.Float32, cutlass.Float32, "tf32", 8),
                                         (cutlass.Int8, cutlass.Int32, "i8", 32),
                                         (cutlass.Float8E5M2, cutlass.Float16, "f8f6f4", 32)])
def test_trivial_tiled_mma_per_type(ab, acc, kind, k):
    t = tc()
    for cta, m in ((t.CtaGroup.ONE, 128), (t.CtaGroup.TWO, 256)):
        tm = sm100().make_trivial_tiled_mma(ab, t.OperandMajorMode.K, t.OperandMajorMode.K, acc, cta, (m, 128))
        ident = tm.atom.manifest["id"]
        assert f".cta{int(cta)}.{kind}.m{m}n128k{k}." in ident, ident
        assert tm.shape_mnk == (m, 128, k)
    with pytest.raises(Exception, match="no tcgen05 MMA for Float64"):
        sm100().make_trivial_tiled_mma(cutlass.Float64, t.OperandMajorMode.K, t.OperandMajorMode.K, cutlass.Float32,
                                       t.CtaGroup.ONE, (128, 128))


@pytest.mark.parametrize("cta,m,major", [(1, 128, "K"), (1, 64, "MN"), (2, 256, "K"), (2, 256, "MN")])
def test_staged_layouts_are_mma_shaped(cta, m, major):
    t = tc()
    group = t.CtaGroup.TWO if cta == 2 else t.CtaGroup.ONE
    tm = sm100().make_trivial_tiled_mma(cutlass.Float16, t.OperandMajorMode[major], t.OperandMajorMode[major],
                                        cutlass.Float32, group, (m, 128))
    a = sm100().make_smem_layout_a(tm, (m, 128, 64), cutlass.Float16, 4)
    b = sm100().make_smem_layout_b(tm, (m, 128, 64), cutlass.Float16, 4)
    for lay, mn in ((a, m // cta), (b, 128 // cta)):
        o = lay.outer
        assert cute.size(o, mode=[0]) == mn * 16 and cute.size(o, mode=[2]) == 4 and cute.size(o, mode=[3]) == 4
        # the stages are disjoint and dense: the layout is a bijection onto 4 stages of (mn x 64) elements
        seen = {o(i) for i in range(cute.size(o))}
        assert seen == set(range(mn * 64 * 4))
        assert lay.inner.num_bits == 3                      # 128-byte swizzle


# compute_epilogue_tile_shape with C (an epilogue reading a source tensor), as CuTe DSL 4.8.1 answers it:
# (CTA tile (M, N), 2-CTA, D type, C type) -> sub-tile. Its width follows the wider of C and D and the tile's N.
_EPI_WITH_C = [
    ((128, 128), False, cutlass.Float32, cutlass.Float32, (128, 16)),
    ((128, 128), True, cutlass.Float16, cutlass.Float32, (128, 16)),
    ((128, 128), False, cutlass.Float32, cutlass.Float8E4M3FN, (128, 16)),
    ((128, 128), False, cutlass.Float16, cutlass.Float16, (128, 32)),
    ((128, 128), False, cutlass.Float8E4M3FN, cutlass.Float16, (128, 32)),
    ((128, 128), False, cutlass.Float8E4M3FN, cutlass.Float8E4M3FN, (128, 64)),
    ((128, 64), True, cutlass.Float32, cutlass.Float16, (128, 16)),
    ((128, 32), False, cutlass.Float8E4M3FN, cutlass.Float8E4M3FN, (128, 32)),
    ((128, 256), False, cutlass.Float32, cutlass.Float32, (128, 32)),
    ((128, 256), True, cutlass.Float16, cutlass.Float16, (128, 64)),
    ((128, 256), False, cutlass.Float8E4M3FN, cutlass.Float32, (128, 32)),
    ((128, 192), False, cutlass.Float8E4M3FN, cutlass.Float8E4M3FN, (128, 64)),
    ((256, 128), True, cutlass.Float32, cutlass.Float32, (128, 16)),
    ((64, 128), False, cutlass.Float32, cutlass.Float32, (64, 32)),
    ((64, 128), False, cutlass.Float8E4M3FN, cutlass.Float16, (64, 32)),
    ((64, 128), False, cutlass.Float8E4M3FN, cutlass.Float8E4M3FN, (64, 64)),
]


@pytest.mark.parametrize("tile,two_cta,d,c,want", _EPI_WITH_C)
def test_epilogue_tile_with_c_follows_the_wider_type(tile, two_cta, d, c, want):
    h = sm100()
    from warpweave.utils import LayoutEnum

    got = h.compute_epilogue_tile_shape(tile + (64,), two_cta, LayoutEnum.ROW_MAJOR, d, layout_c=LayoutEnum.ROW_MAJOR,
                                        elem_ty_c=c)
    assert got == want
    # whole rows of the accumulator's lanes, and sub-tiles that tile the CTA's columns exactly
    assert tile[1] % got[1] == 0 and min(tile[0], 128) == got[0]
    # a wider C never widens the sub-tile (its row takes more registers)
    wider = h.compute_epilogue_tile_shape(tile + (64,), two_cta, LayoutEnum.ROW_MAJOR, d,
                                          layout_c=LayoutEnum.ROW_MAJOR, elem_ty_c=cutlass.Float32)
    assert wider[1] <= got[1]


def test_epilogue_tile_and_tmem_load_op():
    h = sm100()
    from warpweave.utils import LayoutEnum

    assert h.compute_epilogue_tile_shape((128, 256), False, LayoutEnum.ROW_MAJOR, cutlass.Float16) == (128, 32)
    assert h.compute_epilogue_tile_shape((64, 48), False, LayoutEnum.ROW_MAJOR, cutlass.Float16) == (64, 16)
    assert h.compute_epilogue_tile_shape((128, 128), True, LayoutEnum.ROW_MAJOR, cutlass.Float8E4M3FN) == (128, 64)
    one_row_per_lane = h.get_tmem_load_op((128, 256), LayoutEnum.ROW_MAJOR, cutlass.Float16, cutlass.Float32,
                                          (128, 32), False)
    assert one_row_per_lane.manifest["id"] == "blackwell.tcgen05.ld.32x32b.x32"
    pair = h.get_tmem_load_op((128, 256), LayoutEnum.ROW_MAJOR, cutlass.Float16, cutlass.Float32, (128, 32), True)
    assert pair.manifest["id"] == "blackwell.tcgen05.ld.32x32b.x32"
    half = h.get_tmem_load_op((64, 128), LayoutEnum.ROW_MAJOR, cutlass.Float16, cutlass.Float32, (64, 32), False)
    assert half.manifest["id"] == "blackwell.tcgen05.ld.16x256b.x4"
    # layout B (a pair's M = 128): all 128 lanes, half of a sub-tile's columns in each lane half
    folded = h.get_tmem_load_op((64, 128), LayoutEnum.ROW_MAJOR, cutlass.Float16, cutlass.Float32, (64, 32), True)
    assert folded.manifest["id"] == "blackwell.tcgen05.ld.32x32b.x16"
    # a pair's whole MMA tile (M = 256, as FlashAttention passes its MMA tiler) names layout A, as (128, ...) does
    whole = h.get_tmem_load_op((256, 256), LayoutEnum.ROW_MAJOR, cutlass.Float16, cutlass.Float32, (128, 32), True)
    assert whole.manifest["id"] == pair.manifest["id"]
    with pytest.raises(ValueError, match="no tensor-memory layout of D for M=192"):
        h.get_tmem_load_op((192, 256), LayoutEnum.ROW_MAJOR, cutlass.Float16, cutlass.Float32, (128, 32), True)


# --- TMA atoms of the MMA's operands ------------------------------------------------------------------------------

def _fake(shape, stride, dtype=cutlass.Float16):
    from warpweave.cute.runtime import make_fake_tensor

    return make_fake_tensor(dtype, shape, stride, assumed_align=16)


def _atoms(cta, cluster, captured):
    t = tc()
    h = sm100()
    m = 128 * cta
    group = t.CtaGroup.TWO if cta == 2 else t.CtaGroup.ONE

    @cute.jit
    def host(a: cute.Tensor, b: cute.Tensor):
        tm = h.make_trivial_tiled_mma(cutlass.Float16, t.OperandMajorMode.K, t.OperandMajorMode.K, cutlass.Float32,
                                      group, (m, 128))
        sa = h.make_smem_layout_a(tm, (m, 128, 64), cutlass.Float16, 2)
        sb = h.make_smem_layout_b(tm, (m, 128, 64), cutlass.Float16, 2)
        vmnk = cute.make_layout((cta, cluster[0] // cta, cluster[1], 1))
        one = lambda s: cute.make_composed_layout(s.inner, 0, cute.slice_(s.outer, (None, None, None, 0)))  # noqa
        op_a = h.cluster_shape_to_tma_atom_A(cluster, tm.thr_id)
        op_b = h.cluster_shape_to_tma_atom_B(cluster, tm.thr_id)
        captured["a"] = cute.nvgpu.make_tiled_tma_atom_A(op_a, a, one(sa), (m, 128, 64), tm, vmnk.shape)[0]
        captured["b"] = cute.nvgpu.make_tiled_tma_atom_B(op_b, b, one(sb), (m, 128, 64), tm, vmnk.shape)[0]
        captured["ops"] = (op_a, op_b)

    with target("sm_100a"):
        try:
            cute.compile(host, _fake((512, 512, 1), (512, 1, 512 * 512)), _fake((512, 512, 1), (512, 1, 512 * 512)))
        except Exception as e:  # noqa: BLE001 - a host function without a kernel may refuse to build; the atoms exist
            if "a" not in captured:
                raise e


@pytest.mark.parametrize("cta,cluster,mc_a,mc_b", [(1, (1, 1), 1, 1), (1, (2, 2), 2, 2), (2, (2, 1), 1, 1),
                                                  (2, (4, 2), 2, 2)])
def test_tma_atoms_of_the_mma_operands(cta, cluster, mc_a, mc_b):
    got = {}
    _atoms(cta, cluster, got)
    a, b = got["a"], got["b"]
    assert (a.cta_group, b.cta_group) == (cta, cta)
    assert (a.num_multicast, b.num_multicast) == (mc_a, mc_b)
    # this CTA's share: 128 rows of A, 128 / cta rows of B, 64 elements (128 bytes) of K, split among multicast CTAs
    assert a.box[0] == 64 and a.box[1] == 128 // mc_a
    assert b.box[0] == 64 and b.box[1] == 128 // cta // mc_b
    assert a.smem_bytes == 128 * 64 * 2 and b.smem_bytes == 128 // cta * 64 * 2
    names = [op.python_name for op in got["ops"]]
    assert names[0].endswith("MulticastOp") == (mc_a > 1) and names[1].endswith("MulticastOp") == (mc_b > 1)
    assert a._entry("multicast" if mc_a > 1 else "load")[1]["id"].startswith(
        "blackwell.tma.load" + (".multicast" if mc_a > 1 else "") + (".cta2" if cta == 2 else ""))


def test_tma_atom_of_an_operand_whose_rows_are_heads_and_rows_takes_the_tile_over_both():
    """FlashAttention's packed GQA: A's M mode is (heads per KV head, rows), and its K = 128 is two swizzle atoms
    of shared memory apart; the atom splits the tile's 128 rows into 4 heads of 32 rows and loads K in two boxes."""
    t = tc()
    h = sm100()
    got = {}

    @cute.jit
    def host(a: cute.Tensor):
        tm = h.make_trivial_tiled_mma(cutlass.Float16, t.OperandMajorMode.K, t.OperandMajorMode.K, cutlass.Float32,
                                      t.CtaGroup.ONE, (128, 128))
        sa = h.make_smem_layout_a(tm, (128, 128, 128), cutlass.Float16, 2)
        one = cute.make_composed_layout(sa.inner, 0, cute.slice_(sa.outer, (None, None, None, 0)))
        # (heads 128 apart, rows 1024 apart: the group's heads are not all of a row's, so the mode is not one run)
        packed = cute.make_tensor(a.iterator, cute.make_layout(((4, 512), 128, 1), stride=((128, 1024), 1, 1 << 19)))
        got["a"] = cute.nvgpu.make_tiled_tma_atom_A(t_op(), packed, one, (128, 128, 128), tm)[0]

    def t_op():
        return cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp(t.CtaGroup.ONE)

    with target("sm_100a"):
        try:
            cute.compile(host, _fake((1 << 19,), (1,)))
        except Exception as e:  # noqa: BLE001 - a host function without a kernel may refuse to build; the atom exists
            if "a" not in got:
                raise e
    a = got["a"]
    assert tuple(a.box) == (64, 4, 32, 1) and len(a.boxes) == 2
    assert [int(a.tma_desc.attrs[f"gstride{i}"]) for i in range(3)] == [1, 128, 1024]


@pytest.mark.parametrize("cta", [1, 2])
def test_tma_atoms_take_a_staged_layout_as_its_first_stage(cta):
    """CuTe DSL's programs pass make_smem_layout_a/b's staged layout as it is (its GEMM tutorial) or one stage of
    it (its dense GEMM): both make the same atom, swizzle included."""
    t = tc()
    h = sm100()
    m = 128 * cta
    got = {}

    @cute.jit
    def host(a: cute.Tensor):
        tm = h.make_trivial_tiled_mma(cutlass.Float16, t.OperandMajorMode.K, t.OperandMajorMode.K, cutlass.Float32,
                                      t.CtaGroup.TWO if cta == 2 else t.CtaGroup.ONE, (m, 128))
        sa = h.make_smem_layout_a(tm, (m, 128, 64), cutlass.Float16, 3)
        one = cute.make_composed_layout(sa.inner, 0, cute.slice_(sa.outer, (None, None, None, 0)))
        op = h.cluster_shape_to_tma_atom_A((cta, 1), tm.thr_id)
        got["staged"] = cute.nvgpu.make_tiled_tma_atom_A(op, a, sa, (m, 128, 64), tm, (cta, 1, 1, 1))[0]
        got["one"] = cute.nvgpu.make_tiled_tma_atom_A(op, a, one, (m, 128, 64), tm, (cta, 1, 1, 1))[0]

    with target("sm_100a"):
        try:
            cute.compile(host, _fake((512, 512, 1), (512, 1, 512 * 512)))
        except Exception as e:  # noqa: BLE001 - a host function without a kernel may refuse to build
            if "one" not in got:
                raise e
    staged, one = got["staged"], got["one"]
    fields = ("box", "boxes", "dims", "swizzle", "smem_bytes", "num_multicast", "cta_group", "rows_mode")
    assert {f: getattr(staged, f) for f in fields} == {f: getattr(one, f) for f in fields}
    assert one.swizzle == 128 and one.smem_bytes == 128 * 64 * 2 and one.box[:2] == (64, 128)
    # the tensor map the host computes is the same too (same attributes of the same argument)
    assert repr(staged.tma_desc) == repr(one.tma_desc) and staged.tma_desc.attrs == one.tma_desc.attrs


def _tma_atom_of_group(mma_group, op_group):
    t = tc()
    h = sm100()
    got = {}
    m = 256 if mma_group == t.CtaGroup.TWO else 128

    @cute.jit
    def host(a: cute.Tensor):
        tm = h.make_trivial_tiled_mma(cutlass.Float16, t.OperandMajorMode.K, t.OperandMajorMode.K, cutlass.Float32,
                                      mma_group, (m, 128))
        sa = h.make_smem_layout_a(tm, (m, 128, 64), cutlass.Float16, 2)
        one = cute.make_composed_layout(sa.inner, 0, cute.slice_(sa.outer, (None, None, None, 0)))
        from warpweave.cute.nvgpu import cpasync

        got["atom"] = cute.nvgpu.make_tiled_tma_atom_A(cpasync.CopyBulkTensorTileG2SOp(op_group), a, one,
                                                       (m, 128, 64), tm)[0]

    with target("sm_100a"):
        try:
            cute.compile(host, _fake((512, 512, 1), (512, 1, 512 * 512)))
        except Exception as e:  # noqa: BLE001 - a host function without a kernel may refuse to build
            if "atom" not in got:
                raise e
    return got["atom"]


def test_tma_atom_of_one_cta_under_a_pair_loads_this_ctas_share_on_its_own_barrier():
    # A pair's MMA with cta_group ONE loads (each CTA signals its own barrier, as a program that synchronizes the
    # pair itself asks): the same boxes as the pair's loads, completing on the CTA's own barrier.
    t = tc()
    own = _tma_atom_of_group(t.CtaGroup.TWO, t.CtaGroup.ONE)
    pair = _tma_atom_of_group(t.CtaGroup.TWO, t.CtaGroup.TWO)
    assert own.cta_group == 1 and pair.cta_group == 2
    assert own.box == pair.box and own.smem_bytes == pair.smem_bytes


def test_tma_atom_of_a_pair_group_beside_a_one_cta_mma_completes_on_the_leaders_barrier():
    # (the scale factors of B, loaded through a one-CTA tiled MMA beside a pair's MMA): the one-CTA share, loads
    # completing on the pair's leader
    t = tc()
    pair = _tma_atom_of_group(t.CtaGroup.ONE, t.CtaGroup.TWO)
    own = _tma_atom_of_group(t.CtaGroup.ONE, t.CtaGroup.ONE)
    assert pair.cta_group == 2 and own.cta_group == 1 and pair.box == own.box


# --- pipelines ------------------------------------------------------------------------------------------------------

def _ptx(body, cluster):
    import numpy as np

    from warpweave.cute.runtime import from_dlpack

    @cute.kernel
    def k(g: cute.Tensor):
        body(g)

    @cute.jit
    def h(a):
        k(a).launch(grid=[cluster[0], cluster[1], 1], block=[128, 1, 1], cluster=[cluster[0], cluster[1], 1])

    with target("sm_100a"):
        return cute.compile(h, from_dlpack(np.zeros(64, np.int32))).info["ptx"]


def _inits(ptx):
    """The arrival count of each mbarrier.init (an immediate, or a register set by a mov of one)."""
    consts = dict(re.findall(r"mov\.b32 \t?(%r\d+), (\d+);", ptx))
    return [int(consts.get(x, x)) for x in re.findall(r"mbarrier\.init\.shared::cta\.b64 \[[^]]+\], (%r\d+|\d+);", ptx)]


@pytest.mark.parametrize("cta,cluster", [(1, (1, 1)), (1, (2, 2)), (2, (2, 1)), (2, (4, 2))])
def test_pipeline_tma_umma(cta, cluster):
    import warpweave.pipeline as pipeline
    from warpweave import utils

    mc_a, mc_b = cluster[1], cluster[0] // cta

    def body(g):
        smem = utils.SmemAllocator()
        bars = smem.allocate_array(cutlass.Int64, 4, byte_alignment=8)
        p = pipeline.PipelineTmaUmma.create(
            barrier_storage=bars, num_stages=2, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, mc_a + mc_b - 1), tx_count=4096,
            cta_layout_vmnk=cute.make_layout((cta, cluster[0] // cta, cluster[1], 1)))
        producer, consumer = p.make_participants()
        stage = producer.acquire_and_advance()
        g[0] = stage.index
        full = consumer.wait_and_advance()
        full.release()
        producer.tail()

    ptx = _ptx(body, cluster)
    # two full barriers of one arrival (the leader's expect_tx), two empty ones of one per MMA reading this CTA's
    # loads
    assert sorted(_inits(ptx)) == sorted([1, 1, mc_a + mc_b - 1, mc_a + mc_b - 1])
    assert ptx.count("mbarrier.arrive.expect_tx") == 1 and "4096" in ptx
    multicast = cluster != (1, 1)
    commit = re.findall(r"tcgen05\.commit\.cta_group::(\d)\.mbarrier::arrive::one\.shared::cluster"
                        r"(\.multicast::cluster)?", ptx)
    assert commit == [(str(cta), ".multicast::cluster" if multicast else "")]
    if multicast:
        # the leader's mask: A's CTAs (its cluster row) and B's (its column), both CTAs of each pair; the
        # pattern constants of the row and the column appear
        pattern_n = sum(1 << (j * cluster[0]) for j in range(cluster[1]))
        pattern_m = sum(1 << (j * cta) for j in range(cluster[0] // cta))
        for pat in {pattern_n, pattern_m} - {1}:
            assert re.search(rf"\b{pat}\b", ptx), pat
    # tail: one wait per stage on the empty barriers after the loop
    assert ptx.count("mbarrier.try_wait.parity") >= 2 + 1 + 1


@pytest.mark.parametrize("cta,cluster,mcast_mode_mn", [(1, (1, 1), (1, 1)), (1, (2, 2), (1, 1)),
                                                        (2, (4, 2), (1, 1)), (1, (2, 4), (1, 0)),
                                                        (1, (4, 2), (0, 1))])
def test_pipeline_tma_umma_counts_the_multicast_commits_itself(cta, cluster, mcast_mode_mn):
    """enable_multicast_signaling: the consumer group is the MMA warp, and each empty barrier counts the commits
    that reach it (one per leader CTA along each multicast mode, its own counted once), as a program states them
    itself without it."""
    import warpweave.pipeline as pipeline
    from warpweave import utils

    a_mc, b_mc = mcast_mode_mn
    commits = (cluster[1] if a_mc else 1) + (cluster[0] // cta if b_mc else 1) - 1

    def body(g):
        smem = utils.SmemAllocator()
        bars = smem.allocate_array(cutlass.Int64, 4, byte_alignment=8)
        p = pipeline.PipelineTmaUmma.create(
            barrier_storage=bars, num_stages=2, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Warp), tx_count=4096,
            cta_layout_vmnk=cute.make_layout((cta, cluster[0] // cta, cluster[1], 1)), mcast_mode_mn=mcast_mode_mn,
            enable_multicast_signaling=True)
        producer, consumer = p.make_participants()
        g[0] = producer.acquire_and_advance().index
        consumer.wait_and_advance().release()

    assert sorted(_inits(_ptx(body, cluster))) == sorted([1, 1, commits, commits])


def test_pipeline_tma_multi_consumers_async():
    # One stage is empty once the MMA warp's commit and each of 128 epilogue threads' arrivals are in.
    import warpweave.pipeline as pipeline
    from warpweave import utils

    def body(g):
        smem = utils.SmemAllocator()
        bars = smem.allocate_array(cutlass.Int64, 4, byte_alignment=8)
        p = pipeline.PipelineTmaMultiConsumersAsync.create(
            num_stages=2, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group_umma=pipeline.CooperativeGroup(pipeline.Agent.Thread, 1),
            consumer_group_async=pipeline.CooperativeGroup(pipeline.Agent.Thread, 128), tx_count=4096,
            barrier_storage=bars)
        prod = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
        cons = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
        p.producer_acquire(prod)
        g[0] = prod.index
        p.consumer_wait(cons)
        p.consumer_release(cons, pipeline.PipelineOp.TCGen05Mma)
        p.consumer_release(cons, pipeline.PipelineOp.AsyncThread)

    ptx = _ptx(body, (1, 1))
    assert sorted(_inits(ptx)) == [1, 1, 129, 129]
    assert ptx.count("mbarrier.arrive.expect_tx") == 1 and "4096" in ptx
    assert len(re.findall(r"tcgen05\.commit\.cta_group::1", ptx)) == 1
    # the thread consumers' arrival: a plain arrive on this CTA's empty barrier
    assert len(re.findall(r"mbarrier\.arrive(\.release)?(\.cta)?\.shared(::cta)?\.b64", ptx)) == 1


def test_pipeline_tma_multi_consumers_async_refuses_clusters_and_other_release_kinds():
    import warpweave.pipeline as pipeline

    def make(layout):
        return lambda g: pipeline.PipelineTmaMultiConsumersAsync.create(
            num_stages=2, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group_umma=pipeline.CooperativeGroup(pipeline.Agent.Thread, 1),
            consumer_group_async=pipeline.CooperativeGroup(pipeline.Agent.Thread, 128), tx_count=4096,
            cta_layout_vmnk=layout)

    with pytest.raises(Exception, match="made for one CTA"):
        _ptx(make(cute.make_layout((1, 2, 1, 1))), (2, 1))

    def release(g):
        p = make(None)(g)
        p.consumer_release(pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2),
                           pipeline.PipelineOp.TmaLoad)

    with pytest.raises(Exception, match="op_type is PipelineOp.TCGen05Mma"):
        _ptx(release, (1, 1))


@pytest.mark.parametrize("cta", [1, 2])
def test_pipeline_umma_async_and_async_umma(cta):
    import warpweave.pipeline as pipeline
    from warpweave import utils

    cluster = (cta, 1)

    def body(g):
        smem = utils.SmemAllocator()
        bars = smem.allocate_array(cutlass.Int64, 4, byte_alignment=8)
        vmnk = cute.make_layout((cta, 1, 1, 1))
        acc = pipeline.PipelineUmmaAsync.create(
            barrier_storage=bars, num_stages=1, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 128), cta_layout_vmnk=vmnk)
        ops = pipeline.PipelineAsyncUmma.create(
            barrier_storage=bars + 2, num_stages=1, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 64),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread), cta_layout_vmnk=vmnk)
        s = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 1)
        acc.producer_acquire(s)
        acc.producer_commit(s)
        c = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 1)
        acc.consumer_wait(c)
        acc.consumer_release(c)
        ops.producer_acquire(s)
        ops.producer_commit(s)
        ops.consumer_wait(c)
        ops.consumer_release(c)

    ptx = _ptx(body, cluster)
    # acc: full 1 (the commit), empty 128 per CTA of the MMA; operands: full 64 per CTA of the MMA, empty 1
    assert sorted(_inits(ptx)) == sorted([1, 128 * cta, 64 * cta, 1])
    commits = re.findall(r"tcgen05\.commit\.cta_group::(\d)[^;]*?(multicast::cluster)?\.b64", ptx)
    assert [c[0] for c in commits] == [str(cta)] * 2
    assert all(bool(c[1]) == (cta == 2) for c in commits)
    if cta == 2:
        # the consumers' and producers' arrivals go to the leader CTA's barrier
        assert ptx.count("mbarrier.arrive.shared::cluster.b64") == 2
    else:
        assert ptx.count("mbarrier.arrive.shared::cta.b64") == 2


def test_pipelines_refuse_bad_arguments():
    import warpweave.pipeline as pipeline

    with pytest.raises(ValueError, match="at least one stage"):
        pipeline.PipelineTmaUmma.create(barrier_storage=None, num_stages=0, producer_group=None, consumer_group=None,
                                        tx_count=16)
    with pytest.raises(ValueError, match="tx_count"):
        pipeline.PipelineTmaUmma.create(barrier_storage=None, num_stages=2, producer_group=None, consumer_group=None,
                                        tx_count=0)
    with pytest.raises(ValueError, match="V mode"):
        pipeline.PipelineUmmaAsync.create(barrier_storage=None, num_stages=1, producer_group=None,
                                          consumer_group=None, cta_layout_vmnk=cute.make_layout((4, 1, 1, 1)))


# --- idioms of CuTe DSL's Blackwell programs -------------------------------------------------------------------------

def test_cutedsl_program_idioms():
    import warpweave.pipeline as pipeline
    from warpweave import utils
    from warpweave.cute.nvgpu import cpasync

    t = tc()
    tm = sm100().make_trivial_tiled_mma(cutlass.Float16, t.OperandMajorMode.K, t.OperandMajorMode.K, cutlass.Float32,
                                        t.CtaGroup.TWO, (256, 128))
    staged = sm100().make_smem_layout_a(tm, (256, 128, 64), cutlass.Float16, 3)
    # cute.select of a staged swizzled layout keeps the swizzle (one stage for make_tiled_tma_atom_A)
    one = cute.select(staged, mode=[0, 1, 2])
    assert str(one.inner) == str(staged.inner) and cute.size(one.outer) == cute.size(staged.outer) // 3
    # cute.tiled_divide's ((V), M, N, K) cluster layout
    vmnk = cute.tiled_divide(cute.make_layout((4, 2, 1)), (2,))

    def body(g):
        smem = utils.SmemAllocator()
        word = smem.allocate_array(cutlass.Int32, 1)
        s = smem.allocate_tensor(cutlass.Float16, staged.outer, 128, swizzle=staged.inner)
        # a swizzled buffer starts at a multiple of its swizzle's period, whatever alignment was asked
        assert s.iterator.alignment >= 1024 and word.ptr is word
        pipeline.pipeline_init_arrive(cluster_shape_mn=vmnk, is_relaxed=True)
        pipeline.pipeline_init_wait(cluster_shape_mn=vmnk)
        g[0] = cpasync.create_tma_multicast_mask(vmnk, (0, 1, 1, 0), 2)

    ptx = _ptx(body, (4, 2))
    assert "barrier.cluster.arrive.relaxed.aligned;" in ptx and "barrier.cluster.wait.aligned;" in ptx


def test_elect_one_as_a_block_and_the_sm100_helpers_alias():
    import warpweave.utils.sm100 as sm100_alias

    assert sm100_alias is sm100()                         # CuTe DSL's newer name of blackwell_helpers

    def body(g):
        with cute.arch.elect_one():
            g[0] = cutlass.Int32(7)
        # still a Boolean for `if` and library code
        assert isinstance(cute.arch.elect_one(), cutlass.Boolean)
        g[1] = cutlass.Int32(8)

    ptx = _ptx(body, (1, 1))
    assert ptx.count("elect.sync") == 2
    # the block's store is branched around (or predicated on) the election, the other is not
    lines = ptx.splitlines()
    seven = next(i for i, l in enumerate(lines) if re.search(r"st\.global\.[bsu]32\s+\[[^]]+\],\s*7;", l) or
                 ("mov.b32" in l and ", 7;" in l))
    assert any(re.search(r"@%p\d+ bra|@!%p\d+ bra|@%p\d+ st", l) for l in lines[:seven + 2]), ptx


@pytest.mark.parametrize("shape", [(1, 1, 1), (1, 2, 2), (2, 1, 1), (2, 2, 1), (2, 1, 4), (2, 2, 2), (1, 4, 2)])
def test_cta_masks_against_enumeration(shape):
    # the masks of the pipelines' cluster arithmetic, for every CTA of a (V, M, N) cluster, against the sets
    # enumerated from coordinates: rank = v + V (m + M n)
    from warpweave_pipelines import cta_masks

    V, M, N = shape
    modes = cta_masks.flat_modes(cute.make_layout((V, M, N, 1)))
    coords = {v + V * (m + M * n): (v, m, n) for v in range(V) for m in range(M) for n in range(N)}

    def mask_of(pred):
        return sum(1 << r for r, c in coords.items() if pred(c))

    for rank, (v, m, n) in coords.items():
        r = cutlass.Int32(rank)
        got = [int(cta_masks.coordinate(r, modes, i).value) for i in range(3)]
        assert got == [v, m, n]
        # along N (A's multicast) and along M (B's) from the leader of this CTA's pair, and along the pair
        assert int(cta_masks.along(r, modes, 2, {0: cutlass.Int32(0)}).value) == mask_of(
            lambda c: c[0] == 0 and c[1] == m)
        assert int(cta_masks.along(r, modes, 1, {0: cutlass.Int32(0)}).value) == mask_of(
            lambda c: c[0] == 0 and c[2] == n)
        assert int(cta_masks.along(r, modes, 0).value) == mask_of(lambda c: c[1] == m and c[2] == n)
