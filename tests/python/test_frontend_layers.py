"""The frontend's shape, read from its imports (ast): warpweave._dsl is a stack of layers imported only downward, no
circle runs between files, no import hides inside a function unless the allow-list below says why, and no module
takes another's `_private` name. DESIGN.md ("Layers of the Python frontend") states the rules this test holds.

Run as a script (`python tests/python/test_frontend_layers.py`) it prints every violation, one a line.
"""
import ast
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, "frontend_python", "warpweave")

# warpweave._dsl's layers, bottom to top; layers of one rank may import each other (file circles are still refused).
LAYER_RANK = {"base": 0, "values": 1, "tracing": 2, "registry": 3, "atoms": 4, "device": 5, "host": 5, "call": 6,
              "export": 7, "tuning": 7, "jax_call": 8}
# Modules outside _dsl that any layer may import: the extension and leaf helpers that import nothing of warpweave.
GROUND = {"warpweave._core": -1, "warpweave._version": -1, "warpweave.progress": 0}
FACADE_RANK = 100  # everything else of warpweave: the public modules (cute, utils, ext, ...) over all of _dsl

# Imports inside functions, each with the reason it cannot sit at the top of its module. Keyed by
# (importing module, imported module).
FUNCTION_IMPORTS_ALLOWED = {
    ("warpweave._dsl.base.compile_options", "argparse"): "only an options string needs it; test_lazy_imports defers it",
    ("warpweave._dsl.values.runtime", "numpy"): "only a NumPy-like array needs it; test_lazy_imports defers numpy",
    ("warpweave._dsl.host.host_values", "numpy"): "host access to a NumPy array; test_lazy_imports defers numpy",
    ("warpweave._dsl.values.runtime", "ctypes"):
        "a make_ptr pointer's C pointer (the JitArgument protocol); test_lazy_imports defers ctypes",
    ("warpweave._dsl.values.jit_argument", "ctypes"):
        "a JitArgument's values read through its C pointers; test_lazy_imports defers ctypes",
    ("warpweave._dsl.host.host_values", "ctypes"): "host access through a pointer; test_lazy_imports defers ctypes",
    ("warpweave._dsl.host.host_actions", "numpy"): "host print of a NumPy array; test_lazy_imports defers numpy",
    ("warpweave._dsl.host.host_loop_bulk", "numpy"):
        "only a call running a host loop's copies needs it; test_lazy_imports defers numpy",
    ("warpweave._dsl.host.host_loop_bulk", "ctypes"):
        "only a call running a host loop's copies needs it; test_lazy_imports defers ctypes",
    ("warpweave._dsl.device.math", "fractions"): "only a static fma needs it; test_lazy_imports defers fractions",
    ("warpweave.viz", "warpweave.viz.drawing"):
        "the figures and their writers load at the first picture: the SVG writer's xml.sax.saxutils brings "
        "urllib.request and tempfile, which `import warpweave` defers (test_lazy_imports)",
    ("warpweave._dsl.tuning.benchmark", "torch"): "torch is optional: benchmark times with its CUDA events",
    ("warpweave._dsl.tuning.argument_copies", "torch"): "torch is optional: only torch tensors are copied with it",
    ("warpweave._dsl.registry.compile_only", "torch"):
        "torch is optional: a compile-only run stands host memory in for its CUDA device only where it is installed",
    ("warpweave._dsl.registry.compile_only", "torch.overrides"): "torch is optional (as above)",
    ("warpweave._dsl.registry.compile_only_world", "torch"):
        "torch is optional: the world of ranks of a compile-only run is torch.distributed's, where it is installed",
    ("warpweave._dsl.registry.compile_only_world", "torch.distributed"): "optional (as above)",
    ("warpweave._dsl.registry.compile_only_world", "torch.distributed._symmetric_memory"): "optional (as above)",
    ("warpweave._dsl.registry.compile_only_world", "torch._C._distributed_c10d"): "optional (as above)",
    ("warpweave._dsl.registry.compile_only_world", "torch.testing._internal.distributed.fake_pg"):
        "optional (as above): its fake backend is the emulated world's process group",
    ("warpweave._dsl.registry.compile_only_world", "torch.overrides"): "optional (as above)",
    ("warpweave._dsl.registry.compile_only_world", "nvshmem.core"):
        "nvshmem4py is optional: its host API is stood in for in the compile-only world only where it is installed",
    ("warpweave._dsl.registry.compile_only", "jax"):
        "JAX is optional: its GPU FFI targets are stood in for only where jax-tvm-ffi is installed",
    ("warpweave._dsl.registry.compile_only", "jax_tvm_ffi"): "optional (as above)",
    ("warpweave._dsl.registry.compile_only", "ctypes"):
        "a compile-only run's cudaMalloc gives host memory; test_lazy_imports defers ctypes",
    ("warpweave._dsl.base.errors", "cuda.bindings"):
        "cuda-bindings is optional: a failed launch's error code is its CUresult member only where it is installed",
    ("warpweave._dsl.registry.compile_only", "cuda.bindings"):
        "cuda-bindings is optional: its driver entry points are stood in for only where it is installed",
    ("warpweave.torch", "torch"): "torch is optional: warpweave.torch imports it when one of its functions runs",
    ("warpweave.profile.trace", "numpy"):
        "numpy loads when a profile is decoded: `import warpweave` defers it (test_lazy_imports)",
    ("warpweave.utils.tensor_helpers", "warpweave.torch"):
        "warpweave.torch is a lazy submodule (numpy, ctypes): `import warpweave` defers it (test_lazy_imports)",
    ("warpweave._dsl.registry.manifest_view", "google.protobuf"):
        "protobuf's Python runtime (~20 ms), which compiling a kernel never needs (test_lazy_imports)",
    ("warpweave.alias_hook", "sysconfig"):
        "each interpreter of an environment with the alias loads this module at start-up (its .pth line): only "
        "`python -m warpweave alias` needs the install scheme",
    ("warpweave.cuda", "cuda.bindings"): "optional dependency (the cuda-python package)",
    ("warpweave._dsl.export.tvm_ffi_call", "tvm_ffi"): "optional dependency (apache-tvm-ffi)",
    ("warpweave._dsl.jax_call.cutlass_call", "jax_tvm_ffi"):
        "optional dependency (jax-tvm-ffi): only a cutlass_call that runs (not a compile-only one) needs it",
    ("warpweave._dsl.export.exported_module", "tvm_ffi"): "optional dependency (apache-tvm-ffi): TVM FFI exports",
    ("warpweave.cute.runtime", "warpweave._dsl.export.exported_module"):
        "load_module loads ctypes, subprocess and tempfile, which `import warpweave` defers (test_lazy_imports)",
    ("warpweave.cute.export_entries", "warpweave._dsl.export.export"):
        "export_to_c runs the C compiler (subprocess, tempfile), which `import warpweave` defers (test_lazy_imports)",
    ("warpweave.cute.export_entries", "warpweave._dsl.export.tvm_ffi_call"):
        "--enable-tvm-ffi builds and loads an entry (subprocess, tempfile, ctypes), deferred as export_to_c is",
}


def _package_files(package_dir, name=None):
    """Module name -> (file, is a package) of every module under package_dir (named `name`, else its folder's)."""
    out = {}
    name = name or os.path.basename(package_dir)
    for dirpath, _, files in os.walk(package_dir):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(dirpath, f)
            parts = [name] + os.path.relpath(path, package_dir)[:-3].split(os.sep)
            is_pkg = parts[-1] == "__init__"
            if is_pkg:
                parts = parts[:-1]
            out[".".join(parts)] = (path, is_pkg)
    return out


def _module_files():
    out = _package_files(PACKAGE)
    out["warpweave._core"] = (None, False)  # the extension: imported, never read
    return out


def _backend_and_pipeline_files():
    """The backends' Python packages (as warpweave mounts them, warpweave.backends.<name>) and the pipelines."""
    out = _package_files(os.path.join(ROOT, "pipelines", "warpweave_pipelines"))
    backends = os.path.join(ROOT, "backends")
    for b in sorted(os.listdir(backends)):
        if os.path.isdir(os.path.join(backends, b, "python")):
            out.update(_package_files(os.path.join(backends, b, "python"), f"warpweave.backends.{b}"))
    return out


def rank(module: str) -> int:
    parts = module.split(".")
    if parts[:2] == ["warpweave", "_dsl"]:
        return LAYER_RANK.get(parts[2], -1) if len(parts) > 2 else -1
    for ground, r in GROUND.items():
        if module == ground or module.startswith(ground + "."):
            return r
    return FACADE_RANK


class Import:
    def __init__(self, importer, target, names, line, in_function):
        self.importer, self.target, self.names, self.line, self.in_function = importer, target, names, line, in_function


def read_imports(modules=None):
    """Every import of a warpweave module by a warpweave module (targets resolved to the module imported: `from
    pkg import mod` names pkg.mod where that is a module)."""
    modules = modules or _module_files()
    out = []
    for mod, (path, is_pkg) in modules.items():
        if path is None:
            continue
        tree = ast.parse(open(path).read(), path)
        stack = [(tree, False)]
        while stack:
            node, in_fn = stack.pop()
            for child in ast.iter_child_nodes(node):
                fn = in_fn or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                if isinstance(child, ast.Import):
                    for a in child.names:
                        out.append(Import(mod, a.name, [], child.lineno, in_fn))
                elif isinstance(child, ast.ImportFrom):
                    if child.level:
                        base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                        base = base[:len(base) - (child.level - 1)]
                        target = ".".join(base + ([child.module] if child.module else []))
                    else:
                        target = child.module or ""
                    plain = []
                    for a in child.names:
                        if f"{target}.{a.name}" in modules:
                            out.append(Import(mod, f"{target}.{a.name}", [], child.lineno, in_fn))
                        else:
                            plain.append(a.name)
                    if plain:
                        out.append(Import(mod, target, plain, child.lineno, in_fn))
                stack.append((child, fn))
    return out


def _ours(target):
    return target == "warpweave" or target.startswith("warpweave.")


def upward_imports(imports):
    return [f"{i.importer}:{i.line} imports {i.target} (rank {rank(i.target)} over {rank(i.importer)})"
            for i in imports if _ours(i.target) and rank(i.target) > rank(i.importer)]


# Modules with a leading underscore that are public all the same: the extension, the version, CuTe DSL's own
# `_mlir` name, and the package of the layers.
PUBLIC_UNDERSCORE_MODULES = {"_core", "_version", "_mlir", "_dsl"}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_name_imports(imports):
    names = [f"{i.importer}:{i.line} takes {n} from {i.target}"
             for i in imports if _ours(i.target) and i.target != i.importer
             for n in i.names if _private(n) and n not in PUBLIC_UNDERSCORE_MODULES]
    modules = [f"{i.importer}:{i.line} imports the private module {i.target}"
               for i in imports if _ours(i.target) and not i.names and _private(i.target.rsplit(".", 1)[-1])
               and i.target.rsplit(".", 1)[-1] not in PUBLIC_UNDERSCORE_MODULES]
    return names + modules


def function_imports(imports):
    return [f"{i.importer}:{i.line} imports {i.target} inside a function"
            for i in imports if i.in_function and (i.importer, i.target) not in FUNCTION_IMPORTS_ALLOWED]


def circles(imports, modules=None):
    """Strongly connected groups of more than one file in the import graph (Tarjan)."""
    modules = modules or _module_files()
    graph = {m: set() for m in modules}
    for i in imports:
        if i.target in modules and i.target != i.importer:
            graph[i.importer].add(i.target)
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [" <-> ".join(g) for g in out]


def test_layers_are_imported_only_downward():
    assert upward_imports(read_imports()) == []


def test_no_import_circle_between_files():
    assert circles(read_imports()) == []


def test_imports_inside_functions_are_allowed_ones():
    assert function_imports(read_imports()) == []


def test_allow_list_names_imports_that_exist():
    seen = {(i.importer, i.target) for i in read_imports() if i.in_function}
    assert sorted(set(FUNCTION_IMPORTS_ALLOWED) - seen) == []


def test_no_module_takes_anothers_private_name():
    assert private_name_imports(read_imports()) == []


def test_backends_and_pipelines_take_no_private_name_of_another_module():
    files = _backend_and_pipeline_files()
    assert len(files) > 10  # the pipelines and the backends' packages were found
    assert private_name_imports(read_imports(files)) == []


def test_every_dsl_module_sits_in_a_layer():
    stray = [m for m in _module_files() if m.startswith("warpweave._dsl.") and m.split(".")[2] not in LAYER_RANK]
    assert stray == []


def test_rank_reads_layers_ground_and_facade():
    # The checks above are only as good as this reading of a module's place.
    assert rank("warpweave._dsl.base.errors") < rank("warpweave._dsl.values.numeric") < rank("warpweave._dsl.call.jit")
    assert rank("warpweave._dsl.device.arch") == rank("warpweave._dsl.host.host_values")
    assert rank("warpweave._core") < rank("warpweave._dsl.base.errors") < rank("warpweave.cute")


def test_checker_sees_each_kind_of_violation(tmp_path):
    pkg = tmp_path / "warpweave"
    (pkg / "_dsl" / "values").mkdir(parents=True)
    (pkg / "_dsl" / "call").mkdir()
    for p in (pkg, pkg / "_dsl", pkg / "_dsl" / "values", pkg / "_dsl" / "call"):
        (p / "__init__.py").write_text("")
    (pkg / "_dsl" / "values" / "low.py").write_text("from ..call import high\n_x = 1\n")
    (pkg / "_dsl" / "call" / "high.py").write_text("def f():\n    from ..values.low import _x\n")
    (pkg / "_dsl" / "call" / "_hidden.py").write_text("")
    (pkg / "_dsl" / "call" / "peek.py").write_text("from . import _hidden\n")
    files = _package_files(str(pkg))
    imports = read_imports(files)
    assert upward_imports(imports) == ["warpweave._dsl.values.low:1 imports warpweave._dsl.call.high (rank 6 over 1)"]
    assert private_name_imports(imports) == ["warpweave._dsl.call.high:2 takes _x from warpweave._dsl.values.low",
                                             "warpweave._dsl.call.peek:1 imports the private module "
                                             "warpweave._dsl.call._hidden"]
    assert function_imports(imports) == [
        "warpweave._dsl.call.high:2 imports warpweave._dsl.values.low inside a function"]
    assert circles(imports, files) == ["warpweave._dsl.call.high <-> warpweave._dsl.values.low"]


if __name__ == "__main__":
    found = read_imports()
    for title, items in (("upward", upward_imports(found)), ("circle", circles(found)),
                         ("function-level", function_imports(found)), ("private", private_name_imports(found))):
        for item in items:
            print(f"{title}: {item}")
        print(f"# {title}: {len(items)}", file=sys.stderr)
