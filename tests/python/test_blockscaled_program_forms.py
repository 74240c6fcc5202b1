"""Forms CuTe DSL's warp-level block-scaled GEMMs (sm_120) use that are not specific to a generation: ordered
turns of warpgroups (pipeline.PipelineOrder), a state advanced in place by a helper inside a dynamic branch,
launch(max_number_threads=...), 4-bit shared-memory ranges, a view made again inside a loop."""
from __future__ import annotations

import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
import warpweave.pipeline as pipeline
from warpweave import utils
from warpweave._dsl.base.errors import DSLValueError
from warpweave.cute.runtime import from_dlpack
from dsl_helpers import fresh_compilations, target  # noqa: F401


class _Kernel:
    @cute.jit
    def advance(self, state: pipeline.PipelineState, n):
        # attributes of the argument assigned inside dynamic branches (CuTe DSL's ping-pong GEMM's advance)
        if n < state.stages and ((state._index + n) >= state.stages):
            state._phase ^= 1
        if n >= state.stages and (((state._index + n) // state.stages) % 2) == 1:
            state._phase ^= 1
        state._index = (state._index + n) % state.stages
        state._count += n
        return state


@cute.kernel
def _state_kernel(x: cute.Tensor):
    st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 3)
    n = x[0]
    if n > 0:
        st = _Kernel().advance(st, n)   # the variable keeps the object the method advanced
    i = n
    while i > 0:                         # a loop after the branch carries the state's values
        x[1] = st.phase
        st.advance()
        i -= 1
    x[2] = st.index


@cute.jit
def _state_host(x: cute.Tensor):
    _state_kernel(x).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_a_state_advanced_in_place_in_a_dynamic_branch_is_carried_out_of_it(fresh_compilations):
    with target("sm_90a"):
        ptx = cute.compile(_state_host, from_dlpack(np.zeros(4, np.int32))).ptx
    assert "rem.s32" in ptx or "rem.u32" in ptx or "mul.hi" in ptx   # the index computed at run time
    assert ptx.count("st.global") >= 2


def _order_program():
    @cute.kernel
    def k(x: cute.Tensor):
        smem = utils.SmemAllocator()
        bars = smem.allocate_array(cutlass.Int64, 4, byte_alignment=8)
        tidx, _, _ = cute.arch.thread_idx()
        group = tidx // 128
        order = pipeline.PipelineOrder.create(barrier_storage=bars, depth=2, length=2, group_id=group,
                                              producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 128))
        state = order.state
        order.wait(state)
        x[tidx] = tidx
        state = order.arrive(state)
        order.wait(state)

    @cute.jit
    def host(x: cute.Tensor):
        k(x).launch(grid=(1, 1, 1), block=(256, 1, 1))

    return host


def test_pipeline_order_inits_depth_times_length_barriers_and_waits_on_parities():
    with target("sm_90a"):
        ptx = cute.compile(_order_program(), from_dlpack(np.zeros(256, np.int32))).ptx
    assert len(re.findall(r"mbarrier\.init\.shared(::cta)?\.b64", ptx)) == 4
    assert re.search(r"mbarrier\.(try_wait|test_wait)\.parity", ptx)
    assert "mbarrier.arrive" in ptx


def test_pipeline_order_refuses_bad_shapes():
    with pytest.raises(ValueError, match="depth is a positive static integer"):
        pipeline.PipelineOrder.create(barrier_storage=None, depth=0, length=2, group_id=0,
                                      producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 128))


def _bounded(max_threads, block):
    @cute.kernel
    def k(x: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        x[tidx] = 1

    @cute.jit
    def host(x: cute.Tensor):
        k(x).launch(grid=(1, 1, 1), block=block, max_number_threads=max_threads)

    return host


def test_max_number_threads_bounds_the_block():
    with target("sm_90a"):
        ptx = cute.compile(_bounded([128, 1, 1], [128, 1, 1]), from_dlpack(np.zeros(256, np.int32))).ptx
        assert ".reqntid 128, 1, 1" in ptx
        with pytest.raises(DSLValueError, match="more threads than max_number_threads") as e:
            cute.compile(_bounded([64, 1, 1], [128, 1, 1]), from_dlpack(np.zeros(256, np.int32)))
        assert e.value.location[0] == __file__
        with pytest.raises(DSLValueError, match="max_number_threads"):
            cute.compile(_bounded([0], [32, 1, 1]), from_dlpack(np.zeros(256, np.int32)))


def test_a_four_bit_memory_range_takes_half_a_byte_a_value():
    assert cute.struct.MemRange[cutlass.Float4E2M1FN, 256].size() == 128
    assert cute.struct.MemRange[cutlass.Float8E4M3FN, 256].size() == 256
    assert cute.struct.MemRange[cutlass.Float4E2M1FN, 3].size() == 2


def test_regions_carry_objects_changed_through_attributes_or_held_by_assigned_variables():
    import ast

    from warpweave._dsl.tracing import ast_rewrite, region_carry

    body = ast.parse("state._phase ^= 1\nother.x = 2\nplain = 3\n").body
    assert ast_rewrite._method_receivers(body, set()) == ["state", "other"]
    from warpweave._dsl.base import trace

    with trace.tracing(trace.TraceState(target={"name": "sm_90a"})):
        st = pipeline.PipelineState(3, 0, 0, 0)
        carry = region_carry.Carry(["st"], [st])
    assert carry.objects == [st]
