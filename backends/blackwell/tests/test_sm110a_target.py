"""sm_110a, the Blackwell backend's third target (compute capability 11.0, family sm_110f), without a GPU.

- Arch has its members (sm_110, sm_110a, sm_110f), ordered after sm_103's; sm_110f is a family of its own:
  sm_110a is of it, sm_100a and sm_103a are not, and sm_110a is of no sm_100f.
- Every entry the manifest gives sm_110a compiles for it (LLVM's sm_110a CPU at PTX ISA 9.0, ptxas 13.0) into the
  SASS the entry names: the primitives and copies each, the tcgen05.mma families one instance per kind, CTA group
  and A source (the conformance compile tier checks every instance).
- What sm_110a lacks (float redux.sync, scale-input-d, the paired f32x2 arithmetic) is refused there, naming the
  targets that have it.
- A tcgen05 GEMM kernel compiles for sm_110a: .target sm_110a, the MMA and the tensor-memory loads.
"""
from __future__ import annotations

import re

import pytest

import warpweave.cute as cute
from warpweave import _core
from warpweave._dsl.registry.plugins import registry
from warpweave.base_dsl.arch import Arch

from dsl_helpers import sass_opcodes


@pytest.fixture(scope="module")
def blackwell():
    registry.load()
    return registry.backends["blackwell"]


def test_arch_members_and_family():
    assert Arch.sm_103a < Arch.sm_110 < Arch.sm_110a < Arch.sm_110f < Arch.sm_120
    assert (Arch.sm_110a.major, Arch.sm_110a.minor) == (11, 0)
    assert Arch.sm_110a.is_family_of(Arch.sm_110f) and Arch.sm_110.is_family_of(Arch.sm_110f)
    assert not Arch.sm_100a.is_family_of(Arch.sm_110f) and not Arch.sm_103a.is_family_of(Arch.sm_110f)
    assert not Arch.sm_110a.is_family_of(Arch.sm_100f)
    assert Arch.from_name("sm_110a") is Arch.sm_110a


def _sm110(blackwell):
    return [x for x in blackwell.targets if x.name == "sm_110a"][0].as_dict()


def _compile(blackwell, entries):
    from warpweave_conformance import compile_tier

    results = compile_tier.compile_batch((_sm110(blackwell), [(i, f"probe_{i}", "blackwell", e, True)
                                                             for i, e in enumerate(entries)]))
    return [(entries[i]["id"], reason) for i, status, reason, _ in results if status == "fail"]


def test_target_is_ptx_9_0(blackwell):
    # LLVM: "PTX version 8.8 does not support target 'sm_110a'. Minimum required PTX version is 9.0."
    t = _sm110(blackwell)
    assert (t["llvm_cpu"], t["jit_arch"], t["ptx_features"]) == ("sm_110a", "sm_110a", "+ptx90")


def test_every_sm_110a_entry_but_the_mmas_compiles_into_its_sass(blackwell):
    entries = [e for e in blackwell.atoms + blackwell.primitives + blackwell.all_instances()
               if "sm_110a" in e["targets"] and not e["id"].startswith("blackwell.tcgen05.mma.")]
    bad = _compile(blackwell, entries)
    assert len(entries) > 500 and not bad, bad[:10]


def test_one_mma_of_each_kind_group_and_source_compiles_into_its_sass(blackwell):
    firsts = {}
    for e in blackwell.all_instances():
        m = re.match(r"blackwell\.tcgen05\.mma\.(cta\d)\.([a-z0-9]+)\..*\.(ss|ts)$", e["id"])
        if m and "sm_110a" in e["targets"]:
            firsts.setdefault(m.groups(), e)
    kinds = {k for _, k, _ in firsts}
    assert {"f16", "tf32", "f8f6f4", "i8", "mxf8f6f4", "mxf4", "mxf4nvf4"} <= kinds, kinds
    bad = _compile(blackwell, list(firsts.values()))
    assert not bad, bad[:10]


@pytest.mark.parametrize("ident", ["blackwell.redux.sync.f32", "blackwell.fma.rn.f32x2",
                                   "blackwell.prim.tcgen05.mma.cta1.f16.ss.none.l0.s1.a0"])
def test_what_sm_110a_lacks_is_refused_there(blackwell, ident):
    from warpweave._dsl.atoms import atoms
    from warpweave._dsl.base import trace
    from warpweave._dsl.base.errors import DSLValueError

    _, ins = registry.instruction(ident)
    assert ins["targets"] == ["sm_100a", "sm_103a"]
    params = dict(ins["python_params"])
    with trace.tracing(trace.TraceState(target={"name": "sm_100a"})):
        assert atoms.select(ins["python_name"], params)[1]["id"] == ident
    with trace.tracing(trace.TraceState(target={"name": "sm_110a"})):
        with pytest.raises(DSLValueError, match=r"sm_100a, sm_103a.*not for the current target sm_110a"):
            atoms.select(ins["python_name"], params)


def test_a_tcgen05_gemm_compiles_for_sm_110a():
    from test_tcgen05_dsl import _compile_small_gemm

    compiled = _compile_small_gemm(arch="sm_110a")
    ptx = compiled.info["ptx"]
    assert re.search(r"^\.target sm_110a\b", ptx, re.M) and re.search(r"^\.version 9\.0\b", ptx, re.M)
    assert len(re.findall(r"tcgen05\.mma\.cta_group::1\.kind::f16", ptx)) == 4
    assert "tcgen05.ld.sync.aligned.32x32b.x32.b32" in ptx
    if _core.sass_tool_available():
        ops = sass_opcodes(compiled.cubin)
        assert sum(o.startswith("UTCHMMA") for o in ops) == 4 and any(o.startswith("LDTM") for o in ops), ops
