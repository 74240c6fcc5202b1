"""The compiled call's fast path for torch tensors passed directly (arg_tensor.torch_key): it keeps the
answer of the specialisation check per key, so the key must determine the specialisation of the tensor's dynamic
view (what the general path checks): equal keys, equal specialisations. Checked on stand-ins of torch tensors,
which is all the view reads, over random addresses, shapes and strides (unit, zero, odd, powers of two)."""
import random

from warpweave._dsl.values.runtime import runtime_view
from warpweave._dsl.call.arg_tensor import torch_key as _torch_key


class Tensor:
    """Stands in for a torch.Tensor: the attributes from_dlpack reads."""

    def __init__(self, dtype, ptr, shape, strides):
        self.dtype, self._ptr, self.shape, self._strides = dtype, ptr, tuple(shape), tuple(strides)
        self.is_cuda = True

    def data_ptr(self):
        return self._ptr

    def stride(self):
        return self._strides


Tensor.__module__ = "torch"


def test_equal_keys_mean_equal_view_specialisations():
    rng = random.Random(7)
    seen = {}
    for _ in range(4000):
        dtype = rng.choice(["torch.float16", "torch.float32", "torch.int8"])
        rank = rng.randint(1, 4)
        shape = [rng.randint(1, 300) for _ in range(rank)]
        strides = [rng.choice([0, 1, 1, 2, 3, 8, 48, 64, 96, 1024, 4097, rng.randint(1, 1 << 20)])
                   for _ in range(rank)]
        ptr = (1 << 40) + rng.choice([0, 2, 4, 8, 16, 6, 32, 48]) + 256 * rng.randint(0, 99)
        t = Tensor(dtype, ptr, shape, strides)
        key = (dtype, _torch_key(dtype, t.data_ptr(), t.stride()))
        spec = runtime_view(t).spec()
        assert seen.setdefault(key, spec) == spec, (key, spec, seen[key])
    assert len(seen) > 100  # the sample covered many keys


def test_keys_tell_apart_what_the_specialisation_does():
    f16 = "torch.float16"
    assert _torch_key(f16, 0, (64, 1)) != _torch_key(f16, 2, (64, 1))     # address alignment
    assert _torch_key(f16, 0, (64, 1)) != _torch_key(f16, 0, (1, 64))     # which stride is the unit one
    assert _torch_key(f16, 0, (3, 1)) != _torch_key(f16, 0, (1, 1))       # an odd stride is not a unit one
    assert _torch_key(f16, 0, (64, 1)) == _torch_key(f16, 16, (192, 1))   # same alignment, same divisor


def test_fast_call_launches_torch_tensors_as_the_general_path_does(monkeypatch):
    # Without a GPU: the compiled call's generated fast path runs against a recording launcher, on stand-ins of
    # torch tensors, and must launch what the general path (prepare) computes for the same tensors.
    import os
    import sys

    import warpweave.cute as cute
    from warpweave import _core
    from warpweave._dsl.call import compiled_function as cf
    from dsl_helpers import target

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "frontend_python", "examples"))
    import elementwise_add as ew

    f16 = "torch.float16"
    a = Tensor(f16, 1 << 40, (64, 96), (96, 1))
    with target("sm_80"):
        compiled = cute.compile(ew.elementwise_add, a, a, a)
    launched = []

    class Launcher:
        def __init__(self, fn, block, cluster, smem, offsets):
            pass

        def __call__(self, gx, gy, gz, stream, params):
            launched.append(((gx, gy, gz), params))

    class Function:
        def set_max_dynamic_shared_memory(self, n):
            pass

    monkeypatch.setattr(_core, "Launcher", Launcher)
    monkeypatch.setattr(compiled, "_load", lambda: None)
    compiled._functions = {l.kernel: Function() for l in compiled.launches}
    fast = compiled._build_fast_call()
    assert callable(fast), compiled._fast_source
    rng = random.Random(3)
    for _ in range(20):
        m, n = rng.randint(1, 300), 16 * rng.randint(1, 40)   # rows 16-element multiples, as compiled
        ts = [Tensor(f16, (1 << 40) + 4096 * k, (m, n), (n + 16 * rng.randint(0, 3), 1)) for k in range(3)]
        launched.clear()
        fast(*ts)
        want = compiled.prepare(*[runtime_view(t) for t in ts])
        assert [g for g, _ in launched] == [tuple(w[1]) for w in want]
        assert [p for _, p in launched] == [w[6] for w in want]     # the packed parameters, byte for byte
    # A tensor whose row stride breaks the divisibility the kernel relies on is refused by the fast path too.
    bad = Tensor(f16, 1 << 40, (16, 97), (97, 1))
    import pytest

    with pytest.raises(ValueError, match="does not match the compiled specialisation"):
        fast(bad, bad, bad)
