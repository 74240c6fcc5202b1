"""Memory fences of the PTX memory model at a scope (cute.arch.fence_acq_rel_cta, _cluster, _gpu, _sys): LLVM fence
instructions with acquire-release ordering and the scope's syncscope, which NVPTX lowers to the target's fence.
The cluster scope needs thread-block clusters (compute capability 9.0 and later)."""
from __future__ import annotations

from ..base import trace
from .atomics import ORDERING, checked_order, fence


def _acq_rel(scope: str, fname: str) -> None:
    checked_order("acq_rel", scope, fname)   # the cluster scope is refused on targets without clusters
    fence(trace.builder(), ORDERING["acq_rel"], scope)


def fence_acq_rel_cta(*, loc=None, ip=None) -> None:
    """Orders this thread's memory accesses before and after it as seen by the threads of its block."""
    _acq_rel("cta", "fence_acq_rel_cta")


def fence_acq_rel_cluster(*, loc=None, ip=None) -> None:
    """The same for the threads of its cluster."""
    _acq_rel("cluster", "fence_acq_rel_cluster")


def fence_acq_rel_gpu(*, loc=None, ip=None) -> None:
    """The same for every thread of the device."""
    _acq_rel("gpu", "fence_acq_rel_gpu")


def fence_acq_rel_sys(*, loc=None, ip=None) -> None:
    """The same for every thread of the system (the host and peer devices included)."""
    _acq_rel("sys", "fence_acq_rel_sys")
