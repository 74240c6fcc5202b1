"""cute.nvgpu: copy and MMA operations. The universal copy and MMA live here; the architecture-specific
operations come from the loaded backends' manifests: cute.nvgpu.warp (warp-level MMAs and matrix loads), cpasync,
warpgroup, tcgen05, ... A third party's backend adds names to these namespaces (or new ones) without a change here."""
from ..._dsl.atoms import namespace as _namespace
from ..._dsl.copy import CopyUniversalOp  # noqa: F401
from ..._dsl.mma import MmaUniversalOp  # noqa: F401

warp = _namespace("warpweave.cute.nvgpu.warp", "warp")
cpasync = _namespace("warpweave.cute.nvgpu.cpasync", "cpasync")
warpgroup = _namespace("warpweave.cute.nvgpu.warpgroup", "warpgroup")
tcgen05 = _namespace("warpweave.cute.nvgpu.tcgen05", "tcgen05")
cpasync_bulk = _namespace("warpweave.cute.nvgpu.cpasync_bulk", "cpasync_bulk")


def __getattr__(name):
    """Namespaces of backends beyond the ones above (a manifest's python_modules)."""
    from ..._dsl.plugins import registry

    registry.load()
    for b in registry.backends.values():
        if name in b.manifest.get("python_modules", []):
            ns = _namespace(f"warpweave.cute.nvgpu.{name}", name)
            globals()[name] = ns
            return ns
    raise AttributeError(f"warpweave.cute.nvgpu has no {name}: no loaded backend offers it")
