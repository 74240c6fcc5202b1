"""A pipeline's wait on sm_90 and sm_100 parks the waiting warp until the barrier's phase completes (a suspend-time
hint on the try_wait of the wait loop: ptxas puts the warp in NANOSLEEP.SYNCS between tries, woken by the barrier)
instead of re-issuing the try_wait in a loop. In a warp-specialised GEMM the producer warp waits on a full ring for as
long as the consumers' epilogue lasts, on a scheduler one of those consumer warps issues from."""
import re

import pytest

import warpweave.cute as cute

from dsl_helpers import sass_opcodes, target
from test_pipelines import fake_args, make_kernel


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_the_wait_loop_of_a_pipeline_suspends_the_warp(arch):
    run, _ = make_kernel(3)
    with target(arch):
        compiled = cute.compile(run, *fake_args())
    loops = re.findall(r"ww_wait: (mbarrier\.try_wait\.parity[^;]*);", compiled.ptx)
    assert loops, "the pipeline waits in a try_wait loop"
    assert all(re.search(r", \d+$", w) for w in loops), loops  # the suspend-time hint, the last operand
    ops = sass_opcodes(compiled.cubin)
    assert ops.count("NANOSLEEP.SYNCS") >= len(loops), ops
