"""The language's values call upper-layer behaviour through values/hooks.py: `import warpweave` must leave every hook
registered (by the module its owner names), and a hook is set once."""
import json
import os
import subprocess
import sys

import pytest

from warpweave._dsl.values import hooks

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def test_import_warpweave_registers_every_hook_by_its_owner():
    code = ("import json, sys\nsys.path.insert(0, %r)\nimport warpweave\nfrom warpweave._dsl.values import hooks\n"
            "print(json.dumps([[h.name, h.owner, h.fn.__module__ if h.fn else None] for h in hooks.ALL]))"
            % os.path.join(ROOT, "frontend_python"))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, WARPWEAVE_ARCH="sm_80"))
    assert r.returncode == 0, r.stderr
    for name, owner, module in json.loads(r.stdout.strip().splitlines()[-1]):
        assert module == owner, name


def test_a_hook_is_registered_once_and_says_who_sets_it():
    h = hooks.Hook("probe", "a test")
    with pytest.raises(RuntimeError, match="a test registers it"):
        h()
    f = h.register(lambda x: x + 1)
    assert h(1) == 2 and h.register(f) is f
    with pytest.raises(RuntimeError, match="already registered"):
        h.register(lambda x: x)
