"""cute.experimental's whole GEMM phases on Blackwell without a GPU (cute_ext_gemm.py): a GEMM whose MMA warp runs
mainloop_mma and whose epilogue warps run epilogue_tma_store compiles for sm_100a with the instructions the phases
stand for; a pointer-array GEMM (each batch's A, B and D made in the kernel from a table of addresses, over a
run-time loop of batches) takes the device workspace its tensor maps need; mistakes are refused at the user's
line. The numbers run on a Blackwell GPU (cute_ext/blackwell/dense_gemm_ptr_array.py)."""
from __future__ import annotations

import os
import re

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.values.runtime import RuntimeTensor
from warpweave.cute import experimental as cute_ext
from warpweave.cute.experimental.host_runtime import QueryDeviceWorkspaceFunc

from dsl_helpers import line_in, target

THIS = os.path.abspath(__file__)
M = N = 256
K = 256
STAGES, ACC_STAGES, STORE_STAGES = 2, 2, 2


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")


def gemm(batches=None, mistake=None, m=M):
    """D = A . B^T (fp16, K-major, 128x128 tiles, 64 of K a stage, fp32 accumulators). With batches: the
    arguments are tables of `batches` addresses (Int64) and each batch's tensors are made in the kernel."""
    import warpweave.utils.blackwell_helpers as h

    def tensor(address, shape):
        ptr = cute.make_ptr(cutlass.Float16, address, cute.AddressSpace.gmem, assumed_align=16)
        return cute.make_tensor(ptr, cute.make_layout(shape, stride=(shape[1], 1, shape[0] * shape[1])))

    @cute_ext.kernel
    def k(mA: cute.Tensor, mB: cute.Tensor, mD: cute.Tensor):
        tcgen05 = cute.nvgpu.tcgen05
        tiled_mma = h.make_trivial_tiled_mma(cutlass.Float16, tcgen05.OperandMajorMode.K, tcgen05.OperandMajorMode.K,
                                             cutlass.Float32, tcgen05.CtaGroup.ONE, (128, 128))
        tiler = (128, 128, 64)
        bm, bn, bl = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        sA, sB = [cute_ext.allocate(cutlass.Float16, cute.AddressSpace.smem,
                                    layout(tiled_mma, tiler, cutlass.Float16, STAGES), alignment=1024)
                  for layout in (h.make_smem_layout_a, h.make_smem_layout_b)]
        acc = cute_ext.allocate(cutlass.Float32, cute.AddressSpace.tmem,
                                cute_ext.make_tmem_layout_acc(tiled_mma, tiler, ACC_STAGES))
        kind = cute_ext.OperationTypeEnum.SM100_MMA_1SM_SS
        main = cute_ext.TMAToUMMAPipeline.create(num_stages=STAGES, mma_operation_type=kind)
        accp = cute_ext.UMMAtoAsyncPipeline.create(num_stages=ACC_STAGES, mma_operation_type=kind,
                                                   consumer=cute_ext.OperationTypeEnum.SM100_COPY_T2R,
                                                   consumer_arv_count=128)
        store = cute_ext.TMAStorePipeline(stages=STORE_STAGES, arv_count=128, barrier_id=1, tma_warp_id=0)
        k_tiles = K // 64
        for b in range(0, batches or 1):
            if batches:
                a = tensor(mA[b], (m, K, 1))
                bb = tensor(mB[b], (N, K, 1))
                d = tensor(mD[b], (m, N, 1))
            else:
                a, bb, d = mA, mB, mD
            if warp == 5:
                gA = cute.zipped_divide(a, (128, 64))[(None, None), (bm, None, bl)]
                gB = cute.zipped_divide(bb, (128, 64))[(None, None), (bn, None, bl)]
                for kt in cutlass.range(0, k_tiles, 1, unroll=1):
                    token, idx = main.producer_acquire_and_get_stage()
                    mbar = cute_ext.get_mbarrier(token)
                    cute_ext.tma_load(gA[None, None, kt], sA[None, None, None, idx], mbar,
                                      cta_v_map=cute_ext.get_cta_v_map_ab(a, tiler, tiled_mma, "A"))
                    cute_ext.tma_load(gB[None, None, kt], sB[None, None, None, idx], mbar,
                                      cta_v_map=cute_ext.get_cta_v_map_ab(bb, tiler, tiled_mma, "B"))
                    main.producer_commit_and_advance()
            if warp == 4:
                _, aidx = accp.producer_acquire_and_get_stage()
                blocks = 4 if mistake != "k_blocks" else 5
                main, _ = cute_ext.mainloop_mma(tiled_mma, sA, sB, acc[None, None, None, aidx],  # mainloop-call
                                                0, k_tiles, blocks, main, main)
                accp.producer_commit_and_advance()
            if warp < 4:
                _, aidx = accp.consumer_wait_and_get_stage()
                pipe = store if mistake != "pipe" else main
                store = cute_ext.epilogue_tma_store((128, 128, 64), False,  # epilogue-call
                                                    acc[(None, None), 0, 0, aidx], d, (bm, bn, bl), pipe, 0)
                accp.consumer_release_and_advance()

    @cute_ext.jit
    def launch(mA: cute.Tensor, mB: cute.Tensor, mD: cute.Tensor):
        k(mA, mB, mD).launch(grid=(M // 128, N // 128, 1), block=(192, 1, 1), cluster=(1, 1, 1))

    launch.kernel = k
    return launch


def matrices():
    return [RuntimeTensor(None, (i + 1) << 26, (r, K if i < 2 else N, 1), (K if i < 2 else N, 1, r * (K if i < 2 else N)),
                          cutlass.Float16, "cuda") for i, r in enumerate((M, N, M))]


def tables(batches):
    return [RuntimeTensor(None, (i + 1) << 20, (batches,), (1,), cutlass.Int64, "cuda", assumed_align=16)
            for i in range(3)]


def count(pattern, text):
    return len(re.findall(pattern, text))


def test_the_phases_issue_the_mmas_the_tensor_memory_loads_and_the_tma_stores():
    with target("sm_100a"):
        ptx = cute_ext.compile(gemm(), *matrices()).ptx
    assert count(r"tcgen05\.mma\.cta_group::1\.kind::f16", ptx) >= 4      # four k-blocks a stage
    assert count(r"tcgen05\.ld\.", ptx) >= 1
    assert count(r"cp\.async\.bulk\.tensor\.\dd\.global\.shared::cta", ptx) >= 1
    # the stores' reads of shared memory are waited for once, at the kernel's end, before it exits
    tail = ptx.rindex("cp.async.bulk.wait_group.read 0")
    assert tail > ptx.rindex("cp.async.bulk.tensor") and tail > ptx.rindex("tcgen05.dealloc")


def test_a_pointer_array_gemm_takes_its_tensor_maps_workspace():
    batches = 3
    program = gemm(batches)
    with target("sm_100a"):
        compiled = cute_ext.compile(program, *tables(batches))
    ptx = compiled.ptx
    stores = count(r"cp\.async\.bulk\.tensor\.\dd\.global\.shared::cta", ptx)
    assert count(r"tensormap\.replace\.tile\.global_address", ptx) >= 2 + stores   # A, B and the store sites
    req = compiled.get_aux_func(QueryDeviceWorkspaceFunc, kernel=program.kernel)(*tables(batches))
    ctas = (M // 128) * (N // 128)
    sites = count(r"tensormap\.replace\.tile\.global_address", ptx)   # one a site, a loop's once
    per_cta = 2 * STAGES + (sites - 2)   # A and B: a map a stage; each store site: one
    assert req.size_in_bytes == per_cta * 128 * ctas


def test_a_loads_map_is_rewritten_only_when_its_stage_held_another_tensors():
    """Within a batch the tiles of A and B are loaded through the same maps: each stage's map is written only when
    the stage's tag (the address it was last written for, in shared memory, zero from the kernel's entry) is
    another, and the tag is set after the map is released."""
    with target("sm_100a"):
        ptx = cute_ext.compile(gemm(3), *tables(3)).ptx
    entry = ptx[:ptx.index("bar.warp.sync")]
    words = sum(2 if "{" in z else 1 for z in re.findall(r"st\.shared(?:\.v2)?\.b64\s+\[[^\]]*\], (0|\{0, 0\});",
                                                         entry))
    assert words == 2 * STAGES                                         # A's and B's tags, a stage each
    assert count(r"ld\.shared\.b64\s+%rd\d+, \[[^\]]+\];", ptx) == 2     # each load site reads its stage's tag
    tagged = re.findall(r"fence\.proxy\.tensormap::generic\.release\.gpu;\s*//[^\n]*\n\s*st\.shared\.b64", ptx)
    assert len(tagged) == 2                                            # set after the map is released


def test_a_made_tensors_map_is_of_the_whole_tensor_so_that_a_partial_tile_is_clipped():
    """M = 200 rows in tiles of 128: the second row of tiles is partial. The maps written in the kernel have the
    tensor's extents (200 rows), not the tile's, so that TMA zero-fills the loads and clips the stores past it."""
    with target("sm_100a"):
        ptx = cute_ext.compile(gemm(3, m=200), *tables(3)).ptx
    dims = re.findall(r"tensormap\.replace\.tile\.global_dim\.\S+ \[%rd\d+\], (\d), (%r\d+);", ptx)
    values = dict(re.findall(r"mov\.[bus]32\s+(%r\d+), (\d+);", ptx))
    rows = [values.get(r) for d, r in dims if d == "1"]    # dimension 1: the rows (dimension 0 is contiguous K/N)
    assert rows and all(v in ("200", "256") for v in rows) and "200" in rows and "128" not in rows


@pytest.mark.parametrize("mistake,marker,message", [
    ("k_blocks", "# mainloop-call", "num_k_blocks is a positive int up to the buffer's 4"),
    ("pipe", "# epilogue-call", "tma_store_pipeline is a TMAStorePipeline"),
])
def test_mistakes_are_refused_at_the_users_line(mistake, marker, message):
    with target("sm_100a"), pytest.raises(Exception, match=message) as e:
        cute_ext.compile(gemm(mistake=mistake), *matrices())
    assert e.value.location == (THIS, line_in(THIS, marker))
