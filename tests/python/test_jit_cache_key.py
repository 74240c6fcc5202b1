"""The JIT cache's first level, keyed before tracing (function_cache.py): a hit skips tracing and MLIR and gives
a working compiled function; each ingredient of the key, changed, is a miss; what has no stable key falls back
to tracing and says so; the module-text key stays the second level."""
import importlib
import json
import os
import subprocess
import sys
import textwrap

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.tracing import ast_rewrite
from warpweave._dsl.call import compile_module, function_cache
from warpweave.cute.runtime import make_fake_tensor

from dsl_helpers import target

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

KERNELS = '''
import warpweave as cutlass
import warpweave.cute as cute

SCALE = {scale}


@cute.kernel
def add_kernel(gA: cute.Tensor, gB: cute.Tensor, gC: cute.Tensor, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * 128 + tidx
    if i < n:
        gC[i] = gA[i] + gB[i] * SCALE


@cute.jit
def add(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, block: cutlass.Constexpr = 128):
    n = cute.size(mA)
    add_kernel(mA, mB, mC, n).launch(grid=[(n + block - 1) // block, 1, 1], block=[block, 1, 1])
'''


@pytest.fixture
def kernels(tmp_path, monkeypatch):
    """A module of kernels in a file of its own (edited by some tests), imported fresh."""
    d = tmp_path / "src"
    d.mkdir()
    monkeypatch.syspath_prepend(str(d))

    def write(scale=1.0, name="ww_cache_key_kernels"):
        path = d / f"{name}.py"
        path.write_text(KERNELS.format(scale=scale))
        sys.modules.pop(name, None)
        importlib.invalidate_caches()
        return importlib.import_module(name)

    yield write
    sys.modules.pop("ww_cache_key_kernels", None)


def tensors(n=4096, dtype=cutlass.Float32, dynamic=True):
    ts = [make_fake_tensor(dtype, (n,)) for _ in range(3)]
    return [t.mark_layout_dynamic() if dynamic else t for t in ts]


def level(compiled):
    """'function' for a hit before tracing, else the module-text level's 'hit' / 'miss'."""
    return "function" if compiled.info.get("level") == "function" else compiled.info["cache"]


def compile_twice(fn, *args, **kwargs):
    first = cute.compile(fn, *args, **kwargs)
    second = cute.compile(fn, *args, **kwargs)
    return first, second


def test_hit_skips_tracing_and_rebuilds_the_launch_plan(kernels, monkeypatch):
    mod = kernels()
    with target("sm_80"):
        first = cute.compile(mod.add, *tensors())
        assert level(first) == "miss" and first.info["function_cache"] == "stored"
        # A hit must not trace: no rewriting, no IR builder.
        monkeypatch.setattr(ast_rewrite, "rewrite", lambda fn: pytest.fail("a hit traced " + fn.__qualname__))
        second = cute.compile(mod.add, *tensors())
    assert level(second) == "function"
    assert second.timings["trace_s"] == 0.0
    assert second.cubin == first.cubin and second.ir == first.ir
    assert second.target == first.target
    assert [(p.kind, p.index, p.spec, p.dtype, p.symbols) for p in second.plans] == \
           [(p.kind, p.index, p.spec, p.dtype, p.symbols) for p in first.plans]
    assert len(second.launches) == len(first.launches) == 1
    a, b = first.launches[0], second.launches[0]
    assert (a.kernel, a.params, a.block, a.static_block) == (b.kernel, b.params, b.block, b.static_block)
    # The grid is an expression of the extent: the same values for every extent.
    from warpweave._dsl.host.launch_plan import eval_dim

    for n in (1, 127, 128, 129, 4096, 1 << 20):
        env = {sid: n for p in first.plans if p.kind == "tensor" for sid, what, _ in p.symbols}
        assert [eval_dim(x, env) for x in a.grid] == [eval_dim(x, env) for x in b.grid]
        assert first.assumptions.failed(env) == second.assumptions.failed(env)
    assert len(second.assumptions) == len(first.assumptions)


def test_each_ingredient_changed_misses(kernels, monkeypatch):
    mod = kernels()
    with target("sm_80"):
        base = tensors()
        assert level(cute.compile(mod.add, *base)) == "miss"
        assert level(cute.compile(mod.add, *base)) == "function"
        # Argument specialisation: element type, static extents, divisibility.
        assert level(cute.compile(mod.add, *tensors(dtype=cutlass.Float16))) != "function"
        assert level(cute.compile(mod.add, *tensors(dynamic=False))) != "function"
        div = [make_fake_tensor(cutlass.Float32, (4096,)).mark_compact_shape_dynamic(0, divisibility=16)
               for _ in range(3)]
        assert level(cute.compile(mod.add, *div)) != "function"
        # A compile-time argument.
        assert level(cute.compile(mod.add, *base, 256)) != "function"
        assert level(cute.compile(mod.add, *base, 256)) == "function"
        # Options.
        assert level(cute.compile(mod.add, *base, options="--opt-level=2")) != "function"
        assert level(cute.compile(mod.add, *base, options="--opt-level=2")) == "function"
    # The target.
    with target("sm_90a"):
        assert level(cute.compile(mod.add, *base)) != "function"
    with target("sm_80"):
        # The compiler's build.
        monkeypatch.setattr(compile_module, "_core_identity", "another build")
        assert level(cute.compile(mod.add, *base)) != "function"
        # The installed plugins.
        monkeypatch.setattr(function_cache, "_plugins_identity", lambda: "other plugins")
        assert level(cute.compile(mod.add, *base)) != "function"
        assert level(cute.compile(mod.add, *base)) == "function"


def test_source_and_module_constants_miss(kernels):
    mod = kernels(scale=1.0)
    with target("sm_80"):
        assert level(cute.compile(mod.add, *tensors())) == "miss"
        # A constant of the module the kernel reads, changed at run time (the file is the same).
        mod.SCALE = 2.0
        assert level(cute.compile(mod.add, *tensors())) != "function"
        mod.SCALE = 1.0  # one entry per key: the last trace's; the module text's level has the first cubin
        assert level(cute.compile(mod.add, *tensors())) == "hit"
        assert level(cute.compile(mod.add, *tensors())) == "function"
        # The source edited: the kernel (reached by the trace, not the jit function itself) differs.
        mod2 = kernels(scale=3.0)
        c = cute.compile(mod2.add, *tensors())
        assert level(c) != "function"
        assert "3.0" in c.ir or "3.000" in c.ir
        # A reached file touched: stale until proven otherwise.
        path = mod2.__file__
        st = os.stat(path)
        assert level(cute.compile(mod2.add, *tensors())) == "function"
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
        assert level(cute.compile(mod2.add, *tensors())) != "function"


def test_closure_identity_misses():
    def make(scale):
        @cute.kernel
        def k(gA: cute.Tensor, gC: cute.Tensor):
            tidx, _, _ = cute.arch.thread_idx()
            gC[tidx] = gA[tidx] * scale

        @cute.jit
        def run(mA: cute.Tensor, mC: cute.Tensor):
            k(mA, mC).launch(grid=[1, 1, 1], block=[32, 1, 1])

        return run

    ts = [make_fake_tensor(cutlass.Float32, (32,)) for _ in range(2)]
    with target("sm_80"):
        assert level(cute.compile(make(2.0), *ts)) == "miss"
        assert level(cute.compile(make(2.0), *ts)) == "function"  # a new function object, the same closure
        assert level(cute.compile(make(5.0), *ts)) != "function"


def opaque():
    import threading

    return threading.Lock()  # no state Python can see: known only by its address


def test_unstable_compile_time_argument_traces_and_says_why():
    @cute.kernel
    def k(gC: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        gC[tidx] = cutlass.Float32(1.0)

    @cute.jit
    def run(mC: cute.Tensor, tag):
        k(mC).launch(grid=[1, 1, 1], block=[32, 1, 1])

    t = make_fake_tensor(cutlass.Float32, (32,))
    with target("sm_80"):
        # A function object defined in a file, and a value with a stable key: cached.
        assert level(cute.compile(run, t, (1, "a"))) == "miss"
        assert level(cute.compile(run, t, (1, "a"))) == "function"
        # An object known only by its address: traced (the module-text level still hits), and said why.
        c = cute.compile(run, t, opaque())
        assert level(c) == "hit"
        assert "no stable key" in c.info["function_cache"]


def test_stable_keys():
    s = function_cache.stable
    assert s((1, 2.0, "x", None, True)) == s((1, 2.0, "x", None, True))
    assert s(1) != s(1.0) != s(True)
    assert s(frozenset({"a", "b", "c"})) == s(frozenset({"c", "b", "a"}))
    assert s({"b": 1, "a": 2}) == s({"a": 2, "b": 1})
    assert s(cutlass.Float16) != s(cutlass.BFloat16)
    assert s(cute.make_layout((4, 8), stride=(8, 1))) != s(cute.make_layout((4, 8)))
    with pytest.raises(function_cache.Unstable):
        s(opaque())


def test_second_level_still_serves_a_traced_compile(kernels):
    mod = kernels()
    with target("sm_80"):
        first = cute.compile(mod.add, *tensors())
        cache = compile_module.jit_cache()
        os.unlink(cache.path_of(first.info["function_key"]))
        second = cute.compile(mod.add, *tensors())
    assert level(second) == "hit"  # traced again, the cubin from the module-text key
    assert second.cubin == first.cubin


def test_a_damaged_entry_is_a_miss(kernels):
    mod = kernels()
    with target("sm_80"):
        first = cute.compile(mod.add, *tensors())
        path = compile_module.jit_cache().path_of(first.info["function_key"])
        data = open(path, "rb").read()
        with open(path, "wb") as f:
            f.write(data[: len(data) // 2])
        assert level(cute.compile(mod.add, *tensors())) != "function"
        assert level(cute.compile(mod.add, *tensors())) == "function"


_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import make_fake_tensor
from warpweave._dsl.tracing import ast_rewrite
from warpweave._dsl.registry import plugins
import {name} as mod
ts = [make_fake_tensor(cutlass.Float32, (4096,)).mark_layout_dynamic() for _ in range(3)]
rewritten = []
real = ast_rewrite.rewrite
ast_rewrite.rewrite = lambda fn: rewritten.append(fn.__qualname__) or real(fn)
t1 = time.perf_counter()
c = cute.compile(mod.add, *ts)
t2 = time.perf_counter()
print(json.dumps({{"level": c.info.get("level"), "cache": c.info["cache"], "rewritten": rewritten,
                  "loaded": sorted(plugins.registry.backends), "grid": [str(x) for x in c.launches[0].grid],
                  "compile_ms": (t2 - t1) * 1e3}}))
"""


def test_hit_in_a_new_process(kernels, tmp_path):
    mod = kernels()
    src = os.path.dirname(mod.__file__)
    env = dict(os.environ, WARPWEAVE_ARCH="sm_80", PYTHONPATH=os.pathsep.join(
        [src, os.path.join(ROOT, "frontend_python"), os.environ.get("PYTHONPATH", "")]))
    code = _CHILD.format(name="ww_cache_key_kernels")
    runs = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    cold, warm = runs
    assert cold["level"] is None and cold["rewritten"] and cold["loaded"] == ["ampere"]
    assert warm["level"] == "function" and warm["rewritten"] == []
    assert warm["loaded"] == []  # not even the plugins are loaded for a hit
    assert warm["grid"][1:] == ["1", "1"]


@cute.kernel
def _fill_kernel(gC: cute.Tensor, v: cutlass.Float32):
    tidx, _, _ = cute.arch.thread_idx()
    gC[tidx] = v


def _is_big(n):
    return n > 3  # not rewritten: Python asks for the truth, decided with the value compiled for (a guard)


@cute.jit
def _branchy(mC: cute.Tensor, n: cutlass.Int32):
    if cutlass.const_expr(_is_big(n)):
        _fill_kernel(mC, cutlass.Float32(1.0)).launch(grid=[1, 1, 1], block=[32, 1, 1])
    else:
        _fill_kernel(mC, cutlass.Float32(2.0)).launch(grid=[1, 1, 1], block=[64, 1, 1])


@cute.jit
def _branchy_at_each_call(mC: cute.Tensor, n: cutlass.Int32):
    if n > 3:  # a branch of the compiled host code: both launches, each predicated
        _fill_kernel(mC, cutlass.Float32(1.0)).launch(grid=[1, 1, 1], block=[32, 1, 1])
    else:
        _fill_kernel(mC, cutlass.Float32(2.0)).launch(grid=[1, 1, 1], block=[64, 1, 1])


def test_a_host_program_is_stored_and_serves_every_value():
    t = make_fake_tensor(cutlass.Float32, (64,))
    with target("sm_80"):
        first = cute.compile(_branchy_at_each_call, t, 8)
        again = cute.compile(_branchy_at_each_call, t, 2)
    assert level(again) == "function"
    assert [l.predicates for l in again.launches] == [l.predicates for l in first.launches]
    assert len(again.launches) == 2 and all(l.predicates for l in again.launches)
    assert again.host_program.stored() == first.host_program.stored()


def test_host_comparisons_are_checked_before_a_hit_is_used():
    t = make_fake_tensor(cutlass.Float32, (64,))
    with target("sm_80"):
        big = cute.compile(_branchy, t, 8)
        assert level(big) == "miss"
        again = cute.compile(_branchy, t, 5)  # decides `n > 3` the same way
        assert level(again) == "function" and again.host_guards
        small = cute.compile(_branchy, t, 2)  # otherwise: the entry does not apply
        assert level(small) != "function"
        assert small.launches[0].block[0] == 64 and again.launches[0].block[0] == 32


def test_the_module_key_is_the_cores_key_of_the_same_strings():
    # Hashed in Python for speed, the module-text key must stay the core's: entries written by either are found by
    # the other (parts of any length and alphabet, empty ones, one of a GEMM's size; part boundaries count).
    import random
    from warpweave import _core
    rng = random.Random(29)
    alphabet = "abc %{}\n\"é€😀\x00"
    cases = [[], [""], ["", ""], ["ab", "c"], ["a", "bc"], ["x" * 2_000_000]]
    for _ in range(200):
        cases.append(["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 300)))
                      for _ in range(rng.randrange(0, 6))])
    for parts in cases:
        assert compile_module.key_of(parts) == _core.cache_key(parts), parts
    assert len({compile_module.key_of(p) for p in (["ab", "c"], ["a", "bc"])}) == 2
