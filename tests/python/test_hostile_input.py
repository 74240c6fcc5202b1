"""Hostile but realistic input (issue 15): each mistake gets a clear exception naming the user's own source line
(or, for the plugin host and the cache, a clear refusal naming the file), never a crash, a hang, an internal
traceback or a silently wrong kernel. One case per defect found, and the cases that already held."""
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import _core
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import target

THIS = os.path.abspath(__file__)
ROOT = os.path.abspath(os.path.join(os.path.dirname(THIS), "..", ".."))
PLUGIN_DIR = os.path.join(ROOT, "frontend_python", "warpweave", "plugins")


def line_of(text: str) -> int:
    with open(THIS) as f:
        hits = [i for i, line in enumerate(f, 1) if text in line and f'"{text}"' not in line]
    assert len(hits) == 1, (text, hits)
    return hits[0]


def dyn(shape, dtype=np.float32):
    return from_dlpack(np.zeros(shape, dtype=dtype)).mark_layout_dynamic()


def refused_at(fn, *args, match, line, cls=cutlass.DSLError, arch="sm_80"):
    """Compiling fn(*args) raises cls at `line` of this file (a marker text on it) with a message matching `match`."""
    with target(arch), pytest.raises(cls) as info:
        cute.compile(fn, *args)
    err = info.value
    assert isinstance(err, cutlass.DSLError), type(err)
    assert err.location is not None and err.location[0] == THIS, (err.location, str(err))
    assert err.location[1] == line_of(line), (err.location, line_of(line), str(err))
    assert re.search(match, str(err)), str(err)
    assert "Traceback" not in str(err)
    return err


def launch1(kernel):
    @cute.jit
    def host(a: cute.Tensor, n: cutlass.Int32):
        kernel(a, n).launch(grid=[1, 1, 1], block=[32, 1, 1])

    return host


# --- item 4: state kept outside plain variables inside dynamic control flow ------------------------------------

@cute.kernel
def escape_through_dict(gA: cute.Tensor, n: cutlass.Int32):
    # (a list of numbers stored into by index is carried, as a variable is: test_region_carry.py)
    acc = {"sum": cutlass.Float32(0.0)}
    for i in range(n):  # escape-dict loop
        acc["sum"] += gA[i]
    gA[0] = acc["sum"]  # escape-dict use


class Holder:
    pass


@cute.kernel
def escape_through_attribute(gA: cute.Tensor, n: cutlass.Int32):
    h = Holder()
    h.total = cutlass.Float32(0.0)
    tidx, _, _ = cute.arch.thread_idx()
    if tidx > n:  # escape-attribute branch
        h.total = gA[1] * 2.0
    gA[0] = h.total  # escape-attribute use


@cute.kernel
def escape_through_nonlocal(gA: cute.Tensor, n: cutlass.Int32):
    total = cutlass.Float32(0.0)

    def add(v):
        nonlocal total
        total = total + v

    i = cutlass.Int32(0)
    while i < n:  # escape-nonlocal loop
        add(gA[i])
        i += 1
    gA[0] = total  # escape-nonlocal use


@pytest.mark.parametrize("kernel,use,region", [
    (escape_through_dict, "escape-dict use", "escape-dict loop"),
    (escape_through_attribute, "escape-attribute use", "escape-attribute branch"),
    (escape_through_nonlocal, "escape-nonlocal use", "escape-nonlocal loop"),
])
def test_state_escaping_a_dynamic_region_is_refused_at_the_use(kernel, use, region):
    err = refused_at(launch1(kernel), dyn(16), cutlass.Int32(4), line=use,
                     match=rf"computed inside the dynamic loop or branch at line {line_of(region)} is used after")
    assert "plain variable defined before" in str(err) and "SSA" not in str(err)


TOTAL = 0.0


@cute.kernel
def global_in_dynamic_loop(gA: cute.Tensor, n: cutlass.Int32):
    acc = cutlass.Float32(0.0)
    for i in range(n):
        global TOTAL
        TOTAL = acc + gA[i]
        acc = TOTAL
    gA[0] = acc


def test_global_inside_a_dynamic_loop_is_carried():
    # `global` inside the body used to land in the nested function the body becomes ("parameter and global").
    with target("sm_80"):
        c = cute.compile(launch1(global_in_dynamic_loop), dyn(16), cutlass.Int32(4))
    assert c.ir.count('"scf.for"') == 1 and "(i32, i32, i32, f32, f32) -> (f32, f32)" in c.ir  # acc and TOTAL


def outer_with_nonlocal():
    seen = 0

    @cute.kernel
    def k(gA: cute.Tensor, n: cutlass.Int32):
        nonlocal seen  # nonlocal in kernel
        seen = 1

    return k


def test_nonlocal_of_the_kernel_itself_is_refused():
    refused_at(launch1(outer_with_nonlocal()), dyn(16), cutlass.Int32(4), line="# nonlocal in kernel",
               match=r"cannot assign the variables of the function that encloses it", cls=TypeError)


# --- item 5: a generator kernel ----------------------------------------------------------------------------------

@cute.kernel
def generator_kernel(gA: cute.Tensor, n: cutlass.Int32):
    gA[0] = 1.0
    yield n  # the yield


def test_yield_in_a_kernel_is_refused():
    refused_at(launch1(generator_kernel), dyn(16), cutlass.Int32(4), line="# the yield",
               match=r"`yield` makes generator_kernel a generator", cls=TypeError)


# --- item 10 (DSL front end) -----------------------------------------------------------------------------------

@cute.kernel
def class_inside_kernel(gA: cute.Tensor, n: cutlass.Int32):
    class Scaler:
        def __init__(self, k):
            self.k = k

        def apply(self, x):
            if x > 2:  # dynamic branch in a method of a class defined in a kernel
                x = x * self.k
            return x

    gA[0] = Scaler(3).apply(n).to(cutlass.Float32)


def test_class_defined_inside_a_kernel_traces():
    with target("sm_80"):
        c = cute.compile(launch1(class_inside_kernel), dyn(16), cutlass.Int32(4))
    assert c.ir.count('"scf.if"') == 1 and "arith.muli" in c.ir


@cute.kernel
def conditional_expression_of_python_numbers(gA: cute.Tensor, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    gA[0] = 1.0 if tidx > 3 else 2.0
    gA[1] = (7 if tidx > n else 9).to(cutlass.Float32)


def test_conditional_expression_of_python_numbers_selects():
    with target("sm_80"):
        c = cute.compile(launch1(conditional_expression_of_python_numbers), dyn(16), cutlass.Int32(4))
    selects = re.findall(r'"arith.select"\(.*\) : \(i1, (\w+), (\w+)\)', c.ir)
    assert ("f32", "f32") in selects and ("i32", "i32") in selects


@cute.kernel
def conditional_expression_of_a_tensor(gA: cute.Tensor, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    gA[0] = gA if tidx > 3 else 4  # tensor ifexp


def test_conditional_expression_of_non_numbers_is_refused():
    refused_at(launch1(conditional_expression_of_a_tensor), dyn(16), cutlass.Int32(4), line="# tensor ifexp",
               match=r"picks between numbers, not a Tensor and a int", cls=TypeError)


# --- items 1, 2, 10: plugins that must be refused, the others loading --------------------------------------------

TEST_PLUGINS = os.path.join(ROOT, "build", "tests", "test_plugins")


def warpweave_cli(*args, plugin_path, timeout=120):
    env = dict(os.environ)
    env["WARPWEAVE_PLUGIN_PATH"] = os.pathsep.join(plugin_path)
    return subprocess.run([sys.executable, "-m", "warpweave", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=ROOT)


def plugins_report(plugin_path):
    import json

    r = warpweave_cli("plugins", "--json", plugin_path=plugin_path)
    assert r.returncode == 0, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    report = json.loads(r.stdout)
    loaded = {p["name"] for p in report if "name" in p}
    refused = {p["refused"]: p["reason"] for p in report if "refused" in p}
    return loaded, refused, r


def test_truncated_plugin_is_refused_and_the_others_load(tmp_path):
    ampere = os.path.join(PLUGIN_DIR, "ww_backend_ampere.so")
    with open(ampere, "rb") as f:
        data = f.read()
    cuts = {"ww_x.so": 4096, "ww_empty.so": 0, "ww_half.so": len(data) // 2, "ww_header.so": 64}
    for name, n in cuts.items():
        (tmp_path / name).write_bytes(data[:n])
    (tmp_path / "ww_text.so").write_text("not a library\n")
    loaded, refused, r = plugins_report([str(tmp_path)])
    assert {"ampere", "hopper", "blackwell"} <= loaded
    for name in list(cuts) + ["ww_text.so"]:
        path = str(tmp_path / name)
        assert path in refused, (name, refused)
    assert "truncated" in refused[str(tmp_path / "ww_x.so")]
    # the human listing names the file and the reason
    text = warpweave_cli("plugins", plugin_path=[str(tmp_path)]).stdout
    assert str(tmp_path / "ww_x.so") in text and "truncated" in text


@pytest.mark.skipif(not os.path.isdir(TEST_PLUGINS), reason="needs the test plugins of the C++ build (build/tests)")
def test_throwing_and_target_redefining_plugins_are_refused(tmp_path):
    loaded, refused, r = plugins_report([TEST_PLUGINS])
    assert {"ampere", "hostile_good"} <= loaded, (loaded, refused)
    throws = refused[os.path.join(TEST_PLUGINS, "hostile_throws.so")]
    assert "entry point threw an exception that is not a std::exception" in throws
    conflict = refused[os.path.join(TEST_PLUGINS, "hostile_conflict.so")]
    assert "target sm_80" in conflict and '"ampere"' in conflict and "sm_86" in conflict
    assert "SystemError" not in r.stderr and "Traceback" not in r.stderr


def test_missing_plugin_directory_is_named(tmp_path):
    missing = str(tmp_path / "no" / "such" / "dir")
    r = warpweave_cli("plugins", plugin_path=[missing])
    assert r.returncode == 0
    assert f"WARPWEAVE_PLUGIN_PATH names '{missing}', which is not a directory" in r.stderr


# --- item 9: the JIT cache --------------------------------------------------------------------------------------

CACHE_SCRIPT = r'''
import json, sys, warnings
import numpy as np
import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

@cute.kernel
def scale_kernel(gA: cute.Tensor, factor: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    gA[tidx] = gA[tidx] * factor

@cute.jit
def scale(a: cute.Tensor, factor: cutlass.Constexpr):
    scale_kernel(a, factor).launch(grid=[1, 1, 1], block=[32, 1, 1])

out = {}
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    for factor in map(float, sys.argv[1:]):
        c = cute.compile(scale, from_dlpack(np.zeros(32, np.float32)), factor)
        out[str(factor)] = {"cache": c.info["cache"], "key": c.info["key"], "cubin": c.cubin.hex()}
out["warnings"] = [str(x.message) for x in w]
print(json.dumps(out))
'''


def run_cache_script(cache_dir, *factors, plugin_path=None):
    import json

    env = dict(os.environ, WARPWEAVE_CACHE_DIR=str(cache_dir), WARPWEAVE_ARCH="sm_80")
    env.pop("WARPWEAVE_DISABLE_CACHE", None)
    if plugin_path is not None:
        env["WARPWEAVE_PLUGIN_PATH"] = plugin_path
    script = os.path.join(os.path.dirname(str(cache_dir)), "cache_probe.py")  # traced source must be a file
    with open(script, "w") as f:
        f.write(CACHE_SCRIPT)
    r = subprocess.run([sys.executable, script, *map(str, factors)], capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_foreign_cache_entry_is_a_miss_with_a_warning(tmp_path):
    first = run_cache_script(tmp_path / "cache", 2.0, 3.0)
    two, three = first["2.0"], first["3.0"]
    assert two["cache"] == three["cache"] == "miss" and two["cubin"] != three["cubin"]
    cache = _core.JitCache(str(tmp_path / "cache"))
    shutil.copyfile(cache.path_of(two["key"]), cache.path_of(three["key"]))  # the factor-2.0 entry in 3.0's place
    again = run_cache_script(tmp_path / "cache", 3.0, 2.0)
    assert again["3.0"]["cache"] == "miss", "another key's entry was served as a hit"
    assert again["3.0"]["cubin"] == three["cubin"]
    assert again["2.0"]["cache"] == "hit" and again["2.0"]["cubin"] == two["cubin"]
    assert any("holds the entry of another key" in m and cache.path_of(three["key"]) in m for m in again["warnings"])


@pytest.mark.parametrize("kind", ["fifo", "dev_zero_link"])
def test_cache_path_that_is_no_regular_file_does_not_hang(tmp_path, kind):
    first = run_cache_script(tmp_path / "cache", 2.0)
    path = _core.JitCache(str(tmp_path / "cache")).path_of(first["2.0"]["key"])
    os.unlink(path)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        os.symlink("/dev/zero", path)
    again = run_cache_script(tmp_path / "cache", 2.0)  # a hang here times the subprocess out
    assert again["2.0"]["cache"] == "miss" and again["2.0"]["cubin"] == first["2.0"]["cubin"]
    assert any(path in m for m in again["warnings"]), again["warnings"]


def test_a_directory_in_an_entrys_place_is_replaced_by_the_entry(tmp_path):
    first = run_cache_script(tmp_path / "cache", 2.0)
    path = _core.JitCache(str(tmp_path / "cache")).path_of(first["2.0"]["key"])
    os.unlink(path)
    os.makedirs(os.path.join(path, "inside"))
    again = run_cache_script(tmp_path / "cache", 2.0)
    assert again["2.0"]["cache"] == "miss" and again["2.0"]["cubin"] == first["2.0"]["cubin"]
    assert any(path in m and "not a regular file" in m for m in again["warnings"]), again["warnings"]
    third = run_cache_script(tmp_path / "cache", 2.0)
    assert third["2.0"]["cache"] == "hit", "the key stayed uncached behind the directory"
    assert os.path.isfile(path) and third["warnings"] == []


def test_a_looping_link_among_the_plugins_leaves_compiles_and_the_cache_working(tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    os.symlink("ww_loop.so", plugins / "ww_loop.so")  # itself: following it fails (too many levels of links)
    first = run_cache_script(tmp_path / "cache", 2.0, plugin_path=str(plugins))
    again = run_cache_script(tmp_path / "cache", 2.0, plugin_path=str(plugins))
    assert first["2.0"]["cache"] == "miss" and again["2.0"]["cache"] == "hit"
    assert again["2.0"]["cubin"] == first["2.0"]["cubin"]
    loaded, _, _ = plugins_report([str(plugins)])  # listing passes over it too
    assert {"ampere", "hopper", "blackwell"} <= loaded


# --- item 8: launch settings against the target's limits, at the user's launch line -----------------------------

@cute.kernel
def plain_kernel(gA: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    gA[tidx] = 1.0


def launching(**settings):
    @cute.jit
    def host(a: cute.Tensor):
        plain_kernel(a).launch(**settings)  # the launch line

    return host


@pytest.mark.parametrize("arch,settings,match,cls", [
    ("sm_80", dict(grid=(-1, 1, 1), block=(32, 1, 1)), r"grid extent x is -1; it must be from 1 to 2147483647", ValueError),
    ("sm_80", dict(grid=(1.5, 1, 1), block=(32, 1, 1)), r"grid extents are integers .* got 1.5 \(float\)", TypeError),
    ("sm_80", dict(grid=("4", 1, 1), block=(32, 1, 1)), r"got '4' \(str\)", TypeError),
    ("sm_80", dict(grid=(2**31, 1, 1), block=(32, 1, 1)), r"grid extent x is 2147483648", ValueError),
    ("sm_80", dict(grid=(1, 70000, 1), block=(32, 1, 1)), r"grid extent y is 70000; it must be from 1 to 65535", ValueError),
    ("sm_80", dict(grid=(1, 1, 1), block=(32, 1, 1), smem=-5), r"smem=-5", ValueError),
    ("sm_80", dict(grid=(1, 1, 1), block=(32, 1, 1), smem=1.5), r"smem is a number of bytes", TypeError),
    ("sm_80", dict(grid=(1, 1, 1), block=(2000, 1, 1)), r"block extent x is 2000; it must be from 1 to 1024", ValueError),
    ("sm_80", dict(grid=(1, 1, 1), block=(64, 32, 1)), r"2048 threads, more than the 1024 a block may have on sm_80",
     ValueError),
    ("sm_80", dict(grid=(1, 1, 1), block=(0, 1, 1)), r"block extent x is 0", ValueError),
    ("sm_80", dict(grid=(2, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1)), r"sm_80 has no thread block clusters",
     ValueError),
    ("sm_80", dict(grid=(1, 1, 1), block=(32, 1, 1), smem=4 << 20),
     r"4194304 bytes of shared memory per block, more than the 166912 sm_80 offers", ValueError),
    ("sm_90a", dict(grid=(32, 1, 1), block=(32, 1, 1), cluster=(32, 1, 1)), r"32 blocks, more than the 16", ValueError),
    ("sm_90", dict(grid=(16, 1, 1), block=(32, 1, 1), cluster=(16, 1, 1)), r"16 blocks, more than the 8", ValueError),
    ("sm_90a", dict(grid=(3, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1)), r"not a multiple of the cluster", ValueError),
])
def test_launch_settings_are_checked_at_the_launch_line(monkeypatch, arch, settings, match, cls):
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")
    refused_at(launching(**settings), from_dlpack(np.zeros(32, np.float32)), match=match, line="# the launch line",
               cls=cls, arch=arch)


def test_launch_within_the_limits_compiles():
    with target("sm_90a"):
        c = cute.compile(launching(grid=(4, 1, 1), block=(32, 4, 1), cluster=(2, 1, 1), smem=200 * 1024),
                         from_dlpack(np.zeros(32, np.float32)))
    assert c.cubin[:4] == b"\x7fELF"


def test_a_cluster_above_the_portable_size_opts_its_kernel_in(monkeypatch):
    """16 blocks on sm_90a (the most Hopper takes; 8 is CUDA's portable limit): the loaded kernel gets the
    non-portable cluster attribute before its launch, in the Python call path and in the exported C module."""
    from warpweave._dsl.export.export_c import c_arguments, source

    with target("sm_90a"):
        big = cute.compile(launching(grid=(32, 1, 1), block=(32, 1, 1), cluster=(16, 1, 1)),
                           from_dlpack(np.zeros(32, np.float32)))
        small = cute.compile(launching(grid=(8, 1, 1), block=(32, 1, 1), cluster=(8, 1, 1)),
                             from_dlpack(np.zeros(32, np.float32)))
    attrs = {}

    class Function:
        def set_attribute(self, attr, value):
            attrs[attr] = value

    class Module:
        def function(self, name):
            return Function()

    monkeypatch.setattr(_core.Module, "load", staticmethod(lambda cubin: Module()))  # no GPU needed to load
    for c, expected in ((big, {14: 1}), (small, {})):
        attrs.clear()
        c._module = None
        c._load()
        assert attrs == expected
        text = source(c, c_arguments(c), "ww_fn", "entry.h")
        assert ("cuFuncSetAttribute(m->functions[0], 14, 1)" in text) == bool(expected)


def test_a_grid_computed_at_call_time_is_checked_at_the_call():
    from warpweave._dsl.registry.launch_limits import check_call_grid

    with pytest.raises(ValueError, match=r"grid evaluates to \(-3, 1, 1\).*must be from 1 to"):
        check_call_grid("k", [-3, 1, 1])
    with pytest.raises(ValueError, match=r"extent y must be from 1 to 65535"):
        check_call_grid("k", [1, 65536, 1])
    with pytest.warns(RuntimeWarning, match=r"grid evaluates to \(0, 1, 1\).*nothing is launched"):
        assert check_call_grid("k", [0, 1, 1]) is False
    assert check_call_grid("k", [5, 1, 1]) is True


# --- item 10 (arguments) and the cases that already held -------------------------------------------------------

@cute.kernel
def constexpr_kernel(gA: cute.Tensor, f: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    gA[tidx] = gA[tidx] * f


@cute.jit
def passes_a_runtime_value_as_constexpr(a: cute.Tensor, n: cutlass.Int32):
    constexpr_kernel(a, n).launch(grid=[1, 1, 1], block=[32, 1, 1])  # runtime into Constexpr


@cute.jit
def scale_host(a: cute.Tensor, f: cutlass.Constexpr):
    constexpr_kernel(a, f).launch(grid=[1, 1, 1], block=[32, 1, 1])


def test_runtime_value_for_a_constexpr_parameter_is_refused():
    refused_at(passes_a_runtime_value_as_constexpr, dyn(32), cutlass.Int32(2), line="# runtime into Constexpr",
               match=r"argument 'f' of the kernel constexpr_kernel is cutlass.Constexpr.*runtime Int32", cls=TypeError)


def compile_here(fn, *args):  # the calls below name this line
    with target("sm_80"), pytest.raises(cutlass.DSLError) as info:
        cute.compile(fn, *args)  # the compile line
    err = info.value
    assert err.location == (THIS, line_of("# the compile line")), (err.location, str(err))
    return str(err)


@pytest.mark.parametrize("args,match", [
    ((np.zeros(32, np.float32), 2.0), r"argument 'a' is a numpy.ndarray; pass it as a tensor with .*from_dlpack"),
    ((from_dlpack(np.zeros(0, np.float32)), 2.0), r"argument 'a' is a tensor of shape \(0,\), with an extent of 0"),
    ((from_dlpack(np.zeros(32, np.float32)),), r"scale_host\(\): missing a required argument: 'f'"),
    ((from_dlpack(np.zeros(32, np.float32)), 2.0, 3), r"scale_host\(\): too many positional arguments"),
    ((3, 2.0), r"argument 'a' is annotated cute.Tensor but is a int"),
    ((from_dlpack(np.zeros(32, np.float32)), from_dlpack(np.zeros(4, np.float32))),
     r"argument 'f' is cutlass.Constexpr.*runtime RuntimeTensor"),
])
def test_unusable_arguments_are_refused_at_the_compile_line(args, match):
    assert re.search(match, compile_here(scale_host, *args))


@cute.kernel
def rank2_kernel(gA: cute.Tensor):
    gA[0, 1] = 1.0  # rank-2 index


@cute.jit
def rank2_host(a: cute.Tensor):
    rank2_kernel(a).launch(grid=[1, 1, 1], block=[1, 1, 1])


def test_wrong_rank_is_refused_at_the_users_line():
    refused_at(rank2_host, from_dlpack(np.zeros(8, np.float32)), line="# rank-2 index", match=r"rank|mode|coordinate")


def test_another_specialisation_at_call_time_is_refused_before_launch():
    a = from_dlpack(np.zeros((8, 8), np.float32))
    with target("sm_80"):
        c = cute.compile(scale_host, a, 2.0)
    with pytest.raises(ValueError, match="does not match the compiled specialisation"):
        c(from_dlpack(np.zeros((8, 8), np.float32).T), 2.0)  # other strides
    with pytest.raises(ValueError, match="does not match the compiled specialisation"):
        c(from_dlpack(np.zeros((4, 8), np.float32)), 2.0)  # other shape


@cute.kernel
def wrong_target_kernel(gA: cute.Tensor):
    cute.arch.griddepcontrol_wait()  # not on sm_80


@cute.jit
def wrong_target_host(a: cute.Tensor):
    wrong_target_kernel(a).launch(grid=[1, 1, 1], block=[32, 1, 1])


def test_an_instruction_of_another_target_is_refused():
    refused_at(wrong_target_host, dyn(32), line="# not on sm_80", cls=TypeError,
               match=r"griddepcontrol_wait is not available when compiling for sm_80.*only these offer it")


# --- register tensors no thread's register file can hold --------------------------------------------------------------

def register_tensor_host(shape, dtype):
    @cute.kernel
    def kernel(gA: cute.Tensor):
        r = cute.make_rmem_tensor(shape, dtype)  # the register tensor
        r.fill(0.0)
        gA[0] = r[0]

    @cute.jit
    def host(a: cute.Tensor):
        kernel(a).launch(grid=[1, 1, 1], block=[32, 1, 1])

    return host


@pytest.mark.parametrize("shape,dtype,what", [
    ((1 << 16,), cutlass.Float32, r"65536 Float32 values \(262144 bytes\)"),
    ((4081,), cutlass.Float32, r"4081 Float32 values \(16324 bytes\)"),
    ((64, 129), cutlass.Float16, r"8256 Float16 values \(16512 bytes\)"),
    ((1 << 30,), cutlass.Float32, r"1073741824 Float32 values"),  # hung the compiler
])
def test_a_register_tensor_far_larger_than_the_register_file_is_refused(monkeypatch, shape, dtype, what):
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")
    refused_at(register_tensor_host(shape, dtype), dyn(32), line="# the register tensor", cls=ValueError,
               match=what + r".*more than 16 times what a thread's 255 32-bit registers hold \(16320 bytes\)")


# (256 Float32: the epilogue fragment of CuTe DSL's Blackwell tutorials, not all live at once)
@pytest.mark.parametrize("shape,dtype", [((255,), cutlass.Float32), ((510,), cutlass.Float16),
                                         ((2040,), cutlass.Float4E2M1FN), ((256,), cutlass.Float32),
                                         ((64, 9), cutlass.Float16)])
def test_a_register_tensor_the_register_file_holds_compiles(monkeypatch, shape, dtype):
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")
    with target("sm_80"):
        c = cute.compile(register_tensor_host(shape, dtype), dyn(32))
    assert c.cubin[:4] == b"\x7fELF"


# A row or column vector seen over a whole tile (QuACK's epilogue reductions): 32768 coordinates, 128 or 256 values.
@pytest.mark.parametrize("shape,stride", [((128, 256), (1, 0)), ((128, 256), (0, 1)), ((128, (2, 128)), (1, (0, 0)))])
def test_a_broadcast_register_tensor_counts_the_values_it_holds_not_its_coordinates(monkeypatch, shape, stride):
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")
    with target("sm_80"):
        c = cute.compile(register_tensor_host(cute.make_layout(shape, stride=stride), cutlass.Float32), dyn(32))
    assert c.cubin[:4] == b"\x7fELF"


@cute.kernel
def tensor_as_condition(gA: cute.Tensor):
    if gA:  # a tensor as a condition
        gA[0] = 1.0


@cute.jit
def tensor_as_condition_host(a: cute.Tensor):
    tensor_as_condition(a).launch(grid=[1, 1, 1], block=[32, 1, 1])


@cute.jit
def tensor_as_condition_in_host(a: cute.Tensor):
    while not a:  # a host tensor as a condition
        a = None


def test_a_tensor_has_no_truth_value(monkeypatch):
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")
    refused_at(tensor_as_condition_host, dyn(32), line="# a tensor as a condition", cls=TypeError,
               match=r"a Tensor has no truth value")
    refused_at(tensor_as_condition_in_host, dyn(32), line="# a host tensor as a condition", cls=TypeError,
               match=r"a Tensor has no truth value")


# --- the function cache: a module-level container the function reads is part of its key -----------------------

LAUNCH_SETTINGS = {"grid": (1, 1, 1), "block": (32, 1, 1)}


@cute.jit
def launches_with_module_settings(a: cute.Tensor):
    plain_kernel(a).launch(**LAUNCH_SETTINGS)


def test_a_changed_module_level_dict_is_not_served_from_the_cache(monkeypatch):
    a = from_dlpack(np.zeros(32, np.float32))
    with target("sm_80"):
        first = cute.compile(launches_with_module_settings, a)
        monkeypatch.setitem(LAUNCH_SETTINGS, "block", (64, 1, 1))
        second = cute.compile(launches_with_module_settings, a)
    assert [l.block for l in first.launches] == [(32, 1, 1)]
    assert [l.block for l in second.launches] == [(64, 1, 1)], "the compile of the old settings came back"
