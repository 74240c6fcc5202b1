"""cute.arch.warp_redux_sync of Float32 values (fmax / fmin, with abs and nan) is one warp-wide reduction instruction
where the target's backend offers one (sm_100a and sm_103a: the Blackwell backend's primitives.redux_sync), and
five butterfly shuffles with a max or min each elsewhere (sm_80, sm_90a, sm_120a). Both give the same result: the
GPU test compares it with numpy on whatever GPU runs it."""
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import _core
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu, sass_opcodes, target

FORMS = [(kind, abs_, nan) for kind in ("fmax", "fmin") for abs_ in (False, True) for nan in (False, True)]


def _kernel(kind, abs_, nan):
    @cute.kernel
    def k(gA: cute.Tensor, gB: cute.Tensor):
        t, _, _ = cute.arch.thread_idx()
        gB[t] = cute.arch.warp_redux_sync(gA[t], kind, abs=abs_, nan=nan)

    @cute.jit
    def h(a, b):
        k(a, b).launch(grid=[1, 1, 1], block=[64, 1, 1])

    return h


def _compile(arch, kind, abs_, nan):
    with target(arch):
        return cute.compile(_kernel(kind, abs_, nan), from_dlpack(np.zeros(64, np.float32)),
                            from_dlpack(np.zeros(64, np.float32)))


@pytest.mark.parametrize("arch", ["sm_100a", "sm_103a"])
@pytest.mark.parametrize("kind,abs_,nan", FORMS)
def test_one_instruction_where_the_backend_offers_it(arch, kind, abs_, nan):
    compiled = _compile(arch, kind, abs_, nan)
    ptx = compiled.info["ptx"]
    quals = kind[1:] + (".abs" if abs_ else "") + (".NaN" if nan else "")
    assert re.findall(r"redux\.sync\.[\w.]+\.f32", ptx) == [f"redux.sync.{quals}.f32"], ptx
    assert "shfl.sync" not in ptx, ptx
    if _core.sass_tool_available():
        ops = sass_opcodes(compiled.cubin)
        assert any(o.startswith("CREDUX") and ".F32" in o for o in ops), ops
        assert not any(o.startswith("SHFL") for o in ops), ops


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a", "sm_120a"])
@pytest.mark.parametrize("kind,abs_,nan", [("fmax", True, True), ("fmin", False, False)])
def test_butterfly_shuffles_elsewhere(arch, kind, abs_, nan):
    ptx = _compile(arch, kind, abs_, nan).info["ptx"]
    assert not re.search(r"redux\.sync[\w.]*\.f32", ptx), ptx
    assert len(re.findall(r"shfl\.sync\.bfly\.b32", ptx)) == 5, ptx
    op = kind[1:] + (".NaN" if nan else "") + ".f32"
    assert len(re.findall(rf"\b{re.escape(op)}\b", ptx)) >= 5, ptx


def test_other_float_types_keep_the_shuffles_on_sm_100a():
    # the instruction reduces 32-bit floats only: a Float16 reduction is shuffles there too
    @cute.kernel
    def k(gA: cute.Tensor, gB: cute.Tensor):
        t, _, _ = cute.arch.thread_idx()
        gB[t] = cutlass.Float32(cute.arch.warp_redux_sync(cutlass.Float16(gA[t]), "fmax"))

    @cute.jit
    def h(a, b):
        k(a, b).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_100a"):
        ptx = cute.compile(h, from_dlpack(np.zeros(32, np.float32)), from_dlpack(np.zeros(32, np.float32))).info["ptx"]
    assert not re.search(r"redux\.sync[\w.]*\.f32", ptx) and len(re.findall(r"shfl\.sync\.bfly", ptx)) == 5, ptx


@requires_gpu
@pytest.mark.parametrize("kind,abs_,nan", FORMS)
def test_results_on_the_gpu(kind, abs_, nan):
    import torch

    x = torch.randn(64)
    x[3] = -0.0
    x[40] = -7.5            # the largest magnitude of the second warp, negative
    x[45] = float("nan")    # the second warp holds a NaN: it wins with nan, is ignored without
    out = torch.zeros(64)
    xd, outd = x.cuda(), out.cuda()
    _kernel(kind, abs_, nan)(from_dlpack(xd), from_dlpack(outd))
    torch.cuda.synchronize()
    got = outd.cpu().numpy().reshape(2, 32)
    v = x.numpy().reshape(2, 32)
    v = np.abs(v) if abs_ else v
    for w in range(2):
        lanes = v[w]
        if nan and np.isnan(lanes).any():
            want = np.float32("nan")
        else:
            want = (np.nanmax if kind == "fmax" else np.nanmin)(lanes)
        np.testing.assert_array_equal(got[w], np.full(32, want, np.float32), err_msg=f"warp {w}")
