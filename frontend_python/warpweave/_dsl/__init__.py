"""The DSL's machinery: tracing, numeric types, tensors, control flow, compilation. Users import warpweave and
warpweave.cute; these modules are internal."""


def plugins_digest() -> str:
    """Digest of the backend plugins whose atoms a module may use (part of every JIT cache key)."""
    from .plugins import registry

    return registry.digest()
