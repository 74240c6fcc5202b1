"""`import warpweave.cute` brings only what tracing and a cache hit need: the modules behind autotuning and
benchmarking (cute.testing), exported-module loading (cute.runtime.load_module), compile-option strings
(argparse), host access to NumPy arrays (numpy), static fused multiply-adds (fractions), protobuf's runtime and
importlib.abc (which imports importlib.resources) are imported when first used, and each still works when named.
Every figure of bench_startup.py's warm process starts with this import."""
from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

DEFERRED = ("importlib.abc", "importlib.resources", "argparse", "subprocess", "ctypes", "numpy", "fractions",
            "tempfile", "statistics", "logging", "concurrent.futures", "google.protobuf",
            "warpweave._dsl.tuning.autotune", "warpweave._dsl.export.exported_module", "warpweave.cute.testing",
            "warpweave.torch")


def _run(code: str) -> dict:
    env = dict(os.environ, WARPWEAVE_ARCH="sm_80")
    r = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {os.path.join(ROOT, 'frontend_python')!r})\n"
                        + code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_import_defers_what_only_some_programs_use():
    loaded = _run("import json, warpweave, warpweave.cute as cute\n"
                  f"print(json.dumps([m for m in {DEFERRED!r} if m in sys.modules]))")
    assert loaded == []


def test_deferred_names_resolve_when_used():
    out = _run(r'''
import json
import warpweave as cutlass, warpweave.cute as cute
from warpweave.cute.runtime import load_module
from warpweave._dsl.export.exported_module import load_module as real_load_module
import warpweave.cute.testing as testing_module
from warpweave._dsl.base.compile_options import as_options
opts = as_options("--opt-level 2 -lineinfo")
try:
    cute.no_such_name
    missing = None
except AttributeError as e:
    missing = str(e)
print(json.dumps({"load_module": load_module is real_load_module and cute.runtime.load_module is real_load_module,
                  "testing": cute.testing is testing_module and callable(cute.testing.autotune_jit),
                  "options": [type(o).__name__ for o in opts], "missing": missing,
                  "star": sorted({"testing", "runtime"} - set(__import__("warpweave.cute", fromlist=["*"]).__all__))}))
''')
    assert out["load_module"] and out["testing"]
    assert out["options"] == ["OptLevel", "GenerateLineInfo"]
    assert "no_such_name" in out["missing"]
    assert out["star"] == []


def test_star_imports_of_cute_and_its_runtime_give_every_listed_name():
    out = _run(r'''
import json
ns = {}
exec("from warpweave.cute import *", ns)
exec("from warpweave.cute.runtime import *", ns)
print(json.dumps({"testing": "testing" in ns, "load_module": callable(ns.get("load_module"))}))
''')
    assert out == {"testing": True, "load_module": True}
