"""The host program of a @cute.jit function: what its host side computes from runtime values at each call.

A @cute.jit function's host side is traced once. Where it computes with values that only a call knows (dynamic
extents and strides, Int32 and Float32 arguments) it may branch on them, take minima, cast, and pass the results
to kernel launches, as CuTe DSL's compiled host code does. Each such result is a *derived value*: a postfix
program over the call's symbols and scalar arguments, run at each call before the launches, in order. An integer
result is a fresh host symbol (so layouts, grids and kernel parameters built on it are ordinary symbolic
integers); a float result is a kernel parameter; a Boolean result can be the predicate of the launches and host
actions recorded under an `if` on it.

One program text serves every path of a call: the general Python call evaluates it here (`run`), the native fast
path (bindings/fast_call.hpp) evaluates the same operations in C++, and the JIT cache stores it as it is. The
operations follow the static (Python) arithmetic of the DSL's numbers: integer results wrap to their type's width,
Float32 results are rounded to single precision, division by zero is an error of the call.
"""
from __future__ import annotations

import ast
import math
import struct
from dataclasses import dataclass

from ... import _core
from ..base import trace
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..values.numeric import HostRef, Numeric, SymInt
from ..values.value_tree import tree_element

# The program's operations are numeric.py's names of them (add, lt, select, cast, ...; comparisons leave 0 or 1),
# evaluated by run_code here, by bindings/host_program_eval.cpp and by export/host_program_c.py alike.
_PY_BINARY = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.FloorDiv: "floordiv", ast.Mod: "mod",
              ast.BitXor: "xor"}


def type_code(t) -> str:
    """How the program types a value of numeric type t: 'i<bits>' / 'u<bits>' (wrapped to the width), 'f32'
    (rounded to single precision), 'f64', 'b'; '' where it has no rule (its values are not expressible)."""
    if t.is_boolean:
        return "b"
    if t.is_integer:
        return ("i" if t.signed else "u") + str(t.width)
    if t.is_float and t.__name__ in ("Float32", "Float64"):
        return f"f{t.width}"
    return ""


class Unexpressible(Exception):
    """A host value the program cannot express (an element read from a tensor, a type it has no rule for)."""


def _symint_code(x, out: list) -> None:
    """A symbolic integer as program operations (its Python form, _core.python_expr, read back)."""
    if isinstance(x, int):
        out.append(("const", int(x)))
        return
    src = _core.python_expr(x, "s")
    tree = ast.parse(src, mode="eval").body

    def emit(node):
        if isinstance(node, ast.Constant) and type(node.value) is int:
            out.append(("const", node.value))
        elif isinstance(node, ast.Name) and node.id.startswith("s") and node.id[1:].isdigit():
            out.append(("sym", int(node.id[1:])))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            emit(node.operand)
            out.append(("neg", 0))
        elif isinstance(node, ast.BinOp) and type(node.op) in _PY_BINARY:
            emit(node.left)
            emit(node.right)
            out.append((_PY_BINARY[type(node.op)], 0))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("min", "max"):
            emit(node.args[0])
            for a in node.args[1:]:
                emit(a)
                out.append((node.func.id, 0))
        else:
            raise Unexpressible(f"the symbolic integer {src}")
    emit(tree)


def code_of(x, out: list) -> None:
    """Appends the operations computing Numeric x (static, symbolic, a scalar argument or a host value)."""
    t = type(x)
    tc = type_code(t)
    if not tc:
        raise Unexpressible(f"a host value of type {t.__name__}")
    v = x._v
    if x.is_static:
        out.append(("const", bool(v) if t.is_boolean else (float(v) if t.is_float else int(v))))
        return
    if isinstance(v, SymInt):
        _symint_code(v, out)
        out.append(("cast", tc))
        return
    if type(v) is HostRef:  # a scalar argument of the call
        out.append(("arg", v.arg_index))
        out.append(("cast", tc))
        return
    if getattr(v, "sid", None) is not None:  # already a value of the program
        out.append(("sym", v.sid))
        return
    op = getattr(v, "op", None)
    if op is None:
        raise Unexpressible("a number read from a tensor's elements")
    name, operand = op[0], (op[1] if len(op) > 1 else 0)
    if name == "cast":  # numeric.py names the type converted to; the program its typing
        operand = type_code(operand)
        if not operand:
            raise Unexpressible(f"a conversion to {op[1].__name__}")
    elif name == "invert":  # ~ of a Boolean; a bitwise complement has no operation here
        if not t.is_boolean:
            raise Unexpressible("a bitwise complement")
        name = "not"
    for a in v.args:
        code_of(a, out)
    out.append((name, operand))
    if name != "cast":
        out.append(("cast", tc))


@dataclass
class Derived:
    """One value of the host program: `code` run at each call gives the value of host symbol `sid`. A value made
    inside host branches is computed only when the call takes them (every symbol of `guards` non-zero), and is 0
    otherwise: `n // d` under `if d > 0:` does not divide by zero when d is 0."""
    kind = "value"
    sid: int
    type_code: str
    code: list
    where: tuple | None = None
    guards: tuple = ()


class HostProgram:
    """The derived values of a compiled function, in the order they were made (a value uses earlier ones)."""

    def __init__(self, entries=()):
        self.entries: list[Derived] = list(entries)

    def __bool__(self):
        return bool(self.entries)

    @property
    def has_loops(self) -> bool:
        """Whether it runs host loops (host_loop.py): the Python call, the native path (host_program_run.cpp) and
        exported C (export/host_program_c.py) run them; the JIT cache stores them (host_loop.stored_program)."""
        return any(d.kind == "loop" for d in self.entries)

    def run(self, values, env: dict, scalars: dict | None = None) -> None:
        """Computes every derived value of a call, from the call's argument values and the symbols its arguments
        give: integers and Booleans into env (symbol id -> value), every value into scalars under
        ("derived", id), where the kernel parameters they are read from."""
        for d in self.entries:
            if d.kind == "loop":  # host_loop.py: its carried values, after its trips
                d.run(values, env, scalars)
                continue
            if d.guards and not all(env[g] for g in d.guards):
                v = 0.0 if d.type_code[0] == "f" else 0
            else:
                try:
                    v = run_code(d.code, values, env)
                except DSLValueError as e:
                    raise DSLValueError(str(e), d.where) from None
            if d.type_code[0] != "f":
                v = int(v)
                env[d.sid] = v
            if scalars is not None:
                scalars[("derived", d.sid)] = v

    def stored(self) -> list:
        return [{"sid": d.sid, "type_code": d.type_code, "code": [list(c) for c in d.code], "where": d.where,
                 "guards": list(d.guards)} for d in self.entries]

    @classmethod
    def from_stored(cls, items) -> "HostProgram":
        return cls(Derived(i["sid"], i["type_code"], [tuple(c) for c in i["code"]],
                           tuple(i["where"]) if i["where"] else None, tuple(i.get("guards", ()))) for i in items)


def _wrap(v: int, bits: int, signed: bool) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >> (bits - 1) else v


def cast(v, tc: str):
    """v converted to the typing tc, as the DSL's static conversions do (C's truncation toward zero)."""
    if tc == "b":
        return bool(v)
    if tc[0] == "f":
        f = float(v)
        return struct.unpack("f", struct.pack("f", f))[0] if tc == "f32" and math.isfinite(f) and \
            abs(f) <= 3.4028234663852886e38 else (f if tc == "f64" or not math.isfinite(f) else math.copysign(
                math.inf, f))
    if isinstance(v, float):
        if not math.isfinite(v):
            raise DSLValueError(f"a host value {v} does not convert to an integer", None)
        v = int(v)  # truncates toward zero
    return _wrap(int(v), int(tc[1:]), tc[0] == "i")


def _binary(op: str, a, b):
    if op == "add": return a + b  # noqa: E701
    if op == "sub": return a - b  # noqa: E701
    if op == "mul": return a * b  # noqa: E701
    if op == "min": return a if a <= b else b  # noqa: E701
    if op == "max": return a if a >= b else b  # noqa: E701
    if op in ("lt", "le", "gt", "ge", "eq", "ne"):
        return int({"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b, "eq": a == b, "ne": a != b}[op])
    if op == "truediv":
        if b == 0:
            if isinstance(a, float) or isinstance(b, float):
                return math.copysign(math.inf, a) * math.copysign(1.0, b) if a else math.nan
            raise DSLValueError("host-side division by zero", None)
        return a / b
    if op in ("floordiv", "mod"):
        if b == 0:
            raise DSLValueError(f"host-side {'division' if op == 'floordiv' else 'modulo'} by zero (a runtime value "
                                "of this call is zero)", None)
        if isinstance(a, float) or isinstance(b, float):
            q = a / b
            return (float(math.floor(q)) if math.isfinite(q) else q) if op == "floordiv" else math.fmod(a, b)
        return a // b if op == "floordiv" else a % b
    a, b = int(a), int(b)
    if op == "and": return a & b  # noqa: E701
    if op == "or": return a | b  # noqa: E701
    if op == "xor": return a ^ b  # noqa: E701
    if op == "shl": return a << b if 0 <= b < 64 else 0  # noqa: E701
    if op == "shr": return a >> b if b >= 0 else 0  # noqa: E701
    raise AssertionError(op)


def _element(values, path):
    """The number at `path` of the call's arguments: an element of a list, tuple or dataclass argument, at any
    depth (its plan's index, call/arg_tensor.py's TreeArg: the argument's position, then the element's at each
    level)."""
    v = values
    for k in path:
        v = tree_element(v, k)
    return v


def run_code(code, values, env):
    st: list = []
    for op, x in code:
        if op == "const":
            st.append(x)
        elif op == "sym":
            st.append(env[x])
        elif op == "arg":
            a = values[x] if isinstance(x, int) else _element(values, x)
            st.append(a.value if isinstance(a, Numeric) else a)
        elif op == "cast":
            st[-1] = cast(st[-1], x)
        elif op == "neg":
            st[-1] = -st[-1]
        elif op == "abs":
            st[-1] = abs(st[-1])
        elif op == "not":
            st[-1] = int(not st[-1])
        elif op in ("ctlz", "cttz", "popc"):  # bit counts of an x-bit integer (its bits as unsigned)
            v = int(st[-1]) & ((1 << x) - 1)
            st[-1] = x - v.bit_length() if op == "ctlz" else (x if v == 0 else (v & -v).bit_length() - 1) \
                if op == "cttz" else bin(v).count("1")
        elif op == "select":
            b, a, c = st.pop(), st.pop(), st.pop()
            st.append(a if c else b)
        else:
            b = st.pop()
            st[-1] = _binary(op, st[-1], b)
    return st[0]


# --- made while tracing ------------------------------------------------------------------------------------------

def program_of(st) -> HostProgram:
    """The host program a trace is making."""
    prog = getattr(st, "host_program", None)
    if prog is None:
        prog = st.host_program = HostProgram()
    return prog


def derive_id(x: Numeric, where=None, what: str = "used by the compiled host code") -> int:
    """A fresh host symbol whose value at each call is x's: its id. Its value for the arguments being compiled
    for is kept too, where known, so that a comparison of it can still be decided for code that asks Python for a
    truth value (host_guards.py)."""
    st = trace.current()
    t = type(x)
    code: list = []
    try:
        code_of(x, code)
    except Unexpressible as e:
        raise DSLTypeError(f"host code: {e} cannot be {what} at each call; compute it in the kernel",
                           where or user_location(3)) from None
    sid = st.next_host_symbol
    st.next_host_symbol += 1
    bits = 64 if t.width == 64 else 32
    st.host_symbols[sid] = trace.HostSymbol(sid, None, ("derived", type_code(t)), bits, 1, f"h{sid}")
    program_of(st).entries.append(Derived(sid, type_code(t), code, where, tuple(st.__dict__.get("host_branches", ()))))
    if type(x._v) is not HostRef and not isinstance(x._v, SymInt) and not t.is_float:
        x._v.sid = sid  # later uses of the same host value read the symbol (floats are recomputed)
    known = _known_value(st, code)
    if known is not None:
        st.host_values[sid] = known
    return sid


def derive(x: Numeric, where=None) -> SymInt:
    """x (a host value of an integer or Boolean type) as a runtime integer of the algebra: a derived symbol."""
    sid = derive_id(x, where)
    return _core.SymInt.symbol(sid, divisibility=1, nonneg=False, bits=64 if type(x).width == 64 else 32,
                               name=f"h{sid}")


def _known_value(st, code):
    syms = {x for op, x in code if op == "sym"}
    if any(op == "arg" for op, _ in code) or any(s not in st.host_values for s in syms):
        return None
    try:
        return run_code(code, (), {s: st.host_values[s] for s in syms})
    except (DSLValueError, KeyError, ZeroDivisionError, OverflowError):
        return None


def predicate_symbol(cond: Numeric, where) -> int:
    """The id of the derived symbol that launches and host actions under a host `if` are predicated on."""
    return derive_id(cond, where, "a branch condition of the compiled host code")
