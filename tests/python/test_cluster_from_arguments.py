"""A launch's cluster computed from the @cute.jit function's arguments (`cluster=(n, 1, 1)` with `n: int`), as CuTe
DSL allows: a plain Python int argument annotated `int` is a runtime Int32 there (CuTe DSL 4.8.1 compiles the
function once and a later call with another value runs with that value), so one compilation serves every cluster
size and the cluster is evaluated at each call, and checked there as a known one is while compiling.

Checked on the stand-in driver (tests/python/host_stand_in.py), for sm_90a (clusters of up to 16 blocks).
"""
import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base.errors import DSLError
from warpweave._dsl.host.launch_plan import needs_nonportable_cluster
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import line_in, requires_gpu, target
from host_stand_in import stand_in  # noqa: F401 (a fixture)

HERE = __file__


@cute.kernel
def each_block(x: cute.Tensor):
    bidx, _, _ = cute.arch.block_idx()
    x[bidx] = cutlass.Float32(1.0)


@cute.jit
def clustered(x: cute.Tensor, cluster_size: int, clusters: int):
    each_block(x).launch(grid=(cluster_size * clusters, 1, 1), block=(32, 1, 1), cluster=(cluster_size, 1, 1))


@cute.jit
def fixed_grid(x: cute.Tensor, cluster_size: int):
    each_block(x).launch(grid=(6, 1, 1), block=(32, 1, 1), cluster=(cluster_size, 1, 1))


def test_one_compilation_launches_each_calls_cluster(stand_in):
    x = from_dlpack(np.zeros(64, np.float32))
    with target("sm_90a"):
        c = stand_in(cute.compile(clustered, x, 2, 1))
    assert "nvvm.cluster_dim" not in c.ir  # the kernel is not compiled for one cluster shape
    assert needs_nonportable_cluster(c.launches[0])  # a call may ask for more than 8 blocks: the kernel opts in
    for size, n in ((1, 3), (2, 2), (4, 1), (16, 2)):
        stand_in.launched.clear()
        stand_in.clusters.clear()
        c(x, size, n)
        assert [g for _, g, _, _ in stand_in.launched] == [(size * n, 1, 1)]
        assert stand_in.clusters == [(size, 1, 1)]


def test_a_cluster_a_call_makes_invalid_is_refused_naming_the_launch(stand_in):
    x = from_dlpack(np.zeros(64, np.float32))
    with target("sm_90a"):
        c = stand_in(cute.compile(clustered, x, 2, 1))
        f = stand_in(cute.compile(fixed_grid, x, 2))
    line = line_in(HERE, "each_block(x).launch(grid=(cluster_size * clusters")
    for size, what in ((0, r"extent x must be at least 1"), (32, r"32 blocks, more than the 16")):
        with pytest.raises(DSLError, match=rf"test_cluster_from_arguments.py:{line}: launch of .*{what}"):
            c(x, size, 1)
    with pytest.raises(DSLError, match=r"grid extent x \(6\) is not a multiple of the cluster's \(4\)"):
        f(x, 4)
    f(x, 3)
    assert stand_in.clusters[-1] == (3, 1, 1)
    assert not stand_in.launched[:-1]  # the refused calls launched nothing


def test_a_cluster_from_arguments_on_a_target_without_clusters_is_an_error_at_the_launch():
    with target("sm_80"):
        with pytest.raises(DSLError, match=r"test_cluster_from_arguments.py:\d+: launch of .*has no thread block "
                                           r"clusters"):
            cute.compile(clustered, from_dlpack(np.zeros(8, np.float32)), 2, 1)


@cute.kernel
def cluster_of_each_block(out: cute.Tensor):
    bidx, _, _ = cute.arch.block_idx()
    tidx, _, _ = cute.arch.thread_idx()
    if tidx == 0:
        out[bidx, 0] = cute.arch.block_in_cluster_dim()[0]
        out[bidx, 1] = cute.arch.block_in_cluster_idx()[0]


@cute.jit
def report_clusters(out: cute.Tensor, cluster_size: int):
    cluster_of_each_block(out).launch(grid=(cute.size(out, mode=[0]), 1, 1), block=(32, 1, 1),
                                      cluster=(cluster_size, 1, 1))


@requires_gpu
def test_the_gpu_runs_each_calls_cluster():
    import torch
    out = torch.full((16, 2), -1, dtype=torch.int32, device="cuda")
    c = cute.compile(report_clusters, from_dlpack(out), 2)
    for size in (1, 2, 4, 8):
        out.fill_(-1)
        c(from_dlpack(out), size)
        torch.cuda.synchronize()
        got = out.cpu().tolist()
        assert got == [[size, b % size] for b in range(16)], size
