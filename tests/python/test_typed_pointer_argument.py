"""A JitArgument whose value is declared as a typed pointer (`cute.PtrType.get(dtype.mlir_type, memspace, align)`
of the `cute` dialect module, as libraries write their own make_ptr): the function body sees a pointer of that
element (also one of several that share an IR type: fp8 and Uint8 are all i8), of global memory and of that
alignment; a kernel receives the address each call's object gives; a compilation is selected by the element and
alignment; a pointer type of another memory is refused at the call."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base.errors import DSLValueError
from warpweave._mlir.dialects import cute as cute_ir

from dsl_helpers import target


class TypedPtr:
    """A raw address declared as a pointer of dtype (the body sees values[0] as it is)."""

    def __init__(self, address, dtype, align=16, mem_space=cute_ir.AddressSpace.generic):
        self.address, self.dtype, self.align, self.mem_space = address, dtype, align, mem_space
        self._cell = ctypes.c_uint64(address)

    def __get_mlir_types__(self):
        return [cute_ir.PtrType.get(self.dtype.mlir_type, self.mem_space, self.align)]

    def __c_pointers__(self):
        return [ctypes.addressof(self._cell)]

    def __new_from_mlir_values__(self, values):
        return values[0]


SEEN = {}


@cute.kernel
def zero(t: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    t[tidx] = t.element_type(0)


@cute.jit
def fill(p: TypedPtr, n: cutlass.Constexpr):
    SEEN.update(dtype=p.dtype, memspace=p.memspace, align=p.alignment)
    zero(cute.make_tensor(p, cute.make_layout(n))).launch(grid=[1, 1, 1], block=[n, 1, 1])


@pytest.mark.parametrize("dtype", [cutlass.Float8E4M3FN, cutlass.Float8E5M2, cutlass.Uint8, cutlass.Float32])
def test_the_body_sees_a_pointer_of_the_declared_element(dtype):
    a = np.zeros(64, np.float32)
    with target("sm_90a"):
        cute.compile(fill, TypedPtr(a.ctypes.data, dtype), 32)
    assert SEEN == {"dtype": dtype, "memspace": "gmem", "align": 16}


def test_a_kernel_takes_the_address_each_calls_object_gives():
    a, b = np.zeros(64, np.float32), np.zeros(64, np.float32)
    with target("sm_80"):
        c = cute.compile(fill, TypedPtr(a.ctypes.data, cutlass.Float32), 32)
    (param,) = c.launches[0].params
    for arr in (a, b):
        assert c._read_call((TypedPtr(arr.ctypes.data, cutlass.Float32), 32), {})[0][1][param.source] == \
            arr.ctypes.data


def test_a_compilation_is_selected_by_element_and_alignment_not_address():
    from warpweave._dsl.call.arg_plan import spec_key

    a, b = np.zeros(8, np.float32), np.zeros(8, np.float32)
    sig = fill.signature
    key = spec_key(sig, (TypedPtr(a.ctypes.data, cutlass.Float8E4M3FN), 8), {})
    assert key == spec_key(sig, (TypedPtr(b.ctypes.data, cutlass.Float8E4M3FN), 8), {})
    # the same IR type (i8), another element type: another kernel
    assert key != spec_key(sig, (TypedPtr(a.ctypes.data, cutlass.Float8E5M2), 8), {})
    assert key != spec_key(sig, (TypedPtr(a.ctypes.data, cutlass.Float8E4M3FN, align=4), 8), {})


def test_a_pointer_type_of_shared_memory_is_refused():
    a = np.zeros(8, np.float32)
    with target("sm_80"), pytest.raises(DSLValueError, match="global memory"):
        cute.compile(fill, TypedPtr(a.ctypes.data, cutlass.Float32, mem_space=cute_ir.AddressSpace.smem), 8)


def test_an_mlir_type_is_its_ir_type_and_remembers_its_numeric_type():
    from warpweave._mlir import ir

    t = cutlass.Float8E4M3FN.mlir_type
    assert t == ir.Type.parse("i8") == cutlass.Uint8.mlir_type and hash(t) == hash(ir.Type.parse("i8"))
    assert cute_ir.PtrType.get(t, cute_ir.AddressSpace.gmem, 1).dtype is cutlass.Float8E4M3FN
    # a plain IR type names the numeric type of that spelling
    assert cute_ir.PtrType.get(ir.Type.parse("f32"), cute_ir.AddressSpace.gmem, 4).dtype is cutlass.Float32
    assert cute_ir.AddressSpace.gmem.name == "gmem" and cute_ir.AddressSpace.generic.value == 0
