"""cute.arch.mbarrier_arrive_and_expect_tx(mbar, bytes, peer_cta_rank_in_cluster): with a peer, the arrival (and
the bytes it expects) lands on the mbarrier at the same offset in that CTA of the cluster, as QuACK's tile scheduler
announces the st.async writes it broadcasts to each CTA; without one, on this CTA's."""
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import utils
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import target


def _host(peer):
    @cute.kernel
    def k(g: cute.Tensor):
        smem = utils.SmemAllocator()
        bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        if cutlass.const_expr(peer):
            cute.arch.mbarrier_arrive_and_expect_tx(bar, 16, cute.arch.lane_idx() % 2)
        else:
            cute.arch.mbarrier_arrive_and_expect_tx(bar, 16)
        g[0] = 1

    @cute.jit
    def host(g: cute.Tensor):
        k(g).launch(grid=(2, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1))

    return host


@pytest.mark.parametrize("peer", [False, True])
def test_arrival_lands_on_the_peer_ctas_barrier(peer):
    with target("sm_90a"):
        ptx = cute.compile(_host(peer), from_dlpack(np.zeros(4, np.int32))).ptx
    remote = re.search(r"mapa\.shared::cluster\.u32 (\S+), %r\d+, %r\d+; mbarrier\.arrive\.expect_tx\.shared::cluster"
                       r"\.b64 _, \[\1\], %r\d+;", ptx)
    local = "mbarrier.arrive.expect_tx.shared::cta.b64" in ptx
    assert (remote is not None, local) == ((True, False) if peer else (False, True)), ptx
