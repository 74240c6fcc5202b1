"""TMA on sm_100a as CuTe DSL's Blackwell programs use it, without a GPU.

- make_tiled_tma_atom_A/B and cpasync.make_tiled_tma_atom return a cpasync.TmaInfo: it unpacks as (atom, tensor)
  and keeps the shared-memory layout as given (staged: the tutorial allocates its stages from it); a staged epilogue
  layout gives the atom of its first stage.
- cute.prefetch(atom, coordinates): cp.async.bulk.prefetch.tensor into L2 of every box the copy of the same
  coordinates loads, at the same coordinates, by one elected lane; SASS UTMAPF.L2. Store atoms and sources that
  are not the atom's TMA tensor are refused at the user's line.
- arch.mbarrier_expect_tx (the TMA tutorial's transaction count without an arrival) on sm_100a.
"""
from __future__ import annotations

import os
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import _core, utils
from warpweave.cute.nvgpu import cpasync
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import fresh_compilations, line_in, sass_opcodes, target

pytestmark = pytest.mark.usefixtures("fresh_compilations")

SASS = pytest.mark.skipif(not _core.sass_tool_available(), reason="no SASS disassembler (nvdisasm) installed")
THIS = os.path.abspath(__file__)


def line_of(text: str) -> int:
    return line_in(THIS, text)


# --- TmaInfo from the builders ----------------------------------------------------------------------------------------

def test_operand_and_epilogue_atoms_come_as_tma_info_with_the_layout_given():
    from warpweave.cute.nvgpu import tcgen05 as t
    import warpweave.utils.blackwell_helpers as h

    got = {}

    @cute.jit
    def host(a: cute.Tensor, c: cute.Tensor):
        tm = h.make_trivial_tiled_mma(cutlass.Float16, t.OperandMajorMode.K, t.OperandMajorMode.K, cutlass.Float32,
                                      t.CtaGroup.ONE, (128, 128))
        sa = h.make_smem_layout_a(tm, (128, 128, 64), cutlass.Float16, 4)
        got["sa"] = sa
        got["a"] = cute.nvgpu.make_tiled_tma_atom_A(cpasync.CopyBulkTensorTileG2SOp(t.CtaGroup.ONE), a, sa,
                                                    (128, 128, 64), tm)
        kind = utils.LayoutEnum.ROW_MAJOR
        epi = h.compute_epilogue_tile_shape((128, 128, 64), False, kind, cutlass.Float16)
        staged = h.make_smem_layout_epi(cutlass.Float16, kind, epi, 2)
        one = cute.slice_(staged, (None, None, 0))
        got["epi"], got["staged"] = epi, staged
        got["c_staged"] = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), c, staged, epi)
        got["c_one"] = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), c, one, epi)

    with target("sm_100a"):
        a = np.zeros((512, 512), np.float16)
        cute.compile(host, from_dlpack(a), from_dlpack(a))
    info = got["a"]
    assert isinstance(info, cpasync.TmaInfo) and info.smem_layout is got["sa"]
    atom, tensor = info
    assert atom is info.atom and tensor is info.tma_tensor and atom.cta_group == 1
    staged, one = got["c_staged"], got["c_one"]
    assert staged.smem_layout is got["staged"]
    fields = ("box", "boxes", "dims", "swizzle", "smem_bytes")
    assert {f: getattr(staged.atom, f) for f in fields} == {f: getattr(one.atom, f) for f in fields}
    assert staged.atom.tma_desc.attrs == one.atom.tma_desc.attrs
    # one stage of the epilogue tile, not all of them
    assert staged.atom.smem_bytes == cute.size(got["epi"][0]) * cute.size(got["epi"][1]) * 2


# --- cute.prefetch -------------------------------------------------------------------------------------------------

# A (64, 512) fp16 tile whose two 256-column halves are dense: two TMA boxes of 256 x 64 per copy.
_TILE = (64, 512)


def _tile_layout():
    return cute.make_layout((64, (256, 2)), stride=(256, (1, 64 * 256)))


def _prefetch_kernel(k_tiles: int, also_copy: bool, arch: str = "sm_100a"):
    @cute.kernel
    def k(atom: cute.CopyAtom, coords: cute.Tensor):
        smem = utils.SmemAllocator()
        s = smem.allocate_tensor(cutlass.Float16, _tile_layout(), byte_alignment=128)
        bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        g = cute.local_tile(coords, _TILE, (0, None))
        ts, tg = cpasync.tma_partition(atom, 0, cute.make_layout(1), cute.group_modes(s, 0, 2),
                                       cute.group_modes(g, 0, 2))
        for kt in cutlass.range_constexpr(k_tiles):
            cute.prefetch(atom, tg[(None, kt)])
            if cutlass.const_expr(also_copy):
                cute.copy(atom, tg[(None, kt)], ts, tma_bar_ptr=bar)

    @cute.jit
    def host(a: cute.Tensor):
        atom, coords = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, _tile_layout(), _TILE)
        k(atom, coords).launch(grid=(1, 1, 1), block=(32, 1, 1))

    with target(arch):
        return cute.compile(host, from_dlpack(np.zeros((64, 2048), np.float16)))


def _coords(ptx, mnemonic):
    """The coordinates of each instruction, its registers read as the constants moved into them."""
    consts = dict(re.findall(r"mov\.b32 \t?(%r\d+), (\d+);", ptx))
    return [tuple(int(consts.get(x.strip(), -1)) for x in c.split(","))
            for c in re.findall(mnemonic + r"[^\n]*?\{([^}]*)\}", ptx)]


@pytest.mark.parametrize("arch", ["sm_100a", "sm_90a"])   # Hopper's TMA atom, its prefetch primitive there
def test_prefetch_reaches_every_box_the_copy_loads_at_its_coordinates(arch):
    ptx = _prefetch_kernel(2, True, arch).ptx
    pf = _coords(ptx, r"cp\.async\.bulk\.prefetch\.tensor\.2d\.L2\.global")
    # Blackwell's load names a shared::cluster destination (a 2-CTA pair loads into its peer), Hopper's this CTA's
    ld = _coords(ptx, r"cp\.async\.bulk\.tensor\.2d\.shared::(?:cluster|cta)\.global")
    assert len(pf) == len(ld) == 2 * 2                 # 2 k-tiles, 2 boxes each
    # the same coordinates: the boxes' columns (innermost first) of k-tiles 0 and 1, row 0
    assert sorted(pf) == sorted(ld) == [(0, 0), (256, 0), (512, 0), (768, 0)]
    assert ptx.count("elect.sync") >= 1


def test_prefetch_alone_loads_nothing():
    ptx = _prefetch_kernel(3, False).ptx
    assert sorted(_coords(ptx, r"cp\.async\.bulk\.prefetch\.tensor\.2d\.L2\.global")) == [
        (256 * i, 0) for i in range(3 * 2)]
    assert "cp.async.bulk.tensor" not in ptx and "mbarrier" not in ptx


@SASS
def test_prefetch_sass():
    ops = sass_opcodes(_prefetch_kernel(2, True).cubin)
    assert ops.count("UTMAPF.L2.2D") == 4 and ops.count("UTMALDG.2D") == 4, sorted(set(ops))


def test_prefetch_refuses_a_store_atom_and_another_source():
    @cute.kernel
    def k_store(atom: cute.CopyAtom, coords: cute.Tensor):
        cute.prefetch(atom, cute.local_tile(coords, (64, 64), (0, 0)))  # a store atom

    @cute.kernel
    def k_plain(atom: cute.CopyAtom, a: cute.Tensor):
        cute.prefetch(atom, a)  # not the TMA tensor

    def host_of(kernel, op, plain):
        @cute.jit
        def host(a: cute.Tensor):
            atom, coords = cpasync.make_tiled_tma_atom(op, a, cute.make_layout((64, 64), stride=(64, 1)), (64, 64))
            kernel(atom, a if plain else coords).launch(grid=(1, 1, 1), block=(32, 1, 1))
        return host

    a = from_dlpack(np.zeros((64, 64), np.float16))
    with target("sm_100a"):
        with pytest.raises(Exception, match="TMA store atom") as e:
            cute.compile(host_of(k_store, cpasync.CopyBulkTensorTileS2GOp(), False), a)
        assert f"test_tma_info_and_prefetch.py:{line_of('# a store atom')}" in str(e.value)
        with pytest.raises(Exception, match="the source is the atom's TMA tensor") as e:
            cute.compile(host_of(k_plain, cpasync.CopyBulkTensorTileG2SOp(), True), a)
        assert f"test_tma_info_and_prefetch.py:{line_of('# not the TMA tensor')}" in str(e.value)


# --- mbarrier.expect_tx ------------------------------------------------------------------------------------------

def _expect_tx_kernel():
    @cute.kernel
    def k(x: cute.Tensor):
        smem = utils.SmemAllocator()
        bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_expect_tx(bar, 4096)
        cute.arch.mbarrier_arrive(bar)

    @cute.jit
    def host(x: cute.Tensor):
        k(x).launch(grid=(1, 1, 1), block=(32, 1, 1))

    with target("sm_100a"):
        return cute.compile(host, from_dlpack(np.zeros(32, np.int32)))


def test_mbarrier_expect_tx_on_sm100a():
    ptx = _expect_tx_kernel().ptx
    assert re.search(r"mbarrier\.expect_tx\.relaxed\.cta\.shared::cta\.b64 \[%r\d+\], (4096|%r\d+);", ptx), ptx
    assert "mbarrier.arrive.expect_tx" not in ptx


@SASS
def test_mbarrier_expect_tx_sass():
    assert "SYNCS.ARRIVE.TRANS64.RED.A0TR" in sass_opcodes(_expect_tx_kernel().cubin)


# --- blackwell_helpers.make_smem_layout and a tiled_divide cluster layout -------------------------------------------

@pytest.mark.parametrize("major,dtype,tile,swizzle_bytes", [("K", cutlass.Float16, (128, 64), 128),
                                                           ("K", cutlass.Float16, (64, 32), 64),
                                                           ("MN", cutlass.Float16, (128, 64), 128),
                                                           ("K", cutlass.Float32, (32, 32), 128)])
def test_make_smem_layout_is_a_swizzled_tiling_contiguous_along_its_major_mode(major, dtype, tile, swizzle_bytes):
    from warpweave.cute.nvgpu import tcgen05 as t
    import warpweave.utils.blackwell_helpers as h

    lay = h.make_smem_layout(getattr(t.OperandMajorMode, major), tile, dtype, 2)
    outer = lay.outer
    assert tuple(cute.size(x) for x in outer.shape) == (*tile, 2)
    # a bijection onto its cosize (stages back to back)
    offsets = {outer((i, j, s)) for i in range(tile[0]) for j in range(tile[1]) for s in range(2)}
    assert len(offsets) == tile[0] * tile[1] * 2 == cute.cosize(outer)
    # the swizzle's row along the major mode is contiguous (before swizzling)
    run = swizzle_bytes * 8 // dtype.width
    along = (lambda e: (0, e, 0)) if major == "K" else (lambda e: (e, 0, 0))
    assert [outer(along(e)) for e in range(run)] == list(range(run))
    # the swizzle permutes 2^B 16-byte chunks of each row: B = log2(swizzle bytes / 16)
    b = int(re.match(r"Sw?<(\d+),", str(lay.inner)).group(1))
    assert 16 << b == swizzle_bytes, lay


def test_pipeline_tma_async_takes_a_tiled_divide_cluster_layout():
    @cute.kernel
    def k(x: cute.Tensor):
        smem = utils.SmemAllocator()
        bars = smem.allocate_array(cutlass.Int64, 4, byte_alignment=8)
        vmnk = cute.tiled_divide(cute.make_layout((1, 1, 1)), (cute.make_layout(1),))   # ((1),1,1,1)
        import warpweave.pipeline as pipeline

        p = pipeline.PipelineTmaAsync.create(
            barrier_storage=bars, num_stages=2, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 1),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 4), tx_count=1024,
            cta_layout_vmnk=vmnk)
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
        p.producer_acquire(state)

    @cute.jit
    def host(x: cute.Tensor):
        k(x).launch(grid=(1, 1, 1), block=(128, 1, 1))

    with target("sm_100a"):
        ptx = cute.compile(host, from_dlpack(np.zeros(4, np.int32))).ptx
    inits = re.findall(r"mbarrier\.init\.shared::cta\.b64 \[[^]]+\], (\d+|%r\d+);", ptx)
    assert len(inits) == 4 and "mbarrier.arrive.expect_tx" in ptx


def test_trivial_tiled_mma_takes_a_and_b_types_apart():
    from warpweave.cute.nvgpu import tcgen05 as t
    import warpweave.utils.blackwell_helpers as h

    k = t.OperandMajorMode.K
    one = h.make_trivial_tiled_mma(cutlass.BFloat16, k, k, cutlass.Float32, t.CtaGroup.TWO, (256, 128))
    two = h.make_trivial_tiled_mma(cutlass.BFloat16, cutlass.BFloat16, k, k, cutlass.Float32, t.CtaGroup.TWO,
                                   (256, 128))
    assert repr(one.op) == repr(two.op) and str(one.thr_id) == str(two.thr_id)
    with pytest.raises(Exception, match="A is Float16 and B BFloat16"):
        h.make_trivial_tiled_mma(cutlass.Float16, cutlass.BFloat16, k, k, cutlass.Float32, t.CtaGroup.ONE, (128, 128))


def test_mbarrier_arrive_on_a_peer_cta():
    @cute.kernel
    def k(x: cute.Tensor):
        bar = utils.SmemAllocator().allocate_array(cutlass.Int64, 1, byte_alignment=8)
        cute.arch.mbarrier_arrive(bar)
        cute.arch.mbarrier_arrive(bar, peer_cta_rank_in_cluster=cute.arch.block_idx_in_cluster() ^ 1)

    @cute.jit
    def host(x: cute.Tensor):
        k(x).launch(grid=(2, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1))

    with target("sm_100a"):
        ptx = cute.compile(host, from_dlpack(np.zeros(4, np.int32))).ptx
    assert ptx.count("mbarrier.arrive.shared::cta.b64") == 1
    assert ptx.count("mbarrier.arrive.shared::cluster.b64") == 1 and "mapa.shared::cluster.u32" in ptx


# --- what CuTe DSL's blockwise GEMM takes: an identity-layout tile, setmaxnreg, tcgen05.copy and Repetition(n) -----

def test_tma_tile_given_as_an_identity_layout_is_its_shape():
    got = {}

    @cute.jit
    def host(c: cute.Tensor):
        smem = cute.make_layout((128, 32), stride=(32, 1))
        tile = cute.composition(cute.make_identity_layout(c.shape), (128, 32))
        got["layout"] = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), c, smem, tile).atom
        got["shape"] = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), c, smem, (128, 32)).atom
        skew = cute.make_layout((128, 32), stride=(cute.make_identity_layout(c.shape).stride[1],
                                                  cute.make_identity_layout(c.shape).stride[0]))
        cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), c, smem, skew)  # transposed tile

    with target("sm_100a"), pytest.raises(Exception, match="other than one to one") as e:
        cute.compile(host, from_dlpack(np.zeros((256, 64), np.float16)))
    assert f"test_tma_info_and_prefetch.py:{line_of('# transposed tile')}" in str(e.value)
    a, b = got["layout"], got["shape"]
    assert (a.box, a.boxes, a.dims) == (b.box, b.boxes, b.dims) and a.tma_desc.attrs == b.tma_desc.attrs


def _setmaxnreg_kernel():
    @cute.kernel
    def k(x: cute.Tensor):
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp < 4:
            cute.arch.setmaxregister_decrease(96)
        else:
            cute.arch.setmaxregister_increase(232)
        x[0] = 1

    @cute.jit
    def host(x: cute.Tensor):
        k(x).launch(grid=(1, 1, 1), block=(256, 1, 1), min_blocks_per_mp=1)

    with target("sm_100a"):
        return cute.compile(host, from_dlpack(np.zeros(4, np.int32)))


def test_setmaxnreg_on_sm100a():
    c = _setmaxnreg_kernel()
    assert "setmaxnreg.dec.sync.aligned.u32 96;" in c.ptx and "setmaxnreg.inc.sync.aligned.u32 232;" in c.ptx
    if _core.sass_tool_available():
        ops = sass_opcodes(c.cubin)
        assert any(o.startswith("USETMAXREG.DEALLOC") for o in ops) and \
            any(o.startswith("USETMAXREG.TRY_ALLOC") for o in ops), sorted(set(ops))


def test_tcgen05_copy_names_and_repetitions_by_count():
    from warpweave.cute.nvgpu import tcgen05 as t

    assert t.Repetition(32) is t.Repetition.x32 and t.copy.Repetition is t.Repetition
    assert [r.value for r in t.Repetition] == [1, 2, 4, 8, 16, 32, 64, 128]
    assert t.copy.Ld32x32bOp is t.Ld32x32bOp and t.copy.St16x256bOp is t.St16x256bOp
    a = cute.make_copy_atom(t.copy.Ld32x32bOp(t.copy.Repetition(32)), cutlass.Float32)
    b = cute.make_copy_atom(t.Ld32x32bOp(t.Repetition.x32), cutlass.Float32)
    assert a.manifest["id"] == b.manifest["id"] == "blackwell.tcgen05.ld.32x32b.x32"
    with pytest.raises(ValueError):
        t.Repetition(3)
