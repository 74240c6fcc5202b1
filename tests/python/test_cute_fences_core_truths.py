"""cute.arch.fence_acq_rel_{cta,cluster,gpu,sys}, the cute.core module, cute.runtime.Pointer, cute.all_ / any_."""
import itertools
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base.errors import DSLError
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import target


def _fenced(scopes):
    @cute.kernel
    def k(x: cute.Tensor):
        for i, s in enumerate(scopes):
            x[i] = 1.0
            getattr(cute.arch, f"fence_acq_rel_{s}")()

    @cute.jit
    def h(x: cute.Tensor):
        k(x).launch(grid=[1, 1, 1], block=[1, 1, 1])
    return h


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_fences_are_acq_rel_at_their_scope_in_program_order(arch):
    scopes = ["cta", "gpu", "sys", "cta"] + (["cluster"] if arch == "sm_90a" else [])
    with target(arch):
        ptx = cute.compile(_fenced(scopes), from_dlpack(np.zeros(8, np.float32))).info["ptx"]
    body = ptx[ptx.index("{"):]
    fences = re.findall(r"fence\.acq_rel\.(\w+)|st\.global", body)
    # Each store is followed by its fence, in the program's order (the compiler moves no store across one).
    assert [f for f in fences if f] == scopes
    assert [f == "" for f in fences] == [x for _ in scopes for x in (True, False)]


def test_cluster_fence_needs_clusters():
    with target("sm_80"), pytest.raises(DSLError, match="clusters") as e:
        cute.compile(_fenced(["cluster"]), from_dlpack(np.zeros(8, np.float32)))
    assert "test_cute_fences_core_truths.py" in str(e.value)


def test_core_module_holds_cutes_own_objects():
    import warpweave.cute.core as core

    for name in core.__all__:
        assert getattr(core, name) is getattr(cute, name)
    from warpweave.cute.core import AddressSpace, make_layout, make_ptr, slice_  # noqa: F401 - CuTe DSL's imports
    assert make_ptr is cute.make_ptr and AddressSpace is cute.AddressSpace


def test_runtime_pointer_is_what_make_ptr_returns():
    p = cute.runtime.make_ptr(cutlass.Float16, 0x1000, assumed_align=16)
    assert isinstance(p, cute.runtime.Pointer)


def test_all_and_any_are_the_logic_of_the_values():
    for bits in itertools.product((False, True), repeat=3):
        t = cute.TensorSSA([cutlass.Boolean(b) for b in bits], (3,), cutlass.Boolean)
        assert bool(cute.all_(t)) == all(bits) and bool(cute.any_(t)) == any(bits)
        f = cute.TensorSSA([cutlass.Float32(float(b) * 0.5) for b in bits], (3,), cutlass.Float32)
        assert bool(cute.all_(f)) == all(bits) and bool(cute.any_(f)) == any(bits)  # numbers: nonzero
    assert bool(cute.all_(cutlass.Int32(3))) and not cute.any_(0).value
    with pytest.raises(DSLError, match="TensorSSA or a number"):
        cute.all_(cute.TensorSSA(["x"], (1,), cutlass.Float32))


@cute.jit
def host_truths(out: cute.Tensor, a: cute.Tensor):
    v = a.load()
    out[0] = cute.all_(v > 0.0)
    out[1] = cute.any_(v > 0.0)


def test_all_and_any_on_the_host_side_read_each_call(monkeypatch):
    monkeypatch.setenv("WARPWEAVE_ARCH", "sm_80")
    r = np.random.default_rng(0)
    for _ in range(6):
        a = r.standard_normal(5).astype(np.float32) + r.choice([-3, 0, 3])
        out = np.zeros(2, np.bool_)
        host_truths(from_dlpack(out), from_dlpack(a))
        assert out.tolist() == [bool((a > 0).all()), bool((a > 0).any())]


def test_all_in_a_kernel_is_one_and_of_the_comparisons():
    @cute.kernel
    def k(x: cute.Tensor, y: cute.Tensor):
        v = x.load()
        y[0] = cute.all_(v > 0.0)

    @cute.jit
    def h(x: cute.Tensor, y: cute.Tensor):
        k(x, y).launch(grid=[1, 1, 1], block=[1, 1, 1])

    with target("sm_80"):
        ptx = cute.compile(h, from_dlpack(np.zeros(4, np.float32)), from_dlpack(np.zeros(1, np.bool_))).info["ptx"]
    assert len(re.findall(r"setp\.\w+\.f32", ptx)) == 4
