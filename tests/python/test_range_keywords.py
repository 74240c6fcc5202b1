"""cutlass.range's keywords as CuTe DSL 4.8.1 takes them: at_least_once (a hint for analyses) is accepted; a keyword
it does not know is ignored, as CuTe DSL ignores it (shipped code misspells unroll_full), with a warning at the
loop's line so that the misspelling is seen; the loop is the same loop as without it."""
import os
import warnings

import numpy as np

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import line_in, target

THIS = os.path.abspath(__file__)


@cute.kernel
def hinted(g: cute.Tensor, n: cutlass.Int32):
    acc = cutlass.Float32(0.0)
    for i in cutlass.range(n, at_least_once=True):
        acc += g[i]
    g[0] = acc


@cute.kernel
def misspelled(g: cute.Tensor, n: cutlass.Int32):
    acc = cutlass.Float32(0.0)
    for i in cutlass.range(n, unroll_fulll=True):  # the misspelling under test
        acc += g[i]
    g[0] = acc


@cute.kernel
def plain(g: cute.Tensor, n: cutlass.Int32):
    acc = cutlass.Float32(0.0)
    for i in cutlass.range(n):
        acc += g[i]
    g[0] = acc


def _ptx(kernel):
    @cute.jit
    def h(g: cute.Tensor, n: cutlass.Int32):
        kernel(g, n).launch(grid=[1, 1, 1], block=[1, 1, 1])

    with target("sm_80"):
        return cute.compile(h, from_dlpack(np.zeros(8, np.float32)), 8).info["ptx"]


def _body(ptx):
    # the kernel's instructions without its name (the three kernels differ only there)
    return [ln for ln in ptx.splitlines() if ln.strip() and not ln.lstrip().startswith(("//", ".visible", ".entry"))
            and "hinted" not in ln and "misspelled" not in ln and "plain" not in ln]


def test_at_least_once_is_accepted_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ptx = _ptx(hinted)
    assert _body(ptx) == _body(_ptx(plain))


def test_an_unknown_keyword_is_ignored_with_a_warning_at_the_loop():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ptx = _ptx(misspelled)
    (w,) = [w for w in caught if "unroll_fulll" in str(w.message)]
    assert issubclass(w.category, SyntaxWarning) and "ignores" in str(w.message)
    assert os.path.abspath(w.filename) == THIS and w.lineno == line_in(THIS, "unroll_fulll=True)")
    assert _body(ptx) == _body(_ptx(plain))
