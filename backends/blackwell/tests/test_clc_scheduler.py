"""Cluster launch control without a GPU: utils.ClcDynamicPersistentTileScheduler with pipeline.PipelineClcFetchAsync.

- A kernel in CuTe DSL's tutorial pattern (a scheduler warp in the cluster's first CTA fetching, every walking warp
  consuming the response) in PTX and SASS: the cancel request (multicast in a cluster, one elected lane), the
  response's decoding, the expect_tx arrivals on every CTA's full barrier, the releases at the producing CTA, the
  barrier counts; no local memory.
- The scheduler's arithmetic on Python integers: the first tiles of get_grid_shape's grid cover the problem once,
  and a response names, for each CTA, the first tile of the same CTA of the canceled cluster.
- CuTe DSL's Blackwell GEMM tutorial steps 0 to 6, its TMA tutorials and its persistent (utils.gemm.sm100's
  epilogues), software-pipelined, prefetching and alpha-beta persistent dense GEMMs (a fetched copy of its
  examples, nothing committed) compile unmodified for sm_100a through `python -m warpweave run --compile-only`,
  their SASS holding UTCHMMA and UTMALDG (and UTMAPF, LDTM, UTMASTG where they use them).
What this cannot show without a Blackwell GPU: that the hardware cancels clusters and the walk visits every tile
once at run time (test_clc_walk_on_the_gpu does, on one).
"""
from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
import warpweave.pipeline as pipeline
from warpweave import _core, utils
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import has_gpu, has_torch_cuda, target

SASS = pytest.mark.skipif(not _core.sass_tool_available(), reason="no SASS disassembler (nvdisasm) installed")


def _blackwell_gpu() -> bool:
    if not (has_gpu() and has_torch_cuda()):
        return False
    return _core.device_info(_core.current_device())["compute_capability"][0] == 10


# --- a kernel in the tutorial's pattern ---------------------------------------------------------------------------

def _walk_kernel(cm, cn):
    """Warp 0 of every CTA counts each tile it is given into out (m, n); warp 1 of the cluster's first CTA
    fetches. Consumers: warp 0 of each CTA and the scheduler warp."""
    cluster = cm * cn
    consumers = 32 * (1 + cluster)

    @cute.kernel
    def k(out: cute.Tensor, params: utils.ClcDynamicPersistentTileSchedulerParams):
        smem = utils.SmemAllocator()
        bars = smem.allocate_array(cutlass.Int64, 2, byte_alignment=8)
        response = smem.allocate_array(cutlass.Int32, 4, byte_alignment=16)
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        clc = pipeline.PipelineClcFetchAsync.create(
            barrier_storage=bars, num_stages=1, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, consumers), tx_count=16,
            cta_layout_vmnk=cute.make_layout((1, cm, cn, 1)), defer_sync=True)
        pipeline.pipeline_init_arrive(cluster_shape_mn=(cm, cn), is_relaxed=True)
        pipeline.pipeline_init_wait(cluster_shape_mn=(cm, cn))
        sched = utils.ClcDynamicPersistentTileScheduler.create(params, cute.arch.block_idx(), cute.arch.grid_dim(),
                                                              response)
        work = sched.initial_work_tile_info()
        cstate = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 1)
        if warp == 0:
            while work.is_valid_tile:
                m, n, _ = work.tile_idx
                if cute.arch.lane_idx() == 0:
                    if m < out.shape[0] and n < out.shape[1]:
                        out[m, n] = out[m, n] + 1
                clc.consumer_wait(cstate)
                work = sched.get_current_work()
                clc.consumer_release(cstate)
                cstate.advance()
        if warp == 1 and cute.arch.block_rank_in_cluster() == 0:
            pstate = pipeline.make_pipeline_state(pipeline.PipelineUserType.ProducerConsumer, 1)
            while work.is_valid_tile:
                clc.producer_acquire(pstate)
                sched.advance_to_next_work(clc.producer_get_barrier(pstate))
                pstate.advance()
                clc.consumer_wait(cstate)
                work = sched.get_current_work()
                clc.consumer_release(cstate)
                cstate.advance()
            clc.producer_tail(pstate)

    @cute.jit
    def h(out: cute.Tensor):
        params = utils.ClcDynamicPersistentTileSchedulerParams((out.shape[0], out.shape[1], 1), (cm, cn, 1))
        grid = utils.ClcDynamicPersistentTileScheduler.get_grid_shape(params)
        k(out, params).launch(grid=grid, block=[64, 1, 1], cluster=[cm, cn, 1])

    return h


def _compile(cm, cn, out):
    with target("sm_100a"):
        return cute.compile(_walk_kernel(cm, cn), from_dlpack(out), options="-v")   # -v: the ptxas report


def _inits(ptx):
    consts = dict(re.findall(r"mov\.b32 \t?(%r\d+), (\d+);", ptx))
    return [int(consts.get(x, x)) for x in re.findall(r"mbarrier\.init\.shared::cta\.b64 \[[^]]+\], (%r\d+|\d+);", ptx)]


def _opcodes(cubin):
    sass = _core.disassemble_sass(cubin)
    return re.findall(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Za-z0-9_.]*)", sass, re.M)


@pytest.fixture(autouse=True)
def _fresh_compile(monkeypatch):
    # the PTX is read from the compile's info, which a disk-cache hit does not carry
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")


@pytest.mark.parametrize("cm,cn", [(1, 1), (2, 1), (2, 2), (1, 4)])
def test_clc_fetch_in_ptx(cm, cn):
    cluster = cm * cn
    ptx = _compile(cm, cn, np.zeros((6, 5), np.int32)).info["ptx"]
    # full barrier: one arrival (the producer's expect_tx); empty: every consumer thread of the cluster
    assert sorted(_inits(ptx)) == sorted([1, 32 * (1 + cluster)])
    cancels = re.findall(r"clusterlaunchcontrol\.try_cancel\.async\.shared::cta\.mbarrier::complete_tx::bytes"
                         r"(\.multicast::cluster::all)?\.b128", ptx)
    assert cancels == ([".multicast::cluster::all"] if cluster > 1 else [""])
    # one decoding per get_current_work (the walking warp's and the scheduler warp's)
    assert ptx.count("clusterlaunchcontrol.query_cancel.is_canceled.pred.b128") == 2
    assert ptx.count("clusterlaunchcontrol.query_cancel.get_first_ctaid.v4.b32.b128") == 2
    # the producer's arrival expecting the response's 16 bytes on the full barrier of every CTA of the cluster
    remote = ptx.count("mbarrier.arrive.expect_tx.shared::cluster.b64")
    local = ptx.count("mbarrier.arrive.expect_tx.shared::cta.b64")
    assert (remote, local) == ((cluster, 0) if cluster > 1 else (0, 1))
    # the request and the arrivals run in one elected lane
    assert ptx.count("elect.sync") == 2
    # releases: at the producing CTA (rank 0) in a cluster, locally otherwise; the tail waits without fetching
    if cluster > 1:
        assert ptx.count("mbarrier.arrive.shared::cluster.b64") == 2
    else:
        assert ptx.count("mbarrier.arrive.shared::cta.b64") == 2


@SASS
@pytest.mark.parametrize("cm,cn", [(1, 1), (2, 1), (2, 2)])
def test_clc_fetch_in_sass(cm, cn):
    compiled = _compile(cm, cn, np.zeros((6, 5), np.int32))
    ops = _opcodes(compiled.cubin)
    cast = "UGETNEXTWORKID.BROADCAST" if cm * cn > 1 else "UGETNEXTWORKID.SELFCAST"
    assert ops.count(cast) == 1, sorted(set(ops))
    assert "LDS.128" in ops and "ELECT" in ops and "SYNCS.PHASECHK.TRANS64.TRYWAIT" in ops
    assert ("SYNCS.ARRIVE.TRANS64.RED" in ops) == (cm * cn > 1)
    assert not {"LDL", "STL"} & {o.split(".")[0] for o in ops}, "local memory"
    log = compiled.info["jit_log"]
    print(log)
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", log)
    assert m and m.groups() == ("0", "0", "0"), log


def test_pipeline_and_scheduler_refuse_bad_arguments():
    with pytest.raises(Exception, match="tile count along n must be an integer"):
        utils.ClcDynamicPersistentTileSchedulerParams((4, "x", 1), (1, 1, 1))
    with pytest.raises(Exception, match=r"\(cm, cn, 1\) of at most 16"):
        utils.ClcDynamicPersistentTileSchedulerParams((4, 4, 1), (1, 1, 2))
    with pytest.raises(Exception, match="only swizzle_size=1 and raster_along_m=True") as e:
        utils.ClcDynamicPersistentTileSchedulerParams((4, 4, 1), (1, 1, 1), 2, True)
    assert os.path.basename(__file__) in str(e.value)
    utils.ClcDynamicPersistentTileSchedulerParams((4, 4, 1), (1, 1, 1), 1, True)     # CuTe DSL's positional form
    with pytest.raises(Exception, match="expected ClcDynamicPersistentTileSchedulerParams"):
        utils.ClcDynamicPersistentTileScheduler.get_grid_shape(utils.PersistentTileSchedulerParams((4, 4, 1),
                                                                                                  (1, 1, 1)))
    sched = utils.ClcDynamicPersistentTileScheduler.create(
        utils.ClcDynamicPersistentTileSchedulerParams((4, 4, 1), (1, 1, 1)), (0, 0, 0), (4, 4, 1))
    with pytest.raises(Exception, match="without clc_response_ptr") as e:
        sched.get_current_work()
    assert os.path.basename(__file__) in str(e.value)          # the user's line, not the library's
    with pytest.raises(ValueError, match="positive static byte count"):
        pipeline.PipelineClcFetchAsync.create(barrier_storage=None, num_stages=1,
                                              producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
                                              consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
                                              tx_count=0)


# --- the walk's arithmetic on Python integers ---------------------------------------------------------------------

def _cases(n=60, seed=7):
    rnd = random.Random(seed)
    out = [((1, 1, 1), (1, 1)), ((3, 5, 2), (2, 2)), ((8, 1, 1), (4, 1))]
    while len(out) < n:
        cm, cn = rnd.choice([(1, 1), (2, 1), (1, 2), (2, 2), (4, 1), (2, 4), (4, 4)])
        out.append(((rnd.randint(1, 13), rnd.randint(1, 13), rnd.randint(1, 3)), (cm, cn)))
    return out


@pytest.mark.parametrize("problem,cluster", _cases())
def test_first_tiles_cover_the_problem_once(problem, cluster):
    cm, cn = cluster
    params = utils.ClcDynamicPersistentTileSchedulerParams(problem, (cm, cn, 1))
    grid = utils.ClcDynamicPersistentTileScheduler.get_grid_shape(params)
    assert grid[0] % cm == 0 and grid[1] % cn == 0                  # whole clusters
    assert grid[0] - cm < problem[0] <= grid[0] and grid[1] - cn < problem[1] <= grid[1] and grid[2] == problem[2]
    seen = {}
    for z in range(grid[2]):
        for y in range(grid[1]):
            for x in range(grid[0]):
                work = utils.ClcDynamicPersistentTileScheduler.create(params, (x, y, z), grid, None) \
                    .initial_work_tile_info()
                assert work.is_valid_tile
                seen[work.tile_idx] = seen.get(work.tile_idx, 0) + 1
    inside = {(m, n, l) for m in range(problem[0]) for n in range(problem[1]) for l in range(problem[2])}
    assert all(seen.get(t) == 1 for t in inside)
    # the rest are the CTAs of edge clusters past the problem, each once
    assert all(c == 1 for c in seen.values()) and len(seen) == grid[0] * grid[1] * grid[2]
    # a grid larger than get_grid_shape's: its extra clusters have no work
    for extra in ((grid[0], 0, 0), (0, grid[1], 0), (0, 0, grid[2])):
        assert not utils.ClcDynamicPersistentTileScheduler.create(params, extra, grid, None) \
            .initial_work_tile_info().is_valid_tile


@pytest.mark.parametrize("problem,cluster", _cases(30, seed=11))
def test_a_response_gives_each_cta_its_place_in_the_canceled_cluster(problem, cluster):
    cm, cn = cluster
    params = utils.ClcDynamicPersistentTileSchedulerParams(problem, (cm, cn, 1))
    grid = utils.ClcDynamicPersistentTileScheduler.get_grid_shape(params)
    rnd = random.Random(hash((problem, cluster)) & 0xffff)
    for _ in range(20):
        # the canceled cluster (its first CTA's block index) and a CTA of the running cluster
        first = (rnd.randrange(0, grid[0], cm), rnd.randrange(0, grid[1], cn), rnd.randrange(grid[2]))
        me = (rnd.randrange(grid[0]), rnd.randrange(grid[1]), rnd.randrange(grid[2]))
        sched = utils.ClcDynamicPersistentTileScheduler.create(params, me, grid, None)
        tile, valid = sched.work_tile_from_response(True, *first)
        # = the first tile of the CTA at the same place in the canceled cluster
        twin = (first[0] + me[0] % cm, first[1] + me[1] % cn, first[2])
        own = utils.ClcDynamicPersistentTileScheduler.create(params, twin, grid, None).initial_work_tile_info()
        assert valid and tile == own.tile_idx
        _, valid = sched.work_tile_from_response(False, *first)
        assert not valid


# --- CuTe DSL's GEMM tutorial steps -------------------------------------------------------------------------------

def _python_with_torch():
    for python in (sys.executable, "/tmp/exvenv/bin/python", "/work/main/build/cutedsl-venv/bin/python"):
        if os.path.exists(python) and subprocess.run([python, "-c", "import torch, warpweave"],
                                                     capture_output=True).returncode == 0:
            return python
    return None


CUTEDSL_BLACKWELL = next((p for p in ("/work/cutedsl/examples/python/CuTeDSL/cute/blackwell",
                                      "/work/cutlass/examples/python/CuTeDSL/cute/blackwell") if os.path.isdir(p)),
                         "/work/cutedsl/examples/python/CuTeDSL/cute/blackwell")

# CuTe DSL's Blackwell programs (a fetched copy, nothing of it committed) with the SASS opcodes their kernels must
# hold: the tcgen05 MMA (2-CTA where the program picks it), the TMA loads, the L2 prefetch of the prefetching ones.
CUTEDSL_PROGRAMS = [
    ("tutorial/tutorial_gemm/fp16_gemm_0.py", [], ["UTCHMMA", "UTMALDG.2D"]),
    ("tutorial/tutorial_gemm/fp16_gemm_1.py", [], ["UTCHMMA.2CTA", "UTMALDG.2D.MULTICAST.2CTA"]),
    ("tutorial/tutorial_gemm/fp16_gemm_2.py", [], ["UTCHMMA.2CTA", "UTMALDG.2D.MULTICAST.2CTA", "UTMASTG.2D"]),
    ("tutorial/tutorial_gemm/fp16_gemm_3.py", [], ["UTCHMMA.2CTA", "UTMALDG.2D.MULTICAST.2CTA", "UTMASTG.2D"]),
    ("tutorial/tutorial_gemm/fp16_gemm_3_1.py", [], ["UTCHMMA.2CTA", "UTMALDG.2D.MULTICAST.2CTA", "UTMACCTL.PF"]),
    ("tutorial/tutorial_gemm/fp16_gemm_4.py", [], ["UTCHMMA.2CTA", "UTMALDG.2D.MULTICAST.2CTA"]),
    ("tutorial/tutorial_gemm/fp16_gemm_5.py", [], ["UTCHMMA.2CTA", "UTMALDG.2D.MULTICAST.2CTA", "UTMAPF.L2.2D"]),
    ("tutorial/tutorial_gemm/fp16_gemm_6.py", [], ["UTCHMMA", "UTMALDG.2D"]),
    ("tutorial/tutorial_tma/tma_v0.py", [], ["UTMALDG.2D", "UTMASTG.2D"]),
    ("tutorial/tutorial_tma/tma_v1.py", [], ["UTMALDG.2D", "UTMASTG.2D"]),
    ("tutorial/tutorial_tma/tma_v2.py", [], ["UTMALDG.2D", "UTMASTG.2D"]),
    ("kernel/dense_gemm/dense_gemm_software_pipeline.py", [], ["UTCHMMA", "UTMALDG"]),
    ("kernel/dense_gemm/dense_gemm_persistent_prefetch.py", [], ["UTCHMMA", "UTMALDG", "UTMAPF.L2"]),
    ("kernel/dense_gemm/dense_gemm_alpha_beta_persistent.py", [], ["UTCHMMA", "UTMALDG"]),
    # the CLC dynamic scheduler with utils.gemm.sm100's epilogue, and its split-K reduced through the peers' shared
    # memory (utils.gemm.sm100's partitions, map_dsmem_ptr, CopyDsmemStoreOp)
    ("kernel/dense_gemm/dense_gemm_persistent_dynamic.py", [], ["UTCHMMA", "UTMALDG", "LDTM"]),
    ("kernel/dense_gemm/dense_gemm_persistent_dynamic.py", ["--cluster_split_k", "2"],
     ["UTCHMMA", "UTMALDG", "LDTM", "STAS"]),
    # warp-specialized with setmaxnreg, fp8 blockwise-scaled: tcgen05.ld/st of the accumulators in tensor memory
    ("kernel/blockwise_gemm/blockwise_gemm.py", [], ["UTCQMMA", "UTMALDG", "LDTM", "STTM", "USETMAXREG.DEALLOC"]),
    # utils.gemm.sm100.epilogue (tf32, registers to global memory) and epilogue_tma_store (2-CTA, fp16)
    ("kernel/dense_gemm/dense_gemm_persistent.py", [], ["UTCHMMA", "UTMALDG", "LDTM", "STG"]),
    ("kernel/dense_gemm/dense_gemm_persistent.py",
     ["--use_tma_store", "--use_2cta_instrs", "--cluster_shape_mn", "2,1", "--mma_tiler_mn", "256,128",
      "--ab_dtype", "Float16", "--c_dtype", "Float16"], ["UTCHMMA.2CTA", "UTMALDG", "LDTM", "UTMASTG", "UTCBAR.2CTA.MULTICAST"]),
    # NVFP4 block-scaled, 2-CTA: the scale factors' blocks by TMA (B's multicast to the pair), copied into tensor
    # memory for the block-scaled MMA
    ("tutorial/tutorial_gemm/nvfp4_gemm_1.py", [],
     ["UTCOMMA.2CTA", "UTMALDG.4D.MULTICAST.2CTA", "UTMALDG.3D.2CTA", "UTCCP", "LDTM"]),
    # cute.experimental's block-scaled GEMM (MXF8): its scale-factor tensors made over its arguments' pointers
    ("../../cute_ext/blackwell/dense_block_scaled_gemm.py", [], ["UTCQMMA", "UTMALDG.4D", "UTCCP", "LDTM", "UTMASTG"]),
]


@pytest.mark.skipif(not os.path.isdir(CUTEDSL_BLACKWELL),
                    reason=f"CuTe DSL's examples are not fetched at {CUTEDSL_BLACKWELL}")
@pytest.mark.parametrize("program,args,opcodes", CUTEDSL_PROGRAMS,
                         ids=[os.path.basename(p) + ("-" + a[0].strip("-") if a else "") for p, a, _ in CUTEDSL_PROGRAMS])
def test_cutedsl_blackwell_programs_compile(program, args, opcodes, tmp_path):
    """`python -m warpweave run --compile-only --arch sm_100a PROGRAM ARGS` in the program's folder, unmodified; its
    kernels' cubins (WARPWEAVE_KEEP) disassembled here hold the expected opcodes (prefixes of SASS opcodes)."""
    python = _python_with_torch()
    if python is None:
        pytest.skip("the programs import torch, which neither this environment nor /tmp/exvenv has")
    path = os.path.join(CUTEDSL_BLACKWELL, program)
    env = dict(os.environ, WARPWEAVE_DISABLE_CACHE="1", WARPWEAVE_KEEP="cubin", WARPWEAVE_DUMP_DIR=str(tmp_path))
    r = subprocess.run([python, "-m", "warpweave", "run", "--compile-only", "--arch", "sm_100a",
                        os.path.basename(path), *args], cwd=os.path.dirname(path), env=env, capture_output=True,
                       text=True, timeout=900)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert "launching call(s) not made" in out and "for sm_100a" in out, out[-2000:]
    cubins = sorted(tmp_path.glob("*.cubin"))
    assert cubins, f"no cubin kept in {tmp_path}"
    if not _core.sass_tool_available():
        return  # compiled; the opcodes need a disassembler (nvdisasm), absent here
    found = set()
    for c in cubins:
        sass = _core.disassemble_sass(c.read_bytes())
        found.update(re.findall(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Za-z0-9_.]*)", sass, re.M))
    for want in opcodes:
        assert any(op == want or op.startswith(want + ".") for op in found), (want, sorted(found))


# --- on a Blackwell GPU -------------------------------------------------------------------------------------------

@pytest.mark.skipif(not _blackwell_gpu(), reason="needs a Blackwell (sm_100) GPU and PyTorch with CUDA")
@pytest.mark.parametrize("cm,cn,shape", [(1, 1, (37, 29)), (2, 1, (64, 33)), (2, 2, (21, 40))])
def test_clc_walk_on_the_gpu(cm, cn, shape):
    import torch

    out = torch.zeros(shape, dtype=torch.int32, device="cuda")
    compiled = cute.compile(_walk_kernel(cm, cn), from_dlpack(out))
    compiled(from_dlpack(out))
    torch.cuda.synchronize()
    assert bool((out == 1).all()), out.cpu().numpy()            # every tile exactly once, stolen or not


# Consumer Blackwell's manifest names the same entries (its generator takes them from this backend's): ptxas 13.0
# assembles them, the multicast form included, for sm_120a and sm_121a, where QuACK's sm_120 GEMM uses them.
@pytest.mark.parametrize("arch", ["sm_100a", "sm_120a", "sm_121a"])
@pytest.mark.parametrize("multicast", [True, False])
def test_cutedsl_names_issue_clc_query_and_clc_response(tmp_path, multicast, arch):
    """CuTe DSL's cute.arch.issue_clc_query(mbar, response, multicast=) and clc_response(response) -> (x, y, z,
    valid) as Int32s (QuACK's tile scheduler): the request of that form, and the decoding of the same response."""
    seen = {}

    @cute.kernel
    def kern(g: cute.Tensor):
        smem = utils.SmemAllocator()
        resp = smem.allocate_array(cutlass.Int32, 4, byte_alignment=16)
        mbar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        with cute.arch.elect_one():
            cute.arch.issue_clc_query(mbar, resp, multicast=multicast)
        x, y, z, valid = cute.arch.clc_response(resp)
        seen["types"] = [type(v) for v in (x, y, z, valid)]
        g[0] = x + y + z + valid

    @cute.jit
    def host(g: cute.Tensor):
        kern(g).launch(grid=[2, 1, 1], block=[32, 1, 1], cluster=[2 if multicast else 1, 1, 1])

    with target(arch):
        ptx = cute.compile(host, from_dlpack(np.zeros(4, np.int32))).ptx
    assert seen["types"] == [cutlass.Int32] * 4
    request = re.findall(r"clusterlaunchcontrol\.try_cancel\S*", ptx)
    assert len(request) == 1 and ("multicast::cluster::all" in request[0]) == multicast, request
    assert "clusterlaunchcontrol.query_cancel.is_canceled" in ptx
    assert "clusterlaunchcontrol.query_cancel.get_first_ctaid" in ptx
    if shutil.which("ptxas"):
        (tmp_path / "k.ptx").write_text(ptx)
        subprocess.run(["ptxas", f"-arch={arch}", str(tmp_path / "k.ptx"), "-o", str(tmp_path / "k.cubin")],
                       check=True)


def test_issue_clc_query_takes_a_python_bool_for_multicast():
    @cute.kernel
    def kern(g: cute.Tensor):
        smem = utils.SmemAllocator()
        resp = smem.allocate_array(cutlass.Int32, 4, byte_alignment=16)
        mbar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        cute.arch.issue_clc_query(mbar, resp, multicast=g[0] > 0)

    @cute.jit
    def host(g: cute.Tensor):
        kern(g).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_100a"), pytest.raises(TypeError) as e:
        cute.compile(host, from_dlpack(np.zeros(4, np.int32)))
    assert "multicast is a Python bool" in str(e.value) and "test_clc_scheduler.py" in str(e.value), str(e.value)
