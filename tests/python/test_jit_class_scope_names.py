"""A @cute.jit function defined in a class body may name the class's own names in its annotations and defaults
(QuACK's VarlenManager.create(params: Params, ...), Params a class nested in VarlenManager): the rewritten function
keeps the original's annotations and defaults rather than evaluating them again in the module's scope."""
import numpy as np

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import target


class Scaler:
    Count = cutlass.Int32          # a name of the class's scope only
    DEFAULT = 7

    @staticmethod
    @cute.jit
    def scaled(n: Count, scale: int = DEFAULT, *, offset: int = DEFAULT + 1) -> Count:
        return n * scale + offset


@cute.kernel
def _k(g: cute.Tensor, n: cutlass.Int32):
    g[0] = Scaler.scaled(n)


@cute.jit
def _h(a, n: cutlass.Int32):
    _k(a, n).launch(grid=[1, 1, 1], block=[32, 1, 1])


def test_class_scope_annotations_and_defaults_are_the_originals():
    with target("sm_80"):
        ptx = cute.compile(_h, from_dlpack(np.zeros(4, np.int32)), 3).info["ptx"]
    # n * 7 + 8 with n a run-time value: the defaults are the class's (7 and 8), not re-evaluated
    assert "st.global" in ptx and ("mul.lo.s32" in ptx or "mad.lo.s32" in ptx or "shl.b32" in ptx)
    assert ", 7;" in ptx or ", 8;" in ptx
