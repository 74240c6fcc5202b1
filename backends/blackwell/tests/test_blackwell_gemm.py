"""frontend_python/examples/blackwell/dense_gemm.py and dense_gemm_persistent.py: compiled for sm_100a here, run
against torch on a Blackwell GPU.

Without a GPU: the example compiled for sm_100a over 1-CTA and 2-CTA MMAs, clusters with multicast, every major,
fp16, bf16, tf32 and fp8; its SASS holds UTCHMMA (UTCQMMA for fp8; .2CTA with 2-CTA instructions), UTCBAR (the MMA
commits; .MULTICAST in a cluster or a pair), LDTM (one per epilogue sub-tile and thread), UTMALDG (.MULTICAST,
.2CTA where selected), UTMASTG, SYNCS, the tensor-memory allocation (UTCATOMSWS, .2CTA for a pair), and ptxas
reports no stack frame, no spills and no local memory (the report is printed). On a Blackwell GPU (skipped here:
none exists in this project's machines): the product against a float32 torch reference on random data, C poisoned
with NaN first, sizes that are not multiples of the tile.
"""
import importlib.util
import os
import re
import sys

import pytest

import warpweave as cutlass
from warpweave import _core

from dsl_helpers import has_gpu, has_torch_cuda, sass_opcodes

# Loaded under a name of its own: the Hopper example is a dense_gemm.py too, and both tests share a session.
_spec = importlib.util.spec_from_file_location(
    "blackwell_dense_gemm", os.path.join(os.path.dirname(__file__), "..", "..", "..", "frontend_python", "examples",
                                         "blackwell", "dense_gemm.py"))
dense_gemm = importlib.util.module_from_spec(_spec)
sys.modules["blackwell_dense_gemm"] = dense_gemm
_spec.loader.exec_module(dense_gemm)

SASS = pytest.mark.skipif(not _core.sass_tool_available(), reason="no SASS disassembler (nvdisasm) installed")


def _blackwell_gpu() -> bool:
    if not (has_gpu() and has_torch_cuda()):
        return False
    return _core.device_info(_core.current_device())["compute_capability"][0] == 10


requires_blackwell = pytest.mark.skipif(not _blackwell_gpu(), reason="needs a Blackwell (sm_100) GPU and PyTorch "
                                        "with CUDA")


def ptxas_report(compiled):
    log = compiled.info["jit_log"]
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", log)
    regs = re.search(r"Used (\d+) registers", log)
    assert m and regs, log
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), int(regs.group(1))


SASS_CASES = [
    # majors, A/B type, C type, MMA tile, cluster, 2-CTA
    ("kkn", cutlass.Float16, cutlass.Float16, (128, 256), (1, 1), False),
    ("kkn", cutlass.BFloat16, cutlass.BFloat16, (128, 128), (2, 2), False),
    ("knn", cutlass.Float16, cutlass.Float32, (128, 64), (1, 2), False),
    ("mnm", cutlass.Float16, cutlass.Float16, (128, 128), (1, 1), False),
    ("kkn", cutlass.Float16, cutlass.Float16, (64, 128), (1, 1), False),
    ("kkn", cutlass.Float16, cutlass.Float16, (256, 256), (2, 1), True),
    ("kkn", cutlass.Float16, cutlass.BFloat16, (256, 128), (4, 2), True),
    ("mkm", cutlass.BFloat16, cutlass.BFloat16, (256, 128), (2, 1), True),
    ("kkn", cutlass.Float16, cutlass.Float16, (128, 128), (2, 1), True),        # data-path layout B
    ("knn", cutlass.BFloat16, cutlass.Float32, (128, 256), (2, 2), True),
    ("kkn", cutlass.Float8E4M3FN, cutlass.BFloat16, (128, 256), (1, 1), False),
    ("kkn", cutlass.Float8E5M2, cutlass.Float16, (256, 256), (2, 2), True),
    ("kkn", cutlass.Float32, cutlass.Float32, (128, 128), (1, 1), False),
]


@SASS
@pytest.mark.parametrize("majors,ab,c,tile,cluster,two", SASS_CASES,
                         ids=lambda x: getattr(x, "__name__", str(x)))
def test_dense_gemm_sass(majors, ab, c, tile, cluster, two):
    gemm = dense_gemm.BlackwellDenseGemm(cutlass.Float32, two, tile, cluster)
    compiled = dense_gemm.compile_only(gemm, majors[0], majors[1], majors[2], ab, c, options="-v")
    print(compiled.info["jit_log"])
    ops = sass_opcodes(compiled.cubin)
    count = lambda prefix: sum(1 for o in ops if o == prefix or o.startswith(prefix + "."))  # noqa: E731
    pair = ".2CTA" if two else ""
    mma = "UTCQMMA" if ab.width == 8 else "UTCHMMA"
    # four instructions of K per k-tile, all of the CTA group asked for
    n_mma = sum(1 for o in ops if o.startswith(("UTCHMMA", "UTCQMMA")))
    assert n_mma and n_mma % 4 == 0 and count(mma + pair) == n_mma, ops
    # the MMAs' commits: to the stage's empty barriers and to the accumulator's full one; multicast to the other
    # CTAs of a pair or a cluster
    bars = [o for o in ops if o.startswith("UTCBAR")]
    assert len(bars) >= 2 and all(o.startswith("UTCBAR" + pair) for o in bars)
    assert any("MULTICAST" in o for o in bars) == (two or cluster != (1, 1))
    # TMA loads of A and B (A multicast along the cluster's N, B along its M per MMA tile), of the pair's group
    mc_a, mc_b = cluster[1] > 1, cluster[0] // (2 if two else 1) > 1
    loads = [o for o in ops if o.startswith("UTMALDG")]
    assert loads and all(o.endswith(pair) or not two for o in loads), loads
    assert any(".MULTICAST" in o for o in loads) == (mc_a or mc_b)
    # epilogue: a loop over the sub-tiles, one tensor-memory load per sub-tile and thread in its body (32 columns
    # of fp32, a 16-lane shape for M = 64), TMA stores of C's sub-tiles
    cta_rows = tile[0] // (2 if two else 1)
    sub_n = 64 if c.width <= 8 else 32
    subtiles = tile[1] // sub_n
    ld = [o for o in ops if o.startswith("LDTM")]
    assert 1 <= len(ld) <= subtiles, ld                                 # the loop may be unrolled, no more
    if cta_rows == 64 and not two:
        assert all(o.startswith("LDTM.16dp256bit") for o in ld)         # layout F: 16 lanes of each warp
    elif cta_rows == 64:
        assert all(o == f"LDTM.x{sub_n // 2}" for o in ld)               # layout B: half a sub-tile per lane half
    else:
        assert all(o == "LDTM.x32" for o in ld)
    # one box per sub-tile (two for layout B: a block of each half of the columns)
    assert count("UTMASTG") >= len(ld) * (2 if two and cta_rows == 64 else 1)
    assert count("SYNCS.PHASECHK.TRANS64") >= 3 and count("SYNCS.ARRIVE.TRANS64") >= 1
    alloc = [o for o in ops if o.startswith("UTCATOMSWS")]
    assert any(o.startswith("UTCATOMSWS" + pair + ".FIND_AND_SET") for o in alloc), alloc
    assert not any(o.startswith(("LDL", "STL")) for o in ops)
    stack, spill_st, spill_ld, regs = ptxas_report(compiled)
    assert (stack, spill_st, spill_ld) == (0, 0, 0), compiled.info["jit_log"]
    assert regs <= 128


def test_dense_gemm_compiles_without_a_gpu(capsys):
    if os.environ.get("WARPWEAVE_ARCH") is None and _blackwell_gpu():
        pytest.skip("a Blackwell GPU is present: the example runs instead (see the GPU tests)")
    if has_gpu():
        pytest.skip("a GPU of another generation is present: the example would try to run there")
    assert dense_gemm.main(["--use_2cta_instrs", "--mma_tiler_mn", "256,128", "--cluster_shape_mn", "2,1"]) == 0
    out = capsys.readouterr().out
    assert "compiled dense_gemm for sm_100a" in out and "bytes stack frame" in out


def test_dense_gemm_refuses_bad_configurations():
    B = dense_gemm.BlackwellDenseGemm
    with pytest.raises(ValueError, match="M must be 64 or 128"):
        B(cutlass.Float32, False, (256, 128))
    with pytest.raises(ValueError, match="M must be 128 or 256"):
        B(cutlass.Float32, True, (64, 128))
    with pytest.raises(ValueError, match="N must be a multiple of 16"):
        B(cutlass.Float32, False, (128, 120))
    with pytest.raises(ValueError, match="even"):
        B(cutlass.Float32, True, (256, 128), (1, 2))
    with pytest.raises(ValueError, match="Float32"):
        B(cutlass.Float16)
    with pytest.raises(Exception, match="multicast of an MN-major operand"):
        dense_gemm.compile_only(B(cutlass.Float32, False, (128, 128), (1, 2)), "m", "k", "n", cutlass.Float16,
                                cutlass.Float16)


# --- on a Blackwell GPU ----------------------------------------------------------------------------------------------

GPU_CASES = [
    # mnkl, majors, ab, c, MMA tile, cluster, 2-CTA
    ((256, 256, 512, 1), "kkn", cutlass.Float16, cutlass.Float16, (128, 256), (1, 1), False),
    ((200, 136, 264, 2), "kkn", cutlass.Float16, cutlass.Float16, (128, 128), (1, 1), False),
    ((200, 136, 264, 1), "mnm", cutlass.BFloat16, cutlass.BFloat16, (128, 128), (1, 1), False),
    ((136, 200, 520, 1), "knn", cutlass.Float16, cutlass.Float32, (64, 128), (1, 1), False),
    ((520, 264, 400, 1), "kkn", cutlass.Float16, cutlass.Float16, (128, 128), (2, 2), False),
    ((520, 264, 400, 2), "kkn", cutlass.BFloat16, cutlass.BFloat16, (256, 128), (2, 1), True),
    ((1024, 520, 264, 1), "kkn", cutlass.Float16, cutlass.Float16, (256, 256), (4, 2), True),
    ((520, 264, 400, 1), "mkm", cutlass.Float16, cutlass.Float16, (256, 128), (2, 1), True),
    ((264, 520, 400, 1), "kkn", cutlass.Float16, cutlass.Float16, (128, 128), (2, 1), True),     # layout B
    ((520, 1000, 264, 1), "kkm", cutlass.BFloat16, cutlass.Float32, (128, 256), (2, 2), True),
    ((200, 136, 272, 1), "kkn", cutlass.Float8E4M3FN, cutlass.BFloat16, (128, 256), (1, 1), False),
    ((520, 264, 1040, 1), "kkn", cutlass.Float8E5M2, cutlass.Float16, (256, 256), (2, 2), True),
    ((200, 136, 264, 1), "kkn", cutlass.Float32, cutlass.Float32, (128, 128), (1, 1), False),
    ((8, 16, 8, 1), "kkn", cutlass.Float16, cutlass.Float16, (128, 128), (1, 1), False),
]


@requires_blackwell
@pytest.mark.parametrize("case", GPU_CASES, ids=lambda c: "-".join(str(x) for x in c))
def test_dense_gemm_matches_torch(case):
    mnkl, majors, ab, c, tile, cluster, two = case
    dense_gemm.run(mnkl, ab, c, cutlass.Float32, majors[0], majors[1], majors[2], tile, cluster, two, iterations=0)


# --- the persistent, warp-specialized example ---------------------------------------------------------------------

_pspec = importlib.util.spec_from_file_location(
    "blackwell_dense_gemm_persistent", os.path.join(os.path.dirname(__file__), "..", "..", "..", "frontend_python",
                                                    "examples", "blackwell", "dense_gemm_persistent.py"))
persistent = importlib.util.module_from_spec(_pspec)
sys.modules["blackwell_dense_gemm_persistent"] = persistent
_pspec.loader.exec_module(persistent)

PERSISTENT_CASES = [
    ("kkn", cutlass.Float16, cutlass.Float16, (128, 256), (1, 1), False),
    ("kkn", cutlass.Float16, cutlass.Float16, (128, 128), (2, 2), False),
    ("kkn", cutlass.Float16, cutlass.Float16, (256, 256), (2, 1), True),
    ("kkn", cutlass.BFloat16, cutlass.BFloat16, (256, 128), (4, 2), True),
    ("mnm", cutlass.Float8E4M3FN, cutlass.BFloat16, (64, 128), (1, 1), False),
]


@SASS
@pytest.mark.parametrize("majors,ab,c,tile,cluster,two", PERSISTENT_CASES,
                         ids=lambda x: getattr(x, "__name__", str(x)))
def test_dense_gemm_persistent_sass(majors, ab, c, tile, cluster, two):
    gemm = persistent.BlackwellPersistentDenseGemm(cutlass.Float32, two, tile, cluster, max_active_clusters=16)
    compiled = persistent.compile_only(gemm, majors[0], majors[1], majors[2], ab, c, options="-v")
    print(compiled.info["jit_log"])
    ops = sass_opcodes(compiled.cubin)
    pair = ".2CTA" if two else ""
    mma = [o for o in ops if o.startswith(("UTCHMMA", "UTCQMMA"))]
    assert mma and len(mma) % 4 == 0 and all(o == ("UTCQMMA" if ab.width == 8 else "UTCHMMA") + pair for o in mma)
    assert len([o for o in ops if o.startswith("UTCBAR" + pair)]) >= 2
    subtiles = tile[1] // (64 if c.width <= 8 else 32)
    assert len([o for o in ops if o.startswith("LDTM")]) == subtiles
    assert any(o.startswith("UTMALDG") for o in ops) and any(o.startswith("UTMASTG") for o in ops)
    if two:
        # the epilogue's releases of an accumulator buffer arrive on the leader CTA's barrier
        assert any(o.startswith("SYNCS.ARRIVE.TRANS64.RED") for o in ops)
    assert not any(o.startswith(("LDL", "STL")) for o in ops)
    assert ptxas_report(compiled)[:3] == (0, 0, 0)


@requires_blackwell
@pytest.mark.parametrize("case", [
    ((1024, 1024, 512, 1), "kkn", cutlass.Float16, cutlass.Float16, (128, 256), (1, 1), False),
    ((1000, 520, 264, 2), "kkn", cutlass.BFloat16, cutlass.BFloat16, (128, 128), (2, 2), False),
    ((2048, 1024, 1024, 1), "kkn", cutlass.Float16, cutlass.Float16, (256, 256), (2, 1), True),
    ((1040, 776, 520, 1), "kkm", cutlass.Float16, cutlass.Float16, (256, 128), (4, 2), True),
], ids=lambda c: "-".join(str(x) for x in c))
def test_dense_gemm_persistent_matches_torch(case):
    mnkl, majors, ab, c, tile, cluster, two = case
    # few clusters, so that each walks several tiles (both accumulator buffers, the rings wrapping)
    persistent.run(mnkl, ab, c, majors[0], majors[1], majors[2], tile, cluster, two, max_active_clusters=4)


def test_layout_b_epilogue_pairs_registers_with_their_elements():
    # 2-CTA M = 128 (data-path layout B): the example's sub-tile is a block of box_n columns of each half of the
    # CTA's (64, N) share of D; each register a thread loads is paired with the C coordinate whose accumulator the
    # MMA wrote into that tensor-memory cell
    import warpweave.cute as cute
    from warpweave.cute.nvgpu import tcgen05

    n, box_n = 128, 16
    tm = cute.make_tiled_mma(tcgen05.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (128, n, 16),
                                                   tcgen05.CtaGroup.TWO))
    frag = tm.make_fragment_C(tm.partition_shape_C((128, n)))
    tiler = (64, cute.make_layout((box_n, 2), stride=(1, n // 2)))
    tAcc = cute.flat_divide(frag[((None, None), 0, 0)], tiler)
    t2r = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x16), cutlass.Float32),
                                 tAcc[(None, None, 0, 0)])
    coords = cute.flat_divide(cute.make_identity_tensor((64, n)), tiler)
    seen = set()
    for tid in (0, 5, 31, 32, 63, 64, 100, 127):
        ps = t2r.get_slice(tid).partition_S(cute.make_tensor(frag.iterator, tAcc.layout))
        pd = t2r.get_slice(tid).partition_D(coords)
        for j in range(cute.size(tAcc, mode=[3])):
            for v in range(16):
                row, col = pd[(v, 0, 0, 0, j)]
                off = ps.iterator.offset + ps.layout((v, 0, 0, 0, j))
                assert frag.layout(((row, col), 0, 0)) == off
                # warps 0-1 hold the first half of the columns, warps 2-3 the second
                assert (col >= n // 2) == (tid >= 64) and col % (n // 2) // box_n == j
                seen.add((row, col))
    assert len(seen) == 8 * 16 * cute.size(tAcc, mode=[3])
