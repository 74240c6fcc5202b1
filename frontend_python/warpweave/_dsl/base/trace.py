"""The state of one compilation while it traces: the IR builder, the kernel being traced, symbols, location.

Host-side jit functions and device kernels trace into one MLIR module. Symbols of the layout algebra stand for
runtime values: host symbols (ids below 2**48) are extents, strides and scalars of the jit function's arguments,
known at launch; kernel symbols are SSA values inside a kernel (thread indices, loaded values, loop variables).
"""
from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from ... import _core
from .errors import DSLRuntimeError, DSLTypeError, user_location

_local = threading.local()
UNPINNED = object()   # TraceState.pinned_location when no one_user_line function runs


@dataclass
class HostSymbol:
    """A runtime scalar of the jit function's arguments: where to read it at launch."""
    id: int
    arg_index: int
    path: tuple            # ("shape", i) / ("stride", i) / ("value",)
    bits: int = 32
    divisibility: int = 1
    name: str = ""


@dataclass
class KernelState:
    name: str
    params: list = field(default_factory=list)  # kernel parameter values (IR ids)
    sregs: dict = field(default_factory=dict)   # (register, axis) -> Int32 read once at entry
    smem_base: Any = None                       # the dynamic shared memory's address, once used
    smem_bytes: int = 0                         # shared memory the kernel's allocators carved
    smem_holes: list = field(default_factory=list)  # (start, end) bytes below smem_bytes left free
    merge_branch_allocs: bool = False           # launch(smem_merge_branch_allocs=True): branches share smem
    # A parameter the body finds it needs while traced (host_arguments.kernel_parameter): add_parameter(host
    # argument) -> the IR value of its address; tensor_arguments: (jit argument index, host Pointer) of the
    # kernel's global-memory parameters, of which such a parameter may be computed.
    add_parameter: Any = None
    tensor_arguments: list = field(default_factory=list)
    late_parameters: dict = field(default_factory=dict)  # (producer, attributes) -> DeviceHostArgument
    workspace: list = field(default_factory=list)  # bytes per CTA of each device workspace request (workspace.py)
    barrier_waits: int = 0  # block-level barrier waits traced so far (loops.py keeps loops with one rolled)


@dataclass
class TraceState:
    target: dict
    builder: Any = field(default_factory=_core.IRBuilder)
    host_symbols: dict = field(default_factory=dict)   # id -> HostSymbol
    kernel: Optional[KernelState] = None
    launches: list = field(default_factory=list)
    kernel_names: set = field(default_factory=set)
    name_prefix: str = ""   # the traced @jit function's set_name_prefix: its kernels' names begin with it
    globals_count: int = 0
    has_vprintf: bool = False
    # extern functions declared in the module (device/extern_call.py): symbol -> its signature and bitcode file
    externs: dict = field(default_factory=dict)
    declared_dynamic_smem: bool = False
    next_host_symbol: int = 1
    kernel_params: dict = field(default_factory=dict)  # kernel name -> its parameters
    kernel_smem: dict = field(default_factory=dict)    # kernel name -> shared memory bytes it carved
    kernel_workspace: dict = field(default_factory=dict)  # kernel name -> device workspace bytes per CTA
    host_arguments: dict = field(default_factory=dict)  # id -> HostArgument (host_arguments.py)
    host_actions: list = field(default_factory=list)    # host-side work at each call (host_actions.py)
    host_values: dict = field(default_factory=dict)     # host symbol id -> the value being compiled for, if known
    host_guards: list = field(default_factory=list)     # host comparisons decided with them (host_guards.py)
    profile: Any = None                                 # the profiler's token while profiled (warpweave.profile)
    assertions: bool = False                            # cute.testing.assert_ checks compiled in (EnableAssertions)
    # tensors compiled for what the program declared of them only (their spec_declared): a function called through
    # TVM FFI takes any framework tensor of the declared layout, as CuTe DSL's does
    declared_facts_only: bool = False
    asm_sites: list = field(default_factory=list)       # (asm string, user's location) of each user inline asm op
    # The user's line that builder() gives the IR while a one_user_line function runs (UNPINNED: found per op).
    pinned_location: Any = UNPINNED

    def new_host_symbol(self, arg_index, path, bits=32, divisibility=1, name="", nonneg=True) -> _core.SymInt:
        """nonneg: the value is never negative (an extent, an unsigned number); the algebra then divides unsigned."""
        sid = self.next_host_symbol
        self.next_host_symbol += 1
        self.host_symbols[sid] = HostSymbol(sid, arg_index, path, bits, divisibility, name)
        return _core.SymInt.symbol(sid, divisibility=divisibility, nonneg=nonneg, bits=bits, name=name or f"a{sid}")

    def unique_kernel_name(self, base: str) -> str:
        name, k = base, 0
        while name in self.kernel_names:
            k += 1
            name = f"{base}_{k}"
        self.kernel_names.add(name)
        return name


def current() -> TraceState:
    st = getattr(_local, "state", None)
    if st is None:
        raise DSLRuntimeError("this operation only works while a @cute.jit or @cute.kernel function is traced "
                              "(call it from inside one)", user_location(2))
    return st


def current_or_none() -> Optional[TraceState]:
    return getattr(_local, "state", None)


class tracing:
    """Context manager that makes a TraceState current."""

    def __init__(self, state: TraceState):
        self.state = state

    def __enter__(self):
        self.prev = getattr(_local, "state", None)
        _local.state = self.state
        return self.state

    def __exit__(self, *exc):
        _local.state = self.prev
        return False


def in_kernel() -> bool:
    st = current_or_none()
    return st is not None and st.kernel is not None


def on_host() -> bool:
    """Whether a @cute.jit function's host side is being traced (not a kernel, not outside any trace)."""
    st = current_or_none()
    return st is not None and st.kernel is None


def builder() -> _core.IRBuilder:
    """The IR builder, with the location set to the user's current line."""
    st = current()
    if st.kernel is None:
        raise DSLTypeError("this operation creates device code: call it inside a @cute.kernel function",
                           user_location(2))
    loc = st.pinned_location
    if loc is UNPINNED:
        loc = user_location(2)
    b = st.builder
    if loc is not None:
        b.set_location(loc[0], loc[1], 1)
    return b


# Finding the user's line walks the stack out of the DSL's frames (user_location): ~1 us for the 8-10 frames between a
# GEMM's register loads and the user's cute.gemm call, asked by every operation it emits (sgemm: ~9700 times, ~11 ms of
# its ~37 ms trace). A one_user_line function finds it once on entry instead: every operation it emits has the line
# of its caller's user frame, which cannot move while it runs.
def one_user_line(fn):
    """Decorates a DSL function that calls no user code (no callbacks, no methods of user objects): the operations it
    emits all take the user's line found once when it is called, the line each would have found itself (the frames
    between it and the user's are all the DSL's). A function that could run user code must not be decorated: the
    operations that code emits would take the caller's line instead of their own."""
    @functools.wraps(fn)
    def pinned(*args, **kwargs):
        st = getattr(_local, "state", None)
        if st is None or st.kernel is None or st.pinned_location is not UNPINNED:
            return fn(*args, **kwargs)  # not tracing a kernel, or pinned already by the DSL function calling this one
        st.pinned_location = user_location(2)
        try:
            return fn(*args, **kwargs)
        finally:
            st.pinned_location = UNPINNED
    return pinned


def lift_int(value: int, ir_type: str, nonneg: bool = False, divisibility: int = 1) -> _core.SymInt:
    """Makes an integer SSA value a symbol of the algebra (bound in the current region)."""
    b = current().builder
    sid = b.fresh_symbol_id()
    b.bind_symbol(sid, value)
    bits = 64 if ir_type == "i64" else 32
    return _core.SymInt.symbol(sid, divisibility=divisibility, nonneg=nonneg, bits=bits)


class at_entry:
    """Emits into the kernel's entry block (values that must dominate every use)."""

    def __enter__(self):
        current().builder.set_emit_at_entry(True)

    def __exit__(self, *exc):
        current().builder.set_emit_at_entry(False)
        return False
