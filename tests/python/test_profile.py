"""warpweave.profile: what a profiled kernel holds (timer reads, SM and warp ids, lane 0's record stores), that an
unprofiled one is what it was without marks, the event buffer's decoding and the Chrome / Perfetto trace written
from it (on synthetic buffers laid out as device_events.py describes), and, on a GPU, a profiled GEMM."""
import json
import os
import re
import sys

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
import warpweave.profile as wp
from warpweave._dsl.base.errors import DSLError
from warpweave.cute.runtime import make_fake_compact_tensor

from dsl_helpers import requires_gpu, target

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "frontend_python", "examples"))


@cute.kernel
def marked_kernel(x: cute.Tensor, y: cute.Tensor, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    with cute.profile.region("body"):
        i = bidx * 128 + tidx
        if i < n:
            cute.profile.begin("store")
            y[i] = x[i] * 3.0
            cute.profile.end("store")
    for k in range(n // 1024):
        cute.profile.begin("loop")
        y[k] = y[k] + 1.0
        cute.profile.end("loop")


@cute.kernel
def plain_kernel(x: cute.Tensor, y: cute.Tensor, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    if True:
        i = bidx * 128 + tidx
        if i < n:
            y[i] = x[i] * 3.0
    for k in range(n // 1024):
        y[k] = y[k] + 1.0


@cute.jit
def run_marked(x: cute.Tensor, y: cute.Tensor):
    n = cute.size(x)
    marked_kernel(x, y, n).launch(grid=[(n + 127) // 128, 1, 1], block=[128, 1, 1])


@cute.jit
def run_plain(x: cute.Tensor, y: cute.Tensor):
    n = cute.size(x)
    plain_kernel(x, y, n).launch(grid=[(n + 127) // 128, 1, 1], block=[128, 1, 1])


def _persistent_example():
    """examples/hopper/dense_gemm_persistent.py, imported by its path (the hopper folder stays off sys.path: it
    holds a dense_gemm.py, a name other examples share)."""
    import importlib.util

    name = "dense_gemm_persistent"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, os.path.join(ROOT, "frontend_python", "examples", "hopper", f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def tensors():
    return make_fake_compact_tensor(cutlass.Float32, (4096,)), make_fake_compact_tensor(cutlass.Float32, (4096,))


# --- the kernel's code ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_profiled_kernel_reads_the_timers_and_stores_records(arch, monkeypatch):
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")
    prof = wp.Profiler(max_warps=64, events_per_warp=16)
    with target(arch):
        compiled = prof.compile(run_marked, *tensors())
    ptx = compiled.info["ptx"]
    assert compiled.cubin  # the cubin tool accepted it
    for reg in ("%globaltimer", "%clock64", "%smid", "%warpid", "%laneid"):
        assert reg in ptx, reg
    # six event sites (body, store, loop: begin and end): a timer pair and two 16-byte record stores each
    assert len(re.findall(r"mov\.u64\s+%rd\d+, %globaltimer", ptx)) >= 6
    assert len(re.findall(r"st\.global\.v2\.b64", ptx)) >= 12
    # the buffer's address is a constant of the kernel, and the event count stays in a register
    assert str(prof.address + prof.counters_offset) in ptx or hex(prof.address) in ptx.lower() \
        or str(prof.address) in ptx
    assert ".local" not in ptx and "ld.local" not in ptx
    # warps beyond the slots count their events with a relaxed atomic add into the word after the counters
    assert re.search(r"atom\.global\.add\.u32|red\.global\.add\.u32|atom\.relaxed\.gpu\.global\.add", ptx), ptx
    assert str(prof.address + prof.lost_offset) in ptx
    assert prof.names == {0: "body", 1: "store", 2: "loop"}


@pytest.mark.skipif(not __import__("warpweave")._core.sass_tool_available(), reason="no SASS disassembler")
def test_profiled_kernel_sass_reads_the_timers_and_stores_16_byte_records(monkeypatch):
    from warpweave import _core

    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")
    prof = wp.Profiler(max_warps=64, events_per_warp=16)
    with target("sm_90a"):
        sass = _core.disassemble_sass(prof.compile(run_marked, *tensors()).cubin)
        plain = _core.disassemble_sass(cute.compile(run_plain, *tensors()).cubin)
    for needle in ("SR_GLOBALTIMERLO", "SR_CLOCKLO", "SR_LANEID"):
        assert needle in sass and needle not in plain, needle
    # every event site: one global-timer and one clock read, two 16-byte record stores
    sites = len(re.findall(r"SR_GLOBALTIMERLO", sass))
    assert sites >= 6 and len(re.findall(r"SR_CLOCKLO", sass)) == sites
    assert len(re.findall(r"STG\.E\.128", sass)) >= 2 * sites


def _normalised(ptx, name):
    return "\n".join(l for l in ptx.splitlines() if not l.startswith("//")).replace(name, "KERNEL")


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_unprofiled_kernel_is_the_kernel_without_marks(arch, monkeypatch):
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")
    with target(arch):
        marked = cute.compile(run_marked, *tensors())
        plain = cute.compile(run_plain, *tensors())
    a = _normalised(marked.info["ptx"], "marked_kernel")
    b = _normalised(plain.info["ptx"], "plain_kernel")
    assert a == b
    assert "%globaltimer" not in a and "%smid" not in a
    assert marked.launches[0].params == plain.launches[0].params  # no buffer parameter either


def test_tensorop_gemm_marks_cost_nothing_unprofiled(monkeypatch):
    from warpweave.cute.runtime import make_fake_tensor
    import tensorop_gemm as tg

    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")

    def fake(m0, m1):
        t = make_fake_tensor(cutlass.Float16, (m0, m1, 1), (m1, 1, m0 * m1), assumed_align=16)
        return t.mark_layout_dynamic(leading_dim=1).mark_compact_shape_dynamic(mode=1, stride_order=(2, 0, 1),
                                                                                divisibility=8)
    gemm = tg.TensorOpGemm(cutlass.Float16, cutlass.Float16, cutlass.Float32, (2, 2, 1))
    args = (fake(512, 256), fake(384, 256), fake(512, 384))
    prof = wp.Profiler(max_warps=256, events_per_warp=8)
    with target("sm_80"):
        plain = cute.compile(gemm, *args)
        profiled = prof.compile(gemm, *args)
    assert "%globaltimer" not in plain.info["ptx"]
    assert "%globaltimer" in profiled.info["ptx"] and "HMMA" not in profiled.info["ptx"]
    assert prof.names == {0: "mainloop", 1: "epilogue"}
    assert "mma.sync" in profiled.info["ptx"] and len(profiled.cubin) > 0


def test_persistent_hopper_gemm_profiles_producer_and_consumer_warps_without_spilling(monkeypatch):
    dg = _persistent_example()

    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")
    monkeypatch.setenv("WARPWEAVE_CUBIN_TOOL", "ptxas")
    gemm = dg.HopperPersistentDenseGemm(cutlass.Float32, (128, 256), (1, 1), 1, True)
    args = dg.fake_arguments("k", "k", "n", cutlass.Float16, cutlass.Float16)
    prof = wp.Profiler(max_warps=132 * 12, events_per_warp=64)
    with target("sm_90a"):
        plain = cute.compile(gemm, *args, options=cute.PtxasOptions("-v"))
        profiled = prof.compile(gemm, *args, options=cute.PtxasOptions("-v"))
    assert "%globaltimer" not in plain.info["ptx"] and "%globaltimer" in profiled.info["ptx"]
    assert prof.names == {0: "load", 1: "mainloop", 2: "epilogue"}
    # the producer warpgroup runs at 40 registers: the events' state must not push anything to local memory
    log = profiled.info["jit_log"]
    assert "0 bytes spill stores" in log and "bytes stack frame" in log, log
    assert not re.search(r"[1-9]\d* bytes spill", log), log


def test_region_misuse_is_a_clear_error_at_the_users_line(monkeypatch):
    with pytest.raises(DSLError, match="inside a @cute.kernel"):
        cute.profile.begin("x")
    with pytest.raises(DSLError, match="Profiler"):
        wp.Profile("not a profiler")
    with pytest.raises(DSLError, match="events_per_warp"):
        wp.Profiler(events_per_warp=0)

    @cute.kernel
    def bad_name(x: cute.Tensor):
        cute.profile.begin(42)

    @cute.jit
    def host(x: cute.Tensor):
        bad_name(x).launch(grid=[1, 1, 1], block=[32, 1, 1])

    prof = wp.Profiler(max_warps=4, events_per_warp=4)
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")
    with target("sm_80"), pytest.raises(DSLError, match="non-empty string") as e:
        prof.compile(host, tensors()[0])
    assert "test_profile.py" in str(e.value)
    if prof.buffer is None:
        with pytest.raises(DSLError, match="no device buffer"):
            prof.read()


# --- decoding and the trace (synthetic buffers) --------------------------------------------------------------------

def encode(prof_shape, warps, unrecorded=0):
    """A raw buffer as the device writes it: warps is {slot: [(gtime, clock, sm, hw, region, end, cta, warp)]}."""
    max_warps, per = prof_shape
    words = np.zeros((max_warps, per, 4), "<u8")
    counts = np.zeros(max_warps, "<u4")
    for slot, evs in warps.items():
        counts[slot] = len(evs)
        for i, (g, c, sm, hw, rid, end, cta, warp) in enumerate(evs[:per]):
            words[slot, i] = (g, c, sm | hw << 16 | rid << 32 | int(end) << 48, cta | warp << 32)
    return words.tobytes() + counts.tobytes() + np.array([unrecorded, 0], "<u4").tobytes()


def synthetic_run(rng, n_sms=4, warps_per_cta=4, ctas=12, per=64):
    """Warps of CTAs spread over SMs, each with nested regions (mainloop containing k-steps, then epilogue); each
    SM's cycle counter has its own offset and rate, the global timer ticks in whole microseconds."""
    truth, warps = [], {}
    rate = {sm: rng.uniform(1.5, 2.0) for sm in range(n_sms)}        # cycles per ns
    offset = {sm: rng.randrange(1 << 40) for sm in range(n_sms)}
    for cta in range(ctas):
        sm = cta % n_sms
        t = 1_000_000.0 + (cta // n_sms) * 50_000.0 + rng.uniform(0, 500)
        for warp in range(warps_per_cta):
            slot = cta * warps_per_cta + warp
            hw = (cta // n_sms % 2) * warps_per_cta + warp
            evs = []

            def ev(time_ns, rid, end):
                evs.append((int(time_ns // 1000 * 1000), int(offset[sm] + time_ns * rate[sm]), sm, hw, rid, end,
                            cta, warp))
            start = t + rng.uniform(0, 300)
            ev(start, 0, False)
            cur = start
            for _ in range(rng.randrange(1, 5)):
                a = cur + rng.uniform(50, 400)
                b = a + rng.uniform(2000, 6000)
                ev(a, 2, False)
                ev(b, 2, True)
                truth.append(("kstep", sm, hw, cta, warp, b - a))
                cur = b
            end_main = cur + rng.uniform(10, 100)
            ev(end_main, 0, True)
            truth.append(("mainloop", sm, hw, cta, warp, end_main - start))
            e0 = end_main + 20
            e1 = e0 + rng.uniform(3000, 9000)
            ev(e0, 1, False)
            ev(e1, 1, True)
            truth.append(("epilogue", sm, hw, cta, warp, e1 - e0))
            warps[slot] = evs
    names = {0: "mainloop", 1: "epilogue", 2: "kstep"}
    return encode((ctas * warps_per_cta + 3, per), warps), (ctas * warps_per_cta + 3, per), names, truth


def test_trace_from_a_synthetic_buffer_is_well_formed_and_recovers_durations(rng, tmp_path):
    raw, (max_warps, per), names, truth = synthetic_run(rng)
    data = wp.decode(raw, max_warps, per, names)
    assert data.total_dropped == 0 and len(data.events) == 2 * len(truth)
    path = tmp_path / "trace.json"
    wp.write_chrome_trace(data, str(path))
    trace = json.loads(path.read_text())
    assert set(trace) >= {"traceEvents", "displayTimeUnit"} and trace["otherData"]["problems"] == []
    xs = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    meta = [e for e in trace["traceEvents"] if e["ph"] == "M"]
    assert len(xs) == len(truth)
    for e in xs:
        assert set(e) >= {"name", "ph", "ts", "dur", "pid", "tid"} and e["dur"] >= 0 and e["ts"] >= 0
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
    # one process per SM, one thread per hardware warp slot, each named
    sms = {e["pid"] for e in xs}
    assert sms == set(range(4))
    assert {e["pid"] for e in meta if e["name"] == "process_name"} == sms
    named_threads = {(e["pid"], e["tid"]) for e in meta if e["name"] == "thread_name"}
    assert named_threads == {(e["pid"], e["tid"]) for e in xs}
    # per track: timestamps never go back, and regions nest (a child lies within its parent)
    tracks = {}
    for e in xs:
        tracks.setdefault((e["pid"], e["tid"]), []).append(e)
    for evs in tracks.values():
        ts = [e["ts"] for e in evs]
        assert ts == sorted(ts)
        open_ = []
        for e in evs:
            while open_ and open_[-1] <= e["ts"] + 1e-6:
                open_.pop()
            if open_:
                assert e["ts"] + e["dur"] <= open_[-1] + 1e-3
            open_.append(e["ts"] + e["dur"])
    # the cycle counters, fitted to the coarse (1 us) global timer, give each region's duration to within 0.5%
    got = sorted((e["name"], e["pid"], e["tid"], e["args"]["cta"], e["args"]["warp"], e["dur"] * 1e3) for e in xs)
    want = sorted(truth)
    for g, w in zip(got, want):
        assert g[:5] == w[:5] and abs(g[5] - w[5]) < 0.005 * w[5] + 5, (g, w)
    # the global timer as read is only good to its microsecond ticks
    coarse = wp.chrome_trace(data, clock="globaltimer")
    assert all(abs(e["dur"] * 1e3 % 1000) < 1e-6 or abs(e["dur"] * 1e3 % 1000 - 1000) < 1e-6
               for e in coarse["traceEvents"] if e["ph"] == "X")


def test_dropped_and_unbalanced_events_are_reported():
    names = {0: "a", 1: "b"}
    ev = lambda t, rid, end, warp=0: (t, t * 2, 3, warp, rid, end, 7, warp)  # noqa: E731
    full = [ev(100 * i, 0, i % 2 == 1) for i in range(10)]         # 5 begin/end pairs into a slot of 4
    unbalanced = [ev(10, 0, False, 1), ev(20, 1, True, 1), ev(30, 1, True, 1)]
    orphan = [ev(40, 1, True, 2)]
    raw = encode((4, 4), {0: full, 2: unbalanced, 3: orphan}, unrecorded=17)
    data = wp.decode(raw, 4, 4, names)
    assert data.dropped == {0: 6} and len(data.events) == 4 + 3 + 1 and data.unrecorded == 17
    found, problems = wp.spans(data)
    assert len([s for s in found if s.warp == 0]) == 2
    text = "\n".join(problems)
    assert "6 events dropped in 1 warps" in text and "17 events of warps beyond the buffer's slots" in text
    assert text.count("CTA 7 warp 1: end of 'b' inside 'a'") == 2  # stray ends leave the open region open
    assert "CTA 7 warp 1: 'a' never ended" in text and "CTA 7 warp 2: end of 'b' without a begin" in text
    with pytest.raises(DSLError, match="expected"):
        wp.decode(raw[:-1], 4, 4, names)
    with pytest.raises(DSLError, match="clock"):
        wp.chrome_trace(data, clock="wallclock")


def test_empty_buffer_gives_an_empty_trace():
    data = wp.decode(bytes(2 * 8 * 32 + 2 * 4 + 8), 2, 8, {})
    t = wp.chrome_trace(data)
    assert t["traceEvents"] == [] and t["otherData"]["problems"] == []


# --- on the GPU ------------------------------------------------------------------------------------------------------

@requires_gpu
def test_profiled_tensorop_gemm_records_every_warp(tmp_path):
    import torch
    import tensorop_gemm as tg

    M, N, K = 1024, 1024, 512
    a = torch.randn(1, M, K, device="cuda", dtype=torch.float16).permute(1, 2, 0)
    b = torch.randn(1, N, K, device="cuda", dtype=torch.float16).permute(1, 2, 0)
    c = torch.zeros(1, M, N, device="cuda", dtype=torch.float16).permute(1, 2, 0)
    args = [tg._as_runtime(t, False, cutlass.Float16) for t in (a, b, c)]
    gemm = tg.TensorOpGemm(cutlass.Float16, cutlass.Float16, cutlass.Float32, (2, 2, 1))
    ctas, warps = (M // 128) * (N // 128), 4
    prof = wp.Profiler(max_warps=2 * ctas * warps, events_per_warp=8)
    compiled = prof.compile(gemm, *args)
    compiled(*args)
    ref = torch.einsum("mkl,nkl->mnl", a.float(), b.float())
    torch.testing.assert_close(c.float(), ref, atol=0.5, rtol=1e-2)
    trace = prof.write_trace(str(tmp_path / "gemm.json"))
    assert trace["otherData"]["problems"] == []
    xs = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    by_warp = {}
    for e in xs:
        by_warp.setdefault((e["args"]["cta"], e["args"]["warp"]), {})[e["name"]] = e
    assert len(by_warp) == ctas * warps
    for regions in by_warp.values():
        main, epi = regions["mainloop"], regions["epilogue"]
        assert main["dur"] > 0 and epi["dur"] > 0 and main["ts"] + main["dur"] <= epi["ts"] + 1e-3
        assert main["pid"] == epi["pid"] and main["tid"] == epi["tid"]
    assert len({e["pid"] for e in xs}) > 1  # the CTAs ran on several SMs


@requires_gpu
def test_persistent_gemm_trace_shows_producer_and_consumer_warps(tmp_path):
    import torch

    dg = _persistent_example()

    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the persistent GEMM is an sm_90a kernel")
    path = tmp_path / "persistent.json"
    dg.run((2048, 2048, 1024, 1), cutlass.Float16, cutlass.Float16, cutlass.Float16, cutlass.Float32, "k", "k", "n",
           profile=str(path))
    trace = json.loads(path.read_text())
    assert trace["otherData"]["problems"] == []
    xs = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    roles = {}
    for e in xs:
        roles.setdefault(e["name"], set()).add(e["args"]["warp"])
    assert roles["load"] == {0}                        # the producer's TMA warp
    assert roles["mainloop"] == roles["epilogue"] == set(range(4, 12))  # the two consumer warpgroups
    tiles = (2048 // 128) * (2048 // 256)
    assert sum(e["name"] == "load" for e in xs) == tiles  # one load region per tile, over all CTAs
    assert sum(e["name"] == "epilogue" for e in xs) == tiles * 8
