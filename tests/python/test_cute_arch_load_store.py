"""cute.arch.load / cute.arch.store: plain, or ordered (relaxed/acquire loads, relaxed/release stores) at a scope."""
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base.errors import DSLError
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu, target

ORDERED = [(None, None, r"ld\.global\.b32", r"st\.global\.b32"),
           ("relaxed", "sys", r"ld\.relaxed\.sys\.global\.b32", r"st\.relaxed\.sys\.global\.b32"),
           ("relaxed", "gpu", r"ld\.relaxed\.gpu\.global\.b32", r"st\.relaxed\.gpu\.global\.b32"),
           ("acquire", "cta", r"ld\.acquire\.cta\.global\.b32", None),
           ("release", "gpu", None, r"st\.release\.gpu\.global\.b32")]


def _copy_kernel(load_sem, load_scope, store_sem, store_scope, dtype=cutlass.Int32):
    @cute.kernel
    def k(x: cute.Tensor, y: cute.Tensor):
        t, _, _ = cute.arch.thread_idx()
        v = cute.arch.load(x.iterator + t, dtype, sem=load_sem, scope=load_scope)
        cute.arch.store(y.iterator + t, v + 1, sem=store_sem, scope=store_scope)

    @cute.jit
    def h(x: cute.Tensor, y: cute.Tensor):
        k(x, y).launch(grid=[1, 1, 1], block=[32, 1, 1])
    return h


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("sem,scope,ld,st", ORDERED)
def test_each_ordering_is_one_access_of_that_form(arch, sem, scope, ld, st):
    load_sem = sem if sem in (None, "relaxed", "acquire") else None
    store_sem = sem if sem in (None, "relaxed", "release") else None
    f = _copy_kernel(load_sem, scope if load_sem else None, store_sem, scope if store_sem else None)
    with target(arch):
        ptx = cute.compile(f, from_dlpack(np.zeros(32, np.int32)), from_dlpack(np.zeros(32, np.int32))).info["ptx"]
    accesses = re.findall(r"\b(?:ld|st)\.(?!param)[\w.]+", ptx)
    assert len(accesses) == 2, accesses   # one load, one store: no extra fences or accesses
    assert re.fullmatch(ld or r"ld\.global\.b32", accesses[0]) and re.fullmatch(st or r"st\.global\.b32", accesses[1])
    assert "fence" not in ptx and "membar" not in ptx


def test_refusals_name_the_users_line():
    cases = [(dict(load_sem="release", load_scope="gpu", store_sem=None, store_scope=None), "sem='release'"),
             (dict(load_sem=None, load_scope=None, store_sem="acquire", store_scope="gpu"), "sem='acquire'"),
             (dict(load_sem="relaxed", load_scope="device", store_sem=None, store_scope=None), "scope='device'"),
             (dict(load_sem="relaxed", load_scope="cluster", store_sem=None, store_scope=None), "clusters")]
    for kw, msg in cases:
        with target("sm_80"), pytest.raises(DSLError, match=re.escape(msg)) as e:
            cute.compile(_copy_kernel(**kw), from_dlpack(np.zeros(32, np.int32)), from_dlpack(np.zeros(32, np.int32)))
        assert "test_cute_arch_load_store.py" in str(e.value)


@requires_gpu
@pytest.mark.parametrize("sem,scope,ld,st", ORDERED)
def test_values_on_the_gpu(sem, scope, ld, st):
    import torch

    load_sem = sem if sem in (None, "relaxed", "acquire") else None
    store_sem = sem if sem in (None, "relaxed", "release") else None
    x = torch.randint(-1000, 1000, (32,), dtype=torch.int32, device="cuda")
    y = torch.zeros(32, dtype=torch.int32, device="cuda")
    _copy_kernel(load_sem, scope if load_sem else None, store_sem, scope if store_sem else None)(
        from_dlpack(x), from_dlpack(y))
    torch.cuda.synchronize()
    assert torch.equal(y, x + 1)
