"""What a compile loads and looks up: the Hopper and Blackwell GEMM examples compile without protobuf's Python runtime
(the core maps manifests to dicts itself) and without the manifest of a backend their atoms do not need; atom-family
instances resolve among the loaded backends; selections are memoised per target; discovery notices a new plugin path.
"""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "frontend_python", "examples")

_CHILD = r"""
import json, sys
sys.path.insert(0, {examples!r})
import warpweave as cutlass
from warpweave import _core
import dense_gemm as ex
if {arch!r} == "sm_90a":
    gemm = ex.HopperDenseGemm(cutlass.Float32, (128, 256), (2, 1))
else:
    gemm = ex.BlackwellDenseGemm(cutlass.Float32, False, (128, 256), (1, 1))
ex.compile_only(gemm, "k", "k", "n", cutlass.Float16, cutlass.Float16)
print(json.dumps({{"protobuf": sorted(m for m in sys.modules if m.startswith("google.protobuf")),
                  "plugins": sorted(p["name"] for p in _core.plugins())}}))
"""


def _compile_child(arch, sub):
    env = dict(os.environ, WARPWEAVE_DISABLE_CACHE="1", WARPWEAVE_ARCH=arch)
    env.pop("WARPWEAVE_PLUGIN_PATH", None)
    code = _CHILD.format(examples=os.path.join(EXAMPLES, sub), arch=arch)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_hopper_gemm_compiles_without_protobuf_python_or_blackwell():
    out = _compile_child("sm_90a", "hopper")
    assert out["protobuf"] == []
    assert "hopper" in out["plugins"] and "blackwell" not in out["plugins"]


def test_blackwell_gemm_compiles_without_protobuf_python():
    out = _compile_child("sm_100a", "blackwell")
    assert out["protobuf"] == []
    assert "blackwell" in out["plugins"]


def test_manifest_dict_is_protobufs_json_mapping():
    from warpweave import _core
    from warpweave._dsl.registry import manifest_view
    from warpweave._dsl.registry.plugins import registry

    registry.discover()
    registry.load(list(registry.candidates))
    assert {"ampere", "hopper", "blackwell"} <= set(registry.backends)
    for p in _core.plugins():
        typed = manifest_view.parse_manifest(p["manifest_binary"])
        assert _core.manifest_dict(p["manifest_binary"]) == manifest_view.as_dict_reference(typed)
        assert registry.backends[p["name"]].manifest == manifest_view.as_dict_reference(typed)
        # The typed view is still there for whoever asks (made on first use).
        assert registry.backends[p["name"]].typed.name == p["name"]
    for b in registry.backends.values():
        for f in b.families[:3]:
            for _p, _f, data in _core.family_instances(b.name, f["id"], 7, 2):
                ref = manifest_view.as_dict_reference(manifest_view.parse_instruction(data))
                assert _core.manifest_dict(data, "Instruction") == ref


def test_manifest_dict_refuses_what_is_not_a_manifest_message():
    from warpweave import _core

    with pytest.raises(ValueError, match="not a serialized"):
        _core.manifest_dict(b"\xff\xff\xff", "Manifest")
    with pytest.raises(ValueError, match="no message"):
        _core.manifest_dict(b"", "NoSuchMessage")
    assert _core.manifest_dict(b"")["atoms"] == []   # an empty message: every repeated field present, empty


_FAMILY_CHILD = r"""
import json
from warpweave import _core
from warpweave._dsl.base import trace
from warpweave._dsl.registry.plugins import registry
from warpweave._dsl.registry.target import target_named
with trace.tracing(trace.TraceState(target=target_named("sm_90a").as_dict())):
    registry.load()   # what a trace for sm_90a loads: Ampere's and Hopper's manifests
    fam = registry.backends["hopper"].families[0]["id"]
    entry = _core.manifest_dict(_core.family_instances("hopper", fam, 1, 1)[0][2], "Instruction")
    found = registry.instruction(entry["id"])
print(json.dumps({"found": found[1]["id"] == entry["id"], "backend": found[0].name,
                  "plugins": sorted(p["name"] for p in _core.plugins())}))
"""


def test_a_family_instance_resolves_without_loading_other_backends():
    env = dict(os.environ)
    env.pop("WARPWEAVE_PLUGIN_PATH", None)
    r = subprocess.run([sys.executable, "-c", _FAMILY_CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["found"] and out["backend"] == "hopper"
    assert out["plugins"] == ["ampere", "hopper"]


def test_selection_is_memoised_per_target_and_loaded_manifests():
    from warpweave._dsl.atoms import atoms
    from warpweave._dsl.base import trace
    from warpweave._dsl.registry.target import target_named

    calls = []
    real = atoms._select

    def counting(*a):
        calls.append(a[0])
        return real(*a)

    atoms._select = counting
    atoms._selected.clear()   # what earlier tests of this process selected
    try:
        picked = {}
        for arch in ("sm_80", "sm_80", "sm_90a"):
            with trace.tracing(trace.TraceState(target=target_named(arch).as_dict())):
                for _ in range(3):
                    # Ampere's cp.async group commit: usable on every target, so each target selects it.
                    picked.setdefault(arch, atoms.select("cpasync.commit_group", {}, set()))
                    assert atoms.select("cpasync.commit_group", {}, set()) is picked[arch]
        # Once per target: the repeats, and the second trace for sm_80, came from the memo.
        assert calls == ["cpasync.commit_group", "cpasync.commit_group"]
        # A new set of loaded manifests starts a new memo.
        atoms._indexed = ()
        with trace.tracing(trace.TraceState(target=target_named("sm_80").as_dict())):
            assert atoms.select("cpasync.commit_group", {}, set())[1]["id"] == picked["sm_80"][1]["id"]
        assert len(calls) == 3
    finally:
        atoms._select = real


def test_discovery_notices_a_changed_plugin_path(tmp_path, monkeypatch):
    from warpweave._dsl.registry.plugins import Registry

    reg = Registry()
    reg.discover()
    known = set(reg.loaded_dirs)
    monkeypatch.setenv("WARPWEAVE_PLUGIN_PATH", str(tmp_path))
    reg.discover()
    assert str(tmp_path) in reg.loaded_dirs and known < reg.loaded_dirs
    monkeypatch.delenv("WARPWEAVE_PLUGIN_PATH")
    before = set(reg.loaded_dirs)
    reg.discover()
    assert reg.loaded_dirs == before


_DIGEST_CHILD = r"""
import json, sys
from warpweave import _core
assert _core.load_plugin_file(sys.argv[1]), _core.plugin_refusals()
print(json.dumps(_core.plugins()[0]["digest"]))
"""


def test_plugin_digest_follows_the_library_file(tmp_path):
    """A plugin's digest (part of every JIT cache key) covers its manifest and its library file as a .pyc covers its
    source: the same file gives the same digest in every process; a rewritten or touched file gives a new one."""
    import shutil

    from warpweave._dsl.registry.plugins import registry

    registry.discover()
    lib = tmp_path / "ww_backend_ampere.so"
    shutil.copy2(registry.candidates["ampere"]["path"], lib)

    def digest():
        r = subprocess.run([sys.executable, "-c", _DIGEST_CHILD, str(lib)], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr[-2000:]
        return json.loads(r.stdout.strip().splitlines()[-1])

    first = digest()
    assert len(first) == 64 and digest() == first
    st = os.stat(lib)
    os.utime(lib, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    touched = digest()
    assert touched != first
    data = lib.read_bytes()
    lib.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))   # rewritten (a byte of the section table's padding)
    os.utime(lib, ns=(st.st_atime_ns, st.st_mtime_ns + 2 * 10**9))
    assert digest() not in (first, touched)
