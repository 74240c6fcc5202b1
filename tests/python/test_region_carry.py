"""What dynamic regions carry beyond plain variables: a tuple that starts from Python floats (running statistics,
`stats = (0.0, -inf)` and then `stats = step(stats)` in a loop, as CuTe DSL's attention softmax writes them); and
an object a helper changes in place inside a loop of its own, called in a branch that does not carry it (a tile
scheduler handed to a per-warp helper): the caller's object keeps what it held before the branch, as in CuTe DSL,
where the helper's loop rebinds the helper's name, so that a sibling branch or code after the `if` can use it. The
same holds for the objects such an object holds that change in place too (a scheduler's own pipeline state): a
branch that advances them leaves them as they were for its sibling and for the code after it."""
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
import warpweave.pipeline as pipeline
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu, target


def running_stats():
    @cute.kernel
    def k(g: cute.Tensor, out: cute.Tensor, n: cutlass.Int32):
        stats = (0.0, 1.0)
        for i in cutlass.range(n, unroll=1):
            x = g[i]
            stats = (stats[0] + x, stats[1] * 0.5 + x)
        out[0] = stats[0]
        out[1] = stats[1]

    @cute.jit
    def h(g: cute.Tensor, out: cute.Tensor, n: cutlass.Int32):
        k(g, out, n).launch(grid=[1, 1, 1], block=[1, 1, 1])

    return h


def test_a_tuple_of_python_floats_is_carried_through_a_loop():
    with target("sm_80"):
        c = cute.compile(running_stats(), from_dlpack(np.zeros(8, np.float32)), from_dlpack(np.zeros(2, np.float32)),
                         8)
    # both sums are the loop's values (a Python float kept constant would have folded them away)
    assert c.ir.count('"scf.for"') == 1 and c.ir.count("arith.addf") >= 2


@requires_gpu
def test_running_stats_on_the_gpu():
    import torch

    g = torch.arange(1, 9, dtype=torch.float32, device="cuda")
    out = torch.zeros(2, device="cuda")
    cute.compile(running_stats(), from_dlpack(g), from_dlpack(out), 8)(from_dlpack(g), from_dlpack(out), 8)
    torch.cuda.synchronize()
    s, r = 0.0, 1.0
    for x in range(1, 9):
        s, r = s + x, r * 0.5 + x
    assert out.cpu().tolist() == pytest.approx([s, r])


@cute.jit
def advance_n(args, n: cutlass.Int32):
    state, _ = args  # handed over in a tuple, as fmha.py's softmax takes its scheduler: the caller's `if` sees no
    for i in cutlass.range(n, unroll=1):  # use of it, and does not carry it
        state.advance()


def test_an_object_a_helper_changes_in_a_branch_is_the_callers_again_after_it():
    seen = {}

    @cute.kernel
    def k(g: cute.Tensor, n: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 4)
        seen["before"] = (state.index, state.phase, state.count)
        if tidx == 0:
            advance_n((state, 0), n)
            g[0] = state.index  # the helper's loop results, inside the branch that made them
        else:
            advance_n((state, 1), n + 1)  # from the state before the branch, not the other branch's
            g[1] = state.index
        seen["after"] = (state.index, state.phase, state.count)
        g[2] = state.index

    @cute.jit
    def h(a, n: cutlass.Int32):
        k(a, n).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_80"):
        cute.compile(h, from_dlpack(np.zeros(4, np.int32)), 3)
    assert all(a is b for a, b in zip(seen["after"], seen["before"]))


# --- an object of the program's own that holds a pipeline state and advances it itself ---------------------------
# (a persistent tile scheduler with its own fetch pipeline, QuACK's: the warp groups' `if` advances it for the second
# one only; the state is changed in place, inside the scheduler, by a branch that carries the scheduler)

class _Sched:
    def __init__(self, count, state):
        self.count = count
        self.state = state

    def advance(self):
        self.count = self.count + 1
        self.state.advance()

    def __extract_mlir_values__(self):
        from warpweave.cutlass_dsl import extract_mlir_values
        return extract_mlir_values(self.count) + extract_mlir_values(self.state)

    def __new_from_mlir_values__(self, values):
        from warpweave.cutlass_dsl import new_from_mlir_values
        return _Sched(new_from_mlir_values(self.count, values[:1]), new_from_mlir_values(self.state, values[1:]))


def sched_in_a_branch(seen=None):
    @cute.kernel
    def k(g: cute.Tensor, start: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        sched = _Sched(cutlass.Int32(0), pipeline.PipelineState(4, cutlass.Int32(0), start, cutlass.Int32(0)))
        inner = sched.state
        if seen is not None:
            seen["before"] = (inner.index, inner.phase, inner.count)
        if tidx >= 16:
            sched.advance()
        else:
            g[32 + tidx] = sched.state.index  # the sibling branch starts from the state before the if
        if seen is not None:
            seen["after"] = (inner.index, inner.phase, inner.count)
        g[tidx] = sched.state.index + 4 * sched.state.phase + 16 * sched.count

    @cute.jit
    def h(g: cute.Tensor, start: cutlass.Int32):
        k(g, start).launch(grid=[1, 1, 1], block=[32, 1, 1])

    return h


def test_a_state_an_object_advances_inside_its_branch_does_not_reach_the_other_branch_or_past_the_if():
    seen = {}
    with target("sm_80"):
        c = cute.compile(sched_in_a_branch(seen), from_dlpack(np.zeros(64, np.int32)), cutlass.Int32(3))
    # one scf.if, which yields the scheduler's four values (its count, its state's count, index and phase)
    assert c.ir.count('"scf.if"') == 1 and re.search(r'(%\d+, ){3}%\d+ = "scf.if"', c.ir), c.ir
    # the state object the scheduler held before the if holds what it held then (the scheduler itself is made
    # again of the if's results)
    assert all(a is b for a, b in zip(seen["after"], seen["before"])), seen


@requires_gpu
def test_a_state_an_object_advances_inside_its_branch_on_the_gpu():
    import torch

    for start in (0, 3):
        g = torch.full((64,), -1, dtype=torch.int32, device="cuda")
        cute.compile(sched_in_a_branch(), from_dlpack(g), cutlass.Int32(start))(from_dlpack(g), cutlass.Int32(start))
        torch.cuda.synchronize()
        got = g.cpu().tolist()
        nxt = (start + 1) % 4
        advanced = nxt + 4 * (1 if start == 3 else 0) + 16
        assert got[:16] == [start] * 16 and got[16:32] == [advanced] * 16, (start, got)
        assert got[32:48] == [start] * 16, (start, got)


@cute.jit
def _drain(args, n: cutlass.Int32):
    sched, state = args  # in a tuple: the caller's branch carries neither
    for i in cutlass.range(n, unroll=1):  # carries the scheduler, with the state it holds
        sched.advance()
    state.advance()  # the state the scheduler held before that loop, changed by the branch itself,
    for i in cutlass.range(n, unroll=1):  # then carried by a loop of its own
        state.advance()


def test_a_helpers_loops_over_an_object_and_its_state_leave_both_as_before_the_branch():
    seen = {}

    @cute.kernel
    def k(g: cute.Tensor, start: cutlass.Int32, n: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        sched = _Sched(cutlass.Int32(0), pipeline.PipelineState(4, cutlass.Int32(0), start, cutlass.Int32(0)))
        inner = sched.state
        seen["before"] = (sched.count, inner.index, inner.phase, inner.count)
        if tidx == 0:
            _drain((sched, inner), n)
            g[0] = sched.state.index + 16 * sched.count
        else:
            g[1] = sched.state.index + 16 * sched.count
        seen["after"] = (sched.count, inner.index, inner.phase, inner.count)
        seen["held"] = sched.state is inner
        g[2] = inner.index + sched.state.phase

    @cute.jit
    def h(g: cute.Tensor, start: cutlass.Int32, n: cutlass.Int32):
        k(g, start, n).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_80"):
        cute.compile(h, from_dlpack(np.zeros(4, np.int32)), cutlass.Int32(1), cutlass.Int32(3))
    assert seen["held"] and all(a is b for a, b in zip(seen["after"], seen["before"])), seen


# --- a pipeline state a helper advances by a run-time count and returns, in a branch ------------------------------
# (CuTe DSL's sm_120 ping-pong GEMM: `state = self.advance(state, k_tiles)` under `if warp_group_idx == 1`, then
# the state waited on in the loop after the branch). The state gives CuTe DSL's IR-values protocol too, for a
# library's objects that hold one; the variable holding it is still carried as the object it is.

class _Holder:
    """Holds the state and advances it in place, returning it (as PipelineOrder.arrive(state) does)."""

    def __init__(self, state):
        self.state = state

    def arrive(self, state):
        self.state.advance()
        return self.state


class _Stepper:
    @cute.jit
    def advance(self, state, iterations):
        # a pass over the ring flips the phase; the fields set in place under run-time conditions
        if iterations < state.stages and state._index + iterations >= state.stages:
            state._phase ^= 1
        if iterations >= state.stages and (state._index + iterations) // state.stages % 2 == 1:
            state._phase ^= 1
        state._index = (state._index + iterations) % state.stages
        state._count += iterations
        return state


def test_a_pipeline_state_a_helper_advances_in_a_branch_is_carried_by_the_branch():
    @cute.kernel
    def k(out: cute.Tensor, n: cutlass.Int32, group: cutlass.Int32):
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 3)
        held = _Holder(state)  # another name for the same state (PipelineOrder.state, say)
        if group == 1:
            state = _Stepper().advance(state, n)
        i = cutlass.Int32(0)
        while i < n:
            out[i] = cutlass.Float32(state.index * 2 + state.phase)
            state = held.arrive(state)
            i += 1
        out[7] = cutlass.Float32(held.state.index)  # the same object: what the loop left it

    @cute.jit
    def h(out: cute.Tensor, n: cutlass.Int32, group: cutlass.Int32):
        k(out, n, group).launch(grid=[1, 1, 1], block=[1, 1, 1])

    with target("sm_80"):
        c = cute.compile(h, from_dlpack(np.zeros(8, np.float32)), cutlass.Int32(3), cutlass.Int32(1))
    # the branch yields the state's values to the loop after it, which waits on them
    assert '"scf.if"' in c.ir and ("scf.for" in c.ir or "scf.while" in c.ir)


class _Cursor:
    """A library's state object (the IR-values protocol written by hand, as attention's tile schedulers do) whose
    index a loop sets to a run-time integer of the layout algebra (a count of tiles: cute.ceil_div of an extent)."""

    def __init__(self, idx):
        self.idx = idx

    def __extract_mlir_values__(self):
        return cutlass.extract_mlir_values(self.idx)

    def __new_from_mlir_values__(self, values):
        return _Cursor(cutlass.new_from_mlir_values(self.idx, values))


def test_a_run_time_integer_of_the_layout_algebra_is_one_carried_value():
    # CuTe DSL's cute.ceil_div of a dynamic extent is an Int32; here a symbolic extent: an object whose Int32 field
    # a loop sets to one keeps its number type, so it is made of one IR value before the loop and after it alike
    @cute.kernel
    def k(g: cute.Tensor, out: cute.Tensor):
        bidx, _, _ = cute.arch.block_idx()
        tiles = cute.ceil_div(g.shape[0], 128)
        cur = _Cursor(cutlass.Int32(bidx))
        while cur.idx < tiles:
            out[cur.idx] = cutlass.Int32(1)
            cur.idx = tiles
        out[0] = cur.idx

    @cute.jit
    def h(g: cute.Tensor, out: cute.Tensor):
        k(g, out).launch(grid=[1, 1, 1], block=[1, 1, 1])

    with target("sm_80"):
        ptx = cute.compile(h, from_dlpack(np.zeros(1000, np.float32)).mark_layout_dynamic(),
                           from_dlpack(np.zeros(8, np.int32))).ptx
    assert re.search(r"\bbra\b", ptx)   # the loop is there, its bound the run-time tile count
