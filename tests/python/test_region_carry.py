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
from warpweave._dsl.base.errors import DSLTypeError

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


def stats_per_stage():
    # FlashAttention's correction warps: per-stage statistics default to constants and are stored element by element
    # inside a run-time branch; the code after the branch reads them (the branch's values or the defaults)
    @cute.kernel
    def k(g: cute.Tensor, out: cute.Tensor, n: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        stats = [(0.0, -1.0, True)] * 2
        acc = [0.0] * 2
        if tidx < n:
            for stage in cutlass.range_constexpr(2):
                s = g[tidx * 2 + stage]
                stats[stage] = (s, s * 2.0, s == 0.0)
        for i in cutlass.range(n, unroll=1):
            for stage in cutlass.range_constexpr(2):
                acc[stage] += g[i * 2 + stage]
        for stage in cutlass.range_constexpr(2):
            row_sum, row_max, empty = stats[stage]
            out[tidx * 6 + stage * 3] = row_sum
            out[tidx * 6 + stage * 3 + 1] = row_max
            out[tidx * 6 + stage * 3 + 2] = acc[stage] if not empty else cutlass.Float32(-7.0)

    @cute.jit
    def h(g: cute.Tensor, out: cute.Tensor, n: cutlass.Int32):
        k(g, out, n).launch(grid=[1, 1, 1], block=[4, 1, 1])

    return h


def test_a_list_of_python_numbers_stored_into_in_a_branch_is_carried_through_it():
    with target("sm_80"):
        c = cute.compile(stats_per_stage(), from_dlpack(np.zeros(8, np.float32)),
                         from_dlpack(np.zeros(24, np.float32)), 3)
    # the branch yields both stages' three values (the else branch, the defaults); the loop carries both sums
    yields = re.findall(r'"scf.yield"\([^)]*\) : \(([^)]*)\)', c.ir)
    assert yields.count("f32, f32, i1, f32, f32, i1") == 2 and yields.count("f32, f32") == 1, yields


@requires_gpu
def test_a_list_stored_into_in_a_branch_and_a_loop_on_the_gpu():
    import torch

    g = torch.tensor([1.5, 0.0, 2.0, 3.0, 0.25, -1.0, 4.0, 5.0], device="cuda")
    out = torch.full((24,), float("nan"), device="cuda")
    n = 3
    cute.compile(stats_per_stage(), from_dlpack(g), from_dlpack(out), n)(from_dlpack(g), from_dlpack(out), n)
    torch.cuda.synchronize()
    h = g.cpu().tolist()
    acc = [sum(h[i * 2 + s] for i in range(n)) for s in range(2)]
    want = []
    for t in range(4):
        for s in range(2):
            if t < n:
                x = h[t * 2 + s]
                want += [x, 2 * x, acc[s] if x != 0.0 else -7.0]
            else:
                want += [0.0, -1.0, -7.0]
    assert out.cpu().tolist() == pytest.approx(want)


def test_a_list_a_branch_changes_the_length_of_is_refused_at_the_users_line():
    @cute.kernel
    def k(g: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        sums = [0.0, 0.0]
        if tidx == 0:
            sums[0] = g[0]
            sums.append(g[1])
        g[2] = sums[0]

    @cute.jit
    def h(g: cute.Tensor):
        k(g).launch(grid=[1, 1, 1], block=[2, 1, 1])

    with target("sm_80"), pytest.raises(DSLTypeError) as e:
        cute.compile(h, from_dlpack(np.zeros(4, np.float32)))
    assert "'sums'" in str(e.value) and "test_region_carry.py" in str(e.value)


SW = cute.make_swizzle(3, 4, 3)
STAGED = cute.make_layout((8, 64, 3), stride=(64, 1, 512))


def moved_stage_kernel(read_after: bool, keep_previous: bool = False):
    # FlashAttention's uneven K/V stages: a swizzled stage view, moved by a run-time offset that is not a multiple of
    # the swizzle's period, rebound each trip before any use; a variable the loop need not carry
    @cute.kernel
    def k(g: cute.Tensor, n: cutlass.Int32, shift: cutlass.Int32):
        smem = cutlass.utils.SmemAllocator()
        sK = smem.allocate_tensor(cutlass.Float16, STAGED, 1024, swizzle=SW)
        tidx, _, _ = cute.arch.thread_idx()
        sK[tidx % 8, tidx, 0] = cutlass.Float16(1.0)
        cur = sK[None, None, 0]
        prev = cur
        g[0] = cur[0, tidx].to(cutlass.Float32)
        for i in cutlass.range(n, unroll=1):
            if cutlass.const_expr(keep_previous):
                prev = cur  # the trip before's tensor, read without an op: the loop must carry it after all
            cur = sK[None, None, i % 3]
            off = cute.assume(shift * 8, divby=8)
            cur = cute.make_tensor(cur.iterator + off, cur.layout)  # moved-stage rebinding
            g[1 + i] = cur[1, tidx].to(cutlass.Float32)
        if cutlass.const_expr(read_after):
            g[0] = cur[2, tidx].to(cutlass.Float32)  # moved-stage read after
        if cutlass.const_expr(keep_previous):
            g[1] = prev[2, tidx].to(cutlass.Float32)

    @cute.jit
    def h(g: cute.Tensor, n: cutlass.Int32, shift: cutlass.Int32):
        k(g, n, shift).launch(grid=[1, 1, 1], block=[64, 1, 1])

    return h


def test_a_tensor_a_loop_rebinds_before_any_use_may_change_its_representation():
    with target("sm_80"):
        c = cute.compile(moved_stage_kernel(False), from_dlpack(np.zeros(16, np.float32)), 4, 1)
    assert c.ir.count('"scf.for"') == 1


def test_such_a_tensor_read_after_the_loop_is_refused_at_the_read():
    src = open(__file__).read().splitlines()
    line = next(i for i, s in enumerate(src, 1) if "moved-stage read after" in s)
    with target("sm_80"), pytest.raises(DSLTypeError) as e:
        cute.compile(moved_stage_kernel(True), from_dlpack(np.zeros(16, np.float32)), 4, 1)
    msg = str(e.value)
    assert f"test_region_carry.py:{line}:" in msg and "'cur' is not usable after the dynamic loop" in msg, msg
    assert "changes its layout" in msg


def test_such_a_tensor_handed_to_another_variable_before_its_rebinding_is_refused_in_the_loop():
    with target("sm_80"), pytest.raises(DSLTypeError, match="'cur' .* changes its layout"):
        cute.compile(moved_stage_kernel(False, keep_previous=True), from_dlpack(np.zeros(16, np.float32)), 4, 1)


def test_the_builder_counts_each_values_uses():
    from warpweave import _core

    b = _core.IRBuilder()
    x, y = b.begin_function("f", ["i32", "i32"])
    s = b.op1("arith.addi", [x, x], "i32")
    assert (b.use_count(x), b.use_count(y), b.use_count(s)) == (2, 0, 0)
    b.op0("llvm.return", [s])
    assert b.use_count(s) == 1
    with pytest.raises(ValueError):
        b.use_count(10_000)


def test_a_number_a_loop_rebinds_to_a_register_tensor_before_any_use_is_free_inside_it():
    # FlashAttention's split-KV combine: `scale` is a Float32 of an earlier unrolled loop, then each trip of the
    # main loop makes it a fragment of per-row scales
    @cute.kernel
    def k(g: cute.Tensor, n: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        scale = g[tidx] * 2.0
        g[tidx] = scale
        for s in cutlass.range(n, unroll=1):
            scale = cute.make_rmem_tensor(2, cutlass.Float32)
            for m in cutlass.range_constexpr(2):
                scale[m] = g[s * 2 + m]
            g[16 + s] = scale[0] + scale[1]

    @cute.jit
    def h(g: cute.Tensor, n: cutlass.Int32):
        k(g, n).launch(grid=[1, 1, 1], block=[4, 1, 1])

    with target("sm_80"):
        c = cute.compile(h, from_dlpack(np.zeros(32, np.float32)), 4)
    # the loop hands on the number it entered with (its block value read by nothing but the yield)
    yields = re.findall(r'"scf.yield"\(([^)]*)\) : \(([^)]*)\)', c.ir)
    assert c.ir.count('"scf.for"') == 1 and [t for _, t in yields] == ["f32"], yields


class ProblemShape:
    """A library's parameters object (FlashAttention's tile scheduler params): an extent computed from a tensor's
    run-time shape, kept as the layout algebra gives it, and a count."""

    def __init__(self, shape):
        self.shape = shape

    def __extract_mlir_values__(self):
        from warpweave.cutlass_dsl import extract_mlir_values
        return extract_mlir_values(self.shape)

    def __new_from_mlir_values__(self, values):
        from warpweave.cutlass_dsl import new_from_mlir_values
        return ProblemShape(new_from_mlir_values(self.shape, values))


def test_an_extent_of_the_algebra_in_an_ir_values_object_is_one_value_as_a_number_is():
    seen = {}

    @cute.kernel
    def k(g: cute.Tensor, n: cutlass.Int32):
        from warpweave.cutlass_dsl import extract_mlir_values

        p = ProblemShape(((g.shape[0] + 127) // 128, cutlass.Int32(3), 4))
        seen["values"] = len(extract_mlir_values(p))
        for i in cutlass.range(n, unroll=1):
            p = ProblemShape((p.shape[0] + 1, p.shape[1] * 2, 4))
        g[0] = p.shape[0].to(cutlass.Float32) + p.shape[1].to(cutlass.Float32)

    @cute.jit
    def h(g: cute.Tensor, n: cutlass.Int32):
        k(g, n).launch(grid=[1, 1, 1], block=[1, 1, 1])

    with target("sm_80"):
        c = cute.compile(h, from_dlpack(np.zeros(300, np.float32)).mark_layout_dynamic(), 3)
    assert seen["values"] == 2   # the run-time extent and the Int32; the static 4 is no value
    yields = re.findall(r'"scf.yield"\([^)]*\) : \(([^)]*)\)', c.ir)
    assert yields == ["i32, i32"], yields


def phased_barrier_kernel(read_after: bool):
    @cute.kernel
    def k(g: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        warp = tidx // 32
        bar = pipeline.NamedBarrier(2, 64)
        if warp < 2:
            # this branch's own barrier: an id of a phase computed here, used here only
            bar = pipeline.NamedBarrier(bar.barrier_id + warp % 2, bar.num_threads)
            bar.arrive_and_wait()
        else:
            bar.arrive()   # the sibling branch: the barrier of before the if
        if cutlass.const_expr(read_after):
            bar.arrive()  # phased-barrier read after
        g[tidx] = tidx

    @cute.jit
    def h(g: cute.Tensor):
        k(g).launch(grid=[1, 1, 1], block=[128, 1, 1])

    return h


def test_an_object_a_branch_rebinds_for_its_own_use_compiles():
    with target("sm_90a"):
        ptx = cute.compile(phased_barrier_kernel(False), from_dlpack(np.zeros(128, np.int32))).ptx
    syncs = re.findall(r"\bbar(?:rier)?\.sync(?:\.aligned)?\s+(%r\d+|\d+), 64;", ptx)
    arrives = re.findall(r"\bbar(?:rier)?\.arrive\b", ptx)
    assert len(syncs) == 1 and syncs[0].startswith("%r") and len(arrives) == 1, ptx   # a phase's id; barrier 2


def test_such_an_object_read_after_the_if_is_refused_at_the_read():
    src = open(__file__).read().splitlines()
    line = next(i for i, s in enumerate(src, 1) if "phased-barrier read after" in s)
    with target("sm_90a"), pytest.raises(DSLTypeError) as e:
        cute.compile(phased_barrier_kernel(True), from_dlpack(np.zeros(128, np.int32)))
    msg = str(e.value)
    assert f"test_region_carry.py:{line}:" in msg and "'bar' is not usable after the dynamic if" in msg, msg


def test_a_while_loop_rebinding_what_it_cannot_carry_is_refused_at_the_users_line():
    # unlike an if's branch, which runs once, a trip after the first would read the rebound object, which the
    # traced body cannot give it: refused, as before the if's leniency
    @cute.kernel
    def k(g: cute.Tensor, n: cutlass.Int32):
        lay = cute.make_layout(4)
        s = cutlass.Int32(0)
        while s < n:
            g[s] = g[s] + cutlass.Float32(cute.size(lay))
            lay = cute.make_layout(8)
            s += 1

    @cute.jit
    def h(g: cute.Tensor, n: cutlass.Int32):
        k(g, n).launch(grid=[1, 1, 1], block=[4, 1, 1])

    with target("sm_80"), pytest.raises(DSLTypeError, match="'lay' is reassigned inside the dynamic while loop") as e:
        cute.compile(h, from_dlpack(np.zeros(8, np.float32)), 4)
    assert "test_region_carry.py" in str(e.value)
