"""The mbarrier wait loop of sm_90 and sm_100 leaves for the whole warp at once: its back-edge is a uniform branch
(as in CuTe DSL's wait), since the lanes of a warp that wait on one barrier and phase together get one answer from
each try. ptxas then need not keep the loop's exit as a point where the warp's lanes reconverge; in a kernel where
that exit sat in a long-lived region it took 50 registers instead of 57. The wait asks every lane of a warp running
it to name the same barrier and phase (the entry's description says so); lanes with barriers of their own loop on
mbarrier_try_wait, a loop the compiler keeps divergent."""
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import utils
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import target
from test_pipelines import fake_args, make_kernel

_LOOP = re.compile(r"ww_wait: mbarrier\.try_wait\.parity[^;]*; (@!?\w+ bra(?:\.uni)? ww_wait);")


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a", "sm_103a"])
def test_a_pipelines_wait_loops_have_a_uniform_back_edge(arch):
    run, _ = make_kernel(3)
    with target(arch):
        ptx = cute.compile(run, *fake_args()).ptx
    edges = _LOOP.findall(ptx)
    assert edges, "the pipeline waits in a try_wait loop"
    assert all(e == "@!ww_done bra.uni ww_wait" for e in edges), edges
    # no wait loop of another form (a divergent back-edge to the loop's label)
    assert len(re.findall(r"\bbra(?!\.uni)\s+ww_wait", ptx)) == 0, ptx


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_the_wait_states_what_it_asks_of_the_warps_lanes(arch):
    from warpweave._dsl.registry.plugins import registry

    registry.load()
    backend = {"sm_90a": "hopper", "sm_100a": "blackwell"}[arch]
    (entry,) = [e for e in registry.backends[backend].primitives if e.get("python_name") == "arch.mbarrier_wait"]
    assert "bra.uni ww_wait" in entry["ptx_template"]
    assert "same barrier and phase" in entry["description"]


def test_lanes_with_barriers_of_their_own_loop_on_try_wait_with_a_divergent_branch():
    @cute.kernel
    def k(gA: cute.Tensor):
        bars = utils.SmemAllocator().allocate_array(cutlass.Int64, 32)
        lane = cute.arch.lane_idx()
        while not cute.arch.mbarrier_try_wait(bars + lane, 0):
            pass
        gA[lane] = lane

    @cute.jit
    def h(a):
        k(a).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_100a"):
        ptx = cute.compile(h, from_dlpack(np.zeros(32, np.int32))).ptx
    assert "ww_wait" not in ptx
    tries = [m.end() for m in re.finditer(r"mbarrier\.try_wait\.parity\.shared::cta\.b64 (%p\d+)", ptx)]
    assert tries, ptx
    # the loop on the answer branches back on a per-lane predicate: a branch the compiler did not mark uniform
    assert re.search(r"@!?%p\d+ bra\s+\$L__BB", ptx[tries[0]:]), ptx
