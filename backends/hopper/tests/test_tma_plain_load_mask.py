"""cute.copy of a plain (non-multicast) TMA load given mcast_mask=: the load fills its own CTA, as CuTe DSL's does.
Kernels written for any cluster shape compute a mask for every load and pass it whatever atom the cluster shape
chose (a cluster of one CTA along the mode gets the plain load); CPU only, the PTX's load is the plain one."""
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import target

TILE = (64, 64)


@pytest.fixture(autouse=True)
def _fresh_compilations(monkeypatch):
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")


def _host():
    from warpweave.cute.nvgpu import cpasync

    @cute.kernel
    def k(atom: cute.CopyAtom, coords: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        smem = cutlass.utils.SmemAllocator()
        bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        s = smem.allocate_tensor(cutlass.Float16, cute.make_layout(TILE, stride=(TILE[1], 1)), 128)
        ts, tg = cpasync.tma_partition(atom, 0, cute.make_layout(1), cute.group_modes(s, 0, 2),
                                       cute.group_modes(cute.local_tile(coords, TILE, (0, 0)), 0, 2))
        if tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        # a run-time mask, as create_tma_multicast_mask makes one
        mask = cutlass.Int16(1) << cutlass.Int16(cute.arch.block_idx_in_cluster())
        if tidx < 32:
            if tidx == 0:
                cute.arch.mbarrier_arrive_and_expect_tx(bar, TILE[0] * TILE[1] * 2)
            cute.copy(atom, tg, ts, tma_bar_ptr=bar, mcast_mask=mask)
        cute.arch.mbarrier_wait(bar, 0)
        out[tidx] = s[0, tidx % TILE[1]]

    @cute.jit
    def host(a: cute.Tensor, out: cute.Tensor):
        atom, coords = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a,
                                                   cute.make_layout(TILE, stride=(TILE[1], 1)), TILE)
        k(atom, coords, out).launch(grid=(1, 1, 1), block=(128, 1, 1))

    return host


def test_plain_load_with_a_mask_loads_into_its_own_cta():
    with target("sm_90a"):
        ptx = cute.compile(_host(), from_dlpack(np.zeros(TILE, np.float16)),
                           from_dlpack(np.zeros(128, np.float16))).info["ptx"]
    loads = re.findall(r"cp\.async\.bulk\.tensor\.2d\.shared::\w+\.global\S*", ptx)
    assert loads and not any("multicast" in x for x in loads), loads
