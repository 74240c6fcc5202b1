"""The compiled call's fast path for calls that leave out their Constexpr arguments, as CuTe DSL programs call
(sgemm: compiled(a, b, c, stream) of a function taking (a, b, c, epilogue_op, stream)). Without a GPU: the
generated fast path runs against a recording launcher and must launch what the general path (prepare) computes,
the stream read as the stream, for calls with and without the Constexpr."""
import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import _core
from warpweave.cute.runtime import from_dlpack
from dsl_helpers import target


@cute.kernel
def scale_kernel(gA: cute.Tensor, gC: cute.Tensor, op: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * 128 + tidx
    gC[i] = op(gA[i])


@cute.jit
def scale_on_stream(mA, mC, op: cutlass.Constexpr = lambda x: x * 2.0, stream=None):
    scale_kernel(mA, mC, op).launch(grid=[cute.size(mA) // 128, 1, 1], block=[128, 1, 1], stream=stream)


class Stream:
    def __init__(self, handle):
        self.cuda_stream = handle


@pytest.fixture
def recorded(monkeypatch):
    launched = []

    class Launcher:
        def __init__(self, fn, block, cluster, smem, offsets):
            pass

        def __call__(self, gx, gy, gz, stream, params):
            launched.append(((gx, gy, gz), stream, params))

    class Function:
        def set_max_dynamic_shared_memory(self, n):
            pass

    monkeypatch.setattr(_core, "Launcher", Launcher)
    return launched, Function


def _views(n):
    return [from_dlpack(np.zeros(n, np.float32)).mark_layout_dynamic() for _ in range(2)]


def test_calls_without_the_constexpr_launch_as_the_general_path(recorded, monkeypatch):
    launched, Function = recorded
    a, c = _views(1 << 10)
    with target("sm_80"):
        compiled = cute.compile(scale_on_stream, a, c, stream=Stream(7))
    monkeypatch.setattr(compiled, "_load", lambda: None)
    compiled._functions = {l.kernel: Function() for l in compiled.launches}
    compiled._fast = compiled._build_fast_call()
    assert callable(compiled._fast), compiled._fast_source
    assert "def fast_call_omitting(a0, a1, a3)" in compiled._fast_source
    for n, handle in [(1 << 10, 11), (1 << 12, 12), (256, 0)]:
        a, c = _views(n)
        op = compiled._constexprs[2]                                        # the compiled-in value
        want = compiled.prepare(a, c, op, Stream(handle))
        for call in [lambda: compiled(a, c, Stream(handle)),              # the Constexpr left out
                     lambda: compiled(a, c, op, Stream(handle))]:                    # passed as compiled
            launched.clear()
            call()
            assert [(g, s, p) for g, s, p in launched] == [(tuple(w[1]), w[5], w[6]) for w in want]
            assert launched[0][1] == handle                                 # the stream, not the op
    with pytest.raises(ValueError, match="compile-time constant"):
        compiled(a, c, lambda x: x + 1.0, Stream(3))                        # another Constexpr value: refused
