"""What dynamic regions carry beyond plain variables: a tuple that starts from Python floats (running statistics,
`stats = (0.0, -inf)` and then `stats = step(stats)` in a loop, as CuTe DSL's attention softmax writes them); and
an object a helper changes in place inside a loop of its own, called in a branch that does not carry it (a tile
scheduler handed to a per-warp helper): the caller's object keeps what it held before the branch, as in CuTe DSL,
where the helper's loop rebinds the helper's name, so that a sibling branch or code after the `if` can use it."""
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
