"""cute.experimental.iket, CuTe DSL's in-kernel event markers (QuACK's GEMM kernels push and pop named ranges
around their TMA loads and epilogues): outside the IKET profiler a kernel carries no instrumentation, so a kernel
with markers compiles to the code of the same kernel without them; a marker given a wrong argument is refused at
the user's line."""
import os

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.experimental import iket
from warpweave.cute.runtime import make_fake_tensor
from warpweave._dsl.registry import compile_only

from dsl_helpers import target

@cute.kernel
def marked(a: cute.Tensor, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    iket.range_push("load", n)
    token = iket.range_start("bump")
    iket.mark("here")
    idle = iket.sentinel_token("idle")
    if tidx < n:
        a[tidx] = a[tidx] + 1.0
    iket.range_end(token)
    iket.range_end(idle)
    iket.range_pop()


@cute.kernel
def plain(a: cute.Tensor, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    if tidx < n:
        a[tidx] = a[tidx] + 1.0


@cute.jit
def bump(a: cute.Tensor, n: cutlass.Int32, kernel: cutlass.Constexpr):
    kernel(a, n).launch(grid=[1, 1, 1], block=[32, 1, 1])


def _ptx(kernel):
    with target("sm_90a"), compile_only.compile_only():
        c = cute.compile[cute.KeepPTX](bump, make_fake_tensor(cutlass.Float32, (32,), stride=(1,)),
                                       cutlass.Int32(7), kernel)
    # the kernels' names aside
    return [ln.replace(kernel.__name__, "K") for ln in c.ptx.splitlines()
            if ln.strip() and not ln.lstrip().startswith("//")]


def test_markers_leave_no_code_outside_the_profiler(tmp_path, monkeypatch):
    monkeypatch.setenv("WARPWEAVE_DUMP_DIR", str(tmp_path))
    with_markers, without = _ptx(marked), _ptx(plain)
    assert any("add.f32" in ln or "add.rn.f32" in ln for ln in with_markers)
    assert with_markers == without


@cute.kernel
def bad_name_kernel(a: cute.Tensor):
    iket.range_push(3)


@cute.kernel
def bad_token_kernel(a: cute.Tensor):
    iket.range_end("bump")


@cute.jit
def launch_bad(a: cute.Tensor, which: cutlass.Constexpr):
    (bad_name_kernel if which == "name" else bad_token_kernel)(a).launch(grid=[1, 1, 1], block=[32, 1, 1])


@pytest.mark.parametrize("which, message, line", [("name", "event_name is a str", "iket.range_push(3)"),
                                                  ("token", "token is what range_start", 'iket.range_end("bump")')])
def test_a_wrong_argument_is_refused_at_the_users_line(which, message, line):
    with target("sm_90a"), compile_only.compile_only(), pytest.raises(TypeError, match=message) as e:
        cute.compile(launch_bad, make_fake_tensor(cutlass.Float32, (32,), stride=(1,)), which)
    src = open(__file__).read().splitlines()
    assert f"{os.path.basename(__file__)}:" in str(e.value)
    lineno = int(str(e.value).split(f"{os.path.basename(__file__)}:")[1].split(":")[0])
    assert src[lineno - 1].strip() == line
