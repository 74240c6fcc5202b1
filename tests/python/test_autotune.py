"""Autotuning (cute.testing.autotune_jit / tune): the table's keys, persistence across processes, candidates that
fail to compile or compute otherwise, the compile-only path, parallel compilation, and the progress bar. The
timing itself needs a GPU (the last test); without one the search's timer and device are stood in for where a
test needs a finished search."""
import io
import json
import os
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.tuning import autotune
from warpweave.cute.runtime import make_fake_compact_tensor
from warpweave.progress import Progress

from dsl_helpers import requires_gpu, target

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "frontend_python", "examples"))
from elementwise_add import elementwise_add  # noqa: E402


def fake(shape=(256, 512), dtype=cutlass.Float16):
    return make_fake_compact_tensor(dtype, shape, stride_order=tuple(reversed(range(len(shape)))))  # row-major


# --- keys ----------------------------------------------------------------------------------------------------------

def test_table_key_changes_with_each_part_and_only_with_them():
    parts = {"kernel": ["k1", "k2"], "device": ["NVIDIA H200 sm_90 x132", "NVIDIA A100 sm_80 x108"],
             "arguments": ["a1", "a2"], "space": ["s1", "s2"]}
    keys = {}
    for k in parts["kernel"]:
        for d in parts["device"]:
            for a in parts["arguments"]:
                for s in parts["space"]:
                    keys[(k, d, a, s)] = autotune.TuningTable.key(k, d, a, s)
    assert len(set(keys.values())) == len(keys)  # every combination its own entry
    assert all(autotune.TuningTable.key(*combo) == key for combo, key in keys.items())  # and stable


def test_arguments_identity_tracks_shapes_dtypes_and_update_on_change_values():
    same = autotune.arguments_identity([("a", fake()), ("M", 256)], {})
    assert same == autotune.arguments_identity([("a", fake()), ("M", 256)], {})
    assert same != autotune.arguments_identity([("a", fake((256, 256))), ("M", 256)], {})
    assert same != autotune.arguments_identity([("a", fake(dtype=cutlass.Float32)), ("M", 256)], {})
    assert same != autotune.arguments_identity([("a", make_fake_compact_tensor(cutlass.Float16, (256, 512),
                                                                                stride_order=(0, 1))), ("M", 256)], {})
    # a scalar counts by value only when it is named in update_on_change
    assert same == autotune.arguments_identity([("a", fake()), ("M", 1024)], {})
    by_value = autotune.arguments_identity([("a", fake()), ("M", 256)], {}, {"M"})
    assert by_value != autotune.arguments_identity([("a", fake()), ("M", 1024)], {}, {"M"})
    assert by_value == autotune.arguments_identity([("a", fake()), ("M", 256)], {}, {"M"})


def _write_module(path, body):
    path.write_text(textwrap.dedent(body))
    os.utime(path, ns=(os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns + 10_000_000))


def test_kernel_identity_follows_the_source_file(tmp_path):
    import importlib.util

    def load(name):
        spec = importlib.util.spec_from_file_location(name, tmp_path / "tuned_mod.py")
        m = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(m)
        return m

    _write_module(tmp_path / "tuned_mod.py", """
        def helper(x):
            return x + 1

        def build(a, tile=64):
            return lambda: helper(a)
    """)
    first = autotune.kernel_identity(load("tuned_mod").build)
    assert first == autotune.kernel_identity(load("tuned_mod").build)  # the same source: the same identity
    _write_module(tmp_path / "tuned_mod.py", """
        def helper(x):
            return x + 2

        def build(a, tile=64):
            return lambda: helper(a)
    """)
    assert autotune.kernel_identity(load("tuned_mod").build) != first  # a helper of the file changed: retune
    assert autotune.kernel_identity(elementwise_add) != first


def test_search_space_is_the_product_in_order_and_refuses_bad_input():
    space = autotune.search_space({"a": [1, 2], "b": ["x", "y", "z"]})
    assert [tuple(c.values()) for c in space] == [(i, s) for i in (1, 2) for s in "xyz"]
    with pytest.raises(Exception, match="no value"):
        autotune.search_space({"a": []})
    with pytest.raises(Exception, match="list of values"):
        autotune.search_space({"a": 3})
    with pytest.raises(Exception, match="no parameter 'tile'"):
        cute.testing.autotune_jit(params_dict={"tile": [1, 2]})(elementwise_add)
    with pytest.raises(Exception, match="no parameter 'K'"):
        cute.testing.autotune_jit(params_dict={"copy_bits": [64]}, update_on_change=["K"])(elementwise_add)


# --- the compile-only path (no GPU) --------------------------------------------------------------------------------

def test_compile_only_compiles_every_candidate_and_skips_those_that_fail(tmp_path, monkeypatch):
    monkeypatch.setenv("WARPWEAVE_CACHE_DIR", str(tmp_path / "cache"))
    from warpweave._dsl.call import compile_module
    monkeypatch.setattr(compile_module, "_cache", None)
    tuned = cute.testing.autotune_jit(params_dict={"copy_bits": [32, 8, 128]})(elementwise_add)
    with target("sm_80"), warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        cfg = tuned.best_config(fake(), fake(), fake())
    assert cfg == {"copy_bits": 128}  # the function's default: nothing was timed
    left_out = [x for x in w if issubclass(x.category, cute.testing.CandidateWarning)]
    assert len(left_out) == 1 and "{'copy_bits': 8}" in str(left_out[0].message)
    assert "did not compile" in str(left_out[0].message)
    assert left_out[0].filename == __file__  # the warning names the caller's line
    trials = {t.config["copy_bits"]: t for t in tuned.last_search.trials}
    assert trials[8].error and trials[8].compiled is None
    assert trials[32].compiled is not None and trials[128].compiled is not None
    assert trials[32].compiled.cubin != trials[128].compiled.cubin  # two distinct kernels were built
    assert not (tmp_path / "cache" / "autotune").exists()  # nothing timed, nothing stored


def test_every_candidate_failing_is_an_error_naming_each():
    tuned = cute.testing.autotune_jit(params_dict={"copy_bits": [8, 4]})(elementwise_add)
    with target("sm_80"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception, match=r"(?s)no configuration.*'copy_bits': 8.*'copy_bits': 4") as e:
            tuned.best_config(fake(), fake(), fake())
    assert "extents must be positive" in str(e.value)


def test_parallel_compilation_builds_the_same_kernels_as_one_at_a_time(monkeypatch):
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")  # each compile really traces and compiles
    space = autotune.search_space({"copy_bits": [16, 32, 64, 128]})
    cubins = {}
    for workers in (1, 3):
        trials = [autotune.Trial(c) for c in space]
        with target("sm_80"):
            autotune.compile_all(trials, lambda cfg: cute.compile(elementwise_add, fake(), fake(), fake(), **cfg),
                                 workers, "t")
        assert all(t.error is None for t in trials), [t.error for t in trials]
        cubins[workers] = [t.compiled.cubin for t in trials]
    assert cubins[1] == cubins[3]
    assert len(set(cubins[1])) == len(space)


def test_worker_processes_hand_their_compilations_to_the_parent_through_the_cache():
    tuned = cute.testing.autotune_jit(params_dict={"copy_bits": [16, 32, 64, 128]}, processes=2)(elementwise_add)
    with target("sm_80"):
        assert tuned.best_config(fake(), fake(), fake()) == {"copy_bits": 128}
    trials = tuned.last_search.trials
    # every candidate was compiled by a worker: the parent's compile found it before tracing
    assert [t.compiled.info.get("level") for t in trials] == ["function"] * 4
    with target("sm_80"):
        direct = [cute.compile(elementwise_add, fake(), fake(), fake(), copy_bits=b) for b in (16, 32, 64, 128)]
    assert [t.compiled.cubin for t in trials] == [d.cubin for d in direct]


def test_what_cannot_go_to_a_worker_compiles_on_threads(monkeypatch):
    from warpweave._dsl.tuning import autotune_workers
    from warpweave._dsl.call.jit import JitFunction
    from warpweave._dsl.registry.target import target_named

    def local(a, b, c, copy_bits: cutlass.Constexpr = 128):
        elementwise_add(a, b, c, copy_bits)

    with pytest.raises(autotune_workers.NotShippable, match="local to a function"):
        autotune_workers.plan(JitFunction(local), (fake(),) * 3, {}, target_named("sm_80"))
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")
    with pytest.raises(autotune_workers.NotShippable, match="cache is off"):
        autotune_workers.plan(elementwise_add, (fake(),) * 3, {}, target_named("sm_80"))
    tuned = cute.testing.autotune_jit(params_dict={"copy_bits": [32, 128]}, processes=2)(JitFunction(local))
    with target("sm_80"):
        assert tuned.best_config(fake(), fake(), fake()) == {"copy_bits": 128}  # on threads, as without workers


def test_cute_compile_of_an_autotuned_function_compiles_the_configuration_given():
    tuned = cute.testing.autotune_jit(params_dict={"copy_bits": [32, 128]})(elementwise_add)
    with target("sm_80"):
        c32 = cute.compile(tuned, fake(), fake(), fake(), copy_bits=32)
        c_default = cute.compile(tuned, fake(), fake(), fake())
        ref = cute.compile(elementwise_add, fake(), fake(), fake(), copy_bits=32)
    assert c32.cubin == ref.cubin and c_default.cubin != c32.cubin
    assert tuned.last_search is None  # compiling is not tuning


def test_tune_in_compile_only_returns_the_default_of_func():
    calls = []

    def build(a, b, c, copy_bits=64):
        calls.append(copy_bits)
        compiled = cute.compile(elementwise_add, a, b, c, copy_bits=copy_bits)
        return lambda: compiled(a, b, c)

    with target("sm_90a"):
        cfg = cute.testing.tune(build, {"copy_bits": [32, 64, 128]}, cute.testing.JitArguments(fake(), fake(), fake()))
    assert cfg == {"copy_bits": 64} and sorted(calls) == [32, 64, 128]


# --- a finished search, with the device and the timer stood in for ------------------------------------------------

SEARCH_SCRIPT = r'''
import json, os, sys
import numpy as np
from warpweave._dsl.tuning import autotune
import warpweave.cute as cute

COST = {1: 30.0, 2: 10.0, 4: 20.0, 8: 5.0}    # microseconds each configuration "takes"
autotune.device_identity = lambda: os.environ["FAKE_DEVICE"]
autotune.time_call = lambda fn, ws, warmup, iters, stream: COST[fn.unroll]
calls = []

def build(x, out, unroll=1):
    calls.append(unroll)
    def run():
        out[...] = x * 2 + (1 if unroll == 8 else 0)    # unroll=8 is fast and wrong
    run.unroll = unroll
    return run

x = np.arange(int(sys.argv[1]), dtype=np.float32)
out = np.full_like(x, -1.0)
cfg = cute.testing.tune(build, {"unroll": [1, 2, 4, 8]}, cute.testing.JitArguments(x, out))
print(json.dumps({"config": cfg, "calls": calls, "out_chosen": bool((out == x * 2).all())}))
'''


def _search(tmp_path, n, device="fake GPU sm_90 x132"):
    script = tmp_path / "search.py"
    script.write_text(SEARCH_SCRIPT)
    env = dict(os.environ, FAKE_DEVICE=device, WARPWEAVE_CACHE_DIR=str(tmp_path / "cache"), PYTHONWARNINGS="always")
    r = subprocess.run([sys.executable, str(script), str(n)], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


def test_the_winner_persists_across_processes_per_device_and_shape(tmp_path):
    first, err = _search(tmp_path, 64)
    # unroll=8 is the fastest but computes otherwise than the reference (the default, unroll=1): left out
    assert first["config"] == {"unroll": 2} and sorted(first["calls"]) == [1, 2, 4, 8]
    assert "{'unroll': 8} is left out: wrong results" in err
    # the search restored the caller's arrays, then one run of the chosen configuration computed them
    assert first["out_chosen"]
    entries = list((tmp_path / "cache" / "autotune").rglob("*.json"))
    assert len(entries) == 1
    entry = json.loads(entries[0].read_text())
    assert entry["config"] == "{'unroll': 2}" and entry["time_us"] == 10.0 and entry["device"] == "fake GPU sm_90 x132"
    assert {t["config"]: t["time_us"] for t in entry["trials"]} == {
        "{'unroll': 1}": 30.0, "{'unroll': 2}": 10.0, "{'unroll': 4}": 20.0, "{'unroll': 8}": None}

    again, _ = _search(tmp_path, 64)
    # tuned from the table: only the winner is built, and run once on the arguments, as after the search
    assert again["config"] == {"unroll": 2} and again["calls"] == [2] and again["out_chosen"]

    other_shape, _ = _search(tmp_path, 128)
    assert sorted(other_shape["calls"]) == [1, 2, 4, 8]
    other_device, _ = _search(tmp_path, 64, device="fake GPU sm_100 x148")
    assert sorted(other_device["calls"]) == [1, 2, 4, 8]
    assert len(list((tmp_path / "cache" / "autotune").rglob("*.json"))) == 3

    # an entry that no longer names a candidate of the space (edited, or another space's) is not used
    entry["config"] = "{'unroll': 3}"
    entries[0].write_text(json.dumps(entry))
    stale, _ = _search(tmp_path, 64)
    assert sorted(stale["calls"]) == [1, 2, 4, 8]


def test_a_candidate_that_raises_while_running_is_left_out(monkeypatch):
    monkeypatch.setattr(autotune, "device_identity", lambda: "fake")
    monkeypatch.setattr(autotune, "time_call", lambda fn, *a: fn.cost)

    def build(out, mode="ok"):
        def run():
            if mode == "fault":
                raise RuntimeError("an illegal memory access")
            out[0] = 1.0
        run.cost = {"ok": 3.0, "fault": 1.0, "slow": 9.0}[mode]
        return run

    out = np.zeros(4, np.float32)
    with pytest.warns(cute.testing.CandidateWarning, match="'fault'.*illegal memory access"):
        cfg = cute.testing.tune(build, {"mode": ["ok", "fault", "slow"]}, cute.testing.JitArguments(out),
                                use_table=False)
    assert cfg == {"mode": "ok"}


def _accumulate(x, out, M, block=1):
    """out += x (an accumulating kernel: tuning must not leave its runs in the caller's out)."""
    out[...] += x + (0.5 if block == 8 else 0.0)   # block=8 computes otherwise


def test_autotune_jit_search_restores_arguments_and_runs_the_winner(tmp_path, monkeypatch):
    """The search of autotune_jit with its compiler and timer stood in for by Python (no GPU): every candidate
    starts from the caller's values, the winner runs once on them, and a second process-local function object
    over the same kernel is served from the table."""

    costs = {1: 9.0, 2: 4.0, 4: 6.0, 8: 1.0}
    built, timed_args = [], []

    def fake_compile(jf, args, kwargs, target=None):
        built.append(kwargs["block"])

        def run(*a, **k):
            bound = jf.signature.bind(*a, **k)
            bound.apply_defaults()
            jf.fn(**bound.arguments)
        run.cost = costs[kwargs["block"]]
        return run

    def fake_time(fn, workspaces, warmup, iterations, stream):
        timed_args.append(workspaces)
        for w in workspaces:
            fn(*w.args, **w.kwargs)
        return fn.cost

    monkeypatch.setattr(autotune, "compile_function", fake_compile)
    monkeypatch.setattr(autotune, "device_identity", lambda: "fake GPU")
    monkeypatch.setattr(autotune, "time_call", fake_time)
    monkeypatch.setattr(autotune, "compile_only_run", lambda *a, **k: False)
    monkeypatch.setattr(autotune, "workspace_count", lambda *a: 3)  # (from the device's L2 size)
    monkeypatch.setenv("WARPWEAVE_ARCH", "sm_80")  # the target the candidates would be compiled for
    from warpweave._dsl.call.jit import JitFunction

    kernel = JitFunction(_accumulate)
    x = np.arange(16, dtype=np.float32)
    out = np.ones(16, np.float32)
    tuned = cute.testing.autotune_jit(params_dict={"block": [1, 2, 4, 8]}, update_on_change=["M"])(kernel)
    with pytest.warns(cute.testing.CandidateWarning, match="'block': 8.*wrong results"):
        assert tuned.best_config(x, out, 16) == {"block": 2}
    assert sorted(built) == [1, 2, 4, 8]
    np.testing.assert_array_equal(out, 1.0)                   # the search left the caller's arrays as they were
    assert all(w.args[1] is not out for ws in timed_args for w in ws)  # timing ran on copies
    assert all(len(ws) == 3 and len(w.args) == 4 and w.args[3] in (1, 2, 4) for ws in timed_args for w in ws)
    tuned(x, out, 16)
    np.testing.assert_array_equal(out, 1.0 + x)               # the winner ran once, on the caller's arrays
    assert tuned.last_search.source == "memory"

    built.clear()
    again = cute.testing.autotune_jit(params_dict={"block": [1, 2, 4, 8]}, update_on_change=["M"])(kernel)
    assert again.best_config(x, out, 16) == {"block": 2} and again.last_search.source == "table"
    assert built == [2]                                       # only the winner is built, nothing timed
    built.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cute.testing.CandidateWarning)
        again.best_config(x, out, 32)                         # M is in update_on_change: a new search
    assert sorted(built) == [1, 2, 4, 8]
    # the caller fixing a tuned parameter: no search, that configuration runs
    built.clear()
    assert again.best_config(x, out, 16, block=4) == {} and built == []


def test_from_dlpack_views_are_checked_and_restored_through_their_memory(monkeypatch):
    from warpweave.cute.runtime import from_dlpack

    monkeypatch.setattr(autotune, "device_identity", lambda: "fake")
    monkeypatch.setattr(autotune, "time_call", lambda fn, *a: fn.cost)
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    views = (from_dlpack(x).mark_layout_dynamic(), from_dlpack(out).mark_layout_dynamic())

    def build(vx, vo, shift=0):
        def run():
            vo.source[...] += vx.source + shift     # shift != 0 computes otherwise
        run.cost = 5.0 - shift
        return run

    with pytest.warns(cute.testing.CandidateWarning, match="'shift': 1.*wrong results"):
        cfg = cute.testing.tune(build, {"shift": [0, 1]}, cute.testing.JitArguments(*views), use_table=False)
    assert cfg == {"shift": 0}
    np.testing.assert_array_equal(out, x)   # restored after the search, then one run of the chosen configuration
    copy = autotune.clone_tree(views)
    assert copy[1].source is not out and copy[1].spec() == views[1].spec()
    assert copy[1].dynamic_shape == views[1].dynamic_shape and copy[1].dynamic_shape is not views[1].dynamic_shape


# --- progress bar ---------------------------------------------------------------------------------------------------

class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_progress_is_quiet_off_a_terminal_and_drawn_on_one(monkeypatch):
    monkeypatch.delenv("WARPWEAVE_PROGRESS", raising=False)
    pipe = io.StringIO()
    with Progress("tune", 3, stream=pipe) as p:
        for _ in range(3):
            p.step()
    assert pipe.getvalue() == ""
    tty = _Tty()
    with Progress("tune", 4, stream=tty) as p:
        p.step(1)
        assert "1/4" not in tty.getvalue()  # at most ten redraws a second
        time.sleep(0.12)
        p.step(1, detail="copy_bits=64")
        assert "[###############...............] 2/4" in tty.getvalue() and "copy_bits=64" in tty.getvalue()
    assert tty.getvalue().endswith("\n") and "4/4" in tty.getvalue()
    monkeypatch.setenv("WARPWEAVE_PROGRESS", "0")
    assert Progress(stream=_Tty()).enabled is False
    monkeypatch.setenv("WARPWEAVE_PROGRESS", "1")
    assert Progress(stream=io.StringIO()).enabled is True


def test_conformance_bar_is_the_shared_one_and_keeps_its_notes():
    sys.path.insert(0, os.path.join(ROOT, "conformance"))
    from warpweave_conformance.report import Progress as SuiteProgress

    out = io.StringIO()
    p = SuiteProgress(stream=out)
    p.start("compile", 10)
    p.step(10)
    p.finish("compile tier: 10 probes in 1.0 s wall")
    assert isinstance(p, Progress) and out.getvalue() == "  compile tier: 10 probes in 1.0 s wall\n"


# --- on the GPU ------------------------------------------------------------------------------------------------------

@pytest.mark.timing  # asserts on measured kernel times, which a compute-sanitizer run distorts
@requires_gpu
def test_tuned_configuration_is_at_least_as_fast_as_the_default(tmp_path, monkeypatch):
    import torch

    monkeypatch.setenv("WARPWEAVE_CACHE_DIR", str(tmp_path / "cache"))
    from warpweave._dsl.call import compile_module
    monkeypatch.setattr(compile_module, "_cache", None)
    M, N = 4096, 4096
    a = torch.randn(M, N, device="cuda", dtype=torch.float16)
    b = torch.randn(M, N, device="cuda", dtype=torch.float16)
    c = torch.zeros_like(a)
    tuned = cute.testing.autotune_jit(params_dict={"copy_bits": [16, 32, 64, 128]}, warmup_iterations=20,
                                      iterations=100)(elementwise_add)
    tuned(a, b, c)
    torch.testing.assert_close(c, a + b)
    search = tuned.last_search
    assert search.timed and all(t.error is None for t in search.trials)
    best = search.best
    # Timed again, independently, against the default (copy_bits=128): not slower beyond noise.
    ws = lambda: cute.testing.JitArguments(torch.randn_like(a), torch.randn_like(b), torch.empty_like(c))  # noqa
    t_best = cute.testing.benchmark(cute.compile(elementwise_add, a, b, c, **best), workspace_generator=ws,
                                    workspace_count=4, warmup_iterations=20, iterations=200)
    t_default = cute.testing.benchmark(cute.compile(elementwise_add, a, b, c), workspace_generator=ws,
                                       workspace_count=4, warmup_iterations=20, iterations=200)
    if best != {"copy_bits": 128}:  # (the default itself trivially is)
        assert t_best <= t_default * 1.10, (best, t_best, t_default)
    assert search.best_time_us == min(t.time_us for t in search.trials)
    # a second function object over the same kernel starts tuned from the table
    again = cute.testing.autotune_jit(params_dict={"copy_bits": [16, 32, 64, 128]})(elementwise_add)
    c.zero_()
    again(a, b, c)
    assert again.last_search.source == "table" and again.last_search.best == best
    torch.testing.assert_close(c, a + b)
