"""A runtime loop that the program leaves to the compiler's unrolling and whose body waits at a block-level barrier
stays a loop down to the assembler: its IR carries the unroll-disable annotation and its PTX the no-unroll pragma.

The assembler unrolled the sub-tile loop of CuTe DSL's dense_blockscaled_gemm_persistent_amax epilogue (a
tensor-memory load, the tile's absolute maximum, a conversion, a shared-memory store, two barriers and a TMA store
per trip) and moved each trip's maximum past the barriers into the later trips, holding several sub-tiles of
accumulators at once: 132 registers where CuTe DSL's loop, which it keeps rolled, takes 44 (both under the CUDA 13.5
PTX compiler). The program's own unrolling (unroll=, unroll_full=) is kept, and a loop without a barrier is left to
the compiler as before."""
import re

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import utils
from warpweave.cute.runtime import make_fake_tensor

from dsl_helpers import target

THREADS, TRIPS = 64, 4
ROLLED = "unroll = <disable = true>"


def _compile(barrier: bool, **range_kwargs):
    @cute.kernel
    def kern(g: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        s = utils.SmemAllocator().allocate_tensor(cutlass.Float32, cute.make_layout((THREADS,)), byte_alignment=16)
        best = cutlass.Float32(0.0)
        for j in cutlass.range(TRIPS, **range_kwargs):
            v = g[tidx, j]
            best = cute.arch.fmax(best, abs(v))
            s[tidx] = v
            if cutlass.const_expr(barrier):
                cute.arch.barrier()
            out[tidx, j] = s[(tidx + 1) % THREADS]
            if cutlass.const_expr(barrier):
                cute.arch.barrier(barrier_id=1, number_of_threads=THREADS)
        out[tidx, TRIPS] = best

    @cute.jit
    def host(g: cute.Tensor, out: cute.Tensor):
        kern(g, out).launch(grid=[1, 1, 1], block=[THREADS, 1, 1])

    with target("sm_90a"):
        return cute.compile(host, make_fake_tensor(cutlass.Float32, (THREADS, TRIPS)),
                            make_fake_tensor(cutlass.Float32, (THREADS, TRIPS + 1)))


def _loop_annotations(ir: str) -> list:
    """The kernel's one loop's unrolling annotations (none where the compiler's heuristics decide)."""
    assert ir.count('"scf.for"') == 1, ir
    return re.findall(r"loop_annotation = #llvm\.loop_annotation<unroll = <([^>]*)>>", ir)


def test_loop_with_a_barrier_stays_rolled():
    compiled = _compile(barrier=True)
    annotations = _loop_annotations(compiled.ir)
    assert annotations == ["disable = true"], annotations
    # the annotation reaches the assembler: the loop's header carries the no-unroll pragma
    assert compiled.ptx.count('.pragma "nounroll"') == 1, compiled.ptx


def test_loop_without_a_barrier_is_left_to_the_compiler():
    compiled = _compile(barrier=False)
    assert ROLLED not in compiled.ir
    assert '.pragma "nounroll"' not in compiled.ptx


@pytest.mark.parametrize("kwargs,annotation", [({"unroll": 2}, "count = 2 : i32"), ({"unroll": 1}, "disable = true")])
def test_the_programs_own_unrolling_is_kept(kwargs, annotation):
    assert _loop_annotations(_compile(barrier=True, **kwargs).ir) == [annotation]
