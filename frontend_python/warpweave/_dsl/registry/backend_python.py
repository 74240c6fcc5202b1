"""Backends' own Python packages, and the public module names they fill.

A backend ships a Python package beside its plugin library (manifest.proto, PythonPackage): the frontend imports
it as `warpweave.backends.<name>` when the backend is loaded, runs its `on_load` modules (which register operand
kinds, memory spaces and host-argument producers through warpweave.ext), and serves each name of its module map,
e.g. `import warpweave.utils.hopper_helpers`, from it. Nothing of a generation's knowledge lives in the frontend:
the names appear because a loaded manifest claims them.

A backend that extends others (manifest.proto, Manifest.extends; the core loads them first) has their packages
mounted before its own, so that its Python imports a base's modules by their stable names,
`warpweave.backends.<base>.<module>` (Blackwell's imports Hopper's TMA atoms so).
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types

from ..base.errors import DSLRuntimeError, register_library_dir
from .plugins import registry

PACKAGE_ROOT = "warpweave.backends"
# Public namespaces a backend may fill; anything else in a module map is refused (a backend cannot replace
# warpweave.cute or warpweave.ext).
PUBLIC_PREFIXES = ("warpweave.utils.", "warpweave.cute.nvgpu.", "warpweave.pipeline.", "warpweave.cute.arch.")


class BackendPythonError(DSLRuntimeError):
    """A backend's Python package is missing or its manifest's python_package is malformed."""


def python_dir(backend) -> str | None:
    """Where a backend's package sits: <library path without .so>.python, if the plugin ships one."""
    root, _ = os.path.splitext(backend.path)
    d = root + ".python"
    return d if os.path.isfile(os.path.join(d, "__init__.py")) else None


def package_spec(backend) -> dict:
    return backend.manifest.get("python_package") or {}


def _check_spec(backend, spec: dict, claimed: dict) -> None:
    for public, rel in (spec.get("module_map") or {}).items():
        if not public.startswith(PUBLIC_PREFIXES) or public.count(".") < 2:
            raise BackendPythonError(f"backend {backend.name!r}: python_package.module_map names {public!r}, which "
                                     f"is not under {', '.join(p + '*' for p in PUBLIC_PREFIXES)}")
        if not rel or rel.startswith(".") or not all(p.isidentifier() for p in rel.split(".")):
            raise BackendPythonError(f"backend {backend.name!r}: python_package.module_map maps {public!r} to "
                                     f"{rel!r}, which is not a module path inside the package")
        other = claimed.get(public)
        if other is not None and other[0] != backend.name and other[0] not in _bases(backend.name):
            raise BackendPythonError(f"backends {other[0]!r} and {backend.name!r} both claim the module {public!r}")


def _bases(name: str) -> set[str]:
    """Every backend `name` extends, directly or through another (discovery reads extends without loading)."""
    registry.discover()
    out, todo = set(), [name]
    while todo:
        c = registry.candidates.get(todo.pop())
        for base in (c or {}).get("extends") or []:
            if base not in out:
                out.add(base)
                todo.append(base)
    return out


class Packages:
    """The mounted backend packages and the public module names they serve."""

    def __init__(self):
        self.mounted: dict[str, types.ModuleType] = {}
        self.module_map: dict[str, tuple[str, str]] = {}   # public name -> (backend, module inside its package)
        self.refused: dict[str, str] = {}                  # backend -> why its package is not mounted

    def mount_all(self, backends) -> None:
        for b in backends:
            if b.name not in self.mounted and b.name not in self.refused:
                try:
                    self.mount(b)
                except BackendPythonError as e:
                    self.refused[b.name] = str(e)

    def mount(self, backend) -> types.ModuleType | None:
        self.mount_bases(backend)
        spec = package_spec(backend)
        d = python_dir(backend)
        if d is None:
            if spec:
                raise BackendPythonError(f"backend {backend.name!r} declares a python_package but its plugin "
                                         f"{backend.path} has no {os.path.splitext(backend.path)[0]}.python/ "
                                         "package beside it")
            return None
        _check_spec(backend, spec, self.module_map)
        name = f"{PACKAGE_ROOT}.{backend.name}"
        register_library_dir(os.path.realpath(d))
        loader_spec = importlib.util.spec_from_file_location(name, os.path.join(d, "__init__.py"),
                                                             submodule_search_locations=[d])
        module = importlib.util.module_from_spec(loader_spec)
        parent = importlib.import_module(PACKAGE_ROOT)
        sys.modules[name] = module
        setattr(parent, backend.name, module)
        try:
            loader_spec.loader.exec_module(module)
            for rel in spec.get("on_load") or []:
                importlib.import_module(f"{name}.{rel}")
        except Exception as e:  # noqa: BLE001 - a broken backend package is refused, the others still load
            sys.modules.pop(name, None)
            parent.__dict__.pop(backend.name, None)
            raise BackendPythonError(f"backend {backend.name!r}: importing its Python package failed: "
                                     f"{type(e).__name__}: {e}") from e
        self.mounted[backend.name] = module
        for public, rel in (spec.get("module_map") or {}).items():
            self.module_map[public] = (backend.name, rel)
        return module

    def mount_bases(self, backend) -> None:
        """Mounts the packages of the backends `backend` extends (loaded with it by the core), bases first."""
        for base in backend.manifest.get("extends") or []:
            if base in self.mounted:
                continue
            b = registry.backends.get(base)
            if b is None:
                raise BackendPythonError(f"backend {backend.name!r} extends {base!r}, which is not loaded")
            if base in self.refused:
                raise BackendPythonError(f"backend {backend.name!r} extends {base!r}, whose Python package is "
                                         f"refused: {self.refused[base]}")
            try:
                self.mount(b)
            except BackendPythonError as e:
                self.refused[base] = str(e)
                raise BackendPythonError(f"backend {backend.name!r} extends {base!r}, whose Python package is "
                                         f"refused: {e}") from e

    def resolve(self, public: str) -> types.ModuleType | None:
        hit = self.module_map.get(public)
        if hit is None:
            return None
        backend, rel = hit
        return importlib.import_module(f"{PACKAGE_ROOT}.{backend}.{rel}")

    def probe_modules(self, backend_name: str) -> dict[str, str]:
        """conformance kind -> importable module name, for the backend's own probes."""
        b = registry.backends.get(backend_name)
        if b is None or backend_name not in self.mounted:
            return {}
        probes = package_spec(b).get("conformance_probes") or {}
        return {kind: f"{PACKAGE_ROOT}.{backend_name}.{rel}" for kind, rel in probes.items()}


packages = Packages()


def ensure_loaded() -> Packages:
    """Mounts the packages of the loaded backends (loading them as registry.load() does)."""
    registry.load()
    packages.mount_all(registry.backends.values())
    return packages


def ensure_loaded_for_trace() -> Packages:
    """Mounts the packages of the backends that the target being traced uses (outside a trace, of every loaded
    one). Another generation's package is not mounted for a name it might register: the names it registers, once it
    mounts (a later trace of its target), replace what was found without it (atoms.register_python_name)."""
    registry.load()
    packages.mount_all(registry.loaded_for_trace())
    return packages


def mount_backend(name: str) -> types.ModuleType | None:
    """Loads one backend (and the backends it extends, not the others) and mounts its package."""
    registry.load([name])
    b = registry.backends.get(name)
    if b is None:
        return None
    packages.mount_all([b])
    return packages.mounted.get(name)


def claimant(public: str) -> str | None:
    """The discovered backend whose module map has `public` (discovery reads module maps without loading). A
    backend may claim a module of a backend it extends (CuTe DSL keeps one helper module for a family of
    generations): its module then serves the name, and says itself what it takes from the base's; mounting it mounts the base first, so the extender's claim is the one that stays."""
    registry.discover()
    names = [n for n, c in registry.candidates.items() if public in (c.get("module_map") or {})]
    for n in names:
        if not any(n in _bases(other) for other in names):
            return n
    return names[0] if names else None


class _AliasLoader:
    """Serves a public name with the backend's module object itself (the two names are one module). Finder and
    loader here are such by protocol: importlib.abc would bring importlib.resources into every process."""

    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        pass


class PublicNameFinder:
    """Answers only for warpweave's public namespaces that backends fill; every other import is left alone."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(PUBLIC_PREFIXES) and not fullname.startswith(PACKAGE_ROOT + "."):
            return None
        if fullname.startswith(PACKAGE_ROOT + "."):
            if fullname.count(".") != 2:
                return None  # a module inside a mounted package: its own path finds it
            module = mount_backend(fullname.rsplit(".", 1)[1])
            return importlib.util.spec_from_loader(fullname, _AliasLoader(module)) if module else None
        module = _resolve_public(fullname)
        return importlib.util.spec_from_loader(fullname, _AliasLoader(module)) if module else None


_finder = PublicNameFinder()


def install_finder() -> None:
    if _finder not in sys.meta_path:
        sys.meta_path.append(_finder)


def _resolve_public(fullname: str) -> types.ModuleType | None:
    owner = claimant(fullname)
    if owner is not None and owner not in packages.mounted:
        # (also when a base of the owner mounted first and claimed the name: the owner's module serves it)
        mount_backend(owner)
    if owner in packages.refused:
        raise BackendPythonError(packages.refused[owner])
    return packages.resolve(fullname)


def public_attribute(package: str, name: str):
    """`warpweave.utils.hopper_helpers` as an attribute of warpweave.utils (after `import warpweave.utils`)."""
    full = f"{package}.{name}"
    if name.startswith("__") or (full not in packages.module_map and claimant(full) is None):
        return None
    return importlib.import_module(full)
