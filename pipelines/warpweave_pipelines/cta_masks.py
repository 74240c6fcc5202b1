"""Which CTAs of a cluster a pipeline signals: masks over a (V, M, N, K) layout of the cluster's CTAs.

A cluster of CTAs is described as CuTe DSL's kernels describe it, cta_layout_vmnk: V the CTAs of one MMA (1, or
the pair of a 2-CTA MMA), M and N the MMA tiles of the cluster, K 1; a CTA's rank in the cluster is the layout's
value at its coordinate. The masks are plain integer arithmetic on the rank (bit r: the CTA of rank r).
"""
from __future__ import annotations

import warpweave as cutlass


def flat_modes(layout):
    """The (size, stride) of each of the four modes of a static, compact (V, M, N, K) layout."""
    shape = layout.shape if isinstance(layout.shape, tuple) else (layout.shape,)
    stride = layout.stride if isinstance(layout.stride, tuple) else (layout.stride,)
    if len(shape) != 4:
        raise ValueError(f"cta_layout_vmnk is a (V, M, N, K) layout of the cluster's CTAs, got {layout}")
    out = []
    for s, d in zip(shape, stride):
        s = s if isinstance(s, tuple) else (s,)
        d = d if isinstance(d, tuple) else (d,)
        if len(s) != 1 or not isinstance(s[0], int) or not isinstance(d[0], int):
            raise ValueError(f"cta_layout_vmnk must be a static layout with one extent per mode, got {layout}")
        out.append((s[0], d[0] if s[0] > 1 else 0))
    return out


def size_of(modes) -> int:
    n = 1
    for s, _ in modes:
        n *= s
    return n


class VmnkModes:
    """For a pipeline whose `modes` field holds the cluster as (size, stride) of V, M, N, K: the CTAs of one MMA
    (its V extent) and the cluster's size."""

    @property
    def cta_group(self) -> int:
        return self.modes[0][0]

    @property
    def cluster_size(self) -> int:
        return size_of(self.modes)


def coordinate(rank, modes, i):
    """The CTA's coordinate along mode i."""
    s, d = modes[i]
    if s == 1:
        return cutlass.Int32(0)
    return (rank // d) % s


def along(rank, modes, i, fixed=None):
    """The mask of the CTAs whose coordinates equal this CTA's (or `fixed`'s, {mode: coordinate}) except along
    mode i."""
    fixed = fixed or {}
    base = cutlass.Int32(0)
    for j, (s, d) in enumerate(modes):
        if j == i or s == 1:
            continue
        c = fixed[j] if j in fixed else coordinate(rank, modes, j)
        base = base + c * d
    s, d = modes[i]
    pattern = 0
    for k in range(s):
        pattern |= 1 << (k * d)
    return cutlass.Int32(pattern) << base
