"""pipeline_init_arrive / pipeline_init_wait: the synchronisation after a kernel's pipelines are created with
defer_sync=True, so that no thread uses a barrier before it is initialised.

Within one CTA (no cluster, or a cluster of one CTA) the wait is a block barrier and the arrive does nothing. In a
cluster of several CTAs a peer CTA may arrive on this CTA's barriers, so the whole cluster syncs: the arrive is the
backend's cluster arrive (relaxed where asked), the wait its cluster wait. Backends publish those primitives
(arch.cluster_arrive, arch.cluster_arrive_relaxed, arch.cluster_wait); without them a cluster is refused by name.
"""
from __future__ import annotations

import warpweave.cute as cute


def _cluster_size(cluster_shape_mn) -> int:
    if cluster_shape_mn is None:
        return 1
    if hasattr(cluster_shape_mn, "shape"):
        # a layout of the cluster's CTAs (CuTe DSL's kernels pass their cluster_layout_vmnk)
        size = cute.size(cluster_shape_mn)
        if not isinstance(size, int):
            raise TypeError(f"the cluster's layout must be static, got {cluster_shape_mn}")
        return size
    shape = tuple(cluster_shape_mn) if isinstance(cluster_shape_mn, (tuple, list)) else (cluster_shape_mn,)
    size = 1
    for s in shape:
        if not isinstance(s, int):
            raise TypeError(f"cluster_shape_mn must be static integers, got {cluster_shape_mn!r}")
        size *= s
    return size


def pipeline_init_arrive(cluster_shape_mn=None, is_relaxed: bool = False):
    """Signals that this CTA's pipeline barriers are initialised (cluster-wide when the cluster has several
    CTAs); pipeline_init_wait completes the synchronisation."""
    if _cluster_size(cluster_shape_mn) == 1:
        return
    cute.arch.mbarrier_init_fence()
    if is_relaxed:
        cute.arch.cluster_arrive_relaxed()
    else:
        cute.arch.cluster_arrive()


def pipeline_init_wait(cluster_shape_mn=None):
    """Waits until every CTA of the cluster (or every thread of this CTA) has initialised its barriers."""
    if _cluster_size(cluster_shape_mn) == 1:
        cute.arch.sync_threads()
        return
    cute.arch.cluster_wait()
