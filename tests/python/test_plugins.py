"""Third-party plugins: the example plugin (plugins_api/examples/b1_mma) built out of tree against an installed
SDK, loaded through WARPWEAVE_PLUGIN_PATH and tested by the conformance suite with no test code of its own; and
the plugins the core must refuse, each with a message naming the file and the reason, the others still loading.

The SDK comes from `cmake --install build --prefix <tmp>` of the build scripts/setup.sh made; the plugins are
built with the SDK's warpweave_add_backend, in subprocesses, in a temporary directory.
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

from dsl_helpers import requires_gpu

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.join(ROOT, "build")
EXAMPLE = os.path.join(ROOT, "plugins_api", "examples", "b1_mma")
B1_ATOMS = {"example_b1.mma.m16n8k256.s32.b1.b1.s32.and.popc", "example_b1.mma.m16n8k256.s32.b1.b1.s32.xor.popc"}

CMAKE = shutil.which("cmake")


def _why_not() -> str:
    """Why the plugins cannot be built here ("" when they can)."""
    cache = os.path.join(BUILD, "CMakeCache.txt")
    if CMAKE is None:
        return "needs cmake"
    if not os.path.isfile(cache):
        return "needs the build directory scripts/setup.sh makes (build/)"
    with open(cache, encoding="utf-8", errors="replace") as f:
        home = [line.split("=", 1)[1].strip() for line in f if line.startswith("CMAKE_HOME_DIRECTORY:")]
    if home and os.path.realpath(home[0]) != os.path.realpath(ROOT):
        return f"build/ was configured for another checkout ({home[0]})"
    if not any(os.path.isfile(os.path.join(d, "boost", "dll", "alias.hpp")) for d in ("/usr/include", "/usr/local/include")):
        return "needs Boost.DLL's headers (libboost-dev) to build plugins"
    return ""


# A prebuilt example plugin (scripts/pack_for_device.sh carries one to the GPU machine, which cannot build it).
PREBUILT = os.environ.get("WARPWEAVE_EXAMPLE_PLUGIN_DIR", "")
needs_build = pytest.mark.skipif(bool(_why_not()), reason=_why_not() or "-")
pytestmark = [] if PREBUILT else [needs_build]


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert r.returncode == 0, f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
    return r


def generator():
    return ["-G", "Ninja"] if shutil.which("ninja") else []


def warpweave(*args, plugin_path, timeout=900):
    env = dict(os.environ)
    env["WARPWEAVE_PLUGIN_PATH"] = os.pathsep.join(plugin_path)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "frontend_python"), os.path.join(ROOT, "conformance")])
    return subprocess.run([sys.executable, "-m", "warpweave", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=ROOT)


@pytest.fixture(scope="module")
def sdk(tmp_path_factory):
    prefix = tmp_path_factory.mktemp("sdk")
    r = subprocess.run([CMAKE, "--install", BUILD, "--prefix", str(prefix)], capture_output=True, text=True)
    config = prefix / "lib" / "cmake" / "warpweave" / "warpweaveConfig.cmake"
    if not config.is_file():
        pytest.fail("`cmake --install build` installed no warpweave SDK (build/ configured before "
                    f"cmake/WarpweaveInstall.cmake? re-run scripts/setup.sh):\n{r.stdout}\n{r.stderr}")
    return prefix


def build_project(src, build_dir, sdk_prefix):
    run([CMAKE, "-S", str(src), "-B", str(build_dir), *generator(), "-DCMAKE_BUILD_TYPE=Release",
         f"-DCMAKE_PREFIX_PATH={sdk_prefix}"])
    run([CMAKE, "--build", str(build_dir), "-j2"])


@pytest.fixture(scope="module")
def example_plugin(request, tmp_path_factory):
    if PREBUILT:
        plugin_dir = tmp_path_factory.mktemp("b1_plugins")
        shutil.copytree(PREBUILT, plugin_dir, dirs_exist_ok=True)
        return plugin_dir
    if _why_not():
        pytest.skip(_why_not())
    sdk = request.getfixturevalue("sdk")
    build_dir = tmp_path_factory.mktemp("b1_build")
    build_project(EXAMPLE, build_dir, sdk)
    libs = list(build_dir.glob("*.so"))
    assert len(libs) == 1, libs
    plugin_dir = tmp_path_factory.mktemp("b1_plugins")
    shutil.copy(libs[0], plugin_dir)
    # The plugin's Python package ships beside it (warpweave_add_backend PYTHON_DIR links it into the build).
    package = libs[0].with_suffix(".python")
    assert (package / "__init__.py").is_file(), package
    shutil.copytree(package, plugin_dir / package.name)
    return plugin_dir


@needs_build
def test_sdk_layout(sdk):
    for rel in ("include/warpweave/plugin_abi.h", "include/warpweave/plugin.hpp", "include/warpweave/plugin_attrs.hpp",
                "include/warpweave/tma_encoding.hpp", "share/warpweave/proto/manifest.proto",
                "lib/cmake/warpweave/WarpweavePlugin.cmake", "lib/cmake/warpweave/WarpweaveEmbed.cmake",
                "lib/cmake/warpweave/warpweaveConfigVersion.cmake"):
        assert (sdk / rel).is_file(), rel
    # relocatable: nothing points back into the source tree or the build
    config = (sdk / "lib" / "cmake" / "warpweave" / "warpweaveConfig.cmake").read_text()
    assert ROOT not in config


def test_example_plugin_loads_and_is_listed(example_plugin):
    r = warpweave("plugins", "--json", plugin_path=[str(example_plugin)])
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    plugins = {p["name"]: p for p in report if "name" in p}
    assert "example_b1" in plugins, report
    b1 = plugins["example_b1"]
    # Its two atoms are one family of the manifest, expanded when selected (a third party adds a family without
    # a core rebuild).
    assert b1["atoms"] == [] and b1["families"] == ["example_b1.mma.m16n8k256"], b1
    assert b1["primitives"] == []
    assert b1["targets"] == ["sm_80"]
    assert b1["path"].startswith(str(example_plugin))
    assert "ampere" in plugins  # the in-tree plugins load next to it
    assert not [p for p in report if "refused" in p and str(example_plugin) in p["refused"]]
    text = warpweave("plugins", plugin_path=[str(example_plugin)])
    assert "example_b1" in text.stdout and "example_b1.mma.m16n8k256" in text.stdout


def test_plugins_print_the_manifest_they_carry(example_plugin):
    r = warpweave("plugins", "--manifest", "hopper", plugin_path=[])
    assert r.returncode == 0, r.stderr
    with open(os.path.join(ROOT, "backends", "hopper", "hopper.textproto")) as f:
        assert r.stdout == f.read()
    r = warpweave("plugins", "--manifest", "example_b1", plugin_path=[str(example_plugin)])
    assert r.returncode == 0 and 'name: "example_b1"' in r.stdout, r.stderr
    r = warpweave("plugins", "--manifest", "volta", plugin_path=[])
    assert r.returncode == 2 and r.stdout == ""
    assert 'no loaded plugin is named "volta"' in r.stderr and "hopper" in r.stderr


def test_example_plugin_passes_conformance(example_plugin, tmp_path):
    out = tmp_path / "records.json"
    r = warpweave("conformance", "--backend", "example_b1", "--json", str(out), plugin_path=[str(example_plugin)])
    assert r.returncode == 0, r.stdout + r.stderr
    records = json.loads(out.read_text())
    assert {x["backend"] for x in records} == {"example_b1"}
    for tier in ("manifest", "compile"):
        got = {x["atom"]: x for x in records if x["tier"] == tier and x["atom"] in B1_ATOMS}
        assert set(got) == B1_ATOMS, tier
        assert all(x["status"] == "pass" for x in got.values()), got
    compiled = [x for x in records if x["tier"] == "compile"]
    assert {x["target"] for x in compiled} == {"sm_80"}
    if all("SASS has" in x["reason"] for x in compiled):
        assert any("BMMA.168256.XOR.POPC" in x["reason"] for x in compiled)
    execute = [x for x in records if x["tier"] == "execute"]
    assert {x["atom"] for x in execute} == B1_ATOMS
    assert all(x["status"] in ("pass", "skip") and x["reason"] for x in execute), execute


# --- plugins the core refuses ----------------------------------------------------------------------------------

BAD_SOURCE = r"""
// A test plugin whose defects are chosen by macros: WW_TEST_ABI (the ABI version it claims), WW_TEST_NO_ENTRY.
#include <warpweave/plugin.hpp>

extern "C" const char ww_manifest_text[];
extern "C" const size_t ww_manifest_size;

#ifndef WW_TEST_ABI
#define WW_TEST_ABI WW_PLUGIN_ABI_VERSION
#endif

namespace {
const ww_plugin_v1 plugin = {WW_TEST_ABI, WW_TEST_NAME, ww_manifest_text, ww_manifest_size, nullptr, nullptr};
}

#ifdef WW_TEST_NO_ENTRY
extern "C" __attribute__((visibility("default"))) const void* not_the_entry_point() { return &plugin; }
#else
WARPWEAVE_PLUGIN(plugin)
#endif
"""

ATOM = """
atoms {{
  id: "{id}"
  kind: MMA
  targets: "sm_80"
  python_name: "warp.TestOp"
  shape_mnk: "(16,8,16)"
  thr_id: "32:1"
  operands {{ name: "d" role: REGISTERS direction: OUT element_type: "f32" values: 4 registers: 4 register_type: "f32"
             layout_tv: "((4,8),(2,2)):((32,1),(16,8))" }}
  operands {{ name: "a" role: REGISTERS direction: IN element_type: "f16" values: 8 registers: 4 register_type: "b32"
             layout_tv: "((4,8),(2,2,2)):((32,1),(16,8,128))" }}
  operands {{ name: "b" role: REGISTERS direction: IN element_type: "f16" values: 4 registers: 2 register_type: "b32"
             layout_tv: "((4,8),(2,2)):((16,1),(8,64))" }}
  operands {{ name: "c" role: REGISTERS direction: IN element_type: "f32" values: 4 registers: 4 register_type: "f32"
             layout_tv: "((4,8),(2,2)):((32,1),(16,8))" }}
  ptx_template: "{template}"
  constraints: "{constraints}"
  sass_opcodes: "HMMA.16816.F32"
}}
"""
TEMPLATE = ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {{$0, $1, $2, $3}}, {{$4, $5, $6, $7}}, {{$8, $9}}, "
            "{{$10, $11, $12, $13}};")
CONSTRAINTS = "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f"


def manifest(name, atom_id=None, template=TEMPLATE, constraints=CONSTRAINTS):
    head = (f'name: "{name}"\nversion: "0.0.1"\nabi_version: 1\n'
            'targets { name: "sm_80" compute_capability: 80 llvm_cpu: "sm_80" ptx_features: "+ptx86" jit_arch: "sm_80" }\n')
    return head + ATOM.format(id=atom_id or f"{name}.mma", template=template.format(), constraints=constraints)


# name -> (manifest text, compile definitions, what the refusal must say)
BAD = {
    "bad_abi": (manifest("bad_abi"), ['WW_TEST_NAME="bad_abi"', "WW_TEST_ABI=2"], ["ABI version 2", "speaks 1"]),
    "no_entry": (manifest("no_entry"), ['WW_TEST_NAME="no_entry"', "WW_TEST_NO_ENTRY=1"],
                 ["no entry point warpweave_plugin_entry_v1"]),
    "bad_parse": ('name: "bad_parse"\nthis is not protobuf text format\n', ['WW_TEST_NAME="bad_parse"'],
                  ["invalid manifest", "2:"]),
    # one register of b missing: the template's 14 operands against 13 from the manifest
    "bad_operands": (manifest("bad_operands").replace("values: 4 registers: 2", "values: 2 registers: 1"),
                     ['WW_TEST_NAME="bad_operands"'],
                     ["invalid manifest", "bad_operands.mma", "the template uses 14 operands but the operands provide 13"]),
    # ampere's atom id; ids are namespaced by the plugin's name, so the clash comes with ampere's name too
    "clash": (manifest("ampere", atom_id="ampere.mma.m16n8k16.f32.f16.f16.f32"), ['WW_TEST_NAME="ampere"'],
              ["ampere"]),
    # ampere's Python name on ampere's target: which plugin's atom a kernel got would depend on the load order
    "dup_name": (manifest("dup_name").replace('"warp.TestOp"', '"warp.MmaF16BF16Op"'), ['WW_TEST_NAME="dup_name"'],
                 ['atom dup_name.mma offers the Python name warp.MmaF16BF16Op for sm_80, which the plugin "ampere" '
                  "already offers there"]),
}


def family(name, suffix, parameter, edit=("", ""), id_template=None):
    """The test atom as a family of one parameter p, the template's text edited by `edit`."""
    body = ATOM.format(id=id_template or f"{name}.{suffix}.p{{p}}", template=TEMPLATE.format(), constraints=CONSTRAINTS)
    body = body.strip().replace("atoms {", "template {", 1).replace(
        '"warp.TestOp"', f'"warp.Broken{suffix.capitalize()}Op"\n  python_params {{ key: "p" value: "{{p}}" }}', 1)
    assert edit[0] in body
    body = body.replace(*edit, 1)
    return f'families {{\n  id: "{name}.{suffix}"\n  {parameter}\n  {body}\n}}\n'


# Plugins that load (a plugin's families are checked without expanding them then) but whose family instances are
# broken where the parameter is at its last value: a TV layout that is not injective, an extent of 4e8, an id
# outside the plugin's prefix. The conformance manifest tier must expand and check them.
BROKEN_FAMILIES = manifest("broken_families").split("atoms {")[0] + "".join([
    family("broken_families", "layout", 'parameters { name: "p" set: 1 set: 2 }',
           ("((4,8),(2,2)):((32,1),(16,8))", "((4,8),(2,2)):((32,1),({16 / p},8))")),
    family("broken_families", "extent", 'parameters { name: "p" set: 8 set: 400000000 }',
           ('shape_mnk: "(16,8,16)"', 'shape_mnk: "(16,{p},16)"')),
    family("broken_families", "id", 'parameters { name: "p" set: 1 }', id_template="elsewhere.mma.p{p}"),
])
LOADING = {"broken_families": (BROKEN_FAMILIES, ['WW_TEST_NAME="broken_families"'])}


@pytest.fixture(scope="module")
def test_plugin_build(sdk, tmp_path_factory):
    """Every plugin of BAD and LOADING, built in one project."""
    src = tmp_path_factory.mktemp("bad_src")
    (src / "plugin.cpp").write_text(BAD_SOURCE)
    lines = ["cmake_minimum_required(VERSION 3.25)", "project(bad_plugins LANGUAGES C CXX)",
             "find_package(warpweave CONFIG REQUIRED)"]
    for name, (text, defs, *_) in {**BAD, **LOADING}.items():
        (src / f"{name}.textproto").write_text(text)
        lines.append(f"warpweave_add_backend({name} SOURCES plugin.cpp MANIFEST ${{CMAKE_CURRENT_SOURCE_DIR}}/{name}.textproto)")
        quoted = " ".join('"' + d.replace('"', '\\"') + '"' for d in defs)
        lines.append(f"target_compile_definitions({name} PRIVATE {quoted})")
    (src / "CMakeLists.txt").write_text("\n".join(lines) + "\n")
    build_dir = tmp_path_factory.mktemp("bad_build")
    build_project(src, build_dir, sdk)
    return build_dir


@pytest.fixture(scope="module")
def bad_plugins(test_plugin_build, tmp_path_factory):
    plugin_dir = tmp_path_factory.mktemp("bad_plugins")
    for name in BAD:
        shutil.copy(test_plugin_build / f"{name}.so", plugin_dir)
    return plugin_dir


@pytest.fixture(scope="module")
def loading_plugins(test_plugin_build, tmp_path_factory):
    plugin_dir = tmp_path_factory.mktemp("loading_plugins")
    for name in LOADING:
        shutil.copy(test_plugin_build / f"{name}.so", plugin_dir)
    return plugin_dir


@needs_build
def test_bad_plugins_are_refused_and_the_others_load(bad_plugins, example_plugin):
    r = warpweave("plugins", "--json", plugin_path=[str(bad_plugins), str(example_plugin)])
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    loaded = {p["name"] for p in report if "name" in p}
    assert {"ampere", "example_b1"} <= loaded, report
    assert not loaded & {"bad_abi", "no_entry", "bad_parse", "bad_operands"}
    refused = {os.path.basename(p["refused"]): p["reason"] for p in report if "refused" in p}
    for name, (_, _, expect) in BAD.items():
        assert f"{name}.so" in refused, (name, refused)
        for text in expect:
            assert text in refused[f"{name}.so"], (name, refused[f"{name}.so"])
    assert "already loaded" in refused["clash.so"] or "clashes" in refused["clash.so"]
    # the loaded ampere is the in-tree one, not the impostor
    amp = [p for p in report if p.get("name") == "ampere"][0]
    assert not amp["path"].startswith(str(bad_plugins))
    # the human listing names each refused file and why
    text = warpweave("plugins", plugin_path=[str(bad_plugins), str(example_plugin)]).stdout
    for name in BAD:
        assert os.path.join(str(bad_plugins), f"{name}.so") in text
    assert "no entry point" in text


@needs_build
def test_refusals_fail_the_conformance_manifest_tier(bad_plugins, tmp_path):
    out = tmp_path / "r.json"
    r = warpweave("conformance", "--tier", "manifest", "--json", str(out), plugin_path=[str(bad_plugins)])
    assert r.returncode == 1
    records = json.loads(out.read_text())
    refused = [x for x in records if x["status"] == "fail" and x["reason"].startswith("plugin refused")]
    assert {os.path.basename(x["backend"]) for x in refused} == {f"{n}.so" for n in BAD}


@needs_build
def test_broken_family_instances_fail_the_conformance_manifest_tier(loading_plugins, tmp_path):
    r = warpweave("plugins", "--json", plugin_path=[str(loading_plugins)])
    assert "broken_families" in {p.get("name") for p in json.loads(r.stdout)}, r.stdout  # loading expands nothing
    out = tmp_path / "r.json"
    r = warpweave("conformance", "--backend", "broken_families", "--tier", "manifest", "--json", str(out),
                  plugin_path=[str(loading_plugins)])
    assert r.returncode == 1, r.stdout + r.stderr
    records = {x["atom"]: x for x in json.loads(out.read_text())}
    for good in ("broken_families.layout.p1", "broken_families.extent.p8"):
        assert records[good]["status"] == "pass", records[good]
    expect = {
        "broken_families.layout.p2": "is not injective",
        "broken_families.extent.p400000000": "each extent must be in 1..65536, not 400000000",
        "elsewhere.mma.p1": 'its id must start with "broken_families."',
    }
    for atom, reason in expect.items():
        assert records[atom]["status"] == "fail" and reason in records[atom]["reason"], records[atom]
        assert "family broken_families." in records[atom]["reason"]  # the family and instance it comes from


# --- what the example plugin's Python package adds (manifest.proto, PythonPackage) ------------------------------

def _run_python(code: str, plugin_dir, arch="sm_80"):
    """Runs `code` as a program file (decorated functions need their source) in a process of its own."""
    prog = plugin_dir.parent / f"prog_{abs(hash(code))}.py"
    prog.write_text(code)
    env = dict(os.environ)
    env["WARPWEAVE_PLUGIN_PATH"] = str(plugin_dir)
    env.pop("WARPWEAVE_ARCH", None)
    if arch:
        env["WARPWEAVE_ARCH"] = arch
    env["WARPWEAVE_DISABLE_CACHE"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "frontend_python"), os.path.join(ROOT, "pipelines")])
    return subprocess.run([sys.executable, str(prog)], capture_output=True, text=True, env=env, timeout=600,
                          cwd=ROOT)


def test_example_plugin_helper_module_is_a_public_name(example_plugin):
    code = """
import numpy as np
import warpweave.utils.b1_helpers as b1
from warpweave._dsl.registry.plugins import registry
assert sorted(registry.backends) == ["example_b1"], registry.backends  # the import loads the claiming backend only
import warpweave.backends.example_b1.helpers as own
from warpweave.utils import b1_helpers
import warpweave.utils
assert b1 is own is b1_helpers is warpweave.utils.b1_helpers
rng = np.random.default_rng(7)
bits = rng.integers(0, 2, size=(5, 96))
words = b1.pack_bits(bits)
assert words.shape == (5, 3) and words.dtype == np.uint32
assert (b1.unpack_bits(words) == bits).all()
assert ((words[:, 0] >> 3) & 1 == bits[:, 3]).all()   # bit i of word w is column 32 w + i
print("ok")
"""
    r = _run_python(code, example_plugin)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr
    # Without the plugin the name does not exist, with a message saying why.
    empty = example_plugin.parent / "no_plugins"
    empty.mkdir(exist_ok=True)
    r = _run_python("import warpweave.utils.b1_helpers", empty)
    assert r.returncode != 0 and "No module named 'warpweave.utils.b1_helpers'" in r.stderr, r.stderr
    r = _run_python("import warpweave.utils as u; u.b1_helpers", empty)
    assert "no loaded backend ships warpweave.utils.b1_helpers" in r.stderr, r.stderr


B1_KERNEL = """
import warpweave as cutlass
import warpweave.cute as cute
import warpweave.utils.b1_helpers as b1

@cute.kernel
def gemm(gA: cute.Tensor, gB: cute.Tensor, gC: cute.Tensor):
    # D = C + popcount(A op B): the plugin's 1-bit MMA, its A and B fragments typed by its operand kind.
    mma = b1.make_b1_tiled_mma("{op}")
    thr = mma.get_slice(cute.arch.thread_idx()[0])
    tA = mma.make_fragment_A(thr.partition_A(gA))
    tB = mma.make_fragment_B(thr.partition_B(gB))
    tC = thr.partition_C(gC)
    acc = mma.make_fragment_C(tC)
    cute.autovec_copy(thr.partition_A(gA), tA)
    cute.autovec_copy(thr.partition_B(gB), tB)
    cute.autovec_copy(tC, acc)
    {retype}
    cute.gemm(mma, acc, tA, tB, acc)
    cute.autovec_copy(acc, tC)

@cute.jit
def run(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor):
    gemm(a, b, c).launch(grid=(1, 1, 1), block=(32, 1, 1))
"""


B1_GEMM = B1_KERNEL + """
a = cute.runtime.make_fake_tensor(cutlass.Uint32, (16, 8), stride=(8, 1))
b = cute.runtime.make_fake_tensor(cutlass.Uint32, (8, 8), stride=(8, 1))
c = cute.runtime.make_fake_tensor(cutlass.Int32, (16, 8), stride=(8, 1))
f = cute.compile(run, a, b, c)
print("mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.xor.popc" in f.ptx)
"""


def test_example_plugin_operand_kind_drives_cute_gemm(example_plugin):
    r = _run_python(B1_GEMM.replace("{op}", "xor_popc").replace("{retype}", "pass"), example_plugin)
    assert r.returncode == 0 and r.stdout.strip() == "True", r.stdout + r.stderr
    # The kind's adapter refuses a fragment of other values at the user's line (the generic register adapter
    # could not have typed the "b32" words at all).
    r = _run_python(B1_GEMM.replace("{op}", "xor_popc").replace(
        "{retype}", "tA = cute.make_fragment_like(tA, cutlass.Float32)"), example_plugin)
    assert r.returncode != 0
    assert "packed 32 to a word" in r.stderr and "prog_" in r.stderr.splitlines()[-1], r.stderr


B1_DESCRIPTOR = """
import warpweave as cutlass
import warpweave.cute as cute
import warpweave.utils.b1_helpers as b1

@cute.kernel
def k(desc, out: cute.Tensor):
    out[0] = b1.descriptor_rows(desc)
    out[1] = b1.descriptor_words_per_row(desc)

@cute.jit
def run(words: cute.Tensor, out: cute.Tensor):
    k(b1.bit_matrix_descriptor(words), out).launch(grid=(1, 1, 1), block=(1, 1, 1))

words = cute.runtime.make_fake_tensor(cutlass.Uint32, (64, 8), stride=(8, 1))
out = cute.runtime.make_fake_tensor(cutlass.Int32, (2,), stride=(1,))
f = cute.compile(run, words, out)
import re
print(bool(re.search(r"\\.param \\.align 8 \\.b8 \\w+_param_\\d+\\[16\\]", f.ptx)))
(h,) = f.host_arguments.values()

class T:  # what a call's tensor offers the producer
    def __init__(self, ptr, shape):
        self.data_ptr, self.shape, self.stride = ptr, shape, (shape[1], 1)

import struct
v = h.value(T(0x7000, (64, 8)))
print(struct.unpack("<QII", v) == (0x7000, 64, 8), h.value(T(0x7000, (64, 8))) is v,
      struct.unpack("<QII", h.value(T(0x9000, (3, 5)))) == (0x9000, 3, 5))
"""


def test_example_plugin_host_argument_is_a_grid_constant_parameter(example_plugin):
    r = _run_python(B1_DESCRIPTOR, example_plugin)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.split() == ["True", "True", "True", "True"], r.stdout


B1_ON_GPU = B1_KERNEL.replace("{retype}", "pass") + """
import numpy as np
import torch
from warpweave.cute.runtime import from_dlpack

@cute.kernel
def describe(desc, out: cute.Tensor):
    out[0] = b1.descriptor_rows(desc)
    out[1] = b1.descriptor_words_per_row(desc)

@cute.jit
def run_describe(words: cute.Tensor, out: cute.Tensor):
    describe(b1.bit_matrix_descriptor(words), out).launch(grid=(1, 1, 1), block=(1, 1, 1))

rng = np.random.default_rng(11)
abits = rng.integers(0, 2, size=(16, 256))
bbits = rng.integers(0, 2, size=(8, 256))
c0 = rng.integers(-1000, 1000, size=(16, 8)).astype(np.int32)
words = lambda bits: torch.from_numpy(b1.pack_bits(bits).view(np.int32)).cuda()
a, b = words(abits), words(bbits)
c = torch.from_numpy(c0.copy()).cuda()
run(from_dlpack(a), from_dlpack(b), from_dlpack(c))  # static layouts: the fragments are register arrays
torch.cuda.synchronize()
pair = (abits[:, None, :] & bbits[None, :, :]) if "{op}" == "and_popc" else (abits[:, None, :] ^ bbits[None, :, :])
want = c0.astype(np.int64) + pair.sum(axis=2)
got = c.cpu().numpy()
assert (got == want).all(), (got, want)

out = torch.full((2,), -1, dtype=torch.int32, device="cuda")
for rows, wpr in ((64, 8), (5, 3)):
    w = torch.zeros((rows, wpr), dtype=torch.int32, device="cuda")
    run_describe(from_dlpack(w).mark_layout_dynamic(), from_dlpack(out).mark_layout_dynamic())
    torch.cuda.synchronize()
    assert out.cpu().tolist() == [rows, wpr], out
print("ok")
"""


@requires_gpu
@pytest.mark.parametrize("op", ["and_popc", "xor_popc"])
def test_example_plugin_kernels_run(example_plugin, op):
    """On the GPU: the 1-bit MMA through the plugin's operand kind against numpy popcounts, and the per-call host
    argument read back by a kernel for two shapes of one compilation."""
    r = _run_python(B1_ON_GPU.replace("{op}", op), example_plugin, arch="")
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr
