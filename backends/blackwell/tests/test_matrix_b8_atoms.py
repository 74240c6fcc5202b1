"""cute.nvgpu.warp's 8-bit transposed matrix copies (sm_100a): StMatrix16x8x8bOp (stmatrix.m16n8.trans.b8) and
LdMatrix16x16x8bOp (ldmatrix.m16n16.trans.b8), as CuTe DSL's classes (QuACK's Blackwell epilogue tests an op's
class and reads its num_matrices), and the store's thread-value layouts: every bit of the matrices is one thread's
(the loads' layouts, CuTe DSL's after its byte regrouping: tests/python/test_ldmatrix_bytes.py)."""
from __future__ import annotations

import pytest

from warpweave import _core
from warpweave.cute.nvgpu.warp import LdMatrix16x16x8bOp, StMatrix8x8x16bOp, StMatrix16x8x8bOp

from dsl_helpers import target


def _layouts(op):
    with target("sm_100a"):
        _, entry = op.entry()
    return {o["role"]: _core.parse_layout(o["layout_tv"]) for o in entry["operands"]}


def _image(layout):
    return sorted({layout(i) for i in range(layout.size())})


def test_the_classes_are_types_with_cutedsls_attributes():
    st = StMatrix16x8x8bOp(True, 4)
    assert isinstance(st, StMatrix16x8x8bOp) and not isinstance(st, StMatrix8x8x16bOp)
    assert (st.num_matrices, st.transpose) == (4, True)
    ld = LdMatrix16x16x8bOp(num_matrices=2)
    assert (ld.num_matrices, ld.transpose) == (2, True)  # transposed unless said otherwise, the only form
    assert StMatrix8x8x16bOp(num_matrices=2).transpose is False
    with pytest.raises(AttributeError):
        st.unknown_parameter


@pytest.mark.parametrize("x", [1, 2, 4])
def test_a_store_covers_its_matrices_once(x):
    lay = _layouts(StMatrix16x8x8bOp(True, x))
    bits = 16 * 8 * 8 * x
    assert _image(lay["REGISTERS"]) == list(range(bits))      # each bit from one thread's register
    rows = lay["SMEM_ADDRESS"]
    assert _image(rows) == list(range(bits))                  # the rows given cover the matrices
    # the threads past 8 x give no row: their addresses are ignored (a stride-0 mode)
    assert {rows((t, 0)) for t in range(32)} == {128 * r for r in range(8 * x)}
