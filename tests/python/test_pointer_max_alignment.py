"""Pointer.max_alignment (CuTe DSL 4.8.1's name of the known alignment, which libraries pass on as the assumed
alignment of a pointer they rebuild at an offset): the alignment a tensor's pointer was given, what is left of it
past an offset, and what make_ptr assumed."""
import numpy as np

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import target

seen = {}


@cute.kernel
def alignments_kernel(t: cute.Tensor):
    p = t.iterator
    seen["base"] = (p.alignment, p.max_alignment)
    seen["past_one"] = (p + 1).max_alignment
    seen["past_four"] = (p + 4).max_alignment
    seen["rebuilt"] = cute.make_ptr(cutlass.Float32, p.toint(), cute.AddressSpace.gmem, assumed_align=8).max_alignment


@cute.jit
def alignments(t: cute.Tensor):
    alignments_kernel(t).launch(grid=[1, 1, 1], block=[32, 1, 1])


def test_max_alignment_is_the_known_alignment():
    with target("sm_80"):
        cute.compile(alignments, from_dlpack(np.zeros(64, np.float32), assumed_align=16))
    assert seen["base"] == (16, 16)
    assert seen["past_one"] == 4 and seen["past_four"] == 16
    assert seen["rebuilt"] == 8
