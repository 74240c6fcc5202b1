"""frontend_python/examples/hopper/dense_gemm_persistent.py: the warp-specialized persistent Hopper GEMM.

Without a GPU, compiled for sm_90a (the ptxas report is printed): its SASS holds HGMMA (QGMMA for fp8), one per
wgmma k-block issued; UTMALDG in the producer's one load site (.MULTICAST for the operand a 2x1 or 1x2 cluster
shares); UTMASTG for each epilogue sub-tile and STSM for 16-bit C; SYNCS (two mbarriers per stage, the remote
arrivals of a cluster); USETMAXREG down to 40 registers for the producer warpgroup and up to 232 for the two
consumer warpgroups;
no local memory, no spills, no stack frame. The PTX carries the launch bounds setmaxnreg needs. The epilogue's
sub-tiles put every accumulator where it belongs (layout algebra against the wgmma fragment), each through its own
buffer of the ring, with no write to a buffer able to overtake a TMA store still reading it (the order of writes,
fences, barriers and bulk waits in the PTX, epilogue_ring_order.py). Bad configurations are refused.
On the GPU (skipped here): against a float32 torch reference on fresh random data, C poisoned with NaN first,
over sizes that are not multiples of the tile, every major, fp16, bf16 and fp8, L > 1, clusters 1x1, 2x1, 1x2,
fp32 C, both raster orders and a swizzle, and grids of few clusters, so that every CTA walks many tiles and the
pipelines wrap across tile boundaries.
"""
import dataclasses
import os
import re
import sys

import pytest

import warpweave as cutlass
from warpweave import _core

from dsl_helpers import requires_gpu, sass_opcodes, target

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "frontend_python", "examples", "hopper"))
import dense_gemm_persistent as dgp  # noqa: E402
import epilogue_ring_order as ero  # noqa: E402

SASS = pytest.mark.skipif(not _core.sass_tool_available(), reason="no SASS disassembler (nvdisasm) installed")


def ptxas_report(compiled):
    log = compiled.info["jit_log"]
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", log)
    regs = re.search(r"Used (\d+) registers", log)
    assert m and regs, log
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), int(regs.group(1))


def compile_case(majors, ab, c, tile, cluster, b=None):
    gemm = dgp.HopperPersistentDenseGemm(cutlass.Float32, tile, cluster, max_active_clusters=66)
    compiled = dgp.compile_only(gemm, majors[0], majors[1], majors[2], ab, c, options="-v", b_dtype=b)
    print(compiled.info["jit_log"])
    return gemm, compiled


SASS_CASES = [
    # majors, A/B type, C type, tile, cluster, TMA boxes per load of A, of B, per store of a sub-tile
    ("kkn", cutlass.Float16, cutlass.Float16, (128, 256), (1, 1), 1, 1, 1),
    ("kkn", cutlass.Float16, cutlass.Float16, (128, 256), (2, 1), 1, 1, 1),
    ("kkn", cutlass.BFloat16, cutlass.BFloat16, (128, 256), (1, 2), 1, 1, 1),
    ("mnm", cutlass.Float16, cutlass.Float16, (128, 256), (1, 2), 2, 4, 2),
    ("knn", cutlass.BFloat16, cutlass.Float32, (128, 128), (1, 1), 1, 2, 1),
    ("mkm", cutlass.Float16, cutlass.Float32, (128, 128), (2, 1), 2, 1, 4),
    ("kkn", cutlass.Float16, cutlass.Float16, (64, 128), (1, 1), 1, 1, 1),
]


@SASS
@pytest.mark.parametrize("majors,ab,c,tile,cluster,boxes_a,boxes_b,boxes_c", SASS_CASES)
def test_persistent_gemm_sass(majors, ab, c, tile, cluster, boxes_a, boxes_b, boxes_c):
    gemm, compiled = compile_case(majors, ab, c, tile, cluster)
    sass = _core.disassemble_sass(compiled.cubin)
    ops = sass_opcodes(sass)
    count = lambda prefix: sum(1 for o in ops if o.startswith(prefix))  # noqa: E731
    bm, bn = tile
    subtiles = bn // dgp.EPI_N
    # Four k-blocks per k-tile, in the peeled first k-tile of each output tile and in the k-loop.
    assert count(f"HGMMA.64x{bn}x16.F32") == 8, ops
    assert count("WARPGROUP.ARRIVE") == 2 and count("WARPGROUP.DEPBAR.LE") == 2
    # One load site (the producer warp's k-loop); multicast for the operand the cluster shares.
    mc_a, mc_b = cluster[1] > 1, cluster[0] > 1
    assert count("UTMALDG.3D") == boxes_a + boxes_b
    assert count("UTMALDG.3D.MULTICAST") == boxes_a * mc_a + boxes_b * mc_b
    # One TMA store per (bM, 32) epilogue sub-tile; 16-bit C goes through stmatrix (eight values per instruction).
    assert count("UTMASTG.3D") == subtiles * boxes_c
    per_thread = bm * dgp.EPI_N // gemm.num_consumer_threads
    if c.width == 16:
        form = "STSM.16.M88.4" if majors[2] == "n" else "STSM.16.MT88.4"
        assert count(form) == subtiles * per_thread // 8
    assert count("STG") == 0
    # The ring's two mbarriers per stage, as many stages as fit beside the epilogue buffers.
    epi_stages = 4 if subtiles % 4 == 0 else 2
    stage_bytes = (bm + bn) * 64 * 2
    stages = min(8, (232448 - 1024 - bm * dgp.EPI_N * c.width // 8 * epi_stages) // stage_bytes)
    assert count("SYNCS.EXCH.64") == 2 * stages
    assert count("SYNCS.PHASECHK.TRANS64") >= 4 and count("SYNCS.ARRIVE") >= 2
    if cluster != (1, 1):
        assert count("SYNCS.ARRIVE.TRANS64.RED") >= 1          # stages released in the peer CTAs
    # Register reallocation with two consumer warpgroups: the producer warpgroup down to 40, the consumers up to
    # 232 (with one, 256 threads have 255 registers each already, and nothing moves).
    dealloc = [line for line in sass.splitlines() if "USETMAXREG.DEALLOC" in line]
    alloc = [line for line in sass.splitlines() if "USETMAXREG.TRY_ALLOC" in line]
    if bm == 128:
        assert len(dealloc) == 1 and "0x28" in dealloc[0], dealloc
        assert len(alloc) == 1 and "0xe8" in alloc[0], alloc
    else:
        assert not dealloc and not alloc
    # No local memory, no spills.
    assert not any(o.startswith(("LDL", "STL")) for o in ops)
    stack, spill_st, spill_ld, regs = ptxas_report(compiled)
    assert (stack, spill_st, spill_ld) == (0, 0, 0), compiled.info["jit_log"]
    assert regs * gemm.num_threads <= 65536


@SASS
@pytest.mark.parametrize("a,b", [(cutlass.Float8E4M3FN, cutlass.Float8E4M3FN),
                                 (cutlass.Float8E5M2, cutlass.Float8E4M3FN)])
def test_persistent_gemm_fp8_sass(a, b):
    _, compiled = compile_case("kkn", a, cutlass.BFloat16, (128, 256), (2, 1), b=b)
    ops = sass_opcodes(_core.disassemble_sass(compiled.cubin))
    names = {cutlass.Float8E4M3FN: "E4M3", cutlass.Float8E5M2: "E5M2"}
    # 128 bytes of K per k-tile: four k-blocks of 32 fp8 values
    assert sum(o == f"QGMMA.64x256x32.F32.{names[a]}.{names[b]}" for o in ops) == 8
    assert sum(o == "UTMALDG.3D.MULTICAST" for o in ops) == 1     # B, shared by the two CTAs of a cluster column
    assert any(o.startswith("USETMAXREG") for o in ops)
    assert ptxas_report(compiled)[:3] == (0, 0, 0)


@pytest.mark.parametrize("bn,warpgroups", [(256, 2), (128, 2), (64, 1)])
@pytest.mark.parametrize("m_major", [False, True])
def test_epilogue_subtiles_put_each_accumulator_in_its_place(bn, warpgroups, m_major):
    """The epilogue's view of sub-tile j (accumulator values [j * n, (j + 1) * n) of each thread, as the C partition
    of the same MMA over EPI_N columns) names the same (m, n - EPI_N * j) as the full tile's C partition; and the
    stmatrix copy built over that sub-tile MMA sends register k of its retiled view to where that MMA value
    belongs."""
    import warpweave.cute as cute
    from warpweave.cute.nvgpu import warp, warpgroup
    import warpweave.utils.hopper_helpers as sm90

    K = warpgroup.OperandMajorMode.K
    bm, epi_n = 64 * warpgroups, dgp.EPI_N
    with target("sm_90a"):
        full = sm90.make_trivial_tiled_mma(cutlass.Float16, cutlass.Float16, K, K, cutlass.Float32, (warpgroups, 1, 1),
                                           tiler_mn=(64, bn))
        epi = sm90.make_trivial_tiled_mma(cutlass.Float16, cutlass.Float16, K, K, cutlass.Float32, (warpgroups, 1, 1),
                                          tiler_mn=(64, epi_n))
        r2s = cute.make_tiled_copy_C(cute.make_copy_atom(warp.StMatrix8x8x16bOp(m_major, 4), cutlass.Float16), epi)
    sub_layout = cute.make_layout(epi.partition_shape_C((bm, epi_n)))
    n = cute.size(sub_layout)
    assert n * (bn // epi_n) == cute.size(full.partition_shape_C((bm, bn)))
    retiled = r2s.retile_layout(sub_layout)
    src_tv, c_tv = r2s.get_layoutS_TV(), epi.get_layoutC_TV()
    id_full, id_sub = cute.make_identity_tensor((bm, bn)), cute.make_identity_tensor((bm, epi_n))
    for t in sorted({0, 1, 5, 31, 32, 77, 127, 64 * warpgroups + 3, 128 * warpgroups - 1}):
        pf = full.get_slice(t).partition_C(id_full)
        pe = epi.get_slice(t).partition_C(id_sub)
        for j in range(bn // epi_n):
            for v in range(n):
                m, c = pf[j * n + v]
                assert (m, c - epi_n * j) == tuple(pe[v]), (t, j, v)
        for k in range(n):
            assert src_tv((t, k)) == c_tv((t, retiled(k))), (t, k)


def test_launch_bounds_and_register_split_in_ptx():
    # setmaxnreg only takes effect in a kernel with launch bounds: 384 threads, at least one block per SM.
    gemm = dgp.HopperPersistentDenseGemm(cutlass.Float32, (128, 256), (1, 1), max_active_clusters=132)
    with target("sm_90a"):
        compiled = dgp.compile_only(gemm, "k", "k", "n", cutlass.Float16, cutlass.Float16)
    ptx = compiled.info["ptx"]
    assert re.search(r"\.reqntid 384, 1, 1", ptx) and re.search(r"\.minnctapersm 1", ptx), ptx[:2000]
    assert "setmaxnreg.dec.sync.aligned.u32 40;" in ptx and "setmaxnreg.inc.sync.aligned.u32 232;" in ptx
    assert ptx.count("cp.async.bulk.tensor.3d.global.shared::cta") == 256 // dgp.EPI_N   # a store per sub-tile
    # The epilogue: one barrier of the two consumer warpgroups per sub-tile, before which the store warp waits until
    # at most 2 of its stores still read their buffers (of 4: the one just written, the next one, free, and 2).
    assert len(re.findall(r"bar\.sync\s+1, 256;", ptx)) == 256 // dgp.EPI_N
    assert ptx.count("cp.async.bulk.wait_group.read 2;") == 256 // dgp.EPI_N
    assert ptx.count("cp.async.bulk.wait_group.read 0;") == 1          # before the block leaves
    # Only the k-loop's acquire arms a full barrier: the producer's tail waits on the empty ones and expects nothing.
    assert ptx.count("mbarrier.arrive.expect_tx") == 1


EPILOGUE_CASES = [
    # majors, A/B type, C type, tile, cluster: 4 buffers (16-bit C by stmatrix, 32-bit C by stores of each thread,
    # a C box split in several TMA stores), 2 buffers, 1 buffer, one consumer warpgroup
    ("kkn", cutlass.BFloat16, cutlass.BFloat16, (128, 256), (1, 1)),
    ("kkm", cutlass.Float16, cutlass.Float16, (64, 128), (1, 2)),
    ("knn", cutlass.BFloat16, cutlass.Float32, (128, 128), (1, 1)),
    ("mkm", cutlass.Float16, cutlass.Float32, (128, 128), (2, 1)),
    ("kkn", cutlass.Float16, cutlass.Float16, (128, 64), (1, 1)),
    ("kkn", cutlass.Float16, cutlass.Float16, (128, 96), (1, 1)),
]


def _epilogue(majors, ab, c, tile, cluster):
    """The epilogue's events, the buffers of its ring and their count."""
    gemm = dgp.HopperPersistentDenseGemm(cutlass.Float32, tile, cluster, max_active_clusters=66)
    with target("sm_90a"):
        ptx = dgp.compile_only(gemm, majors[0], majors[1], majors[2], ab, c).info["ptx"]
    subtiles = tile[1] // dgp.EPI_N
    buffers = 4 if subtiles % 4 == 0 else (2 if subtiles % 2 == 0 else 1)
    buffer_bytes = tile[0] * dgp.EPI_N * c.width // 8
    consumers = range(dgp.WARPGROUP, gemm.num_threads)
    return ptx, buffer_bytes, consumers, buffers, subtiles


@pytest.mark.parametrize("majors,ab,c,tile,cluster", EPILOGUE_CASES)
def test_epilogue_stores_each_subtile_from_its_own_buffer_without_races(majors, ab, c, tile, cluster):
    """Sub-tile j goes through buffer j % E of the ring, and no write to a buffer can overtake a TMA store still
    reading it (nor a store its writes): the bulk copy engine reads shared memory on its own, so such a race
    gives wrong C only depending on timing, with nothing for a sanitizer to see. (The ring once collapsed to
    buffer 0, every sub-tile written under the stores of the previous ones: wrong on the GPU, right under the
    slowdown of compute-sanitizer's memcheck.)"""
    ptx, buffer_bytes, consumers, buffers, subtiles = _epilogue(majors, ab, c, tile, cluster)
    events = ero.epilogue_events(ptx, buffer_bytes, consumers)
    assert ero.store_buffers(events) == [[j % buffers] for j in range(subtiles)]
    written, since_fence = [], set()          # the buffers each sub-tile's writes fall in (one fence a sub-tile)
    for e in events:
        if e.kind == "write":
            since_fence |= e.buffers
        elif e.kind == "fence":
            written.append(sorted(since_fence))
            since_fence = set()
    assert written == [[j % buffers] for j in range(subtiles)]
    assert ero.hazards(events, buffers) == []


def test_epilogue_race_check_sees_each_hazard():
    """The check above fails for each way the epilogue's ordering can break: a store left running one group longer
    than the ring allows, no fence between the threads' writes and the stores, one buffer for every sub-tile."""
    ptx, buffer_bytes, consumers, buffers, _ = _epilogue(*EPILOGUE_CASES[0])

    def problems(text):
        return ero.hazards(ero.epilogue_events(text, buffer_bytes, consumers), buffers)

    assert problems(ptx) == []
    later = problems(ptx.replace("cp.async.bulk.wait_group.read 2;", "cp.async.bulk.wait_group.read 3;"))
    assert later and all("may still read it" in p for p in later), later
    unfenced = problems(ptx.replace("fence.proxy.async.shared::cta;", ""))
    assert unfenced and all("before its writes are fenced" in p for p in unfenced), unfenced
    # Every sub-tile through buffer 0 (what a slice of the ring's layout alone, which drops the buffer's offset,
    # once made of the example).
    events = ero.epilogue_events(ptx, buffer_bytes, consumers)
    collapsed = [dataclasses.replace(e, buffers=frozenset([0])) if e.buffers else e for e in events]
    one = ero.hazards(collapsed, buffers)
    assert one and all("may still read it" in p for p in one), one


def test_warpgroup_reg_alloc_names():
    """CuTe DSL's other spelling (cute.arch.warpgroup_reg_alloc / _dealloc) emits the same setmaxnreg."""
    import numpy as np

    import warpweave.cute as cute
    from warpweave.cute.runtime import from_dlpack

    @cute.kernel
    def k(g: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        if tidx < 128:
            cute.arch.warpgroup_reg_dealloc(40)
        else:
            cute.arch.warpgroup_reg_alloc(232)
        g[tidx] = cutlass.Float32(1.0)

    @cute.jit
    def h(a):
        k(a).launch(grid=[1, 1, 1], block=[256, 1, 1], min_blocks_per_mp=1)

    with target("sm_90a"):
        ptx = cute.compile(h, from_dlpack(np.zeros(256, np.float32))).info["ptx"]
    assert "setmaxnreg.dec.sync.aligned.u32 40;" in ptx and "setmaxnreg.inc.sync.aligned.u32 232;" in ptx

    @cute.kernel
    def bad(g: cute.Tensor):
        cute.arch.warpgroup_reg_alloc(cutlass.Int32(g[0]))

    @cute.jit
    def hb(a):
        bad(a).launch(grid=[1, 1, 1], block=[128, 1, 1])

    with target("sm_90a"), pytest.raises(Exception, match="static integer"):
        cute.compile(hb, from_dlpack(np.zeros(4, np.int32)))

    @cute.kernel
    def not_a_multiple_of_8(g: cute.Tensor):
        cute.arch.warpgroup_reg_alloc(230)

    @cute.jit
    def h8(a):
        not_a_multiple_of_8(a).launch(grid=[1, 1, 1], block=[128, 1, 1])

    # The manifest's domain of the register count refuses it, naming this file's line (not the library's).
    with target("sm_90a"), pytest.raises(ValueError, match=r"test_hopper_gemm_persistent\.py:\d+: .*n=230 is not one of"):
        cute.compile(h8, from_dlpack(np.zeros(4, np.int32)))


def test_refuses_bad_configurations():
    with pytest.raises(ValueError, match="tile M"):
        dgp.HopperPersistentDenseGemm(cutlass.Float32, (96, 256), max_active_clusters=1)
    with pytest.raises(ValueError, match="tile N"):
        dgp.HopperPersistentDenseGemm(cutlass.Float32, (128, 48), max_active_clusters=1)
    with pytest.raises(ValueError, match="cluster"):
        dgp.HopperPersistentDenseGemm(cutlass.Float32, (128, 256), (4, 4), max_active_clusters=1)
    gemm = dgp.HopperPersistentDenseGemm(cutlass.Float32, (128, 128), max_active_clusters=1)
    with pytest.raises(Exception, match="8-bit inputs are K-major"):
        dgp.compile_only(gemm, "m", "k", "n", cutlass.Float8E4M3FN, cutlass.Float16)


def test_compiles_without_a_gpu(capsys):
    if os.environ.get("WARPWEAVE_ARCH") is None and _core.driver_available() and _core.device_count() > 0:
        pytest.skip("a GPU is present: the example runs instead (see the GPU tests)")
    assert dgp.main(["--cluster_shape_mn", "2,1", "--a_dtype", "BFloat16", "--b_dtype", "BFloat16",
                     "--c_dtype", "BFloat16"]) == 0
    assert "compiled dense_gemm_persistent for sm_90a" in capsys.readouterr().out


# --- on the GPU -----------------------------------------------------------------------------------------------------

GPU_CASES = [
    # mnkl, majors, ab, c, tile, cluster[, swizzle, raster along m, max active clusters]
    ((200, 136, 264, 2), "kkn", cutlass.Float16, cutlass.Float16, (128, 256), (1, 1)),
    ((200, 136, 264, 1), "kkn", cutlass.BFloat16, cutlass.BFloat16, (128, 256), (1, 1)),
    ((136, 200, 520, 1), "mnm", cutlass.Float16, cutlass.Float16, (128, 256), (1, 1)),
    ((264, 72, 1000, 3), "knn", cutlass.BFloat16, cutlass.BFloat16, (128, 128), (1, 1)),
    ((1000, 520, 136, 1), "mkn", cutlass.Float16, cutlass.Float16, (128, 256), (1, 1)),
    ((200, 136, 264, 2), "kkm", cutlass.Float16, cutlass.Float16, (128, 256), (1, 1)),        # stmatrix.trans
    ((520, 264, 400, 2), "kkn", cutlass.Float16, cutlass.Float16, (128, 256), (2, 1)),
    ((520, 264, 400, 1), "mnn", cutlass.BFloat16, cutlass.BFloat16, (128, 256), (1, 2)),
    ((200, 136, 264, 1), "kkn", cutlass.BFloat16, cutlass.Float32, (128, 128), (1, 1)),      # fp32 C
    ((136, 264, 200, 2), "mnm", cutlass.Float16, cutlass.Float32, (128, 128), (2, 1)),
    ((200, 136, 272, 2), "kkn", cutlass.Float8E4M3FN, cutlass.Float16, (128, 256), (1, 1)),  # K: 16-byte rows
    ((520, 264, 1040, 1), "kkn", cutlass.Float8E5M2, cutlass.BFloat16, (128, 256), (2, 1)),
    ((8, 16, 8, 1), "kkn", cutlass.Float16, cutlass.Float16, (128, 256), (1, 1)),
    ((264, 200, 136, 1), "kkn", cutlass.Float16, cutlass.Float16, (64, 128), (1, 1)),        # one consumer WG
    ((200, 136, 264, 2), "kkn", cutlass.Float16, cutlass.Float16, (128, 64), (1, 1)),        # 2 epilogue buffers
    ((136, 72, 264, 2), "kkn", cutlass.BFloat16, cutlass.BFloat16, (64, 32), (1, 1)),       # 1 buffer
    ((264, 136, 200, 1), "mnm", cutlass.Float16, cutlass.Float16, (128, 32), (2, 1)),
    # Few clusters, many tiles each: the pipelines' phases and the epilogue buffers wrap across tiles.
    ((1000, 1000, 200, 2), "kkn", cutlass.Float16, cutlass.Float16, (128, 256), (1, 1), 1, True, 3),
    ((1000, 1000, 200, 1), "mnm", cutlass.BFloat16, cutlass.BFloat16, (128, 256), (2, 1), 2, True, 2),
    ((1000, 1000, 200, 1), "kkn", cutlass.Float16, cutlass.Float16, (128, 256), (1, 2), 3, False, 5),
    ((1024, 1024, 2048, 1), "kkn", cutlass.Float16, cutlass.Float16, (128, 256), (2, 1)),
]


@requires_gpu
@pytest.mark.parametrize("case", GPU_CASES, ids=lambda c: "-".join(str(x) for x in c))
def test_persistent_gemm_matches_torch(case):
    mnkl, majors, ab, c, tile, cluster = case[:6]
    swizzle, along_m, mac = case[6:] if len(case) > 6 else (1, True, None)
    dgp.run(mnkl, ab, ab, c, cutlass.Float32, majors[0], majors[1], majors[2], tile, cluster, iterations=0,
            swizzle_size=swizzle, raster_along_m=along_m, max_active_clusters=mac)
