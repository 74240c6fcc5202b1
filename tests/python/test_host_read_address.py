"""An address read from tensor elements on the host side of a @cute.jit function (a table of device pointers,
as a pointer-array GEMM passes its batches): cute.make_ptr of it is a placeholder whose tensors give layouts (a
grid computed from one) but never reach a kernel; and a read the call cannot make (device memory, no memory at
all) fails only where its value is used, so that a table read only for its layout costs nothing."""
from __future__ import annotations

import os

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base.errors import DSLError
from warpweave._dsl.host.host_actions import host_side
from warpweave._dsl.values.runtime import RuntimeTensor
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import line_in, target

THIS = os.path.abspath(__file__)


@cute.kernel
def fill(table: cute.Tensor, rows: cutlass.Constexpr):
    bx, _, _ = cute.arch.block_idx()
    p = cute.make_ptr(cutlass.Float32, table[0], cute.AddressSpace.gmem, assumed_align=16)
    t = cute.make_tensor(p, cute.make_layout((rows, 64), stride=(64, 1)))
    t[bx, 0] = 1.0


@cute.jit
def launch_from_table(table: cute.Tensor):
    p = cute.make_ptr(cutlass.Float32, table[0], cute.AddressSpace.gmem, assumed_align=16)
    t = cute.make_tensor(p, cute.make_layout((256, 64), stride=(64, 1)))
    tiles = cute.zipped_divide(t, (32, 64))
    fill(table, 256).launch(grid=(cute.size(tiles, mode=[1]), 1, 1), block=(32, 1, 1))


@cute.kernel
def take(x: cute.Tensor):
    pass


@cute.jit
def pass_placeholder(table: cute.Tensor):
    p = cute.make_ptr(cutlass.Float32, table[0], cute.AddressSpace.gmem, assumed_align=16)  # made-here
    take(cute.make_tensor(p, cute.make_layout(4))).launch(grid=(1, 1, 1), block=(32, 1, 1))  # passed-here


@cute.jit
def use_value(table: cute.Tensor, out: cute.Tensor):
    v = table[0]
    out[0] = v + 1  # used-here


def table(address=1 << 24):
    return RuntimeTensor(None, address, (3,), (1,), cutlass.Int64, "cuda", assumed_align=16)


def test_a_pointer_read_on_the_host_gives_layouts_and_its_read_is_never_made():
    with target("sm_90a"):
        compiled = cute.compile(launch_from_table, table())
    (launch,) = compiled.launches
    assert list(launch.grid) == [8, 1, 1]          # 256 rows in tiles of 32, from the placeholder's tensor
    # the table has no host memory: its read would fail, but nothing uses its value
    assert host_side(compiled, (table(),), {}) is False


def test_a_pointer_read_on_the_host_is_no_kernel_argument():
    with target("sm_90a"), pytest.raises(DSLError, match="cannot be passed to a kernel") as e:
        cute.compile(pass_placeholder, table())
    assert e.value.location == (THIS, line_in(THIS, "# passed-here"))
    assert f"{THIS}:{line_in(THIS, '# made-here')}" in str(e.value)


def test_a_read_the_call_cannot_make_fails_where_its_value_is_used():
    out = from_dlpack(np.zeros(1, np.int64))
    with target("sm_90a"):
        compiled = cute.compile(use_value, table(), out)
    with pytest.raises(DSLError, match="no memory") as e:   # the store uses the read's value
        host_side(compiled, (table(), out), {})
    assert e.value.location == (THIS, line_in(THIS, "# used-here"))
