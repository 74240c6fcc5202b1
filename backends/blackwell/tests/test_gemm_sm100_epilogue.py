"""warpweave.utils.gemm.sm100 (the Blackwell backend's gemm_sm100.py) without a GPU.

- The name resolves to the backend's module; a generation no backend ships is an AttributeError naming it.
- epilogue_tma_store in a kernel of four epilogue warps over a 128 x 128 accumulator stage: a runtime loop over
  the epilogue sub-tiles, kept rolled, of one tcgen05.ld and one TMA store a trip (the store at the trip's columns),
  the stores issued by the first epilogue warp only, the accumulator stage released once (one elected arrival per
  warp, after its loads have completed) on the last trip.
- epilogue: the same loads, then global stores of every element of the thread's row (no TMA, no shared memory);
  with overlapping stages, the release on the trip of gemm.iter_acc_early_release_in_epilogue.
What needs a Blackwell GPU (the values in C): the CuTe DSL dense_gemm_persistent run on one.
"""
from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
import warpweave.pipeline as pipeline
from warpweave import utils
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import fresh_compilations, target

pytestmark = pytest.mark.usefixtures("fresh_compilations")


def test_the_name_is_the_backends_module():
    import warpweave.utils.gemm.sm100 as sm100
    from warpweave.backends.blackwell import gemm_sm100

    assert sm100 is gemm_sm100 and utils.gemm.sm100 is gemm_sm100
    assert callable(sm100.epilogue) and callable(sm100.epilogue_tma_store)
    with pytest.raises(AttributeError, match="warpweave.utils.gemm.sm42"):
        utils.gemm.sm42


def _gemm(c_dtype):
    return SimpleNamespace(acc_dtype=cutlass.Float32, c_dtype=c_dtype, c_layout=utils.LayoutEnum.ROW_MAJOR,
                           use_2cta_instrs=False, cta_tile_shape_mnk=(128, 128, 64), epilogue_warp_id=(0, 1, 2, 3),
                           epilog_sync_bar_id=1, num_c_stage=2)


def _compile(tma_store: bool, c_dtype=cutlass.Float16, edges=False, overlapping=False):
    from warpweave.cute.nvgpu import cpasync, tcgen05 as t
    import warpweave.utils.blackwell_helpers as h
    import warpweave.utils.gemm.sm100 as sm100

    gemm = _gemm(c_dtype)
    gemm.iter_acc_early_release_in_epilogue = 1

    @cute.kernel
    def k(tiled_mma: cute.TiledMma, tma_c, mC: cute.Tensor, sC_layout: cute.ComposedLayout, epi_tile: cute.Tile,
          out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        smem = utils.SmemAllocator()
        bars = smem.allocate_array(cutlass.Int64, 4, byte_alignment=8)
        holder = smem.allocate_array(cutlass.Int32, 1, byte_alignment=4)
        acc_pipeline = pipeline.PipelineUmmaAsync.create(
            barrier_storage=bars, num_stages=2, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 4),
            cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)))
        tmem = utils.TmemAllocator(holder, barrier_for_retrieve=pipeline.NamedBarrier(barrier_id=2, num_threads=128),
                                   allocator_warp_id=0)
        tmem.allocate(256)
        tmem.wait_for_alloc()
        acc_shape = tiled_mma.partition_shape_C((128, 128))
        acc = cute.make_tensor(tmem.retrieve_ptr(cutlass.Float32),
                               tiled_mma.make_fragment_C(cute.append(acc_shape, 2)).layout)
        tCgC = tiled_mma.get_slice(0).partition_C(cute.local_tile(mC, (128, 128), (None, None, None)))
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
        if cutlass.const_expr(tma_store):
            sC = smem.allocate_tensor(c_dtype, sC_layout.outer, byte_alignment=128, swizzle=sC_layout.inner)
            c_pipeline = pipeline.PipelineTmaStore.create(
                num_stages=2, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 128))
            state = sm100.epilogue_tma_store(gemm, tidx, warp, tma_c, acc, sC, tCgC, epi_tile, cutlass.Int32(0),
                                             lambda x: x, (0, 0, 0), state, acc_pipeline, c_pipeline)
            c_pipeline.producer_tail()
        else:
            if cutlass.const_expr(edges or overlapping):
                # CuTe DSL's predicated form: C's coordinates partitioned as tCgC, and C
                tCcC = tiled_mma.get_slice(0).partition_C(
                    cute.local_tile(cute.make_identity_tensor(mC.shape), (128, 128), (None, None, None)))
                state = sm100.epilogue(gemm, tidx, acc, tCgC, epi_tile, lambda x: x, (0, 0, 0), state,
                                       acc_pipeline, tCcC_base=tCcC if edges else None, mC_mnl=mC,
                                       overlapping_accum=overlapping)
            else:
                state = sm100.epilogue(gemm, tidx, acc, tCgC, epi_tile, lambda x: x, (0, 0, 0), state,
                                       acc_pipeline)
        out[0] = state.index   # the returned state is the next stage's

    @cute.jit
    def host(c: cute.Tensor, out: cute.Tensor):
        tiled_mma = h.make_trivial_tiled_mma(cutlass.Float16, t.OperandMajorMode.K, t.OperandMajorMode.K,
                                             cutlass.Float32, t.CtaGroup.ONE, (128, 128))
        if cutlass.const_expr(tma_store):
            epi_tile = h.compute_epilogue_tile_shape((128, 128, 64), False, gemm.c_layout, c_dtype)
            staged = h.make_smem_layout_epi(c_dtype, gemm.c_layout, epi_tile, 2)
            tma_c, tC = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), c,
                                                    cute.select(staged, mode=[0, 1]), epi_tile)
            k(tiled_mma, tma_c, tC, staged, epi_tile, out).launch(grid=(1, 1, 1), block=(128, 1, 1))
        else:
            # overlapping: 4 sub-tiles of 32 columns, the stage released after the second
            k(tiled_mma, None, c, None, (128, 32) if overlapping else (128, 128), out).launch(
                grid=(1, 1, 1), block=(128, 1, 1))

    c = np.zeros((128, 128, 1), np.float16 if c_dtype is cutlass.Float16 else np.float32)
    with target("sm_100a"):
        mc = from_dlpack(c).mark_layout_dynamic(leading_dim=1) if edges else from_dlpack(c)
        return cute.compile(host, mc, from_dlpack(np.zeros(1, np.int32)))


def _subtile_loop(ir: str):
    """(trips, the loop variable, the loop's body) of the kernel's one loop in its IR (a loop from 0 by 1), and
    the values of its integer constants."""
    consts = dict(re.findall(r'(%\d+) = "arith\.constant"\(\) <\{value = (-?\d+) : i32\}>', ir))
    loops = list(re.finditer(r'"scf\.for"\((%\d+), (%\d+), (%\d+)[^)]*\) \(\{\n\s*\^bb0\((%\d+): i32', ir))
    assert len(loops) == 1, ir
    lb, ub, step, iv = loops[0].groups()
    assert consts.get(lb) == "0" and consts.get(step) == "1", (lb, step)
    body = ir[loops[0].end():ir.index("loop_annotation", loops[0].end())]
    return int(consts[ub]), iv, body, consts


def _release_trip(ir: str) -> int:
    """The trip of the sub-tile loop on which the accumulator stage is released: the loop variable's comparison
    (equal) with a constant guarding the region of the arrival, which waits for the loads first."""
    _, iv, body, consts = _subtile_loop(ir)
    arrive = body.index("mbarrier.arrive")
    guards = [(m.start(), consts.get(m.group(1))) for m in
              re.finditer(rf'"arith\.cmpi"\({iv}, (%\d+)\) <\{{predicate = 0 : i64\}}>', body)]
    assert len(guards) == 1 and guards[0][0] < arrive, guards
    assert body.rfind("tcgen05.wait::ld", 0, arrive) > guards[0][0], body
    return int(guards[0][1])


def test_epilogue_tma_store_one_load_and_one_store_per_subtile():
    compiled = _compile(True)
    ptx, ir = compiled.ptx, compiled.ir
    # a 128 x 128 fp32 accumulator in 128 x 32 sub-tiles: a rolled loop of 4 trips, each one load of 32 columns and
    # one TMA store of 32 columns of C, committed
    trips, _, body, _ = _subtile_loop(ir)
    assert trips == 4
    assert 'unroll = <disable = true>' in ir[ir.index("loop_annotation", ir.index(body)):][:80]
    loads = re.findall(r"tcgen05\.ld\.sync\.aligned\.32x32b\.x(\d+)\.b32", ptx)
    stores = re.findall(r"cp\.async\.bulk\.tensor\.3d\.global\.shared::cta\.bulk_group \[%rd\d+, \{([^}]*)\}\]", ptx)
    assert loads == ["32"] and len(stores) == 1, (loads, stores)
    assert ptx.count('.pragma "nounroll"') == 1 and ptx.count("cp.async.bulk.commit_group") == 1
    # the store's column is the loop's counter, which steps by 32 columns up to 128
    col = stores[0].split(",")[0].strip()
    assert re.search(rf"add\.s32 \t?{re.escape(col)}, {re.escape(col)}, 32;", ptx), (col, ptx)
    assert re.search(rf"setp\.\w+\.b32 \t?%p\d+, {re.escape(col)}, 128;", ptx), (col, ptx)
    # one release of the stage, on the last trip: an elected arrival per warp on its empty barrier
    assert len(re.findall(r"mbarrier\.arrive(\.release\.cta)?\.shared::cta\.b64", ptx)) == 1, ptx
    assert _release_trip(ir) == trips - 1


def test_epilogue_stores_every_element_of_the_row():
    ptx = _compile(False, cutlass.Float32).ptx
    loads = re.findall(r"tcgen05\.ld\.sync\.aligned\.32x32b\.x(\d+)\.b32", ptx)
    assert sum(int(n) for n in loads) == 128, loads          # the thread's row: 128 columns
    assert "cp.async.bulk.tensor" not in ptx and "st.shared" not in ptx
    stored = sum({"v4": 4, "v2": 2}.get(v, 1) for v in re.findall(r"st\.global(?:\.(v\d))?\.(?:f32|b32) \t?\[%rd", ptx))
    stored -= 1                                               # the state's index to out[0]
    assert stored == 128, stored


def test_transform_partitioned_tensor_layout_is_the_rows_and_columns_view():
    import warpweave.utils.gemm.sm100 as sm100

    # ((atom M, atom N), MMA_M, MMA_N, rest) of a column-major 256 x 128 tile, 2 x 2 atoms of 128 x 64, 3 stages
    lay = cute.make_layout(((128, 64), 2, 2, 3), stride=((1, 256), 128, 64 * 256, 256 * 128))
    t = cute.make_tensor(cute.make_ptr(cutlass.Float32, 0, cute.AddressSpace.gmem), lay) \
        if hasattr(cute, "make_ptr") else None
    if t is None:
        pytest.skip("cute.make_ptr is not available")
    xf = sm100.transform_partitioned_tensor_layout(t)
    assert tuple(cute.size(m) for m in xf.layout.shape) == (256, 128, 3)
    for (i, j, s) in [(0, 0, 0), (5, 70, 1), (130, 3, 2), (255, 127, 2), (127, 64, 0)]:
        want = lay(((i % 128, j % 64), i // 128, j // 64, s))
        assert xf.layout((i, j, s)) == want == i + 256 * j + 256 * 128 * s
    with pytest.raises(Exception, match="expected an MMA partition"):
        sm100.transform_partitioned_tensor_layout(cute.make_tensor(t.iterator, cute.make_layout((4, 4))))


def test_tmem_copy_and_partition_takes_either_form():
    from warpweave.cute.nvgpu import tcgen05 as t
    import warpweave.utils.blackwell_helpers as h
    import warpweave.utils.gemm.sm100 as sm100

    gemm = _gemm(cutlass.Float32)
    got = {}

    @cute.kernel
    def k(tiled_mma: cute.TiledMma, mC: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        smem = utils.SmemAllocator()
        holder = smem.allocate_array(cutlass.Int32, 1, byte_alignment=4)
        tmem = utils.TmemAllocator(holder, barrier_for_retrieve=pipeline.NamedBarrier(barrier_id=2, num_threads=128),
                                   allocator_warp_id=0)
        tmem.allocate(256)
        tmem.wait_for_alloc()
        acc = cute.make_tensor(tmem.retrieve_ptr(cutlass.Float32), tiled_mma.make_fragment_C(
            cute.append(tiled_mma.partition_shape_C((128, 128)), 2)).layout)
        tCgC = tiled_mma.get_slice(0).partition_C(cute.local_tile(mC, (128, 128), (None, None, None)))
        for form, (a, c) in (("mma", (acc, tCgC)), ("rows", (sm100.transform_partitioned_tensor_layout(acc),
                                                             sm100.transform_partitioned_tensor_layout(tCgC)))):
            t2r, tTR_tAcc, tTR_rAcc = sm100.epilogue_tmem_copy_and_partition(gemm, tidx, a, c, (128, 32), False)
            got[form] = (str(tTR_tAcc.layout), str(tTR_rAcc.layout))
            cute.copy(t2r, tTR_tAcc[(None, None, None, 0, 1, 1)], tTR_rAcc)

    @cute.jit
    def host(c: cute.Tensor):
        tiled_mma = h.make_trivial_tiled_mma(cutlass.Float16, t.OperandMajorMode.K, t.OperandMajorMode.K,
                                             cutlass.Float32, t.CtaGroup.ONE, (128, 128))
        k(tiled_mma, c).launch(grid=(1, 1, 1), block=(128, 1, 1))

    with target("sm_100a"):
        ptx = cute.compile(host, from_dlpack(np.zeros((256, 256, 1), np.float32))).ptx
    assert got["mma"] == got["rows"]
    # (T2R, T2R_M, T2R_N, EPI_M, EPI_N, STAGE): one 128 x 32 sub-tile per load, 4 along N, 2 stages
    assert ptx.count("tcgen05.ld.sync.aligned.32x32b.x32.b32") == 2


def test_smem_copy_and_partition_retiles_the_registers_for_the_stores_to_the_staged_sub_tiles():
    # The epilogue fusion programs call it with a stand-in gemm of C's layout and types alone.
    from warpweave.cute.nvgpu import tcgen05 as t
    import warpweave.utils.blackwell_helpers as h
    import warpweave.utils.gemm.sm100 as sm100

    gemm = _gemm(cutlass.Float16)
    faux = SimpleNamespace(c_layout=gemm.c_layout, c_dtype=gemm.c_dtype, acc_dtype=gemm.acc_dtype)
    got = {}

    @cute.kernel
    def k(tiled_mma: cute.TiledMma, mC: cute.Tensor, sC_layout: cute.ComposedLayout):
        tidx, _, _ = cute.arch.thread_idx()
        smem = utils.SmemAllocator()
        holder = smem.allocate_array(cutlass.Int32, 1, byte_alignment=4)
        sC = smem.allocate_tensor(cutlass.Float16, sC_layout.outer, byte_alignment=128, swizzle=sC_layout.inner)
        tmem = utils.TmemAllocator(holder, barrier_for_retrieve=pipeline.NamedBarrier(barrier_id=2, num_threads=128),
                                   allocator_warp_id=0)
        tmem.allocate(256)
        tmem.wait_for_alloc()
        acc = cute.make_tensor(tmem.retrieve_ptr(cutlass.Float32), tiled_mma.make_fragment_C(
            cute.append(tiled_mma.partition_shape_C((128, 128)), 2)).layout)
        tCgC = tiled_mma.get_slice(0).partition_C(cute.local_tile(mC, (128, 128), (None, None, None)))
        t2r, tTR_tAcc, tTR_rAcc = sm100.epilogue_tmem_copy_and_partition(gemm, tidx, acc, tCgC, (128, 32), False)
        tTR_rC = cute.make_rmem_tensor(tTR_rAcc.shape, cutlass.Float16)
        r2s, tRS_rC, tRS_sC = sm100.epilogue_smem_copy_and_partition(faux, t2r, tTR_rC, tidx, sC)
        got.update(regs=(cute.size(tTR_rC), cute.size(tRS_rC)), smem=cute.size(tRS_sC), stages=cute.rank(tRS_sC),
                   last=cute.size(tRS_sC, mode=[cute.rank(tRS_sC) - 1]))
        cute.copy(t2r, tTR_tAcc[(None, None, None, 0, 0, 0)], tTR_rAcc)
        tRS_rC.store(tTR_rAcc.load().to(cutlass.Float16))
        cute.copy(r2s, tRS_rC, tRS_sC[(None, None, None, 1)])

    @cute.jit
    def host(c: cute.Tensor):
        tiled_mma = h.make_trivial_tiled_mma(cutlass.Float16, t.OperandMajorMode.K, t.OperandMajorMode.K,
                                             cutlass.Float32, t.CtaGroup.ONE, (128, 128))
        sC_layout = h.make_smem_layout_epi(cutlass.Float16, utils.LayoutEnum.ROW_MAJOR, (128, 32), 2)
        k(tiled_mma, c, sC_layout).launch(grid=(1, 1, 1), block=(128, 1, 1))

    with target("sm_100a"):
        ptx = cute.compile(host, from_dlpack(np.zeros((256, 256, 1), np.float16))).ptx
    # the registers are the thread's row of the 128 x 32 sub-tile, retiled without gaining or losing an element;
    # in shared memory the thread's part of each of the 2 staged sub-tiles is the same count
    assert got["regs"] == (32, 32) and got["last"] == 2 and got["smem"] == 2 * 32
    assert "tcgen05.ld" in ptx and ("stmatrix" in ptx or "st.shared" in ptx)


def test_epilogue_stores_only_inside_c_given_its_coordinates():
    # tCcC_base and mC_mnl (a C of run-time extents): each element's store is predicated on its coordinate being
    # inside C; the same 128 loads and 128 stores
    ptx = _compile(False, cutlass.Float32, edges=True).ptx
    loads = re.findall(r"tcgen05\.ld\.sync\.aligned\.32x32b\.x(\d+)\.b32", ptx)
    assert sum(int(n) for n in loads) == 128, loads
    stored = sum({"v4": 4, "v2": 2}.get(v, 1) for v in re.findall(r"st\.global(?:\.(v\d))?\.(?:f32|b32) \t?\[%rd", ptx))
    assert stored - 1 == 128, stored
    # a comparison with C's run-time extent (a kernel parameter) per column of the row
    assert len(re.findall(r"setp\.(?:lt|gt|le|ge)\.s32", ptx)) >= 128


def test_epilogue_with_overlapping_stages_releases_early():
    # overlapping_accum: the stage is the consumer's phase and is released once, right after sub-tile
    # gemm.iter_acc_early_release_in_epilogue (1) is in registers (its loads completed), not after the last
    compiled = _compile(False, cutlass.Float32, overlapping=True)
    ptx = compiled.ptx
    trips, _, _, _ = _subtile_loop(compiled.ir)
    assert trips == 4
    assert len(re.findall(r"tcgen05\.ld\.sync\.aligned\.32x32b\.x32\.b32", ptx)) == 1, ptx
    release = re.findall(r"mbarrier\.arrive(\.release\.cta)?\.shared::cta\.b64", ptx)
    assert len(release) == 1, ptx
    assert _release_trip(compiled.ir) == 1
