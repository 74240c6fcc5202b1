"""cutlass.torch.as_tensor: a torch tensor over memory given by its address, sharing it (not a copy)."""
import numpy as np
import pytest

import warpweave as cutlass
from warpweave._dsl.base.errors import DSLError

from dsl_helpers import requires_gpu

torch = pytest.importorskip("torch", reason="torch is not installed in this environment")
import warpweave.torch as cutlass_torch  # noqa: E402


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 5), (7,)])
def test_views_host_memory_row_major(shape):
    a = np.random.default_rng(0).standard_normal(int(np.prod(shape))).astype(np.float32)
    t = cutlass_torch.as_tensor(a.ctypes.data, shape, torch.float32)
    assert tuple(t.shape) == shape and t.is_contiguous() and t.data_ptr() == a.ctypes.data
    np.testing.assert_array_equal(t.numpy(), a.reshape(shape))
    t.mul_(2)                        # the same memory: the array sees the write
    np.testing.assert_array_equal(a.reshape(shape), t.numpy())


def test_warpweave_types_and_objects_with_data_ptr():
    b = torch.zeros(6, dtype=torch.bfloat16)
    u = cutlass_torch.as_tensor(b, (2, 3), cutlass.BFloat16)
    u.fill_(1.5)
    assert u.dtype == torch.bfloat16 and torch.equal(b, torch.full((6,), 1.5, dtype=torch.bfloat16))


def test_bad_pointers_are_refused():
    with pytest.raises(DSLError, match="positive address"):
        cutlass_torch.as_tensor(0, (4,), torch.float32)
    with pytest.raises(DSLError, match="negative extent"):
        cutlass_torch.as_tensor(torch.zeros(4).data_ptr(), (-1,), torch.float32)


@requires_gpu
def test_views_device_memory():
    x = torch.randn(4, 6, device="cuda")
    t = cutlass_torch.as_tensor(x.data_ptr(), (6, 4), torch.float32)
    assert t.is_cuda and t.data_ptr() == x.data_ptr()
    assert torch.equal(t, x.reshape(6, 4))
    t.zero_()
    assert torch.count_nonzero(x) == 0


@requires_gpu
def test_pinned_host_memory_stays_on_the_host():
    x = torch.randn(24).pin_memory()  # the driver knows it, as host memory: the view is a CPU tensor
    t = cutlass_torch.as_tensor(x.data_ptr(), (4, 6), torch.float32)
    assert not t.is_cuda and t.data_ptr() == x.data_ptr()
    assert torch.equal(t, x.reshape(4, 6))
