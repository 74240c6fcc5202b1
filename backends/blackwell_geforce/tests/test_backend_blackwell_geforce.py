"""The consumer Blackwell backend's own unit test (CPU only).

The conformance suite checks its families like every backend's (manifest and compile tiers, SASS included); this
file pins down what is specific to this one: the committed manifest is its generator's output, its targets and
limits, that the frontend selects it for compute capability 12.x and loads Ampere and Hopper with it (declared, not
copied: Hopper's TMA, mbarrier and cluster entries through its portable sm_90 target),
that Python names select the right instances on sm_120a and nowhere else, and the thread-value layouts recomputed
from the PTX ISA's fragment rules of mma.sync m16n8k32 (8-bit values) and m16n8k64 (packed 4-bit values).
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from warpweave import _core
from warpweave._dsl.registry.plugins import registry

BACKEND_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir)
ROOT = os.path.join(BACKEND_DIR, os.pardir, os.pardir)


@pytest.fixture(scope="module")
def geforce():
    registry.load()
    refused = [r for r in _core.plugin_refusals() if "blackwell_geforce" in str(r)]
    assert not refused, f"the consumer Blackwell plugin was refused: {refused}"
    assert "blackwell_geforce" in registry.backends, \
        "ww_backend_blackwell_geforce was not found; build the ww_backend_blackwell_geforce target"
    return registry.backends["blackwell_geforce"]


def test_committed_manifest_is_the_generators_output():
    spec = importlib.util.spec_from_file_location("bwg_gen", os.path.join(BACKEND_DIR, "generate_manifest.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    with open(os.path.join(BACKEND_DIR, "blackwell_geforce.textproto")) as f:
        text = f.read()
    assert text == gen.manifest_text(), \
        "blackwell_geforce.textproto is stale: run backends/blackwell_geforce/generate_manifest.py"


def test_targets_and_limits(geforce):
    ts = {t["name"]: t for t in geforce.manifest["targets"]}
    assert set(ts) == {"sm_120a", "sm_121a"}
    for name, cc in (("sm_120a", 120), ("sm_121a", 121)):
        t = ts[name]
        assert t["compute_capability"] == cc and t["arch_specific"]
        assert t["llvm_cpu"] == name and t["jit_arch"] == name
        assert t["smem_capacity_bytes"] == 101376  # 99 KiB a block, not the 227 KiB of sm_90a/sm_100a
    assert geforce.extends == ["ampere", "hopper", "blackwell"]
    # No tcgen05 and no wgmma: the generation has neither.
    assert geforce.manifest.get("python_modules") == ["warp"]
    for f in geforce.families:
        assert f["template"]["python_name"].startswith("warp."), f["id"]
        assert set(f["template"]["targets"]) == {"sm_120a", "sm_121a"}, f["id"]
    # Its own primitives are only what Hopper has for sm_90a alone and this generation has too (setmaxnreg) and
    # datacenter Blackwell's cluster launch control, which ptxas takes for sm_120a and sm_121a; none of the TMA or
    # mbarrier entries is repeated here.
    assert sorted(p["python_name"] for p in geforce.primitives) == [
        "arch.clc_query_cancel", "arch.clc_try_cancel", "arch.clc_try_cancel_multicast",
        "arch.setmaxregister_decrease", "arch.setmaxregister_increase"]
    # Its atoms are datacenter Blackwell's byte matrix loads and stores, emitted again for its targets (the same PTX).
    blackwell = registry.backends["blackwell"]
    theirs = {a["id"].replace("blackwell.", "", 1): a for a in blackwell.atoms if ".warp." in a["id"]}
    assert theirs and sorted(a["id"].replace("blackwell_geforce.", "", 1) for a in geforce.atoms) == sorted(theirs)
    for a in geforce.atoms:
        mine = theirs[a["id"].replace("blackwell_geforce.", "", 1)]
        assert set(a["targets"]) == {"sm_120a", "sm_121a"}, a["id"]
        assert {k: v for k, v in a.items() if k not in ("id", "targets")} == \
            {k: v for k, v in mine.items() if k not in ("id", "targets")}, a["id"]


@pytest.mark.parametrize("major, minor, name", [(12, 0, "sm_120a"), (12, 1, "sm_121a")])
def test_selected_for_compute_capability_12(geforce, major, minor, name):
    from warpweave._dsl.registry.target import target_for_capability

    t = target_for_capability(major, minor)
    assert (t.name, t.backend, t.llvm_cpu) == (name, "blackwell_geforce", name)
    usable = {b.name for b in registry.usable_backends(major * 10 + minor)}
    # Ampere's atoms and Hopper's sm_90 entries (non-arch-specific targets) apply; datacenter Blackwell's (sm_100a)
    # do not, nor Hopper's sm_90a-only ones (test_hopper_portable_entries_select_on_sm_120a).
    assert usable == {"ampere", "hopper", "blackwell_geforce"}


def test_warpweave_arch_selects_it_without_a_gpu(geforce):
    env = dict(os.environ, WARPWEAVE_ARCH="sm_120a", WARPWEAVE_DISABLE_CACHE="1")
    env.pop("WARPWEAVE_PLUGIN_PATH", None)
    code = ("import json\nfrom warpweave._dsl.registry.target import select_target\nt = select_target()\n"
            "print(json.dumps([t.name, t.backend, [b.name for b in t.usable_backends()]]))")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1]) == ["sm_120a", "blackwell_geforce",
                                                             ["blackwell_geforce", "ampere", "hopper"]]


def test_listed_with_its_base():
    env = dict(os.environ)
    env.pop("WARPWEAVE_PLUGIN_PATH", None)
    r = subprocess.run([sys.executable, "-m", "warpweave", "plugins", "--json"], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    listed = {p["name"]: p for p in json.loads(r.stdout) if "name" in p}
    assert {"ampere", "hopper", "blackwell", "blackwell_geforce"} <= set(listed)
    assert listed["blackwell_geforce"]["extends"] == ["ampere", "hopper", "blackwell"]


def _select_for(arch, python_name, params):
    from warpweave._dsl.atoms import atoms
    from warpweave._dsl.base import trace

    with trace.tracing(trace.TraceState(target={"name": arch})):
        return atoms.select(python_name, params)[1]


@pytest.mark.parametrize("python_name, params, ident", [
    ("warp.MmaMXF4NVF4Op", {"a_dtype": "Float4E2M1FN", "acc_dtype": "Float32", "sf_dtype": "Float8E4M3FN"},
     "blackwell_geforce.mma.m16n8k64.mxf4nvf4.f32.e2m1.e2m1.ue4m3"),
    ("warp.MmaMXF4NVF4Op", {"a_dtype": "Float4E2M1FN", "acc_dtype": "Float32", "sf_dtype": "Float8E8M0FNU"},
     "blackwell_geforce.mma.m16n8k64.mxf4nvf4.f32.e2m1.e2m1.ue8m0"),
    ("warp.MmaMXF4Op", {"a_dtype": "Float4E2M1FN", "acc_dtype": "Float32", "sf_dtype": "Float8E8M0FNU"},
     "blackwell_geforce.mma.m16n8k64.mxf4.f32.e2m1.e2m1.ue8m0"),
    ("warp.MmaMXF8F6F4Op", {"a_dtype": "Float8E4M3FN", "b_dtype": "Float6E2M3FN", "acc_dtype": "Float32",
                            "sf_dtype": "Float8E8M0FNU"},
     "blackwell_geforce.mma.m16n8k32.mxf8f6f4.f32.e4m3.e2m3_b8.ue8m0"),
    ("warp.MmaF8F6F4Op", {"a_dtype": "Float4E2M1FN", "b_dtype": "Float6E3M2FN", "acc_dtype": "Float16"},
     "blackwell_geforce.mma.m16n8k32.f8f6f4.f16.e2m1_b8.e3m2_b8"),
    # Ampere's atoms, through extends: the same entries as on sm_80, nothing copied.
    ("warp.MmaF16BF16Op", {"ab_dtype": "Float16", "acc_dtype": "Float32", "shape_mnk": "(16,8,16)"},
     "ampere.mma.m16n8k16.f32.f16.f16.f32"),
    ("warp.MmaF8Op", {"a_dtype": "Float8E4M3FN", "b_dtype": "Float8E5M2", "acc_dtype": "Float32",
                      "shape_mnk": "(16,8,32)"}, "ampere.mma.m16n8k32.f32.e4m3.e5m2.f32"),
])
def test_python_names_select_on_sm_120a(geforce, python_name, params, ident):
    assert _select_for("sm_120a", python_name, params)["id"] == ident
    assert _select_for("sm_121a", python_name, params)["id"] == ident


def test_block_scaled_mma_is_refused_off_its_generation(geforce):
    from warpweave._dsl.base.errors import DSLValueError

    params = {"a_dtype": "Float4E2M1FN", "acc_dtype": "Float32", "sf_dtype": "Float8E4M3FN"}
    for arch in ("sm_80", "sm_90a", "sm_100a"):
        with pytest.raises(DSLValueError):
            _select_for(arch, "warp.MmaMXF4NVF4Op", params)
    # A pairing ptxas refuses (ue4m3 scales need scale_vec::4X, which only nvf4 has) is not an instance.
    with pytest.raises(DSLValueError):
        _select_for("sm_120a", "warp.MmaMXF4Op", params)


def test_block_scaled_templates_and_opcodes(geforce):
    nvf4 = _select_for("sm_120a", "warp.MmaMXF4NVF4Op",
                       {"a_dtype": "Float4E2M1FN", "acc_dtype": "Float32", "sf_dtype": "Float8E4M3FN"})
    assert ".kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3 " in nvf4["ptx_template"]
    assert nvf4["sass_opcodes"] == ["OMMA.SF.16864.F32.E2M1.E2M1.UE4M3.4X"]
    allowed = {a["name"]: a.get("allowed", []) for a in nvf4["attributes"]}
    assert allowed == {"byte_id_a": ["0"], "byte_id_b": ["0"], "thread_id_a": ["0", "1"],
                       "thread_id_b": ["0", "1", "2", "3"]}
    mx = _select_for("sm_120a", "warp.MmaMXF8F6F4Op", {"a_dtype": "Float6E3M2FN", "b_dtype": "Float4E2M1FN",
                                                        "acc_dtype": "Float32", "sf_dtype": "Float8E8M0FNU"})
    assert ".kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e3m2.e2m1.f32.ue8m0 " in mx["ptx_template"]
    assert mx["sass_opcodes"] == ["QMMA.SF.16832.F32.E3M2.E2M1.E8"]
    f16 = _select_for("sm_120a", "warp.MmaF8F6F4Op", {"a_dtype": "Float8E5M2", "b_dtype": "Float6E2M3FN",
                                                       "acc_dtype": "Float16"})
    assert f16["ptx_template"].startswith("mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f16.e5m2.e2m3.f16 "
                                          "{$0, $1}, {$2, $3, $4, $5}, {$6, $7}, {$8, $9};")
    d = [o for o in f16["operands"] if o["name"] == "d"][0]
    assert (d["values"], d["registers"], d["register_type"]) == (4, 2, "b32")


# ------------------------------------------------------------------------------------------------------------
# Thread-value layouts against the PTX ISA's fragment rules of mma.sync (lane l: group g = l / 4, t = l % 4).
# ------------------------------------------------------------------------------------------------------------

def _a_ref(k, lane, v):
    """(row, col) of A's value v: 8-bit (k=32) 4 K-consecutive values a register, packed 4-bit (k=64) 8."""
    per = 4 if k == 32 else 8
    g, t = divmod(lane, 4)
    row = g + 8 * ((v // per) % 2)
    col = t * per + v % per + (k // 2) * (v // (2 * per))
    return row, col


def _b_ref(k, lane, v):
    """(col n, row k) of B's value v."""
    per = 4 if k == 32 else 8
    g, t = divmod(lane, 4)
    return g, t * per + v % per + (k // 2) * (v // per)


def _c_ref(lane, v):
    g, t = divmod(lane, 4)
    return g + 8 * (v // 2), 2 * t + v % 2


@pytest.mark.parametrize("python_name, params, k", [
    ("warp.MmaF8F6F4Op", {"a_dtype": "Float6E2M3FN", "b_dtype": "Float4E2M1FN", "acc_dtype": "Float32"}, 32),
    ("warp.MmaMXF8F6F4Op", {"a_dtype": "Float8E4M3FN", "b_dtype": "Float8E4M3FN", "acc_dtype": "Float32",
                            "sf_dtype": "Float8E8M0FNU"}, 32),
    ("warp.MmaMXF4NVF4Op", {"a_dtype": "Float4E2M1FN", "acc_dtype": "Float32", "sf_dtype": "Float8E4M3FN"}, 64),
])
def test_fragment_layouts(geforce, python_name, params, k):
    import warpweave.cute as cute

    e = _select_for("sm_120a", python_name, params)
    ops = {o["name"]: o for o in e["operands"]}
    layouts = {n: cute.parse_layout(ops[n]["layout_tv"]) for n in ("a", "b", "c", "d")}
    for lane in range(32):
        for v in range(ops["a"]["values"]):
            r, c = _a_ref(k, lane, v)
            assert layouts["a"]((lane, v)) == r + 16 * c, ("a", lane, v)
        for v in range(ops["b"]["values"]):
            n, kk = _b_ref(k, lane, v)
            assert layouts["b"]((lane, v)) == n + 8 * kk, ("b", lane, v)
        for name in ("c", "d"):
            for v in range(4):
                r, c = _c_ref(lane, v)
                assert layouts[name]((lane, v)) == r + 16 * c, (name, lane, v)
    # A packs its values into 4 b32 registers, B into 2: 8-bit containers 4 a register, e2m1 8.
    assert (ops["a"]["values"], ops["b"]["values"]) == ((16, 8) if k == 32 else (32, 16))
    assert (ops["a"]["registers"], ops["b"]["registers"]) == (4, 2)


# ------------------------------------------------------------------------------------------------------------
# A kernel through the frontend: a tiled MMA of the kind::f8f6f4 atom (f16 accumulate, which Ada's fp8 mma.sync
# does not have), compiled for sm_120a without a GPU; the same program names no atom on sm_100a.
# ------------------------------------------------------------------------------------------------------------

_F8F6F4_GEMM = """
import warpweave as cutlass
import warpweave.cute as cute

@cute.kernel
def gemm(gA: cute.Tensor, gB: cute.Tensor, gC: cute.Tensor):
    mma = cute.make_tiled_mma(cute.nvgpu.warp.MmaF8F6F4Op(cutlass.Float8E4M3FN, cutlass.Float8E5M2, cutlass.Float16))
    thr = mma.get_slice(cute.arch.thread_idx()[0])
    tA = mma.make_fragment_A(thr.partition_A(gA))
    tB = mma.make_fragment_B(thr.partition_B(gB))
    tC = thr.partition_C(gC)
    acc = mma.make_fragment_C(tC)
    cute.autovec_copy(thr.partition_A(gA), tA)
    cute.autovec_copy(thr.partition_B(gB), tB)
    cute.autovec_copy(tC, acc)
    cute.gemm(mma, acc, tA, tB, acc)
    cute.autovec_copy(acc, tC)

@cute.jit
def run(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor):
    gemm(a, b, c).launch(grid=(1, 1, 1), block=(32, 1, 1))

a = cute.runtime.make_fake_tensor(cutlass.Float8E4M3FN, (16, 32), stride=(32, 1))
b = cute.runtime.make_fake_tensor(cutlass.Float8E5M2, (8, 32), stride=(32, 1))
c = cute.runtime.make_fake_tensor(cutlass.Float16, (16, 8), stride=(8, 1))
f = cute.compile(run, a, b, c)
print(".target sm_120a" in f.ptx, bytes(f.cubin[:4]) == b"\\x7fELF")
print("\\n".join(l.strip() for l in f.ptx.splitlines() if "mma.sync" in l))
"""


def _compile_child(arch, folder):
    # In a file: the frontend rewrites a decorated function from its source.
    prog = folder / "f8f6f4_gemm.py"
    prog.write_text(_F8F6F4_GEMM)
    env = dict(os.environ, WARPWEAVE_ARCH=arch, WARPWEAVE_DISABLE_CACHE="1")
    env.pop("WARPWEAVE_PLUGIN_PATH", None)
    return subprocess.run([sys.executable, str(prog)], env=env, capture_output=True, text=True, timeout=300)


def test_a_kind_f8f6f4_tiled_mma_compiles_for_sm_120a(geforce, tmp_path):
    r = _compile_child("sm_120a", tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.strip().splitlines()
    assert lines[0] == "True True"
    assert lines[1:] == ["mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f16.e4m3.e5m2.f16 {%r1, %r2}, "
                         "{%r3, %r4, %r5, %r6}, {%r7, %r8}, {%r9, %r10};"]


def test_the_same_program_has_no_atom_on_sm_100a(geforce, tmp_path):
    r = _compile_child("sm_100a", tmp_path)
    assert r.returncode != 0
    # refused at the user's line, naming the targets that have the atom
    assert "f8f6f4_gemm.py:7: warp.MmaF8F6F4Op(" in r.stderr and "for sm_120a, sm_121a) but not for the current " \
        "target sm_100a" in r.stderr, r.stderr[-2000:]


# ------------------------------------------------------------------------------------------------------------
# What extends "ampere" rests on: every Ampere atom and primitive (targets sm_80 and sm_89, not arch-specific)
# assembles for sm_120a and sm_121a into the SASS opcodes its manifest names, through the conformance suite's own
# compile probes.
# ------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("target", ["sm_120a", "sm_121a"])
def test_ampere_entries_compile_for_consumer_blackwell(geforce, target):
    from warpweave_conformance import compile_tier

    ampere = registry.backends["ampere"]
    entries = ampere.atoms + ampere.primitives + ampere.all_instances()
    assert len(entries) > 40
    t = [x for x in geforce.targets if x.name == target][0].as_dict()
    jobs = [(i, f"probe_{i}", "ampere", e, True) for i, e in enumerate(entries)]
    results = compile_tier.compile_batch((t, jobs))
    assert len(results) == len(entries)
    bad = [(entries[i]["id"], reason) for i, status, reason, _ in results if status != "pass"]
    assert not bad, bad[:10]
    if _core.sass_tool_available():
        checked = [i for i, _, reason, _ in results if "SASS has" in reason]
        assert len(checked) >= len([e for e in entries if e.get("sass_opcodes")])


# ------------------------------------------------------------------------------------------------------------
# What extends "hopper" rests on: TMA, mbarrier, bulk groups, proxy fences, clusters, elect.sync, stmatrix and
# griddepcontrol are sm_90 PTX, offered by Hopper's manifest for its portable sm_90 target too; wgmma and
# setmaxnreg stay sm_90a's (setmaxnreg has its own entries here: ptxas takes it for sm_120a as well).
# ------------------------------------------------------------------------------------------------------------

def _hopper_portable_entries():
    hopper = registry.backends["hopper"]
    return [e for e in hopper.atoms + hopper.primitives if "sm_90" in e.get("targets", [])]


def test_hopper_offers_its_non_arch_specific_entries_for_sm_90(geforce):
    hopper = registry.backends["hopper"]
    portable = [t for t in hopper.targets if t.name == "sm_90"]
    assert portable and not portable[0].arch_specific and portable[0].usable_on(120)
    ids = {e["id"] for e in _hopper_portable_entries()}
    assert {"hopper.tma.load.3d", "hopper.tma.store.2d", "hopper.mbarrier.init", "hopper.mbarrier.try_wait.parity",
            "hopper.fence.proxy.async.shared_cta", "hopper.elect.sync", "hopper.stmatrix.x4.trans.b16"} <= ids
    assert not [i for i in ids if ".wgmma." in i or ".setmaxnreg." in i or ".multicast." in i], ids
    for f in hopper.families:      # wgmma: sm_90a alone
        assert f["template"]["targets"] == ["sm_90a"], f["id"]


@pytest.mark.parametrize("python_name, params, ident", [
    ("cpasync.CopyBulkTensorTileG2SOp", {"rank": "3"}, "hopper.tma.load.3d"),
    ("cpasync.CopyBulkTensorTileS2GOp", {"rank": "2"}, "hopper.tma.store.2d"),
    ("warp.StMatrix8x8x16bOp", {"transpose": "True", "num_matrices": "4"}, "hopper.stmatrix.x4.trans.b16"),
])
def test_hopper_atoms_select_on_sm_120a(geforce, python_name, params, ident):
    for arch in ("sm_120a", "sm_121a"):
        assert _select_for(arch, python_name, params)["id"] == ident


def test_hopper_primitives_select_on_sm_120a_and_the_target_own_entries_win(geforce):
    from warpweave._dsl.atoms import atoms
    from warpweave._dsl.base import trace
    from warpweave._dsl.base.errors import DSLValueError

    def prim(arch, name, operands):
        with trace.tracing(trace.TraceState(target={"name": arch})):
            return atoms.select(name, {}, operands)[1]["id"]

    # Hopper's mbarrier wins over Ampere's (the newer generation's entry), for sm_120a as for sm_90a; on sm_100a
    # Blackwell's own entry wins (made for the target being compiled for).
    assert prim("sm_120a", "arch.mbarrier_init", {"mbar", "count"}) == "hopper.mbarrier.init"
    assert prim("sm_90a", "arch.mbarrier_init", {"mbar", "count"}) == "hopper.mbarrier.init"
    assert prim("sm_100a", "arch.mbarrier_init", {"mbar", "count"}) == "blackwell.mbarrier.init"
    assert prim("sm_120a", "arch.setmaxregister_increase", set()) == "blackwell_geforce.setmaxnreg.inc"
    assert prim("sm_90a", "arch.setmaxregister_increase", set()) == "hopper.setmaxnreg.inc"
    with pytest.raises(DSLValueError, match="not for the current target sm_120a"):
        prim("sm_120a", "warpgroup.fence", set())     # wgmma is sm_90a's alone
    with pytest.raises(DSLValueError, match="not for the current target sm_120a"):
        # no hardware TMA multicast on consumer Blackwell (ptxas would emulate it with global loads)
        _select_for("sm_120a", "cpasync.CopyBulkTensorTileG2SMulticastOp", {"rank": "2"})


@pytest.mark.parametrize("target", ["sm_120a", "sm_121a"])
def test_hopper_portable_entries_compile_for_consumer_blackwell(geforce, target):
    from warpweave_conformance import compile_tier

    # ptxas 13.0's sm_120a code initialises an mbarrier with a shared store and an invalidation of its cached
    # state, not sm_90a's SYNCS.EXCH.64; every other entry is the SASS its manifest names.
    consumer_sass = {"hopper.mbarrier.init": ["STS.64", "SYNCS.CCTL.IVALL"]}
    entries = [dict(e, sass_opcodes=consumer_sass.get(e["id"], e.get("sass_opcodes", [])))
               for e in _hopper_portable_entries()]
    assert len(entries) > 50
    t = [x for x in geforce.targets if x.name == target][0].as_dict()
    jobs = [(i, f"probe_{i}", "hopper", e, True) for i, e in enumerate(entries)]
    results = compile_tier.compile_batch((t, jobs))
    bad = [(entries[i]["id"], reason) for i, status, reason, _ in results if status != "pass"]
    assert not bad, bad[:10]


# A TMA tile load into shared memory, completed on an mbarrier, then a TMA store back: compiled for sm_120a
# with Hopper's entries.
_TMA_ROUNDTRIP = '''
import numpy as np
import warpweave as cutlass
import warpweave.cute as cute
from warpweave import utils
from warpweave.cute.nvgpu import cpasync
from warpweave.cute.runtime import from_dlpack

TILE = (64, 64)

@cute.kernel
def k(load: cute.CopyAtom, src: cute.Tensor, store: cute.CopyAtom, dst: cute.Tensor):
    smem = utils.SmemAllocator()
    s = smem.allocate_tensor(cutlass.Float16, cute.make_layout(TILE, stride=(64, 1)), byte_alignment=128)
    bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
    tidx, _, _ = cute.arch.thread_idx()
    if tidx == 0:
        cute.arch.mbarrier_init(bar, 1)
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    ts, tg = cpasync.tma_partition(load, 0, cute.make_layout(1), cute.group_modes(s, 0, 2),
                                   cute.group_modes(cute.local_tile(src, TILE, (0, 0)), 0, 2))
    if tidx == 0:
        cute.arch.mbarrier_arrive_and_expect_tx(bar, 64 * 64 * 2)
        cute.copy(load, tg, ts, tma_bar_ptr=bar)
    cute.arch.mbarrier_wait(bar, 0)
    ss, dg = cpasync.tma_partition(store, 0, cute.make_layout(1), cute.group_modes(s, 0, 2),
                                   cute.group_modes(cute.local_tile(dst, TILE, (0, 0)), 0, 2))
    if tidx == 0:
        cute.copy(store, ss, dg)
        cute.arch.cp_async_bulk_commit_group()
        cute.arch.cp_async_bulk_wait_group(0)

@cute.jit
def host(a: cute.Tensor, b: cute.Tensor):
    lay = cute.make_layout(TILE, stride=(64, 1))
    load, src = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, lay, TILE)
    store, dst = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), b, lay, TILE)
    k(load, src, store, dst).launch(grid=(1, 1, 1), block=(32, 1, 1))

a = from_dlpack(np.zeros((64, 64), np.float16))
c = cute.compile(host, a, a)
import sys
sys.stdout.write(c.ptx + "\\n=====SASS=====\\n")
from warpweave import _core
sys.stdout.write(_core.disassemble_sass(c.cubin) if _core.sass_tool_available() else "")
'''


def test_a_tma_round_trip_compiles_for_sm_120a_without_calls_or_local_memory(geforce, tmp_path):
    import re

    prog = tmp_path / "tma_roundtrip.py"
    prog.write_text(_TMA_ROUNDTRIP)
    env = dict(os.environ, WARPWEAVE_ARCH="sm_120a", WARPWEAVE_DISABLE_CACHE="1")
    env.pop("WARPWEAVE_PLUGIN_PATH", None)
    r = subprocess.run([sys.executable, str(prog)], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    ptx, sass = r.stdout.split("=====SASS=====")
    assert ".target sm_120a" in ptx
    # The load names this CTA's shared memory: for a shared::cluster destination ptxas's sm_120a code checks the
    # address and calls out of the kernel when it lies in another CTA.
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.shared::cta\.global\.mbarrier::complete_tx::bytes", ptx), ptx
    assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group" in ptx
    assert "mbarrier.arrive.expect_tx.shared::cta.b64" in ptx and "mbarrier.try_wait.parity" in ptx
    if sass.strip():
        ops = set(re.findall(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Za-z0-9_.]*)", sass, re.M))
        assert {"UTMALDG.2D", "UTMASTG.2D", "SYNCS.EXCH.64", "SYNCS.PHASECHK.TRANS64.TRYWAIT"} <= ops, sorted(ops)
        assert not [o for o in ops if o.split(".")[0] in ("LDL", "STL", "CALL")], sorted(ops)
