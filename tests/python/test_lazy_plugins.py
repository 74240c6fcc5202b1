"""Backends load lazily: discovery reads every plugin's targets without parsing its manifest's atoms, a compile
loads only the backends usable on its target, a listing still shows every plugin, and the JIT cache key of a
module does not depend on what else the process loaded."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_CHILD = r"""
import json, os, sys
sys.path.insert(0, {examples!r})
from warpweave import _core
from warpweave._dsl.registry.plugins import registry
import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import make_fake_tensor
out = {{"targets": sorted(t.name for t in registry.targets()), "after_discovery": [p["name"] for p in _core.plugins()]}}
if {arch!r}:
    import elementwise_add as ew
    ts = [make_fake_tensor(cutlass.Float32, (256, 256)).mark_layout_dynamic() for _ in range(3)]
    cute.compile(ew.elementwise_add, *ts)
out["after_compile"] = sorted(p["name"] for p in _core.plugins())
print(json.dumps(out))
"""


def child(arch):
    env = dict(os.environ, WARPWEAVE_DISABLE_CACHE="1")
    env.pop("WARPWEAVE_PLUGIN_PATH", None)
    if arch:
        env["WARPWEAVE_ARCH"] = arch
    code = _CHILD.format(examples=os.path.join(ROOT, "frontend_python", "examples"), arch=arch)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_discovery_loads_nothing():
    out = child("")
    assert {"sm_80", "sm_90a", "sm_100a", "sm_120a", "sm_121a"} <= set(out["targets"])
    assert out["after_discovery"] == [] and out["after_compile"] == []


def test_a_compile_loads_only_the_backends_of_its_target():
    assert child("sm_80")["after_compile"] == ["ampere"]
    hopper = child("sm_90a")["after_compile"]
    assert "hopper" in hopper and "blackwell" not in hopper  # Blackwell's manifest is never parsed for sm_90a
    assert "blackwell" in child("sm_100a")["after_compile"]
    # Consumer Blackwell: its own backend and those it extends (Ampere, Hopper, and datacenter Blackwell, whose
    # utils.blackwell_helpers module it shares: CuTe DSL's one module serves both generations).
    assert child("sm_120a")["after_compile"] == ["ampere", "blackwell", "blackwell_geforce", "hopper"]


def test_the_listing_shows_every_plugin():
    env = dict(os.environ)
    env.pop("WARPWEAVE_PLUGIN_PATH", None)
    r = subprocess.run([sys.executable, "-m", "warpweave", "plugins", "--json"], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert {"ampere", "hopper", "blackwell", "blackwell_geforce"} <= set(r.stdout.replace('"', " ").split())


def test_module_key_does_not_depend_on_other_loaded_plugins():
    from warpweave._dsl.call import compile_module
    from warpweave._dsl.registry import plugins
    from warpweave._dsl.call.jit import CompileOptions
    from warpweave._dsl.registry.target import target_named

    t = target_named("sm_80")
    before = compile_module.cache_key("module {}", t, CompileOptions())
    plugins.registry.load(list(plugins.registry.candidates))  # everything, Blackwell included
    assert compile_module.cache_key("module {}", t, CompileOptions()) == before
    assert "blackwell" not in plugins.registry.digest(t.compute_capability)
