"""Copies between memory and register fragments of 8-bit values move whole words where the fragment holds the
values consecutively (element_copy._copy_gather, _register_groups): a vector of 16 bytes in shared memory spread over
a fragment in four runs of four stays four 32-bit registers through a loop, with no byte taken apart and put back."""
import re

import numpy as np
from dsl_helpers import fresh_compilations, target  # noqa: F401

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import utils
from warpweave._dsl.atoms.element_copy import _Access, _register_groups
from warpweave._dsl.base import trace
from warpweave.cute.runtime import from_dlpack


def _kernel(frag_layout):
    @cute.kernel
    def kern(x: cute.Tensor, out: cute.Tensor, n: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        smem = utils.SmemAllocator()
        s = smem.allocate_tensor(cutlass.Int8, cute.make_layout((16, 32)), byte_alignment=16)
        words = cute.recast_tensor(s, cutlass.Int32)
        for i in cutlass.range_constexpr(4):
            words[tidx * 4 + i] = x[tidx * 4 + i]
        frag = cute.make_rmem_tensor(frag_layout, cutlass.Int8)
        view = cute.make_tensor(frag.iterator, cute.make_layout((4, 4), stride=(1, 8)))
        cute.autovec_copy(s[None, tidx], view)
        acc = cutlass.Int32(0)
        fw = cute.recast_tensor(frag, cutlass.Int32)
        for _ in cutlass.range(n):
            for i in cutlass.range_constexpr(4):
                acc = acc ^ fw[2 * i]
            cute.autovec_copy(s[None, (tidx + 1) % 32], view)
        out[tidx] = acc

    @cute.jit
    def host(x: cute.Tensor, out: cute.Tensor, n: cutlass.Int32):
        kern(x, out, n).launch(grid=(1, 1, 1), block=(32, 1, 1))

    return host


def test_spread_fragment_of_bytes_stays_whole_words(fresh_compilations):
    with target("sm_80"):
        c = cute.compile(_kernel(cute.make_layout(32)), from_dlpack(np.zeros(128, np.int32)),
                         from_dlpack(np.zeros(32, np.int32)), cutlass.Int32(3))
    body = [line.strip() for line in c.ptx.splitlines()]
    assert any(re.match(r"ld\.shared\.v4\.(b|u)32", line) for line in body), "one 16-byte load per copy"
    shuffles = [line for line in body if re.match(r"(prmt|cvt\.u16\.u32|cvt\.u32\.u16|bfe|bfi)\b", line)]
    assert not shuffles, shuffles[:8]
    assert ".local" not in c.ptx


def test_register_groups_are_consecutive_and_aligned():
    """The pieces cover the run in order; each piece is consecutive in the fragment and aligned to its size."""
    with trace.tracing(trace.TraceState(target={"name": "sm_80"})):
        for layout, want in ((cute.make_layout((4, 4), stride=(1, 8)), [(0, 4), (4, 4), (8, 4), (12, 4)]),
                             (cute.make_layout(16), [(0, 16)]),
                             (cute.make_layout((2, 8), stride=(1, 4)), [(k, 2) for k in range(0, 16, 2)]),
                             (cute.make_layout((3, 2), stride=(1, 5)), [(0, 2), (2, 1), (3, 1), (4, 2)])):
            frag = cute.make_rmem_tensor(cute.make_layout(64), cutlass.Int8)
            acc = _Access(cute.make_tensor(frag.iterator, layout))
            run = list(range(cute.size(layout)))
            groups = _register_groups(acc, run, 1)
            assert groups == want, (layout, groups)
            assert [k for k, g in groups] == [sum(g for _, g in groups[:i]) for i in range(len(groups))]
            for k, g in groups:
                offs = [acc.post(j) for j in run[k:k + g]]
                assert offs == list(range(offs[0], offs[0] + g)) and offs[0] % g == 0
