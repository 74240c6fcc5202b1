"""same_source_variants.py, the A/B harness that times CuTe DSL's programs under warpweave with variants of warpweave
applied from outside, without a GPU: its arguments, each variant's patch (applied, it changes what it names in a
compiled kernel and counts the times it was reached; undone, the kernel is the build's again), the timing table's
ratios, the launch recorder (launch_recorder.c, preloaded over the stand-in driver), and, where CuTe DSL's example
programs are checked out, the compile-only table of which variants change the Hopper persistent GEMMs' code."""
import ctypes  # noqa: F401 - the recorder's test program below uses it in its own process
import importlib.util
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import _core
from warpweave.cute.runtime import from_dlpack

import aot_helpers as aot
from dsl_helpers import fresh_compilations, target  # noqa: F401 - the fixture
from host_stand_in import stand_in  # noqa: F401 - the fixture
from test_barrier_loops_stay_rolled import _compile as compile_barrier_loop, _loop_annotations
from test_launch_keywords import compiled_with
from test_pipelines import fake_args, make_kernel

pytestmark = pytest.mark.usefixtures("fresh_compilations")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "benchmarks", "python")


def _load(name):
    if BENCH not in sys.path:
        sys.path.insert(0, BENCH)
    spec = importlib.util.spec_from_file_location(name, os.path.join(BENCH, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


patches = _load("same_source_variant_patches")
variants = _load("same_source_variants")


# --- arguments ------------------------------------------------------------------------------------------------

def test_variant_names_are_checked_and_all_expands():
    assert patches.parse("baseline, l2_promotion_none,,l2_promotion_none") == ["baseline", "l2_promotion_none"]
    assert patches.parse("all") == list(patches.VARIANTS)
    assert patches.parse("cubin_ptxas@/opt/cuda-12.9/bin") == ["cubin_ptxas@/opt/cuda-12.9/bin"]
    for bad in ("l2_promotion_9B", "lane_idx_from_tid@/x", "nothing"):
        with pytest.raises(patches.VariantError, match="unknown variant"):
            patches.parse(bad)


def test_runner_arguments():
    ns = variants.parse_args(["/c", "--compile-only", "--variants", "lane_idx_from_tid"])
    assert ns.variant_names == ["baseline", "lane_idx_from_tid"]  # the baseline is always run
    ns = variants.parse_args(["/c", "--no-cutedsl", "--variants", "all", "--rounds", "3", "--ncu", "x.py"])
    assert ns.variant_names == list(patches.VARIANTS) and ns.rounds == 3 and ns.ncu == "x.py"
    with pytest.raises(SystemExit):
        variants.parse_args(["/c"])  # timing with a CuTe DSL column needs its interpreter
    with pytest.raises(SystemExit):
        variants.parse_args(["/c", "--compile-only", "--variants", "no_such_variant"])


def test_the_drivers_apply_their_variant_before_the_shared_timers_driver():
    text = variants.driver_text("lane_idx_from_tid")
    assert text.index("_variants.apply(['lane_idx_from_tid'])") < text.index(variants.BENCHMARK_CALLS_DRIVER)
    assert variants.driver_text("baseline") == variants.driver_text(None) == variants.BENCHMARK_CALLS_DRIVER
    compile(text, "driver", "exec")


# --- the patches, each on a kernel compiled here -----------------------------------------------------------------

def _pipeline_ptx():
    run, _ = make_kernel(3)
    with target("sm_90a"):
        return cute.compile(run, *fake_args())


def _lane_ptx():
    @cute.kernel
    def lanes(g: cute.Tensor):
        x, _, _ = cute.arch.thread_idx()
        g[x] = cute.arch.lane_idx()

    @cute.jit
    def host(g):
        lanes(g).launch(grid=[1, 1, 1], block=[64, 1, 1])

    with target("sm_90a"):
        return cute.compile(host, from_dlpack(np.zeros(64, np.int32))).ptx


def test_lane_idx_from_tid():
    assert "%laneid" in _lane_ptx()
    with patches.applied("lane_idx_from_tid"):
        ptx = _lane_ptx()
        assert patches.hits("lane_idx_from_tid") == 1
    assert "%laneid" not in ptx and re.search(r"and\.b32\s+%r\d+, %r\d+, 31;", ptx), ptx
    assert "%laneid" in _lane_ptx()  # undone


def test_mbarrier_wait_divergent():
    def edges(ptx):
        return re.findall(r"ww_wait: mbarrier\.try_wait\.parity[^;]*; @!ww_done (bra(?:\.uni)?) ww_wait;", ptx)
    base = edges(_pipeline_ptx().ptx)
    assert base and set(base) == {"bra.uni"}
    with patches.applied("mbarrier_wait_divergent"):
        ptx = _pipeline_ptx().ptx
        assert patches.hits("mbarrier_wait_divergent") == len(base)
    assert edges(ptx) == ["bra"] * len(base)
    assert set(edges(_pipeline_ptx().ptx)) == {"bra.uni"}


@pytest.mark.parametrize("n", [2, 4])
def test_runtime_loops_traced_n_trips_to_a_loop_trip(n):
    def waits(c):
        return c.ptx.count("ww_wait:")
    base = _pipeline_ptx()
    assert base.ir.count('"scf.for"') == 1
    # the kernel waits twice before its loop (the prologue's acquires), the rest in each trip of the loop
    per_trip = waits(base) - 2
    assert per_trip > 0
    with patches.applied(f"runtime_loops_unroll_{n}"):
        c = _pipeline_ptx()
        assert patches.hits(f"runtime_loops_unroll_{n}") == 1
    assert c.ir.count('"scf.for"') == 2          # the loop of n trips a trip, then the loop of the rest
    assert waits(c) == 2 + (n + 1) * per_trip
    assert waits(_pipeline_ptx()) == waits(base)


def test_barrier_loops_unannotated():
    assert _loop_annotations(compile_barrier_loop(barrier=True).ir) == ["disable = true"]
    with patches.applied("barrier_loops_unannotated"):
        ir = compile_barrier_loop(barrier=True).ir
        assert patches.hits("barrier_loops_unannotated") == 1
    assert _loop_annotations(ir) == []
    assert _loop_annotations(compile_barrier_loop(barrier=True).ir) == ["disable = true"]


def test_cluster_1x1_declared():
    launch = dict(grid=[4, 1, 1], block=[32, 1, 1], cluster=[1, 1, 1])
    assert ".reqnctapercluster" not in compiled_with(**dict(launch)).ptx
    with patches.applied("cluster_1x1_declared"):
        c = compiled_with(**dict(launch))
        two = compiled_with(grid=[4, 2, 1], block=[32, 1, 1], cluster=[1, 2, 1])
        assert patches.hits("cluster_1x1_declared") == 1  # a cluster of several blocks is compiled in anyway
    assert ".explicitcluster" in c.ptx and ".reqnctapercluster 1, 1, 1" in c.ptx
    assert ".reqnctapercluster 1, 2, 1" in two.ptx
    assert ".reqnctapercluster" not in compiled_with(**dict(launch)).ptx


def test_l2_promotion_variants_set_the_tensor_maps_promotion():
    from warpweave.backends.hopper import tma

    assert tma.L2_PROMOTION == "128B"
    for value in ("none", "64B", "256B"):
        with patches.applied(f"l2_promotion_{value}"):
            assert tma.L2_PROMOTION == value
        assert tma.L2_PROMOTION == "128B"


def test_before_10af8d9_applies_the_five_and_undoes_them():
    from warpweave._dsl.device import arch
    from warpweave._dsl.host import kernel_trace
    from warpweave._dsl.tracing import loops
    from warpweave.backends.hopper import tma

    before = (arch.lane_idx, kernel_trace.trace_kernel, loops.rolled_if_synchronised, tma.L2_PROMOTION)
    with patches.applied("before_10af8d9_python"):
        assert tma.L2_PROMOTION == "none"
        assert arch.lane_idx is not before[0] and kernel_trace.trace_kernel is not before[1]
        assert loops.rolled_if_synchronised is not before[2]
    assert (arch.lane_idx, kernel_trace.trace_kernel, loops.rolled_if_synchronised, tma.L2_PROMOTION) == before
    assert not hasattr(kernel_trace, "_variant_hit")


def test_tma_cache_hint_rewrites_every_tma_template_of_hopper():
    from warpweave._dsl.registry.plugins import registry

    registry.load()
    b = registry.backends["hopper"]
    templates = {e["ptx_template"] for e in b.atoms + b.primitives + list(b.all_instances())
                 if "cp.async.bulk.tensor" in e.get("ptx_template", "")}
    # loads and stores of ranks 1 to 5, and the multicast loads (a block with the mask's conversion)
    assert len(templates) == 15 and sum(t.startswith("{") for t in templates) == 5, sorted(templates)
    for t in templates:
        new = patches._with_cache_hint(t)
        assert new.count(".L2::cache_hint") == 1 and new.count(", ww_policy;") == 1, new
        assert re.search(r"cp\.async\.bulk\.tensor\.\dd\.\S+\.L2::cache_hint ", new), new
        plain = (new.replace(".L2::cache_hint", "").replace(", ww_policy;", ";").replace(patches._POLICY, "")
                 .replace("mov.b64 ww_policy, 0; ", ""))
        assert plain == (t if t.startswith("{") else "{ " + t + " }"), (t, new)
    for other in ("mbarrier.arrive.shared::cta.b64 _, [$0];",
                  "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.bulk_group [$0, {$2, $3}], [$1];"):
        assert patches._with_cache_hint(other) is None


def test_cutedsl_random_fill_leaves_the_upper_bound_out():
    pytest.importorskip("torch")
    import warpweave.torch as cutlass_torch

    def values():
        return set(cutlass_torch.matrix(1, 64, 64, False, cutlass.Float16).unique().tolist())
    assert values() == {-2.0, -1.0, 0.0, 1.0, 2.0}
    with patches.applied("cutedsl_random_fill"):
        assert values() == {-2.0, -1.0, 0.0, 1.0}   # CuTe DSL's cutlass.torch.matrix gives these
        assert patches.hits("cutedsl_random_fill") == 1
    assert values() == {-2.0, -1.0, 0.0, 1.0, 2.0}


def test_python_call_path_builds_no_native_path(stand_in):  # noqa: F811 - the fixture
    def compiled():
        with target("sm_90a"):
            c = stand_in(compiled_with(grid=[2, 1, 1], block=[32, 1, 1]))
        c(from_dlpack(np.zeros(32, np.float32)))
        return c
    assert compiled()._native is not None
    with patches.applied("python_call_path"):
        c = compiled()
        c(from_dlpack(np.zeros(32, np.float32)))
        assert c._native is None and patches.hits("python_call_path") >= 1
    assert compiled()._native is not None


def test_cubin_ptxas_sets_the_tool_for_the_block():
    before = os.environ.get("WARPWEAVE_CUBIN_TOOL")
    with patches.applied("cubin_ptxas"):
        assert os.environ["WARPWEAVE_CUBIN_TOOL"] == "ptxas"
    assert os.environ.get("WARPWEAVE_CUBIN_TOOL") == before
    with pytest.raises(patches.VariantError, match="no ptxas"):
        with patches.applied("cubin_ptxas@/nonexistent/folder"):
            pass
    assert os.environ.get("WARPWEAVE_CUBIN_TOOL") == before


def test_a_rewrite_refuses_code_that_changed():
    from warpweave._dsl.host import kernel_trace

    with pytest.raises(patches.VariantError, match="no longer contains"):
        patches._rewrite(kernel_trace, "trace_kernel", "this text is not in the function", "", "v")
    patches.undo()
    assert not hasattr(kernel_trace, "_variant_hit")


# --- the timing table ------------------------------------------------------------------------------------------

def _side(us_rounds, ok=True, hits=None, host=None):
    calls = [dict(us=sorted(us_rounds)[len(us_rounds) // 2], us_rounds=us_rounds)] if ok else []
    if host is not None:
        calls[0]["host_us"] = host
    return dict(ok=ok, calls=calls, hits=hits or {}, detail="exit 0" if ok else "RuntimeError: boom")


def test_timing_table_ratios_and_spread():
    rows = {"cute/x/dense_gemm_persistent.py": {
        "cutedsl": _side([100.0, 100.0]), "baseline": _side([104.0, 106.0], host=12.25),
        "l2_promotion_none": _side([100.0, 100.0], hits={"l2_promotion_none": 3}),
        "cubin_ptxas": _side([], ok=False)}}
    lines = []
    variants.print_timing_table(rows, report=lines.append)
    text = "\n".join(lines)
    row = {l.split()[1]: l.split() for l in lines[1:] if l.startswith("dense_gemm_persistent.py")}
    assert row["baseline"][2:6] == ["106.0", "1.000", "0.943", "12.2"]
    assert row["l2_promotion_none"][2:6] == ["100.0", "1.060", "1.000", "-"] and "l2_promotion_none=3" in text
    assert row["cubin_ptxas"][2] == "FAIL" and "RuntimeError: boom" in text
    assert "baseline spread over rounds: 1.9" in text


def test_rounds_combine_to_medians_host_time_too():
    runs = [dict(ok=True, calls=[dict(us=u, host_us=h, workspaces=2)], wall_s=1.0)
            for u, h in ((10.0, 3.0), (12.0, 5.0), (11.0, 4.0))]
    (call,) = variants.combine_rounds(runs)["calls"]  # same_source_benchmark_calls.combine_rounds
    assert (call["us"], call["host_us"], call["us_rounds"]) == (11.0, 4.0, [10.0, 12.0, 11.0])


# --- the launch recorder ------------------------------------------------------------------------------------------

RECORDED = r'''
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
buf = (ctypes.c_ubyte * 192)()
addr = (ctypes.addressof(buf) + 63) // 64 * 64
U64, U32 = ctypes.c_ulonglong * 3, ctypes.c_uint * 3
for swizzle in (3, 3, 2):   # the driver's entry by dlsym
    assert lib.cuTensorMapEncodeTiled(ctypes.c_void_p(addr), 6, 3, ctypes.c_void_p(0x1000), U64(4096, 4096, 1),
                                      U64(8192, 8192 * 4096), U32(64, 128, 1), U32(1, 1, 1), 0, swizzle, 2, 0) == 0
class Attr(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("words", ctypes.c_uint * 16)]
class Config(ctypes.Structure):
    _fields_ = [("dims", ctypes.c_uint * 7), ("stream", ctypes.c_void_p), ("attrs", ctypes.POINTER(Attr)),
                ("n", ctypes.c_uint)]
fn = ctypes.c_void_p()   # the entry through cuGetProcAddress_v2, as CUDA's runtime and warpweave's take it
assert lib.cuGetProcAddress_v2(b"cuLaunchKernelEx", ctypes.byref(fn), 12080, ctypes.c_ulonglong(0), None) == 0
launch = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(Config), ctypes.c_char_p, ctypes.c_void_p,
                          ctypes.c_void_p)(fn.value)
attrs = (Attr * 1)()
attrs[0].id = 4
attrs[0].words[0], attrs[0].words[1], attrs[0].words[2] = 1, 1, 1
config = Config((ctypes.c_uint * 7)(1, 1, 132, 256, 1, 1, 214016), None, attrs, 1)
for _ in range(3):
    assert launch(ctypes.byref(config), b"kernel_cutlass_kernel", None, None) == 0
'''


@pytest.fixture
def recorder(tmp_path):
    if aot.cc() is None:
        pytest.skip("no C compiler to build the recorder and the stand-in driver")
    so = tmp_path / "launch_recorder.so"
    subprocess.run([aot.cc(), "-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o", str(so),
                    os.path.join(BENCH, "launch_recorder.c"), "-ldl"], check=True)
    return str(so)


def test_launch_recorder_writes_each_distinct_call_once_with_its_count(tmp_path, recorder):
    mock = os.path.join(aot.build_mock_driver(str(tmp_path)), "libcuda.so.1")
    log = tmp_path / "launches.log"
    (tmp_path / "t.py").write_text(RECORDED)
    r = subprocess.run([sys.executable, str(tmp_path / "t.py"), mock], capture_output=True, text=True,
                       env=dict(os.environ, LD_PRELOAD=recorder, WW_LAUNCH_LOG=str(log)))
    assert r.returncode == 0, r.stderr
    lines = log.read_text().splitlines()
    maps = [l for l in lines if l.startswith("tensormap")]
    assert maps == ["tensormap dtype 6 rank 3 dims 4096 4096 1 strides 8192 33554432 box 64 128 1 elem 1 1 1 "
                    "interleave 0 swizzle 3 l2 2 oob 0",
                    "tensormap dtype 6 rank 3 dims 4096 4096 1 strides 8192 33554432 box 64 128 1 elem 1 1 1 "
                    "interleave 0 swizzle 2 l2 2 oob 0"]
    (launch,) = [l for l in lines if l.startswith("launch")]
    assert launch.startswith("launch grid 1 1 132 block 256 1 1 smem 214016 attr 4 1 1 1 0 kernel ")
    assert "count 2 " + maps[0] in lines and "count 1 " + maps[1] in lines and "count 3 " + launch in lines
    assert variants.recorded_lines(str(log)) == ["2 " + maps[0], "1 " + maps[1], "3 " + launch]


LAUNCHING = '''
import numpy as np
import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack


@cute.kernel
def touch(x: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    x[tidx] = 1.0


@cute.jit
def host(x: cute.Tensor):
    touch(x).launch(grid=[6, 1, 1], block=[32, 1, 1], cluster=[1, 1, 1])


x = from_dlpack(np.zeros(32, np.float32))
for _ in range(4):
    host(x)
print("launched")
'''


def test_the_recorder_sees_warpweaves_launches(tmp_path, recorder):
    log = tmp_path / "ww.log"
    out = aot.run_on_stand_in(tmp_path, "launching.py", LAUNCHING, LD_PRELOAD=recorder, WW_LAUNCH_LOG=str(log),
                              WARPWEAVE_DISABLE_CACHE="1")
    assert "launched" in out
    launches = [l for l in log.read_text().splitlines() if l.startswith("count") and " launch " in l]
    assert len(launches) == 1 and launches[0].startswith("count 4 launch grid 6 1 1 block 32 1 1 smem 0"), launches
    assert " attr 4 1 1 1 " in launches[0]  # the one-block cluster is given at launch


# --- compile-only, on CuTe DSL's own programs -------------------------------------------------------------------

CUTLASS = os.environ.get("WARPWEAVE_CUTLASS_DIR", "")


@pytest.mark.skipif(not os.path.isdir(os.path.join(CUTLASS, "examples/python/CuTeDSL/cute/hopper")),
                    reason="WARPWEAVE_CUTLASS_DIR names no checkout of NVIDIA/cutlass (CuTe DSL's programs are "
                           "fetched, never committed)")
@pytest.mark.skipif(not _core.sass_tool_available(), reason="no SASS disassembler (nvdisasm) installed")
def test_compile_only_says_which_variants_change_the_persistent_gemm(tmp_path):
    py = os.environ.get("WARPWEAVE_EXAMPLES_PYTHON", sys.executable)
    if subprocess.run([py, "-c", "import torch, cuda.bindings"], capture_output=True).returncode:
        pytest.skip(f"{py} lacks torch or cuda-bindings, which CuTe DSL's examples import "
                    "(set WARPWEAVE_EXAMPLES_PYTHON)")
    ns = variants.parse_args([CUTLASS, "--compile-only", "--only", "dense_gemm_persistent.py", "--variants",
                              "l2_promotion_none,lane_idx_from_tid,tma_cache_hint_zero"])
    (rel,) = variants.select_programs(CUTLASS, ns.only)
    results = {v: variants.compile_variant(CUTLASS, rel, v, "sm_90a", [], str(tmp_path), 300, py, None)
               for v in ns.variant_names}
    assert all(r["ok"] for r in results.values()), {v: r["detail"] for v, r in results.items() if not r["ok"]}
    (kernel,) = results["baseline"]["kernels"]
    base = results["baseline"]["kernels"][kernel]
    l2 = results["l2_promotion_none"]
    assert l2["variant"]["hits"] == {"l2_promotion_none": 3}   # A, B and C's tensor maps; the code is the same
    assert l2["kernels"][kernel]["sass_digest"] == base["sass_digest"]
    lane = results["lane_idx_from_tid"]["kernels"][kernel]
    assert lane["sass_digest"] != base["sass_digest"] and lane["opcodes"].get("S2R", 0) < base["opcodes"]["S2R"]
    hint = results["tma_cache_hint_zero"]
    assert hint["variant"]["hits"]["tma_cache_hint_zero"] == 10  # the mainloop's loads and the epilogue's stores
    assert hint["kernels"][kernel]["instructions"] == base["instructions"]
    lines = []
    variants.print_compile_table({rel: results}, report=lines.append)
    assert any("lane_idx_from_tid" in l and "differs" in l for l in lines)
