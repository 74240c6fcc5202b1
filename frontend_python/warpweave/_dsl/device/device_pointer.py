"""cute.make_ptr: a pointer from an integer address, in device code (CuTe DSL's cute.make_ptr), e.g. the address
of a group's tensor read from a table of addresses in global memory.

In a kernel the address (an Int64, Int32 or Python int) becomes a pointer of the memory space with LLVM's
inttoptr; the pointer indexes with 64-bit offsets. Outside any trace it is cute.runtime.make_ptr (a pointer
argument for a @cute.jit function). On the host side of a @cute.jit function it is an error: that side is traced,
and a pointer to pass to a kernel comes in as an argument.
"""
from __future__ import annotations

from ..base import trace
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..base import ir_values
from ..base.ir_values import host_number
from ..host.host_values import HostValue, ReadAddress
from ..values.jit_argument import HostAddress
from ..values.numeric import Int64, Numeric, dtype as dtype_of
from ..values.runtime import AddressSpace, make_ptr as runtime_make_ptr
from ..values.pointer import GMEM, pointer_of
from ..values.tensor import Pointer, ptr_type


# the known alignment of the address 0: that of the most aligned buffer a kernel's shared memory is carved into
_ANY_BUFFER_ALIGNMENT = 1 << 16


def make_ptr(dtype, value, mem_space: AddressSpace = AddressSpace.generic, *, assumed_align: int | None = None,
             loc=None, ip=None):
    """A pointer to `dtype` elements at the integer address `value` in `mem_space`; assumed_align (bytes, by
    default the element's size) is what accesses through it may rely on."""
    dtype = dtype_of(dtype)
    if isinstance(mem_space, str) and mem_space in AddressSpace.__members__:
        mem_space = AddressSpace[mem_space]  # another pointer's memspace, as CuTe DSL code passes it on
    if not isinstance(mem_space, AddressSpace):
        raise DSLTypeError(f"make_ptr: mem_space is a cute.AddressSpace, got {mem_space!r}", user_location(2))
    if isinstance(value, Pointer):  # another pointer (an array's data_ptr()): the same address, as dtype values
        return pointer_of(value, dtype=dtype, space=mem_space, alignment=assumed_align)
    st = trace.current_or_none()
    if st is None:
        return runtime_make_ptr(dtype, value, mem_space, assumed_align)
    if isinstance(value, ir_values.Value) and st.kernel is not None:
        return _of_ir_pointer(dtype, value, mem_space, assumed_align)
    if st.kernel is None and isinstance(host_number(value), HostAddress):
        # a pointer value a JitArgument gave the host side: the address each call's object holds
        align = assumed_align or max(1, dtype.width // 8)
        return Pointer(None, dtype, GMEM, align, host=host_number(value).key, wide=True)
    if st.kernel is None and isinstance(value, Numeric) and isinstance(value._v, HostValue):
        # an address read from tensor elements on the host (a table of device pointers): a placeholder whose
        # tensors the host side computes layouts with; a kernel gets no such pointer (kernel_trace refuses it)
        align = assumed_align or max(1, dtype.width // 8)
        return Pointer(None, dtype, mem_space.name, align, host=ReadAddress(user_location(2)), wide=True)
    if st.kernel is None:
        raise DSLTypeError("cute.make_ptr makes a pointer in device code; the host side of a @cute.jit function "
                           "gets its pointers as arguments (cute.runtime.make_ptr outside the function)",
                           user_location(2))
    eb = max(1, dtype.width // 8)
    align = eb if assumed_align is None else assumed_align
    if not isinstance(align, int) or isinstance(align, bool) or align < 1 or align & (align - 1):
        raise DSLValueError(f"make_ptr: assumed_align must be a power of two number of bytes, got {assumed_align!r}",
                            user_location(2))
    if isinstance(value, bool) or not isinstance(value, (int, Numeric)) or \
            isinstance(value, Numeric) and not type(value).is_integer:
        raise DSLTypeError(f"make_ptr: the address is an integer (Int64), got {type(value).__name__}",
                           user_location(2))
    if isinstance(value, int):
        if value < 0 or value % align:
            raise DSLValueError(f"make_ptr: the address {value:#x} is negative or not aligned to {align} bytes",
                                user_location(2))
    if isinstance(value, int) or isinstance(value, Numeric) and value.is_static:
        # a known address is as aligned as its lowest set bit (0, a placeholder base, as any buffer is)
        v = int(value if isinstance(value, int) else value.value)
        align = max(align, v & -v if v else _ANY_BUFFER_ALIGNMENT)
    addr = Int64(value) if not isinstance(value, Int64) else value
    memspace = mem_space.name
    b = trace.builder()
    base = b.op1("llvm.inttoptr", [addr.ir()], ptr_type(memspace))
    return Pointer(base, dtype, memspace, align, wide=True)


def _of_ir_pointer(dtype, value, mem_space: AddressSpace, assumed_align):
    """make_ptr over an IR pointer value (code that built the address with IR ops: an llvm.addrspacecast), which
    must be of mem_space's address space."""
    want = ptr_type(mem_space.name)
    if str(value.type) != want:
        raise DSLTypeError(f"make_ptr: the IR value is a {value.type}, not a pointer of {mem_space.name} memory "
                           f"({want})", user_location(3))
    eb = max(1, dtype.width // 8)
    align = eb if assumed_align is None else assumed_align
    if not isinstance(align, int) or isinstance(align, bool) or align < 1 or align & (align - 1):
        raise DSLValueError(f"make_ptr: assumed_align must be a power of two number of bytes, got {assumed_align!r}",
                            user_location(3))
    return Pointer(value.use(), dtype, mem_space.name, align, wide=True)
