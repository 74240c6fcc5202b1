"""The DSL's machinery: tracing, numeric types, tensors, control flow, compilation. Users import warpweave and
warpweave.cute; these modules are internal."""


def plugins_digest(target=None) -> str:
    """Digest of the backend plugins whose atoms a module may use (part of every JIT cache key): with a target,
    those usable on it, else every loaded one."""
    from .registry.plugins import registry

    return registry.digest(getattr(target, "compute_capability", None))
