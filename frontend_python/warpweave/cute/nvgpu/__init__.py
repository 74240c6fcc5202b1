"""cute.nvgpu: copy and MMA operations. The universal copy and MMA live here; the architecture-specific
operations come from the loaded backends' manifests: cute.nvgpu.warp (warp-level MMAs and matrix loads), cpasync,
warpgroup, tcgen05, ... Each is a module (`import warpweave.cute.nvgpu.warp` works) whose names are looked up in
the manifests when first used. A third party's backend adds names to these modules, or new modules (its
manifest's python_modules), without a change here."""
import importlib
import importlib.util
import sys

from ..._dsl.atoms.atoms import backend_python_name as _backend_python_name, namespace as _namespace
from ..._dsl.atoms.copy import CopyUniversalOp  # noqa: F401
from ..._dsl.atoms.mma import MmaUniversalOp  # noqa: F401
from ..._dsl.registry.plugins import registry as _registry

# CuTe DSL's submodules: importable whether or not a loaded backend fills them (their names fail clearly then).
STANDARD_SUBMODULES = ("warp", "cpasync", "warpgroup", "tcgen05", "cpasync_bulk", "common")
# The submodules by kind that CuTe DSL's modules have (cpasync.copy, warp.mma, cpasync.helpers): the same names
# through another path. Only these: `from ...nvgpu.warp import NoSuchOp` must be an ImportError, not a module.
KIND_SUBMODULES = ("mma", "copy", "helpers")


def _offered_by_a_backend(name: str) -> bool:
    _registry.load()
    return any(name in b.manifest.get("python_modules", []) for b in _registry.backends.values())


class _ManifestModuleFinder:
    """Finds warpweave.cute.nvgpu.<name> for the standard names and every name a loaded manifest lists in
    python_modules; the module is the manifest-driven namespace (it answers only for this package). A finder and
    loader by protocol (find_spec, create_module, exec_module): importlib.abc would bring importlib.resources
    into every process (~8 ms of import)."""

    prefix = __name__ + "."

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(self.prefix):
            return None
        name = fullname[len(self.prefix):]
        # CuTe DSL's modules have submodules of their names by kind (a module's mma and copy submodules): the
        # same manifest-driven names, reached through either path
        top, _, sub = name.partition(".")
        if (sub and sub not in KIND_SUBMODULES) or not (top in STANDARD_SUBMODULES or _offered_by_a_backend(top)):
            return None
        return importlib.util.spec_from_loader(fullname, self, is_package=not sub)

    def create_module(self, spec):
        module = _namespace(spec.name, spec.name[len(self.prefix):].partition(".")[0])
        if spec.submodule_search_locations is not None:
            module.__path__ = []  # a package, so that its submodules import
        return module

    def exec_module(self, module):
        pass


if not any(isinstance(f, _ManifestModuleFinder) for f in sys.meta_path):
    sys.meta_path.append(_ManifestModuleFinder())

from . import common, cpasync, cpasync_bulk, tcgen05, warp, warpgroup  # noqa: E402,F401
from ..._dsl.atoms.tma_info import TmaInfo as _TmaInfo  # noqa: E402

# What the backends' TMA atom builders return (a plain container, _dsl/atoms/tma_info.py): cpasync.TmaInfo whichever
# backend fills it, so that kernels can annotate their parameters with it.
cpasync._cache.setdefault("TmaInfo", _TmaInfo)


def _enum_home(name: str):
    """The submodule whose manifest enum is called `name` (CuTe DSL also names them here: nvgpu.LoadCacheMode is
    cpasync.LoadCacheMode)."""
    _registry.load()
    for b in _registry.backends.values():
        for e in b.manifest.get("python_enums", []):
            home, _, short = e["name"].rpartition(".")
            if short == name and home:
                return home
    return None


def __getattr__(name):
    """Modules of backends beyond the standard ones (a manifest's python_modules), and the manifests' enums."""
    if name.startswith("__"):
        raise AttributeError(name)
    own = _backend_python_name(f"nvgpu.{name}")   # a function a backend's package defines here (make_tiled_tma_atom_A)
    if own is not None:
        return own
    if _offered_by_a_backend(name):
        return importlib.import_module(f"{__name__}.{name}")
    home = _enum_home(name)
    if home is not None:
        value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"warpweave.cute.nvgpu has no {name}: no loaded backend offers it")
