"""A kernel's device workspace (device/workspace.py, call/workspace.py): operations ask for bytes per CTA while
the kernel is traced; the compiled function then takes the workspace as its last argument, and
get_aux_func(QueryDeviceWorkspaceFunc) answers how much a call needs. Without a GPU: the launches a call would
make are read from prepare()."""
from __future__ import annotations

import struct

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import ext
from warpweave._dsl.base.errors import DSLTypeError, DSLValueError
from warpweave._dsl.values.runtime import RuntimeTensor
from warpweave.cute.experimental.host_runtime import AllocationRequirement, QueryDeviceWorkspaceFunc

from dsl_helpers import target

PER_CTA = (100, 256)   # two requests: the first is rounded up to 128 bytes (64-byte aligned)


@cute.kernel
def stamp(x: cute.Tensor):
    bx, _, _ = cute.arch.block_idx()
    first = ext.device_workspace(PER_CTA[0])
    second = ext.device_workspace(PER_CTA[1])
    a = cute.make_tensor(cute.recast_ptr(first, dtype=cutlass.Int32), cute.make_layout(1))
    b = cute.make_tensor(cute.recast_ptr(second, dtype=cutlass.Int32), cute.make_layout(1))
    a[0] = bx
    b[0] = bx + 1
    x[bx] = a[0] + b[0]


@cute.kernel
def plain(x: cute.Tensor):
    x[cute.arch.block_idx()[0]] = 0.0  # no workspace


@cute.jit
def both(x: cute.Tensor, n: cutlass.Int32):
    stamp(x).launch(grid=(n, 2, 1), block=(32, 1, 1))
    plain(x).launch(grid=(n, 1, 1), block=(32, 1, 1))


@cute.jit
def only_plain(x: cute.Tensor):
    plain(x).launch(grid=(4, 1, 1), block=(32, 1, 1))


def vector(ptr=1 << 20, n=1024, dtype=cutlass.Float32):
    return RuntimeTensor(None, ptr, (n,), (1,), dtype, "cuda")


def workspace(nbytes, ptr=1 << 30):
    return RuntimeTensor(None, ptr, (nbytes,), (1,), cutlass.Uint8, "cuda")


@pytest.fixture
def compiled(monkeypatch):
    with target("sm_90a"):
        c = cute.compile(both, vector(), cutlass.Int32(3))
    monkeypatch.setattr(c, "_load", lambda: None)
    c._functions = {l.kernel: None for l in c.launches}
    return c


def test_query_is_bytes_per_cta_times_the_grid_of_the_call():
    with target("sm_90a"):
        c = cute.compile(both, vector(), cutlass.Int32(3))
    per_cta = 128 + 256
    for n in (1, 3, 7):
        req = c.get_aux_func(QueryDeviceWorkspaceFunc)(vector(), cutlass.Int32(n))
        assert req == AllocationRequirement(per_cta * n * 2, 64)
        assert req.size_in_bytes == per_cta * n * 2 and req.alignment == 64
    # of one kernel: the kernel that asked for none needs none
    assert c.get_aux_func(QueryDeviceWorkspaceFunc, kernel=plain)(vector(), cutlass.Int32(5)).size_in_bytes == 0
    assert c.get_aux_func(QueryDeviceWorkspaceFunc, kernel=stamp)(vector(), cutlass.Int32(5)).size_in_bytes == \
        per_cta * 10


def test_a_function_without_workspace_needs_none_and_takes_no_extra_argument():
    with target("sm_90a"):
        c = cute.compile(only_plain, vector())
    assert c.get_aux_func(QueryDeviceWorkspaceFunc)(vector()).size_in_bytes == 0
    with pytest.raises(DSLValueError, match="launches no kernel"):
        c.get_aux_func(QueryDeviceWorkspaceFunc, kernel=stamp)


def test_the_workspace_address_is_the_kernels_last_parameter(compiled):
    need = compiled.get_aux_func(QueryDeviceWorkspaceFunc)(vector(), cutlass.Int32(3)).size_in_bytes
    launches = compiled.prepare(vector(), cutlass.Int32(3), workspace(need, ptr=0x7000_0040))
    stamp_launch, plain_launch = launches
    params, offsets = stamp_launch[6], stamp_launch[7]
    assert struct.unpack_from("<Q", params, offsets[-1])[0] == 0x7000_0040
    assert len(plain_launch[7]) == 1  # the other kernel has only its tensor


def test_a_missing_small_or_misaligned_workspace_is_refused(compiled):
    need = compiled.get_aux_func(QueryDeviceWorkspaceFunc)(vector(), cutlass.Int32(3)).size_in_bytes
    with pytest.raises(DSLValueError, match=f"has {need - 1} bytes, the call needs {need}"):
        compiled.prepare(vector(), cutlass.Int32(3), workspace(need - 1))
    with pytest.raises(DSLValueError, match="64-byte aligned"):
        compiled.prepare(vector(), cutlass.Int32(3), workspace(need, ptr=(1 << 30) + 16))
    with pytest.raises(DSLTypeError, match="global-memory buffer"):
        compiled.prepare(vector(), cutlass.Int32(3), 12)
    # a larger one serves
    assert len(compiled.prepare(vector(), cutlass.Int32(3), workspace(need + 4096))) == 2


def test_each_cta_addresses_its_own_part_of_each_request():
    with target("sm_90a"):
        c = cute.compile(both, vector(), cutlass.Int32(3))
    ir = c.ir
    # the parts are indexed by the CTA and the grid (read from the special registers)
    assert "nvvm.read.ptx.sreg.nctaid" in ir and "nvvm.read.ptx.sreg.ctaid" in ir


def test_outside_a_kernel_a_request_is_an_error():
    with pytest.raises(DSLTypeError, match="inside a kernel"):
        ext.device_workspace(64)


@pytest.mark.parametrize("bad", [0, -8, 1.5])
def test_a_request_is_a_positive_number_of_bytes(bad):
    @cute.kernel
    def k(x: cute.Tensor):
        ext.device_workspace(bad)

    @cute.jit
    def f(x: cute.Tensor):
        k(x).launch(grid=(1, 1, 1), block=(32, 1, 1))

    with target("sm_90a"), pytest.raises(DSLValueError, match="positive number of bytes"):
        cute.compile(f, vector())


def test_a_call_reads_each_argument_once_and_sizes_the_workspace_from_that_read(compiled, monkeypatch):
    reads = []
    for plan in compiled.plans:
        monkeypatch.setattr(plan, "read", lambda v, read, f=plan.read, n=plan.name: (reads.append(n), f(v, read))[1])
    need = compiled.get_aux_func(QueryDeviceWorkspaceFunc)(vector(), cutlass.Int32(5)).size_in_bytes
    reads.clear()
    assert len(compiled.prepare(vector(), cutlass.Int32(5), workspace(need))) == 2
    assert sorted(reads) == sorted(p.name for p in compiled.plans)
    # the size comes from that read: the grid of these arguments, not of another call's
    reads.clear()
    with pytest.raises(DSLValueError, match=f"has {need - 64} bytes, the call needs {need}"):
        compiled.prepare(vector(), cutlass.Int32(5), workspace(need - 64))
    assert sorted(reads) == sorted(p.name for p in compiled.plans)


@cute.jit
def looped(x: cute.Tensor, n: cutlass.Int32):
    for i in range(n):  # a host loop: one launch per trip, the grid of its trip
        stamp(x).launch(grid=(i + 1, 1, 1), block=(32, 1, 1))


def test_in_a_host_loop_the_workspace_serves_the_largest_trip(monkeypatch):
    with target("sm_90a"):
        c = cute.compile(looped, vector(), cutlass.Int32(3))
    monkeypatch.setattr(c, "_load", lambda: None)
    c._functions = {l.kernel: None for l in c.launches}
    per_cta = 128 + 256
    for n in (1, 4):
        need = c.get_aux_func(QueryDeviceWorkspaceFunc)(vector(), cutlass.Int32(n)).size_in_bytes
        assert need == per_cta * n
        launches = c.prepare(vector(), cutlass.Int32(n), workspace(need))
        assert [l[1][0] for l in launches] == list(range(1, n + 1))
        with pytest.raises(DSLValueError, match=f"the call needs {need}"):
            c.prepare(vector(), cutlass.Int32(n), workspace(need - 1))
