"""Host-side work of a @cute.jit function, done at each call of the compiled function: `cute.printf` outside a
kernel.

A @cute.jit function's host side is not compiled to machine code here: it is traced once, and what it does at
run time is recorded (kernel launches in the launch plan, host prints here). A host `cute.printf` prints at each
call, with the call's values: static values are fixed when tracing; runtime integers (Int32/Int64 arguments,
dynamic extents and strides of tensors) and the layouts made of them are evaluated from the call's arguments;
runtime scalars (Float32 arguments, ...) print their value; tensor elements and what the host side computes from
them (host_values.py) print the call's numbers. A value computed by device code cannot be printed from the host
(an error at the call of cute.printf names the line). Python's own
`print` inside a @cute.jit function runs while tracing, so it shows runtime values as `?`.

The prints of a call are made before its kernels are launched; what the kernels print appears when the device
is synchronised, after them.
An exported function (export_to_c, the TVM FFI entry that cutlass_call runs) prints from C: a print whose values
are all integers, tuples and layouts has a C form (HostPrint.c_form); any other keeps the function from exporting.
"""
from __future__ import annotations

import sys

from ... import _core
from ..base import trace
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..registry import compile_only
from ..base.ir_values import host_number
from ..values.jit_argument import HostAddress
from ..values.numeric import HostRef, Numeric, SymInt
from ..values.runtime import RuntimePointer, RuntimeTensor, is_torch_tensor, runtime_view
from ..values.tensor import Pointer, Tensor
from .host_guards import check
from .host_values import HostLocal, HostMemory, HostValue, argument_value, call_slots, evaluate


class HostPrint:
    """One host cute.printf: text pieces and the renderers of its values."""

    def __init__(self, fmt: str, renderers: list, percent: bool, end: str, c_form=None):
        self.fmt = fmt
        self.renderers = renderers
        self.percent = percent
        self.end = end
        # The printed line as text pieces (str) and integers of the call (SymInt), for code that prints it without
        # Python (an exported C wrapper, export_c.py); None where a value has no such form (a Float32 argument,
        # a tensor element, an address).
        self.c_form = c_form

    def text(self, values, env) -> str:
        vals = [r(values, env) for r in self.renderers]
        if self.percent:
            return self.fmt % tuple(vals)
        pieces = self.fmt.split("{}")
        out = pieces[0]
        for piece, v in zip(pieces[1:], vals):
            out += _as_text(v) + piece
        return out

    def run(self, values, env) -> None:
        sys.stdout.write(self.text(values, env) + self.end)
        sys.stdout.flush()


def _as_text(v) -> str:
    if isinstance(v, bool):
        return str(int(v))  # as the device's printf shows a Boolean
    if isinstance(v, float):
        return "%f" % v
    return str(v)


def _python_value(x):
    t = type(x)
    return bool(x._v) if t.is_boolean else (float(x._v) if t.is_float else int(x._v))


def _renderer(x, where):
    """A function (call values, symbol values) -> the Python value or text of x at a call."""
    if isinstance(x, (str, int, float, bool)) or x is None:
        return lambda values, env, x=x: x
    if isinstance(x, Numeric):
        v = x._v
        if x.is_static:
            py = bool(v) if type(x).is_boolean else (float(v) if type(x).is_float else int(v))
            return lambda values, env, py=py: py
        if isinstance(v, SymInt):
            return lambda values, env, v=v: int(_core.evaluate(v, env))
        if isinstance(v, HostValue):  # computed from tensor elements at each call (host_values.py)
            return lambda values, env, x=x: _python_value(evaluate(x, values, env))
        if isinstance(v, HostRef):
            index, t = v.arg_index, type(x)

            def scalar(values, env):
                a = values[index]
                a = a.value if isinstance(a, Numeric) else a
                return bool(a) if t.is_boolean else (float(a) if t.is_float else int(a))
            return scalar
        raise DSLTypeError("cute.printf on the host cannot print a value computed in device code", where)
    if isinstance(x, SymInt):
        return lambda values, env, x=x: int(_core.evaluate(x, env))
    if host_number(x) is not None and not isinstance(host_number(x), tuple):  # a JitArgument's value (host_ir.py)
        return _renderer(host_number(x), where)
    if isinstance(x, HostAddress):
        return lambda values, env: hex(argument_value(values, x.key).address)
    if isinstance(x, Pointer) and x.host is not None and not isinstance(x.base, HostLocal):
        def address(values, env, p=x):
            off = p.offset if isinstance(p.offset, int) else int(_core.evaluate(p.offset, env))
            return hex(argument_value(values, p.host).address + off * max(1, p.dtype.width // 8))
        return address
    if isinstance(x, tuple):
        parts = [_renderer(e, where) for e in x]
        return lambda values, env: "(" + ",".join(_as_text(p(values, env)) for p in parts) + ")"
    if hasattr(x, "__ww_int__") and not hasattr(x, "shape"):
        return _renderer(x.__ww_int__(), where)
    if isinstance(x, (_core.Layout,)):
        if not _core.symbols_of(x):
            return lambda values, env, s=str(x): s
        shape, stride = x.shape, x.stride

        def layout(values, env):
            return str(_core.make_layout(_core.evaluate(shape, env), stride=_core.evaluate(stride, env)))
        return layout
    if isinstance(x, _core.Swizzle) or isinstance(x, _core.ComposedLayout) and not _core.symbols_of(x):
        return lambda values, env, s=str(x): s
    raise DSLTypeError(f"cute.printf on the host prints numbers, tuples and layouts, not a {type(x).__name__} "
                       "(print tensors with cute.print_tensor)", where)


def _c_parts(x) -> list | None:
    """x as printed by _renderer, in text pieces and integers of the call (SymInt); None: no such form."""
    if isinstance(x, (str, int, float, bool)) or x is None:
        return [_as_text(x)]
    if isinstance(x, Numeric):
        if x.is_static:
            return [_as_text(_python_value(x))]
        return [x._v] if isinstance(x._v, SymInt) else None
    if isinstance(x, SymInt):
        return [x]
    if host_number(x) is not None and not isinstance(host_number(x), tuple):
        return _c_parts(host_number(x))
    if isinstance(x, tuple):
        out = ["("]
        for k, e in enumerate(x):
            p = _c_parts(e)
            if p is None:
                return None
            out += ([","] if k else []) + p
        return out + [")"]
    if hasattr(x, "__ww_int__") and not hasattr(x, "shape"):
        return _c_parts(x.__ww_int__())
    if isinstance(x, _core.Layout) and _core.symbols_of(x):  # printed as the call's layout shape:stride
        shape, stride = _c_parts(x.shape), _c_parts(x.stride)
        return None if shape is None or stride is None else shape + [":"] + stride
    if isinstance(x, (_core.Layout, _core.Swizzle)) or isinstance(x, _core.ComposedLayout) and not _core.symbols_of(x):
        return [str(x)]
    return None


def _c_form(fmt: str, args, percent: bool, end: str) -> list | None:
    parts = [_c_parts(a) for a in args]
    if any(p is None for p in parts):
        return None
    if percent:  # Python's %-formatting of the values: only where they are all fixed when tracing
        if any(not isinstance(q, str) for p in parts for q in p):
            return None
        try:
            return [fmt % tuple(_renderer(a, None)(None, None) for a in args) + end]
        except (TypeError, ValueError):  # the call raises it, with the user's line (HostPrint.text)
            return None
    pieces = fmt.split("{}")
    out = [pieces[0]]
    for piece, p in zip(pieces[1:], parts):
        out += p + [piece]
    return out + [end]


def host_printf(fmt, *args, end: str = "\n"):
    """cute.printf outside a kernel (see the module's text): recorded, and made at each call."""
    where = user_location(3)
    st = trace.current()
    if not isinstance(fmt, str):
        args = (fmt,) + args
        fmt = " ".join("{}" for _ in args)
    percent = "{}" not in fmt and bool(args)
    if not percent and fmt.count("{}") != len(args):
        raise DSLValueError(f"cute.printf: {fmt.count('{}')} placeholders for {len(args)} arguments", where)
    renderers = [_renderer(a, where) for a in args]
    st.host_actions.append(HostPrint(fmt, renderers, percent, end, _c_form(fmt, args, percent, end)))


def _call_values(compiled, args, kwargs):
    """The bound argument values of a call and the values of the host symbols they give."""
    values = compiled._bind(compiled.bound_self + tuple(args), kwargs)
    env = {}
    for plan in compiled.plans:
        v = values[plan.index]
        if not plan.symbol_env(v, env):  # a tensor argument that is none
            raise DSLTypeError(f"argument '{plan.name}' must be a tensor, got {type(v).__name__}", None)
    return values, env


def host_side(compiled, args, kwargs) -> bool:
    """Runs a call's host actions; True when its launches are not to be made (a compile-only run)."""
    session = compile_only.current()
    if session is not None and compiled.launches and session.on_launch == "stop":
        session.launch_reached(compiled)  # raises LaunchSkipped
    guards = getattr(compiled, "host_guards", None)
    if compiled.host_actions or guards:  # a compile-only call checks the guards a launching call checks
        values, env = _call_values(compiled, args, kwargs)
        program = getattr(compiled, "host_program", None)
        if program:
            program.run(values, env)
        if guards:
            check(guards, env)
        with call_slots():
            for action in compiled.host_actions:
                action.run(values, env)
    if session is not None and compiled.launches:
        session.launch_reached(compiled)
        return True
    return False


class HostPrintTensor:
    """One host cute.print_tensor of a tensor argument (or a view of one): its elements read from the
    argument's memory at each call, in the layout of the view."""

    def __init__(self, header: str, key, layout, offset, dtype=None):
        self.header = header
        self.key = key          # the argument: an index, or (index, k, ...) inside a list argument
        self.layout = layout
        self.offset = offset    # elements from the argument's first element (int or SymInt)
        self.dtype = dtype      # the elements' type (a pointer held by a JitArgument has none of its own)

    def _values(self, values, env):
        arg = None if isinstance(self.key, HostLocal) else argument_value(values, self.key)
        if arg is None or isinstance(arg, RuntimePointer):
            # A register tensor of the host side as the call has filled it, or memory a pointer argument points to.
            layout = _core.make_layout(_core.evaluate(self.layout.shape, env),
                                       stride=_core.evaluate(self.layout.stride, env))
            base = int(_core.evaluate(self.offset, env)) if not isinstance(self.offset, int) else self.offset
            mem = HostMemory(self.key, self.key.dtype if arg is None else self.dtype or arg.element_type, values, env)
            vals = [_python_value(mem.read(base + int(layout(i)))) for i in range(int(_core.product(layout.shape)))]
            return vals, layout.shape, layout
        v = values[self.key[0]] if isinstance(self.key, tuple) else values[self.key]
        for k in (self.key[1:] if isinstance(self.key, tuple) else ()):
            v = v[k]
        rt = v if isinstance(v, RuntimeTensor) else runtime_view(v)
        shape, stride = _core.evaluate(self.layout.shape, env), _core.evaluate(self.layout.stride, env)
        layout = _core.make_layout(shape, stride=stride)
        base = int(_core.evaluate(self.offset, env)) if not isinstance(self.offset, int) else self.offset
        n = int(_core.product(shape))
        offsets = [base + int(layout(i)) for i in range(n)]
        return _read_elements(rt, offsets), shape, layout

    def run(self, values, env) -> None:
        vals, shape, layout = self._values(values, env)
        flat = shape if isinstance(shape, tuple) else (shape,)
        dims = [int(_core.product(s)) for s in flat]
        rows = dims[0] if len(dims) > 1 else 1
        cols = max(1, len(vals) // max(rows, 1)) if len(dims) > 1 else len(vals)
        lines = [self.header.replace(str(self.layout), str(layout)) + " data="]  # with the call's extents
        for r in range(rows):
            row = [vals[r + rows * c] if len(dims) > 1 else vals[c] for c in range(cols)]
            lines.append("  [" + ", ".join(_as_text(x) for x in row) + "]")
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()


def _read_elements(rt, offsets):
    """The elements at these offsets (in elements from the tensor's first) of a host or torch tensor."""
    src = rt.source
    if src is None:
        raise DSLValueError("print_tensor: a fake tensor has no memory to print", None)
    top = max(offsets) + 1 if offsets else 1
    if is_torch_tensor(src):
        flat = src.as_strided((top,), (1,), src.storage_offset()).detach().cpu()
        if not rt.element_type.is_integer and not rt.element_type.is_boolean:
            flat = flat.float()
        return [flat[o].item() for o in offsets]
    import numpy as np

    if rt.device != "cpu":
        raise DSLValueError("print_tensor on the host reads host memory (NumPy arrays, torch tensors)", None)
    flat = np.lib.stride_tricks.as_strided(src, shape=(top,), strides=(src.itemsize,))
    return [flat[o].item() for o in offsets]


class HostPrintCoords(HostPrintTensor):
    """A host cute.print_tensor of a coordinate (identity) tensor: its coordinates, with the call's extents."""

    def __init__(self, header: str, layout, base):
        super().__init__(header, None, layout, 0)
        self.base = base

    def _values(self, values, env):
        shape = _core.evaluate(self.layout.shape, env)
        layout = _core.make_layout(shape, stride=self.layout.stride)
        base = self.base if not _core.symbols_of(self.base) else _core.evaluate(self.base, env)
        n = int(_core.product(shape))
        return [_coordinate_text(_add_coords(base, layout(i))) for i in range(n)], shape, layout


def _add_coords(a, b):
    if isinstance(a, tuple) or isinstance(b, tuple):
        a = a if isinstance(a, tuple) else ()
        b = b if isinstance(b, tuple) else ()
        return tuple(_add_coords(a[i] if i < len(a) else 0, b[i] if i < len(b) else 0)
                     for i in range(max(len(a), len(b))))
    return int(a) + int(b)


def _coordinate_text(c) -> str:
    return "(" + ",".join(_coordinate_text(x) for x in c) + ")" if isinstance(c, tuple) else str(c)


def host_print_tensor(tensor, verbose: bool = False) -> None:
    """cute.print_tensor outside a kernel: the elements of a tensor argument (or a view of one) are read from its
    memory and printed at each call; verbose is accepted and prints the same."""
    where = user_location(3)
    st = trace.current()
    it = getattr(tensor, "iterator", None)
    if isinstance(tensor, Tensor) and tensor.is_coordinate_tensor and isinstance(tensor.layout, _core.Layout):
        st.host_actions.append(HostPrintCoords(tensor.type, tensor.layout, it.base))
        return
    if isinstance(tensor, Tensor) and isinstance(it, Pointer) and isinstance(it.base, HostLocal):
        st.host_actions.append(HostPrintTensor(tensor.type, it.base, tensor.layout, it.offset))
        return
    if not isinstance(tensor, Tensor) or not isinstance(it, Pointer) or it.host is None:
        raise DSLTypeError("cute.print_tensor on the host prints a tensor argument of the @cute.jit function (or a "
                           "view of one); this tensor is made in device code", where)
    if not isinstance(tensor.layout, _core.Layout):
        raise DSLTypeError(f"cute.print_tensor on the host: the layout {tensor.layout} is not a plain layout",
                           where)
    st.host_actions.append(HostPrintTensor(tensor.type, it.host, tensor.layout, it.offset, it.dtype))
