"""warpweave.backends.<name>: each loaded backend's own Python package (helpers, operand adapters, host-argument
producers, conformance probes), shipped beside its plugin library. The public names they fill (e.g.
warpweave.utils.hopper_helpers) are the way users reach them; this namespace is for tools and tests."""
from .._dsl.registry.backend_python import mount_backend as _mount_backend


def __getattr__(name):
    module = None if name.startswith("__") else _mount_backend(name)
    if module is None:
        raise AttributeError(f"warpweave.backends has no {name}: no loaded backend of that name ships a Python "
                             "package")
    return module
