"""What makes tracing cheaper must not change what it reports: the remembered user lines are those of the frame
asking, also when a code object's id is reused, library frames passed over by their module's name give the same
line as walking every frame (also frames of no module, and after a folder is registered as a library's), the cyclic
collector that tracing pauses runs again afterwards, whether the trace succeeded or not, and the DSL calls that find
the user's line once for all their operations (one_user_line) give each operation the line it would find itself."""
from __future__ import annotations

import gc
import os

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base import errors


def test_user_lines_are_those_of_the_calling_frame(tmp_path):
    path = str(tmp_path / "user_code.py")
    ns = {"ul": errors.user_location}
    exec(compile("def f(k):\n    a = ul(1)\n    b = ul(1)\n    return a, b\n", path, "exec"), ns)
    for _ in range(3):   # first from the line table, then remembered
        a, b = ns["f"](0)
        assert a == (path, 2) and b == (path, 3)


def test_a_reused_code_id_does_not_give_the_earlier_codes_line(tmp_path):
    path = str(tmp_path / "generated.py")
    for k in range(200):   # each function and its code go after their call; a later one may get the same id
        ns = {"ul": errors.user_location}
        exec(compile("\n" * k + "def f():\n    return ul(1)\n", path, "exec"), ns)
        assert ns["f"]() == (path, k + 2)
        del ns


def _reference_location(skip):
    """The definition: the innermost frame whose file is the user's."""
    import sys
    f = sys._getframe(skip + 1)
    while f is not None and not errors.is_user_file(f.f_code.co_filename):
        f = f.f_back
    return None if f is None else (f.f_code.co_filename, f.f_lineno)


def _library_chain(tmp_path, module_name):
    """A recursive function of a module whose file lies in the DSL's package (its frames are the DSL's), and one
    exec'd in globals without a module name (its frames are named by no module)."""
    import sys
    import types
    lib_file = os.path.join(os.path.dirname(errors.__file__), "_test_library_frames.py")
    mod = types.ModuleType(module_name)
    mod.__file__ = lib_file
    sys.modules[module_name] = mod
    src = ("def down(n, anonymous, probe):\n"
           "    if n == 0:\n"
           "        return probe()\n"
           "    if n == 1 and anonymous is not None:\n"
           "        return anonymous(probe)\n"
           "    return down(n - 1, anonymous, probe)\n")
    exec(compile(src, lib_file, "exec"), mod.__dict__)
    anon: dict = {}
    exec(compile("def anonymous(probe):\n    return probe()\n", lib_file, "exec"), anon)
    return mod.down, anon["anonymous"]


def test_user_line_is_the_innermost_user_frame_past_library_frames(tmp_path):
    import sys
    down, anonymous = _library_chain(tmp_path, "warpweave._test_library_frames")
    path = str(tmp_path / "user_code.py")
    ns = {"down": down, "anonymous": anonymous, "ul": errors.user_location, "ref": _reference_location}
    exec(compile("def f(n, anon):\n    return down(n, anon, lambda: (ul(2), ref(2)))\n", path, "exec"), ns)
    try:
        for n in range(8):
            for anon in (None, anonymous):
                got, want = ns["f"](n, anon)
                assert got == want == (path, 2), (n, anon)
    finally:
        del sys.modules["warpweave._test_library_frames"]


def test_a_folder_registered_as_the_dsls_hides_its_frames_from_then_on(tmp_path):
    import sys
    import types
    outer_path, inner_path = str(tmp_path / "app.py"), str(tmp_path / "helpers" / "lib.py")
    os.makedirs(os.path.dirname(inner_path))
    helpers = types.ModuleType("_test_helpers_lib")
    helpers.__file__ = inner_path
    sys.modules[helpers.__name__] = helpers
    exec(compile("def helper(ul):\n    return ul(1)\n", inner_path, "exec"), helpers.__dict__)
    ns = {"helper": helpers.helper, "ul": errors.user_location}
    exec(compile("def f():\n    return helper(ul)\n", outer_path, "exec"), ns)
    saved = list(errors._LIBRARY_DIRS)
    try:
        assert ns["f"]() == (inner_path, 2)      # a user's helper module: its own line
        errors.register_library_dir(os.path.dirname(inner_path))
        assert ns["f"]() == (outer_path, 2)      # now a library's: the caller's line
    finally:
        errors._LIBRARY_DIRS[:] = saved
        errors.is_user_file.cache_clear()
        errors._LIBRARY_MODULES.clear()
        del sys.modules[helpers.__name__]


@cute.kernel
def _copy_kernel(x: cute.Tensor, y: cute.Tensor):
    t, _, _ = cute.arch.thread_idx()
    y[t] = x[t]


@cute.jit
def _good(x: cute.Tensor, y: cute.Tensor):
    _copy_kernel(x, y).launch(grid=[1, 1, 1], block=[32, 1, 1])


@cute.jit
def _bad(x: cute.Tensor, y: cute.Tensor):
    raise ValueError("a mistake while tracing")


def _fake():
    from warpweave.cute.runtime import make_fake_tensor

    return make_fake_tensor(cutlass.Float32, (32,), stride=(1,), assumed_align=16)


@pytest.mark.parametrize("fn", [_good, _bad])
def test_the_cyclic_collector_runs_again_after_a_trace(fn, monkeypatch):
    monkeypatch.setenv("WARPWEAVE_ARCH", "sm_80")
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")
    assert gc.isenabled()
    if fn is _bad:
        with pytest.raises(cutlass.DSLError, match="a mistake while tracing"):
            cute.compile(fn, _fake(), _fake())
    else:
        cute.compile(fn, _fake(), _fake())
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled(monkeypatch):
    monkeypatch.setenv("WARPWEAVE_ARCH", "sm_80")
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")
    gc.disable()
    try:
        cute.compile(_good, _fake(), _fake())
        assert not gc.isenabled()
    finally:
        gc.enable()


# --- one_user_line: an operation's line found once per DSL call --------------------------------------------------

def _stage(src, dst):
    # a user helper: the operations of its copy take this line, not the kernel's line that calls it
    cute.copy(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32), src, dst)


@cute.kernel
def _pinned_kernel(x: cute.Tensor, y: cute.Tensor):
    from warpweave.cute.nvgpu import warp
    tidx, _, _ = cute.arch.thread_idx()
    tm = cute.make_tiled_mma(warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16)),
                             cute.make_layout((1, 1, 1)))
    thr = tm.get_slice(tidx)
    a = thr.make_fragment_A(thr.partition_A(cute.make_identity_tensor((16, 16))).layout)
    b = thr.make_fragment_B(thr.partition_B(cute.make_identity_tensor((8, 16))).layout)
    c = tm.make_fragment_C(thr.partition_C(cute.make_identity_tensor((16, 8))).layout)
    a.fill(1.0)
    b.fill(1.0)
    c.fill(0.0)
    cute.gemm(tm, c, a, b, c)
    frag = cute.make_rmem_tensor(cute.make_layout(4), cutlass.Float32)
    frag.store(x[None, tidx].load())
    _stage(frag, y[None, tidx])
    frag[0] = frag[1] + c[0]
    _stage(frag, y[None, tidx])


@cute.jit
def _pinned_host(x: cute.Tensor, y: cute.Tensor):
    _pinned_kernel(x, y).launch(grid=[1, 1, 1], block=[32, 1, 1])


def test_pinned_dsl_calls_give_each_operation_the_line_it_would_find(monkeypatch):
    """cute.gemm, cute.copy and a tensor's whole loads, stores and fills find the user's line once (one_user_line):
    the module, locations included, is the one traced with every operation finding its own line, where the copy's
    operations have the line inside the user's helper and the statement after a pinned call its own."""
    import numpy as np
    from dsl_helpers import line_in, target
    from warpweave._dsl.atoms import element_copy, mma
    from warpweave._dsl.values.tensor_type import Tensor
    from warpweave.cute.runtime import from_dlpack

    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")
    x, y = (from_dlpack(np.zeros((4, 32), np.float32)) for _ in range(2))
    with target("sm_80"):
        pinned = cute.compile(_pinned_host, x, y).ir
        # the same functions with the line found by each operation
        for owner, name in ((element_copy, "_copy_universal"), (mma, "gemm"), (Tensor, "load"), (Tensor, "store")):
            fn = getattr(owner, name)
            while hasattr(fn, "__wrapped__"):
                fn = fn.__wrapped__
            monkeypatch.setattr(owner, name, fn)
        monkeypatch.setattr(cute, "gemm", mma.gemm)
        each = cute.compile(_pinned_host, x, y).ir
    assert pinned == each
    this = os.path.abspath(__file__)
    for text in ("cute.copy(cute.make_copy_atom(", "cute.gemm(tm, c, a, b, c)", "frag[0] = frag[1] + c[0]",
                 "a.fill(1.0)", "frag.store(x[None, tidx].load())"):
        assert f'loc("{this}":{line_in(this, text)}:' in pinned, text
