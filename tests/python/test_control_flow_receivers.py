"""Method receivers of a dynamic region (objects it may change in place) that are not defined before it: one made
under a false const_expr and used under the same condition inside a run-time loop is simply not carried; one that
is really used there without a definition still names the variable and the user's line. An object a helper method
changes in place inside a run-time loop is carried by that loop."""
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
import warpweave.pipeline as pipeline
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu, target


def make(flag):
    @cute.kernel
    def k(g: cute.Tensor, n: cutlass.Int32):
        if cutlass.const_expr(flag):
            helper = cute.make_layout(4)
        acc = cutlass.Int32(0)
        for i in cutlass.range(n):
            if cutlass.const_expr(flag):
                acc = acc + cute.size(helper)
            acc = acc + i
        g[0] = acc

    @cute.jit
    def h(a, n: cutlass.Int32):
        k(a, n).launch(grid=[1, 1, 1], block=[32, 1, 1])

    return h


@pytest.mark.parametrize("flag", [False, True])
def test_receiver_under_a_static_condition(flag):
    with target("sm_80"):
        ptx = cute.compile(make(flag), from_dlpack(np.zeros(4, np.int32)), 3).info["ptx"]
    assert "st.global" in ptx


def test_receiver_used_without_a_definition_is_named():
    @cute.kernel
    def k(g: cute.Tensor, n: cutlass.Int32):
        for i in cutlass.range(n):
            if i > 0:
                state.advance()  # noqa: F821 - defined only inside the loop, on a later line
            state = cute.make_layout(4)
        g[0] = n

    @cute.jit
    def h(a, n: cutlass.Int32):
        k(a, n).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_80"), pytest.raises(Exception, match=r"test_control_flow_receivers\.py:\d+"):
        cute.compile(h, from_dlpack(np.zeros(4, np.int32)), 3)


# --- an object a helper changes in place, inside a run-time loop --------------------------------------------------
# QuACK's persistent GEMM producer: `while work_tile.is_valid_tile: state = self.load_tma(pipe, state, ...)`, whose
# load_tma advances the pipeline state in its own run-time loop over k-tiles and returns it. The while loop carries
# the state's values whether the helper's result is assigned back or the state is only passed to the method.

class _Loader:
    @cute.jit
    def load(self, state, k_tiles: cutlass.Int32):
        for _ in cutlass.range(k_tiles, unroll=1):
            state.advance()
        return state


def make_loop(assigned):
    @cute.kernel
    def k(g: cute.Tensor, tiles: cutlass.Int32, k_tiles: cutlass.Int32):
        loader = _Loader()
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 4)
        tile = cutlass.Int32(0)
        while tile < tiles:
            if cutlass.const_expr(assigned):
                state = loader.load(state, k_tiles)
            else:
                loader.load(state, k_tiles)
            tile = tile + 1
        g[0] = state.index
        g[1] = state.phase
        g[2] = state.count

    @cute.jit
    def h(a, tiles: cutlass.Int32, k_tiles: cutlass.Int32):
        k(a, tiles, k_tiles).launch(grid=[1, 1, 1], block=[32, 1, 1])

    return h


@pytest.mark.parametrize("assigned", [True, False])
def test_a_helper_method_advancing_a_state_inside_a_while_loop_is_carried(assigned):
    with target("sm_90a"):
        ptx = cute.compile(make_loop(assigned), from_dlpack(np.zeros(4, np.int32)), 3, 5).info["ptx"]
    # the three values stored after the loop are the while loop's results, registers, not the state it entered with
    stored = [v.strip() for group in re.findall(r"st\.global(?:\.v\d)?\.b32 \t\[%rd\d+(?:\+\d+)?\], \{?([^}; ]+(?:, [^};]+)*)\}?;",
                                                ptx) for v in group.split(",")]
    assert len(stored) == 3 and all(v.startswith("%r") for v in stored), stored


@requires_gpu
@pytest.mark.parametrize("assigned", [True, False])
def test_a_helper_method_advancing_a_state_inside_a_while_loop_counts_every_advance(assigned):
    import torch
    for tiles, k_tiles in ((3, 5), (0, 7), (2, 2)):
        g = torch.zeros(4, dtype=torch.int32, device="cuda")
        cute.compile(make_loop(assigned), from_dlpack(g), tiles, k_tiles)(from_dlpack(g), tiles, k_tiles)
        torch.cuda.synchronize()
        n = tiles * k_tiles  # a producer starts in phase 1, at stage 0 of 4
        assert g.tolist()[:3] == [n % 4, 1 ^ ((n // 4) % 2), n], (tiles, k_tiles, g.tolist())
