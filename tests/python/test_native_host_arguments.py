"""Host arguments (parameters a producer computes on the host at each call, such as a TMA descriptor) on the
native fast path (_core.FastCall, native_call._host_arguments), without a GPU.

A function whose kernels take host arguments (CuTe DSL's Hopper attention takes four tensor maps) used to leave
every call to the generated Python fast path, which asked each host argument's memo in Python at each call: many
microseconds a call, where the native call takes a fraction of one. Properties checked here, on the stand-in
driver of host_stand_in.py (launches recorded with the path that made them):
- after the first call, calls take the native path, and each launch's parameter bytes are what the general path
  (prepare) packs for the same arguments, host arguments included;
- the bytes follow what they are computed from: the tensor's address and dynamic extents and strides, and a
  runtime attribute computed from another argument's extent (a change of that extent alone changes them);
- the producer is asked once per new key, not at every call;
- a producer that fails leaves the call to the Python path, which raises its error.
"""
import struct

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import ext
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import target
from host_stand_in import stand_in  # noqa: F401 (a fixture)

NAME = "test.native_host.describe"
SIZE = 64
produced = []  # the (address, extent 0) of each producer call


def describe(t, tag, extent=0, other=0):
    """Its tensor's address, extents and strides, its attributes: what the call's bytes must say."""
    if int(t.shape[0]) == 7:
        raise ValueError("the test's producer refuses an extent of 7")
    produced.append((int(t.data_ptr), int(t.shape[0])))
    return struct.pack("<8q", int(t.data_ptr), *(int(x) for x in t.shape), *(int(x) for x in t.stride),
                       int(extent), int(other), int(tag))


ext.register_host_argument(NAME, describe, size=SIZE, align=64)


@cute.kernel
def takes_two(d0, d1, x: cute.Tensor):
    x[0, 0] = 1.0


@cute.jit
def hosted(x: cute.Tensor, y: cute.Tensor):
    # y's descriptor takes an attribute computed from x's extent: its bytes depend on another argument
    takes_two(ext.host_argument(NAME, x, tag=1, extent=x.shape[0]),
              ext.host_argument(NAME, y, tag=2, other=x.shape[1] * 2), x).launch(grid=(1, 1, 1), block=(32, 1, 1))


def views(m, n, k):
    return (from_dlpack(np.zeros((m, n), np.float32)).mark_layout_dynamic(),
            from_dlpack(np.zeros((k, 4), np.float32)).mark_layout_dynamic())


def descriptors(params):
    """The two host arguments' fields, read from the end of the parameter bytes (they come last)."""
    return [struct.unpack_from("<8q", params, len(params) - 2 * SIZE + i * SIZE) for i in range(2)]


def expected(x, y):
    return [(x.data_ptr, *x.shape, *x.stride, x.shape[0], 0, 1), (y.data_ptr, *y.shape, *y.stride, 0, x.shape[1] * 2, 2)]


def test_host_arguments_take_the_native_path_with_each_calls_bytes(stand_in):
    x, y = views(8, 16, 5)
    with target("sm_80"):
        c = stand_in(cute.compile(hosted, x, y))
    assert len(c.host_arguments) == 2
    calls = [views(8, 16, 5), views(8, 16, 5), views(24, 16, 5), views(24, 48, 5), views(24, 48, 9)]
    paths = []
    for x, y in [calls[0]] + calls + calls:  # the first call the general way, then each again: from the memo
        stand_in.launched.clear()
        c(x, y)
        (_, _, params, path), = stand_in.launched
        paths.append(path)
        assert descriptors(params) == expected(x, y)
        assert params == c.prepare(x, y)[0][6]
    assert c._native is not None, "a function with host arguments has no native fast path"
    assert paths == ["python"] + ["native"] * (2 * len(calls))


def test_the_producer_is_asked_once_per_key(stand_in):
    x, y = views(8, 16, 5)
    with target("sm_80"):
        c = stand_in(cute.compile(hosted, x, y))
    c(x, y)
    c(x, y)  # the native path built: its first call asks the producer for its own memo
    for h in c.host_arguments.values():
        h.memo.clear()  # what the native path keeps is its own
    produced.clear()
    for _ in range(10):
        c(x, y)
    assert produced == []
    x2 = from_dlpack(np.zeros((8, 16), np.float32)).mark_layout_dynamic()
    for _ in range(3):
        c(x2, y)
    assert produced == [(x2.data_ptr, 8)]  # a new address: x's descriptor once; y's key (x's extent 1) is the same
    assert all(p == "native" for *_, p in stand_in.launched[1:])


def test_a_failing_producer_leaves_the_call_to_python_which_raises_it(stand_in):
    x, y = views(8, 16, 5)
    with target("sm_80"):
        c = stand_in(cute.compile(hosted, x, y))
    c(x, y)
    c(x, y)
    assert c._native is not None
    before = c._native.stats
    with pytest.raises(ValueError, match="refuses an extent of 7"):
        c(*views(7, 16, 5))
    assert c._native.stats[1] == before[1] + 1  # left to the Python call
    stand_in.launched.clear()
    c(x, y)
    assert [p for *_, p in stand_in.launched] == ["native"]
