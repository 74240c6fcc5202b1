"""CuTe DSL's JitArgument protocol: a user object passed to a @cute.jit function that gives its IR types
(__get_mlir_types__), its values' addresses at each call (__c_pointers__) and the object the body sees
(__new_from_mlir_values__). A buffer holding a make_ptr pointer and a static stride order (CuTe DSL's call_from_jit
tutorial): the body sees a cute pointer of the buffer's type, a kernel receives the address each call's object gives,
a compilation is selected by the object's configuration and not by its address, and the host side reads memory
through the pointer at each call."""
from __future__ import annotations

import ctypes
import os
from typing import NamedTuple

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base.errors import DSLTypeError, DSLValueError
from warpweave.cute.runtime import make_ptr

from dsl_helpers import line_in, requires_gpu, target

THIS = os.path.abspath(__file__)


class Buffer:
    """A pointer and the order of its strides (static), delegating the protocol to the pointer."""

    def __init__(self, ptr, order):
        self.ptr = ptr
        self.order = order

    def to_tensor(self, shape):
        return cute.make_tensor(self.ptr, cute.make_ordered_layout(shape, self.order))

    def __c_pointers__(self):
        return self.ptr.__c_pointers__()

    def __get_mlir_types__(self):
        return self.ptr.__get_mlir_types__()

    def __new_from_mlir_values__(self, values):
        return Buffer(self.ptr.__new_from_mlir_values__(values), self.order)


@cute.kernel
def iota(t: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    t[tidx] = cutlass.Float32(tidx)


@cute.jit
def fill(buf: Buffer, n: cutlass.Constexpr):
    t = buf.to_tensor((n,))
    assert buf.ptr.value_type is cutlass.Float32 and t.element_type is cutlass.Float32
    iota(t).launch(grid=[1, 1, 1], block=[n, 1, 1])


def _buffer(a, order=(0,)):
    return Buffer(make_ptr(cutlass.Float32, a.ctypes.data, cute.AddressSpace.gmem, assumed_align=16), order)


def test_a_kernel_takes_the_address_each_calls_object_gives():
    a, b = np.zeros(64, np.float32), np.zeros(64, np.float32)
    with target("sm_80"):
        c = cute.compile(fill, _buffer(a), 32)
    (plan, _) = c.plans
    assert plan.kind == "jit_argument"
    (param,) = c.launches[0].params
    for arr in (a, b):
        ptrs = c._read_call((_buffer(arr),), {})[0][1]
        assert ptrs[param.source] == arr.ctypes.data


def test_a_compilation_is_selected_by_the_configuration_not_the_address():
    from warpweave._dsl.call.arg_plan import spec_key

    a, b = np.zeros(8, np.float32), np.zeros(8, np.float32)
    sig = fill.signature
    assert spec_key(sig, (_buffer(a), 8), {}) == spec_key(sig, (_buffer(b), 8), {})
    assert spec_key(sig, (_buffer(a), 8), {}) != spec_key(sig, (_buffer(a, order=(1, 0)), 8), {})
    assert spec_key(sig, (_buffer(a), 8), {}) != spec_key(sig, (Buffer(make_ptr(
        cutlass.Int32, a.ctypes.data, cute.AddressSpace.gmem, assumed_align=16), (0,)), 8), {})


@cute.jit
def show(buf: Buffer):
    cute.print_tensor(buf.to_tensor((2, 3)))


def test_the_host_side_reads_through_the_objects_pointer_at_each_call(capsys):
    with target("sm_80"):
        a = np.arange(6, dtype=np.float32)
        c = cute.compile(show, _buffer(a, (1, 0)))
        c(_buffer(a, (1, 0)))
        b = np.arange(6, dtype=np.float32) + 10
        c(_buffer(b, (1, 0)))
    out = capsys.readouterr().out
    assert "[0.000000, 1.000000, 2.000000]" in out and "[3.000000, 4.000000, 5.000000]" in out
    assert "[10.000000, 11.000000, 12.000000]" in out


class CStruct:
    """A C struct { int32 n; void *p; int64 k; } seen as one value of a literal struct type."""

    def __init__(self, n, p, k):
        self.c = (ctypes.c_int32 * 8)()
        ctypes.c_int32.from_address(ctypes.addressof(self.c)).value = n
        ctypes.c_uint64.from_address(ctypes.addressof(self.c) + 8).value = p
        ctypes.c_int64.from_address(ctypes.addressof(self.c) + 16).value = k

    def __get_mlir_types__(self):
        from warpweave._mlir import ir
        from warpweave._mlir.dialects import llvm
        i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
        return [llvm.StructType.get_literal([i32, llvm.PointerType.get(), i64])]

    def __c_pointers__(self):
        return [ctypes.addressof(self.c)]

    def __new_from_mlir_values__(self, values):
        return values[0]


def test_struct_values_are_read_at_cs_alignment():
    from warpweave._dsl.values.jit_argument import leaves, read_leaves, types_of

    s = CStruct(-7, 0x1234560, 1 << 40)
    layout = leaves(types_of(s))
    assert [(path, off) for _, path, off, _ in layout] == [((0,), 0), ((1,), 8), ((2,), 16)]
    assert read_leaves(s, layout, 1) == [-7, 0x1234560, 1 << 40]


def test_an_object_that_breaks_the_protocol_is_refused():
    a = np.zeros(8, np.float32)
    with target("sm_80"):
        c = cute.compile(fill, _buffer(a), 8)
        wrong = _buffer(a)
        wrong.__c_pointers__ = lambda: []
        with pytest.raises(DSLTypeError, match="gave 0 addresses for its 1 values"):
            c._read_call((wrong,), {})
        with pytest.raises(DSLTypeError, match="must be a Buffer"):
            c._read_call((CStruct(1, 2, 3),), {})
        with pytest.raises(DSLValueError, match="exported functions take tensors"):
            c.export_to_c(file_path=os.path.dirname(THIS), file_name="never_written")


class TensorStruct:
    """A C struct { void *ptr; int32 shape[2]; int32 stride[2]; } of host memory, as CuTe DSL's FFI tutorial
    passes one: the body sees an ir.Value subclass of the struct value and reads its fields with extractvalue."""

    def __init__(self, a):
        self.a = a
        self.c = (ctypes.c_int64 * 3)()
        base = ctypes.addressof(self.c)
        ctypes.c_uint64.from_address(base).value = a.ctypes.data
        for k, (n, s) in enumerate(zip(a.shape, a.strides)):
            ctypes.c_int32.from_address(base + 8 + 4 * k).value = n
            ctypes.c_int32.from_address(base + 16 + 4 * k).value = s // a.itemsize

    def __get_mlir_types__(self):
        from warpweave._mlir import ir
        from warpweave._mlir.dialects import llvm
        pair = llvm.StructType.get_literal([ir.IntegerType.get_signless(32)] * 2)
        return [llvm.StructType.get_literal([llvm.PointerType.get(), pair, pair])]

    def __c_pointers__(self):
        return [ctypes.addressof(self.c)]

    def __new_from_mlir_values__(self, values):
        return TensorStructValue(values[0])


def _struct_value_class():
    from warpweave._mlir import ir
    from warpweave._mlir.dialects import llvm

    class Value(ir.Value):
        def __init__(self, v):
            super().__init__(v)

        def field(self, k):
            i32 = ir.IntegerType.get_signless(32)
            pair = llvm.extractvalue(llvm.StructType.get_literal([i32] * 2), self, [k])
            return tuple(llvm.extractvalue(i32, pair, [i]) for i in range(2))

        def tensor(self):
            p = cute.make_ptr(cutlass.Float32, llvm.extractvalue(llvm.PointerType.get(), self, [0]))
            return cute.make_tensor(p, cute.make_layout(self.field(1), stride=self.field(2)))
    return Value


TensorStructValue = _struct_value_class()


@cute.jit
def describe(t: TensorStruct):
    v = t.tensor()
    cute.printf("shape {} stride {}", t.field(1), t.field(2))
    cute.print_tensor(v)


def test_a_structs_fields_are_read_on_the_host_at_each_call(capsys):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    with target("sm_80"):
        c = cute.compile(describe, TensorStruct(a))
        capsys.readouterr()
        c(TensorStruct(a))
        c(TensorStruct(np.arange(8, dtype=np.float32).reshape(4, 2) + 100))
    out = capsys.readouterr().out
    assert "shape (2,3) stride (3,1)" in out and "shape (4,2) stride (2,1)" in out
    assert "[0.000000, 1.000000, 2.000000]" in out and "[104.000000, 105.000000]" in out


@cute.jit
def misuse(t: TensorStruct):
    cute.make_layout((t, 2))  # a struct is no extent


def test_a_struct_used_as_a_number_is_refused_at_the_users_line():
    with target("sm_80"), pytest.raises(TypeError, match="expected an integer") as e:
        cute.compile(misuse, TensorStruct(np.zeros((2, 2), np.float32)))
    assert e.value.location == (THIS, line_in(THIS, "# a struct is no extent"))


@requires_gpu
def test_a_kernel_writes_through_the_objects_pointer_on_the_gpu():
    import torch

    x, y = torch.zeros(64, device="cuda"), torch.zeros(64, device="cuda")
    for t in (x, y):
        buf = Buffer(make_ptr(cutlass.Float32, t.data_ptr(), cute.AddressSpace.gmem, assumed_align=16), (0,))
        fill(buf, 32)
    torch.cuda.synchronize()
    ref = torch.cat([torch.arange(32, device="cuda", dtype=torch.float32), torch.zeros(32, device="cuda")])
    assert torch.equal(x, ref) and torch.equal(y, ref)


class ScaledArgs(NamedTuple):
    """A NamedTuple that also gives the protocol (as QuACK's @mlir_namedtuple arguments do)."""
    scale: object = None
    bias: object = None

    def __c_pointers__(self):
        return []

    def __get_mlir_types__(self):
        return []

    def __new_from_mlir_values__(self, values):
        return self


def test_a_tuple_giving_the_protocol_is_read_field_by_field():
    @cute.jit
    def scaled(a: cute.Tensor, args: ScaledArgs):
        if cutlass.const_expr(args.scale is not None):
            a[0] = args.scale

    from warpweave.cute.runtime import from_dlpack
    with target("sm_80"):
        c = cute.compile(scaled, from_dlpack(np.zeros(4, np.float32)), ScaledArgs(scale=2.0))
    assert all(p.kind != "jit_argument" for p in c.plans), [p.kind for p in c.plans]


# --- the protocol as a class to derive from (cutlass.base_dsl.typing.JitArgument) -------------------------------

from dataclasses import dataclass, fields  # noqa: E402

from warpweave.base_dsl.typing import JitArgument  # noqa: E402


@dataclass
class FieldsArgument(JitArgument):
    """A library's argument base: a dataclass that describes itself by its fields (those with the protocol give
    values; the others, static, ride along), as argument classes derived from JitArgument are written."""
    ptr: object
    rows: int

    def _dynamic(self):
        return [getattr(self, f.name) for f in fields(self) if hasattr(getattr(self, f.name), "__c_pointers__")]

    def __c_pointers__(self):
        return [p for x in self._dynamic() for p in x.__c_pointers__()]

    def __get_mlir_types__(self):
        return [t for x in self._dynamic() for t in x.__get_mlir_types__()]

    def __new_from_mlir_values__(self, values):
        return FieldsArgument(self.ptr.__new_from_mlir_values__(values), self.rows)


@cute.jit
def show_fields(arg: FieldsArgument):
    cute.print_tensor(cute.make_tensor(arg.ptr, cute.make_ordered_layout((arg.rows, 3), (1, 0))))


def test_a_dataclass_derived_from_the_protocol_class_is_a_jit_argument(capsys):
    a = np.arange(6, dtype=np.float32) + 20

    def arg(x, rows):
        return FieldsArgument(make_ptr(cutlass.Float32, x.ctypes.data, cute.AddressSpace.gmem, assumed_align=16), rows)

    with target("sm_80"):
        c = cute.compile(show_fields, arg(a, 2))
        c(arg(a, 2))
    assert [p.kind for p in c.plans] == ["jit_argument"]
    assert "[20.000000, 21.000000, 22.000000]" in capsys.readouterr().out


def test_the_protocol_class_is_where_cutedsl_names_it():
    import typing

    import warpweave.base_dsl.typing as base_typing
    assert base_typing.JitArgument is JitArgument and typing.Protocol in JitArgument.__mro__
