"""Thread and block indices, barriers and device printf (cute.arch, cute.printf).

Index registers are read once per kernel, in its entry block, and enter the layout algebra as non-negative
symbols, so index arithmetic built on them simplifies and is available in every region.
"""
from __future__ import annotations

import re

from ... import _core
from ..atoms.atoms import current_cc, entries_named, entry_usable, primitive
from ..base import trace
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..base.markers import accept_locations
from ..host.host_actions import host_print_tensor, host_printf
from ..registry.plugins import registry
from ..values.numeric import (
    Boolean, Float32, Float64, Int16, Int32, Int64, Numeric, Uint16, Uint32, Uint64, as_numeric, coerce_pair,
)
from ..values.pointer import Pointer
from ..values.tensor import Tensor, TensorSSA, static_size


def _sreg(name: str, axis: str | None) -> Int32:
    st = trace.current()
    if st.kernel is None:
        raise DSLTypeError(f"cute.arch.{name}() is only available inside a @cute.kernel function", user_location(2))
    cache = st.kernel.sregs
    key = (name, axis)
    if key not in cache:
        b = trace.builder()
        op = {"thread_idx": "tid", "block_idx": "ctaid", "block_dim": "ntid", "grid_dim": "nctaid",
              "lane_idx": "laneid"}[name]
        with trace.at_entry():
            v = b.op1(f"nvvm.read.ptx.sreg.{op}" + (f".{axis}" if axis else ""), [], "i32")
            cache[key] = Int32._wrap(trace.lift_int(v, "i32", nonneg=True))
    return cache[key]


def thread_idx():
    """(x, y, z) of this thread in its block."""
    return tuple(_sreg("thread_idx", a) for a in "xyz")


def block_idx():
    return tuple(_sreg("block_idx", a) for a in "xyz")


def block_dim():
    return tuple(_sreg("block_dim", a) for a in "xyz")


def grid_dim():
    return tuple(_sreg("grid_dim", a) for a in "xyz")


def lane_idx():
    """This thread's lane in its warp, read from the lane special register (as CuTe DSL reads it). Not the thread's
    x index modulo 32: that is the lane only when the block's x extent is a multiple of 32, and the assembler
    cannot tell from it that `lane_idx() == 0` lets one lane through (it then wraps an atomic behind that test in
    a warp-wide aggregation: a vote, a lane-index read and a reduction)."""
    return _sreg("lane_idx", None)


def warp_idx():
    return thread_idx()[0] // 32


def barrier(*, barrier_id=None, number_of_threads=None):
    """Waits until every thread of the block (or of the named barrier) arrives: bar.sync."""
    b = trace.builder()  # (in a kernel: builder() refuses to be asked outside one)
    trace.current().kernel.barrier_waits += 1
    if barrier_id is None and number_of_threads is None:
        b.op0("nvvm.barrier0", [])
        return
    ops = [as_numeric(barrier_id if barrier_id is not None else 0, Int32).ir()]
    # nvvm.barrier's operand segments: barrier id, number of threads, reduction predicate
    seg = "1, 0, 0"
    if number_of_threads is not None:
        ops.append(as_numeric(number_of_threads, Int32).ir())
        seg = "1, 1, 0"
    b.op0("nvvm.barrier", ops, f"operandSegmentSizes = array<i32: {seg}>")


sync_threads = barrier


# --- backend primitives -------------------------------------------------------------------------------------------

def _backend_primitive(python_name: str):
    f = primitive(python_name)
    if f is None:
        raise DSLTypeError(f"no loaded backend offers {python_name} (see `python -m warpweave plugins`)",
                           user_location(3))
    return f


def _target_primitive(python_name: str, cute_name: str):
    """A backend primitive the current target must have (its PTX is specific to some generations): a clear error
    naming the target and the backends that do offer it otherwise."""
    entries = entries_named(python_name)
    cc = current_cc()
    if not any(entry_usable(b, ins, cc) for b, ins in entries):
        # To say who has it: a trace loads only the backends usable on its target, so load every one found.
        everything = list(getattr(registry, "candidates", None) or [])
        registry.load(everything) if everything else registry.load()
        entries = entries_named(python_name)
        st = trace.current_or_none()
        name = st.target["name"] if st is not None else "?"
        offered = "; ".join(f"{b.name} for {', '.join(ins.get('targets', []))}" for b, ins in entries)
        raise DSLTypeError(f"cute.arch.{cute_name} is not available when compiling for {name}: its instruction "
                           f"comes from a backend, and " + (f"only these offer it: {offered}" if offered else
                                                             "no loaded backend offers it"), user_location(3))
    return primitive(python_name)


def griddepcontrol_wait():
    """Waits until the grids this kernel depends on (programmatic dependent launch) have completed and their
    writes are visible. From the target's backend (sm_90 and later)."""
    _target_primitive("arch.griddepcontrol_wait", "griddepcontrol_wait")()


def griddepcontrol_launch_dependents():
    """Lets the kernels that depend on this one start once every CTA has issued this (or exited). From the
    target's backend (sm_90 and later)."""
    _target_primitive("arch.griddepcontrol_launch_dependents", "griddepcontrol_launch_dependents")()


def mul_hi(a, b):
    """The high 32 bits of the 64-bit product of two 32-bit integers (unsigned when either is a Uint32, else
    signed), as the type of a (Int32 for Python ints): the multiply-high of magic-number division. The widened
    product's upper half, which the compiler emits as one multiply-high."""
    a, b = as_numeric(a), as_numeric(b)
    for x in (a, b):
        if not type(x).is_integer or type(x).width != 32:
            raise DSLTypeError(f"cute.arch.mul_hi multiplies 32-bit integers, got {type(x).__name__}",
                               user_location(2))
    unsigned = not type(a).signed or not type(b).signed
    wide = Uint64 if unsigned else Int64
    return type(a)((wide(a) * wide(b)) >> 32)


_WIDENED = {Int16: Int32, Uint16: Uint32, Int32: Int64, Uint32: Uint64}


def mul_wide(a, b):
    """The whole product of two 16- or 32-bit integers of one type, in the type of twice their width (of their
    signedness): it cannot overflow. Both operands are DSL integers of the same type (a Python int is refused, as
    its width and signedness would be guesses); the compiler emits the product of the widened operands as one
    widening multiply."""
    ta, tb = type(a), type(b)
    if ta not in _WIDENED or ta is not tb:
        raise DSLTypeError(f"cute.arch.mul_wide multiplies two values of one type, Int16, Uint16, Int32 or Uint32; "
                           f"got {getattr(ta, '__name__', ta)} and {getattr(tb, '__name__', tb)}", user_location(2))
    wide = _WIDENED[ta]
    return wide(a) * wide(b)


def _f32_pair(x, what):
    if not isinstance(x, (tuple, list)) or len(x) != 2:
        raise DSLTypeError(f"cute.arch.{what}: each operand is a pair (x, y) of Float32 values, got {x!r}",
                           user_location(4))
    return [v if isinstance(v, Numeric) and type(v) is Float32 else Float32(v) for v in x]


_ROUNDINGS = ("rn", "rz", "rm", "rp")


def _packed(name, *operands, rnd="rn", ftz=None):
    """CuTe DSL's packed f32x2 arithmetic: rnd is the rounding ("rn" to nearest even, the default; "rz", "rm",
    "rp"; "none" asks for none in particular, which is "rn"); ftz (flushing subnormals) is not built here."""
    if ftz:
        raise DSLTypeError(f"cute.arch.{name}: ftz=True is not supported here", user_location(3))
    r = "rn" if rnd in (None, "none") else rnd
    if r not in _ROUNDINGS:
        raise DSLTypeError(f"cute.arch.{name}: rnd is one of rn, rz, rm, rp or none, got {rnd!r}", user_location(3))
    f = _target_primitive(f"arch.{name}", name)
    pairs = [_f32_pair(x, name) for x in operands]
    # the default rounding is the entry without the attribute, so that every target with the instruction has it
    r = f(*pairs) if r == "rn" else f(*pairs, rnd=r)
    return tuple(Float32.from_ir(v) for v in r)


def add_packed_f32x2(a, b, *, rnd="rn", ftz=None, loc=None, ip=None):
    """(a0 + b0, a1 + b1) in one instruction (sm_100 and later, from the target's backend), rounded as rnd says."""
    return _packed("add_packed_f32x2", a, b, rnd=rnd, ftz=ftz)


def sub_packed_f32x2(a, b, *, rnd="rn", ftz=None, loc=None, ip=None):
    """(a0 - b0, a1 - b1) in one instruction (sm_100 and later)."""
    return _packed("sub_packed_f32x2", a, b, rnd=rnd, ftz=ftz)


def mul_packed_f32x2(a, b, *, rnd="rn", ftz=None, loc=None, ip=None):
    """(a0 * b0, a1 * b1) in one instruction (sm_100 and later)."""
    return _packed("mul_packed_f32x2", a, b, rnd=rnd, ftz=ftz)


def fma_packed_f32x2(a, b, c, *, rnd="rn", ftz=None, loc=None, ip=None):
    """(a0 * b0 + c0, a1 * b1 + c1), each with one rounding, in one instruction (sm_100 and later)."""
    return _packed("fma_packed_f32x2", a, b, c, rnd=rnd, ftz=ftz)


# --- float min/max, clocks ----------------------------------------------------------------------------------------

def _fminmax(name, a, b):
    if not isinstance(a, Numeric) and not isinstance(b, Numeric):
        a = Float32(a)
    x, y, t = coerce_pair(a, b)
    if not t.is_float:
        x, y, t = Float32(x), Float32(y), Float32
    if x.is_static and y.is_static:
        u, v = float(x.value), float(y.value)
        if u != u:
            return t(v)
        if v != v:
            return t(u)
        return t(max(u, v) if name == "maxnum" else min(u, v))
    if t.ir_type not in ("f32", "f64", "f16", "bf16"):
        return t(_fminmax(name, Float32(x), Float32(y)))
    bld = trace.builder()
    return t.from_ir(bld.op1(f"llvm.intr.{name}", [x.ir(), y.ir()], t.ir_type))


def fmax(a, b):
    """The larger of two floats; a NaN operand is ignored (max.f32)."""
    return _fminmax("maxnum", a, b)


def fmin(a, b):
    """The smaller of two floats; a NaN operand is ignored (min.f32)."""
    return _fminmax("minnum", a, b)


def _clock(reg, t):
    b = trace.builder()
    return t.from_ir(b.op1(f"nvvm.read.ptx.sreg.{reg}", [], t.ir_type))


def clock():
    """The SM's 32-bit cycle counter."""
    return _clock("clock", Int32)


def clock64():
    """The SM's 64-bit cycle counter."""
    return _clock("clock64", Int64)


def globaltimer():
    """The global nanosecond timer (64-bit)."""
    return _clock("globaltimer", Int64)


def globaltimer_lo():
    """The low 32 bits of the global nanosecond timer."""
    return _clock("globaltimer.lo", Int32)


def cp_async_commit_group():
    """Closes this thread's group of cp.async copies issued since the last commit."""
    _backend_primitive("cpasync.commit_group")()


def cp_async_wait_group(n=0):
    """Waits until at most n of this thread's committed cp.async groups are pending."""
    _backend_primitive("cpasync.wait_group")(n=n)


def cp_async_wait_all():
    _backend_primitive("cpasync.wait_all")()


# --- printf -------------------------------------------------------------------------------------------------------

_SPEC = {"i32": "%d", "i64": "%lld", "u32": "%u", "u64": "%llu", "f": "%f", "b": "%d"}


def _printf_arg(x):
    """(value, MLIR type, printf conversion) with C's default promotions."""
    if isinstance(x, (int, bool, float)) or hasattr(x, "__ww_int__") and not isinstance(x, Numeric):
        x = as_numeric(x.__ww_int__() if hasattr(x, "__ww_int__") else x)
    if isinstance(x, Pointer) and trace.in_kernel():
        # The address it holds in its own address space (a shared-memory offset, a global address), as %p shows it.
        b = trace.builder()
        return b.op1("llvm.ptrtoint", [x.address(0)], "i64"), "i64", "%p"
    if not isinstance(x, Numeric):
        raise DSLTypeError(f"cute.printf: cannot print a {type(x).__name__}", user_location(3))
    t = type(x)
    if t.is_float:
        return Float64(x).ir(), "f64", _SPEC["f"]
    if t.is_boolean:
        return Int32(x).ir(), "i32", _SPEC["b"]
    if t.width <= 32:
        v = (Int32(x) if t.signed else Uint32(x)).ir()
        return v, "i32", _SPEC["i32" if t.signed else "u32"]
    return Int64(x).ir(), "i64", _SPEC["i64" if t.signed else "u64"]


def _flatten_args(args):
    out = []
    for a in args:
        if isinstance(a, tuple):
            out.append(("(", None))
            for i, x in enumerate(a):
                if i:
                    out.append((",", None))
                out.extend(_flatten_args([x]))
            out.append((")", None))
        elif isinstance(a, Tensor) and not isinstance(a, TensorSSA):
            # A tensor under {} prints its type (CuTe DSL's form of it: pointer o layout), fixed while tracing;
            # its elements print with cute.print_tensor.
            out.append((str(a).replace("%", "%%"), None))
        else:
            out.append((None, a))
    return out


def _escape(s: str) -> str:
    out = []
    for ch in s.encode("utf-8"):
        if 32 <= ch < 127 and ch not in (34, 92):
            out.append(chr(ch))
        else:
            out.append(f"\\{ch:02X}")
    return "".join(out)


def printf(fmt, *args, end=None):
    """Prints from the device. `{}` placeholders take each argument's natural format; C conversions (%d, %f) are
    passed through as they are. Tuples print as (a,b,...). `end` is written after the text (by default a newline,
    unless the text ends with one)."""
    if end is not None and not isinstance(end, str):
        raise DSLTypeError(f"cute.printf: end must be a string, got {type(end).__name__}", user_location(2))
    if any(isinstance(a, TensorSSA) for a in args) or isinstance(fmt, TensorSSA):
        raise DSLTypeError("cute.printf prints numbers; print a TensorSSA with cute.print_tensor", user_location(2))
    if not isinstance(fmt, str):
        args = (fmt,) + args
        fmt = " ".join("{}" for _ in args)
    st = trace.current()
    if st.kernel is None:  # the host side of a @cute.jit function: printed at each call (host_actions.py)
        return host_printf(fmt, *args)
    b = trace.builder()
    values, types = [], []
    if "{}" in fmt:
        pieces = fmt.split("{}")
        if len(pieces) - 1 != len(args):
            raise DSLValueError(f"cute.printf: {len(pieces) - 1} placeholders for {len(args)} arguments",
                                user_location(2))
        text = pieces[0].replace("%", "%%")
        for piece, arg in zip(pieces[1:], args):
            for lit, x in _flatten_args([arg]):
                if lit is not None:
                    text += lit
                    continue
                v, t, spec = _printf_arg(x)
                values.append(v)
                types.append(t)
                text += spec
            text += piece.replace("%", "%%")
    else:
        text = fmt
        n = len(re.findall(r"%[^%]", fmt.replace("%%", "")))
        if n != len(args):
            raise DSLValueError(f"cute.printf: {n} conversions for {len(args)} arguments", user_location(2))
        for x in args:
            v, t, _ = _printf_arg(x)
            values.append(v)
            types.append(t)
    if end is None:
        if not text.endswith("\n"):
            text += "\n"
    else:
        text += end.replace("%", "%%")
    name = f"__ww_fmt_{st.globals_count}"
    st.globals_count += 1
    data = text.encode("utf-8") + b"\0"
    st.builder.add_module_text(
        f'llvm.mlir.global internal constant @{name}("{_escape(text)}\\00") {{addr_space = 0 : i32}}')
    if not st.has_vprintf:
        st.builder.add_module_text("llvm.func @vprintf(!llvm.ptr, !llvm.ptr) -> i32")
        st.has_vprintf = True
    fmt_ptr = b.op1("llvm.mlir.addressof", [], "!llvm.ptr", f"global_name = @{name}")
    if values:
        struct = "!llvm.struct<(" + ", ".join(types) + ")>"
        with trace.at_entry():
            one = b.constant_int(1, "i32")
            buf = b.op1("llvm.alloca", [one], "!llvm.ptr", f"alignment = 8 : i64, elem_type = {struct}")
        for i, v in enumerate(values):
            p = b.op1("llvm.getelementptr", [buf], "!llvm.ptr", f"elem_type = {struct}, rawConstantIndices = array<i32: 0, {i}>")
            b.op0("llvm.store", [v, p], "alignment = 4 : i64")
    else:
        buf = b.op1("llvm.mlir.zero", [], "!llvm.ptr")
    b.custom_op("$r0 = llvm.call @vprintf($0, $1) : (!llvm.ptr, !llvm.ptr) -> i32", [fmt_ptr, buf], ["i32"])
    del data


def print_tensor(tensor, *, verbose: bool = False):
    """Prints a tensor's type and values from the device (each thread that calls it): one line per row of the
    first two modes, later modes one after another."""
    if not trace.in_kernel() and isinstance(tensor, Tensor):  # host side: read at each call (host_actions.py)
        return host_print_tensor(tensor, verbose)
    if isinstance(tensor, TensorSSA):
        vals, shape, what = tensor.values, tensor.shape, repr(tensor)
    elif isinstance(tensor, Tensor):
        n = static_size(tensor, "print_tensor")
        vals, shape, what = [tensor[i] for i in range(n)], tensor.shape, tensor.type
    else:
        raise DSLTypeError(f"print_tensor expects a Tensor or a TensorSSA, got {type(tensor).__name__}",
                           user_location(2))
    printf(what.replace("{", "(").replace("}", ")").replace("%", "%%") + " data=", end="\n")
    flat = shape if isinstance(shape, tuple) else (shape,)
    dims = [_core.product(s) for s in flat]
    rows = dims[0] if len(dims) > 1 else 1
    cols = max(1, len(vals) // max(rows, 1)) if len(dims) > 1 else len(vals)
    for r in range(rows):
        row = [vals[r + rows * c] if len(dims) > 1 else vals[c] for c in range(cols)]
        for start in range(0, len(row), 16):   # vprintf takes a bounded argument buffer
            chunk = row[start:start + 16]
            lead = "  [" if start == 0 else "   "
            tail = "]" if start + 16 >= len(row) else ""
            printf(lead + ", ".join("{}" for _ in chunk) + tail, *chunk, end="\n")
    del verbose


__all__ = ["thread_idx", "block_idx", "block_dim", "grid_dim", "lane_idx", "warp_idx", "barrier", "sync_threads",
           "griddepcontrol_wait", "griddepcontrol_launch_dependents", "add_packed_f32x2",
           "sub_packed_f32x2", "mul_packed_f32x2", "fma_packed_f32x2", "fmax", "fmin", "clock", "clock64",
           "globaltimer", "globaltimer_lo", "cp_async_commit_group", "cp_async_wait_group", "cp_async_wait_all",
           "printf", "mul_hi", "mul_wide"]


accept_locations(globals(), __all__)
