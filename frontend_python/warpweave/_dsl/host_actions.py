"""Host-side work of a @cute.jit function, done at each call of the compiled function: `cute.printf` outside a
kernel.

A @cute.jit function's host side is not compiled to machine code here: it is traced once, and what it does at
run time is recorded (kernel launches in the launch plan, host prints here). A host `cute.printf` prints at each
call, with the call's values: static values are fixed when tracing; runtime integers (Int32/Int64 arguments,
dynamic extents and strides of tensors) and the layouts made of them are evaluated from the call's arguments;
runtime scalars (Float32 arguments, ...) print their value. A value computed by device code, or a tensor's
elements, cannot be printed from the host (an error at the call of cute.printf names the line). Python's own
`print` inside a @cute.jit function runs while tracing, so it shows runtime values as `?`.

The prints of a call are made before its kernels are launched; what the kernels print appears when the device
is synchronised, after them.
"""
from __future__ import annotations

import sys

from .. import _core
from .errors import DSLTypeError, DSLValueError, user_location
from .numeric import HostRef, Numeric, SymInt


class HostPrint:
    """One host cute.printf: text pieces and the renderers of its values."""

    def __init__(self, fmt: str, renderers: list, percent: bool, end: str):
        self.fmt = fmt
        self.renderers = renderers
        self.percent = percent
        self.end = end

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


def host_printf(fmt, *args, end: str = "\n"):
    """cute.printf outside a kernel (see the module's text): recorded, and made at each call."""
    from . import trace

    where = user_location(3)
    st = trace.current()
    if not isinstance(fmt, str):
        args = (fmt,) + args
        fmt = " ".join("{}" for _ in args)
    percent = "{}" not in fmt and bool(args)
    if not percent and fmt.count("{}") != len(args):
        raise DSLValueError(f"cute.printf: {fmt.count('{}')} placeholders for {len(args)} arguments", where)
    renderers = [_renderer(a, where) for a in args]
    st.host_actions.append(HostPrint(fmt, renderers, percent, end))


def _call_values(compiled, args, kwargs):
    """The bound argument values of a call and the values of the host symbols they give."""
    from .arg_plan import _runtime_view
    from .runtime import RuntimeTensor

    values = compiled._bind(compiled.bound_self + tuple(args), kwargs)
    env = {}
    for plan in compiled.plans:
        v = values[plan.index]
        if plan.kind == "tensor":
            rt = v if isinstance(v, RuntimeTensor) else _runtime_view(v)
            if rt is None:
                raise DSLTypeError(f"argument '{plan.name}' must be a tensor, got {type(v).__name__}", None)
            for sid, what, k in plan.symbols:
                env[sid] = rt.shape[k] if what == "shape" else rt.stride[k]
        elif plan.kind == "int":
            env[plan.symbols[0]] = int(v.value if isinstance(v, Numeric) else v)
    return values, env


def host_side(compiled, args, kwargs) -> bool:
    """Runs a call's host actions; True when its launches are not to be made (a compile-only run)."""
    from . import compile_only

    session = compile_only.current()
    if session is not None and compiled.launches and session.on_launch == "stop":
        session.launch_reached(compiled)  # raises LaunchSkipped
    if compiled.host_actions:
        values, env = _call_values(compiled, args, kwargs)
        for action in compiled.host_actions:
            action.run(values, env)
    if session is not None and compiled.launches:
        session.launch_reached(compiled)
        return True
    return False
