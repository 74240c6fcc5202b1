"""Cluster and proxy-fence helpers with CuTe DSL's signatures (cute.arch.*), composed of the Hopper manifest's
primitives: the manifest's arch.cluster_idx and kin read one dimension (dim="x"), these return (x, y, z) when no
dimension is given, and block_idx_in_cluster() is the CTA's linear rank in its cluster, as in CuTe DSL."""
from __future__ import annotations

import warpweave as cutlass
from warpweave import ext


def _read(python_name: str, dim=None):
    backend, entry = ext.select_instruction(python_name, {}, set())
    b = ext.builder()
    attrs = {"dim": dim} if dim is not None else {}
    return cutlass.Int32.from_ir(ext.emit_instruction(b, backend, entry, {}, attrs)["value"][0])


def _xyz(python_name: str, dim):
    if not ext.in_kernel():
        raise ext.user_error(f"cute.arch.{python_name.split('.')[-1]} is read inside a kernel", ext.DSLTypeError)
    if dim is not None:
        if dim not in ("x", "y", "z"):
            raise ext.user_error(f"dim must be 'x', 'y' or 'z', got {dim!r}", ext.DSLValueError)
        return _read(python_name, dim)
    return tuple(_read(python_name, d) for d in "xyz")


def block_in_cluster_idx(dim=None, *, loc=None, ip=None):
    """This CTA's (x, y, z) index in its cluster (%cluster_ctaid)."""
    return _xyz("arch.block_idx_in_cluster", dim)


def block_in_cluster_dim(dim=None, *, loc=None, ip=None):
    """The cluster's shape in CTAs (%cluster_nctaid)."""
    return _xyz("arch.cluster_dim", dim)


def cluster_idx(dim=None, *, loc=None, ip=None):
    """This cluster's (x, y, z) index in the grid (%clusterid)."""
    return _xyz("arch.cluster_idx", dim)


def cluster_dim(dim=None, *, loc=None, ip=None):
    """The grid's shape in clusters (%nclusterid)."""
    return _xyz("arch.cluster_grid_dim", dim)


def block_idx_in_cluster(dim=None, *, loc=None, ip=None):
    """This CTA's linear rank in its cluster (%cluster_ctarank); with dim, one component of its index."""
    if dim is not None:
        return _xyz("arch.block_idx_in_cluster", dim)
    return _read("arch.block_rank_in_cluster")


_FENCES = {("async", None): "arch.fence_proxy_async", ("async.shared", "cta"): "arch.fence_proxy_async_shared_cta",
           ("async.shared", "cluster"): "arch.fence_proxy_async_shared_cluster",
           ("async.global", None): "arch.fence_proxy_async_global"}


def fence_proxy(kind: str, *, space: str | None = None, loc=None, ip=None):
    """fence.proxy.<kind>[::<space>]: orders this thread's generic-proxy accesses with async-proxy ones (kind
    "async", "async.shared" with space "cta" or "cluster", "async.global")."""
    name = _FENCES.get((kind, space))
    if name is None:
        raise ext.user_error(f"fence_proxy({kind!r}, space={space!r}): the fences are "
                             + ", ".join(f"({k!r}, space={s!r})" for k, s in _FENCES), ext.DSLValueError)
    backend, entry = ext.select_instruction(name, {}, set())
    ext.emit_instruction(ext.builder(), backend, entry, {})


NAMES = ("block_in_cluster_idx", "block_in_cluster_dim", "cluster_idx", "cluster_dim", "block_idx_in_cluster",
         "fence_proxy")
