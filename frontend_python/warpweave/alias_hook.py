"""The `cutlass` alias: `import cutlass[.sub...]` gives the module `warpweave[.sub...]` itself.

Two ways to have it, both opt-in (importing warpweave never installs it):
- in one process: `python -m warpweave run prog.py` (migrate.py), or `with cutlass_alias():`;
- in every process of an environment: `python -m warpweave alias --install` writes a `.pth` file into its
  site-packages, so pytest-xdist workers, multiprocessing spawn children and any other interpreter started there
  have the alias from their first line. `--uninstall` removes the file.

This module imports only the standard library and nothing of warpweave: the `.pth` line loads it by file path at
each interpreter's start-up, before (and without) `import warpweave`, which stays deferred until a program imports
`cutlass`. Interpreters that never do (pip, tools of the environment) pay a path lookup and no more. It registers
itself under its package name (`warpweave.alias_hook`) so that the finder class is one class whether the `.pth`
line or `import warpweave` loaded it first.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.util
import os
import site  # already loaded: it is what reads .pth files
import sys

ALIAS = "cutlass"
REAL = "warpweave"
PTH_NAME = "warpweave_cutlass_alias.pth"
# One line, as site.py runs a .pth line that starts with `import`: finds warpweave without importing it, loads this
# file once as warpweave.alias_hook and installs the finder. A missing warpweave leaves the line without effect.
PTH_LINE = (
    "import importlib.util as _wu, sys as _ws; _wp = _wu.find_spec('warpweave'); "
    "_wm = _ws.modules.get('warpweave.alias_hook'); "
    "_wf = _wm is None and _wp is not None and _wp.submodule_search_locations and "
    "_wu.spec_from_file_location('warpweave.alias_hook', "
    "_wp.submodule_search_locations[0] + '/alias_hook.py'); "
    "_wm = _wm or (_wf and _wu.module_from_spec(_wf)); "
    "_wf and (_ws.modules.__setitem__('warpweave.alias_hook', _wm), _wf.loader.exec_module(_wm)); "
    "_wm and _wm.install()\n"
)


def _real_name(fullname: str) -> str | None:
    if fullname == ALIAS:
        return REAL
    if fullname.startswith(ALIAS + "."):
        return REAL + fullname[len(ALIAS):]
    return None


def _probing() -> bool:
    """Whether the finder is asked by importlib.util.find_spec (a probe) rather than by an import statement: the
    frame that called the import system's lookup of specs."""
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_name == "find_spec" and f.f_globals.get("__name__") == "importlib.util":
            return True
        if not f.f_code.co_filename.startswith("<frozen importlib"):
            return False   # past the import system's own frames (importlib.util may be one of them)
        f = f.f_back
    return False


class CutlassAliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves `cutlass[.sub...]` to the module `warpweave[.sub...]` itself."""

    def find_spec(self, fullname, path=None, target=None):
        real = _real_name(fullname)
        if real is None:
            return None
        try:
            module = importlib.import_module(real)
        except ModuleNotFoundError as e:
            if e.name != real:
                raise  # the module exists and failed to import something of its own
            if _probing():
                # `importlib.util.find_spec("cutlass.x")`: no spec, as a finder answers for a module that does not
                # exist (programs probe optional parts of CuTe DSL that way before importing them)
                return None
            raise ModuleNotFoundError(f"No module named {fullname!r}: this run maps {ALIAS} to {REAL}, and "
                                      f"{real} does not exist (not implemented, or no loaded backend provides it)",
                                      name=fullname) from None
        spec = importlib.util.spec_from_loader(fullname, self, is_package=hasattr(module, "__path__"))
        spec.loader_state = module
        return spec

    def create_module(self, spec):
        module = spec.loader_state
        spec.loader_state = (module, module.__spec__)  # the import machinery overwrites __spec__: restored below
        return module

    def exec_module(self, module):
        real_module, real_spec = module.__spec__.loader_state
        module.__spec__ = real_spec


def install() -> CutlassAliasFinder:
    """Puts the alias hook first on sys.meta_path (idempotent) and returns it."""
    for f in sys.meta_path:
        if isinstance(f, CutlassAliasFinder):
            return f
    f = CutlassAliasFinder()
    sys.meta_path.insert(0, f)
    return f


def uninstall() -> None:
    """Removes the hook and forgets every `cutlass...` module name (the warpweave modules stay imported)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, CutlassAliasFinder)]
    for name in [n for n in sys.modules if n == ALIAS or n.startswith(ALIAS + ".")]:
        del sys.modules[name]


def is_installed() -> bool:
    return any(isinstance(f, CutlassAliasFinder) for f in sys.meta_path)


@contextlib.contextmanager
def cutlass_alias():
    """`import cutlass...` resolves to warpweave inside the block only."""
    already = is_installed()
    install()
    try:
        yield
    finally:
        if not already:
            uninstall()


# --- the environment-wide alias (.pth) ------------------------------------------------------------------------

def default_site_dir(user: bool = False) -> str:
    """The site-packages folder of this interpreter's environment (or the user's, which site.py also reads)."""
    if user:
        return site.getusersitepackages()
    import sysconfig
    return sysconfig.get_paths()["purelib"]


def pth_path(site_dir: str) -> str:
    return os.path.join(site_dir, PTH_NAME)


def real_cutlass_origin() -> str | None:
    """Where an installed package named `cutlass` (CuTe DSL itself) lives, which the alias would hide; None if none."""
    if is_installed():
        return None  # the hook answers for `cutlass` in this process: the other finders are asked below
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        spec = find(ALIAS, None)
        if spec is not None:
            return spec.origin or ", ".join(spec.submodule_search_locations or []) or "?"
    return None


def install_pth(site_dir: str) -> str:
    """Writes the .pth file into site_dir (created if missing); returns its path. Rewriting it is harmless."""
    os.makedirs(site_dir, exist_ok=True)
    path = pth_path(site_dir)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(PTH_LINE)
    os.replace(tmp, path)  # a process starting meanwhile reads the old file or the new one, never half of one
    return path


def uninstall_pth(site_dir: str) -> bool:
    """Removes the .pth file from site_dir; whether there was one."""
    try:
        os.remove(pth_path(site_dir))
        return True
    except FileNotFoundError:
        return False


def alias_main(args) -> int:
    """`python -m warpweave alias [--install | --uninstall] [--site-dir DIR | --user]`."""
    site_dir = args.site_dir or default_site_dir(args.user)
    path = pth_path(site_dir)
    if args.install:
        shadowed = real_cutlass_origin()
        written = install_pth(site_dir)
        print(f"installed: {written}\n`import cutlass` now gives warpweave in every Python process of this "
              f"environment; `python -m warpweave alias --uninstall` removes it")
        if shadowed:
            print(f"note: the alias hides the installed package `cutlass` at {shadowed}", file=sys.stderr)
        return 0
    if args.uninstall:
        if uninstall_pth(site_dir):
            print(f"removed: {path}")
        else:
            print(f"not installed: no {path}")
        return 0
    print(f"installed: {path}" if os.path.exists(path) else f"not installed (would be {path})")
    return 0
