"""Backends that build on others (manifest.proto, Manifest.extends): the core loads a base with its dependent,
the frontend mounts the base's Python package first, a backend's Python imports only the bases it declares (and
warpweave's public modules, never warpweave._dsl), and a host hook is the selected instruction's backend's."""
import ast
import os
import re
import subprocess
import sys

import warpweave as cutlass
import warpweave.cute as cute
from dsl_helpers import target

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BACKENDS = os.path.join(ROOT, "backends")
PIPELINES = os.path.join(ROOT, "pipelines", "warpweave_pipelines")


def _imports(folder):
    """(file, line, imported module) of every absolute import below folder."""
    for dirpath, _, files in os.walk(folder):
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            path = os.path.join(dirpath, f)
            for node in ast.walk(ast.parse(open(path).read(), path)):
                if isinstance(node, ast.Import):
                    yield from ((path, node.lineno, a.name) for a in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    yield path, node.lineno, node.module


def _bases(backend: str) -> list:
    text = open(os.path.join(BACKENDS, backend, f"{backend}.textproto")).read()
    return re.findall(r'^extends: "(\w+)"', text, re.M)


def test_backend_python_imports_only_public_modules_and_declared_bases():
    wrong = []
    for backend in sorted(os.listdir(BACKENDS)):
        package = os.path.join(BACKENDS, backend, "python")
        if not os.path.isdir(package):
            continue
        allowed = {backend, *_bases(backend)}
        for path, line, module in _imports(package):
            where = f"{os.path.relpath(path, ROOT)}:{line} imports {module}"
            if module.startswith("warpweave._dsl"):
                wrong.append(where)
            parts = module.split(".")
            if parts[:2] == ["warpweave", "backends"] and len(parts) > 2 and parts[2] not in allowed:
                wrong.append(where + f" (its manifest extends {sorted(allowed - {backend}) or 'nothing'})")
    assert wrong == []


def test_pipelines_use_warpweave_ext_not_its_internals():
    wrong = [f"{os.path.relpath(p, ROOT)}:{n} imports {m}" for p, n, m in _imports(PIPELINES)
             if m.startswith("warpweave._dsl")]
    assert wrong == []


def test_blackwell_declares_hopper_and_loading_it_loads_and_mounts_hopper_first():
    # A fresh process: which backends this one has loaded depends on the tests before.
    code = ("import sys\n"
            "from warpweave._dsl.registry.plugins import registry\n"
            "from warpweave._dsl.registry import backend_python\n"
            "registry.discover()\n"
            "print(registry.candidates['blackwell']['extends'])\n"
            "registry.load(['blackwell'])\n"
            "print(sorted(registry.backends), registry.backends['blackwell'].extends)\n"
            "backend_python.mount_backend('blackwell')\n"
            "print(list(backend_python.packages.mounted))\n"
            "print('warpweave.backends.hopper.mma_smem_layouts' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "['hopper']"
    assert lines[1] == "['blackwell', 'hopper'] ['hopper']"   # not ampere: only the base comes with it
    assert lines[2] == "['hopper', 'blackwell']"
    assert lines[3] == "True"


def _tma_host_argument(arch):
    """The attributes of a plain TMA load atom's tensor-map host argument, made for arch."""
    import warpweave.utils.hopper_helpers as sm90
    from warpweave.cute.nvgpu import cpasync
    from warpweave.cute.runtime import make_ptr

    made = {}

    @cute.jit
    def host(a_ptr: cute.Pointer):
        a = cute.make_tensor(a_ptr, cute.make_layout((256, 128, 1), stride=(128, 1, 256 * 128)))
        staged = sm90.make_smem_layout_a(cutlass.utils.LayoutEnum.ROW_MAJOR, (128, 128, 64), cutlass.Float16, 2)
        one = cute.make_composed_layout(staged.inner, 0, cute.slice_(staged.outer, (None, None, 0)))
        atom, _ = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, one, (128, 64))
        made["attrs"] = atom.tma_desc.attrs

    with target(arch):
        cute.compile(host, make_ptr(cutlass.Float16, 0x10000, cute.AddressSpace.gmem, assumed_align=16))
    return made["attrs"]


def test_the_tensor_map_hook_is_the_selected_instructions_backends():
    # Hopper's atom builder serves both generations; the tensor map is encoded by the plugin whose TMA instruction
    # the target selects (Blackwell's accepts its own swizzles), with the hook that instruction's entry names.
    for arch, backend in (("sm_90a", "hopper"), ("sm_100a", "blackwell")):
        attrs = _tma_host_argument(arch)
        assert (attrs["backend"], attrs["hook"]) == (backend, "encode_tma_descriptor"), arch
