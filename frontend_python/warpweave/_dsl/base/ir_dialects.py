"""The `vector`, `math` and `scf` dialects as user code writes them (`cutlass._mlir.dialects.vector` / `math` /
`scf`), and MLIR's insertion points for the regions of scf ops.

Ops are checked as in ir_ops.py (operand kinds, positions inside the vector, a yield's types against the op's
results) at the user's line. The regions of `scf.IfOp` / `scf.ForOp` follow MLIR's Python API: the op is made,
then filled `with ir.InsertionPoint(op.then_block)` / `(op.body)` and closed by `scf.yield_`. The builder writes
an op after its regions, so an scf op here is written when its last block closes; its `results` exist from then
(reading them before is an error at that line, as it would be a use before definition).
"""
from __future__ import annotations

import re

from . import trace
from .errors import DSLAttributeError, DSLTypeError, DSLValueError, user_location
from .ir_ops import caller_location, check_kind
from .ir_values import FloatType, IndexType, IntegerType, Type, Value, VectorType, bit_width, emit, operand, wrap

_as_operand = operand


def unknown_op(dialect: str, name: str, known=()):
    """The error for `dialect.name` where the dialect has no such op (a dialect module's `__getattr__` raises it): at
    the user's line, and an AttributeError, so that `hasattr` reads the op as absent; never an op that MLIR's parser
    would refuse later, far from that line."""
    near = [k for k in known if k.startswith(name[:3])][:6]
    hint = f" (near: {', '.join(near)})" if near else ""
    return DSLAttributeError(f"{dialect}.{name}: warpweave's {dialect} dialect has no op {name!r}{hint}",
                             user_location(3))


# --- vector -------------------------------------------------------------------------------------------------

def _vector(v, what):
    v = operand(v, what)
    if not VectorType.isinstance(v.type):
        raise DSLTypeError(f"{what} must be a vector, got a value of type {v.type}", caller_location())
    return v


def _static_positions(vt: VectorType, dynamic_position, static_position, name):
    if dynamic_position:
        raise DSLValueError(f"{name}: dynamic positions are not supported; give static_position", caller_location())
    pos = [static_position] if isinstance(static_position, int) else list(static_position)
    shape = vt.shape
    if len(pos) > len(shape) or not all(isinstance(p, int) and 0 <= p < n for p, n in zip(pos, shape)):
        raise DSLValueError(f"{name}: position {pos} is outside {vt}", caller_location())
    rest = shape[len(pos):]
    result = VectorType.get(rest, vt.element_type) if rest else vt.element_type
    return pos, result


def extract(source, dynamic_position=(), static_position=(), *, results=None, loc=None, ip=None) -> Value:
    v = _vector(source, "vector.extract's source")
    pos, t = _static_positions(VectorType(v.type), dynamic_position, static_position, "vector.extract")
    if results is not None and Type(results[0]) != t:
        raise DSLTypeError(f"vector.extract: position {pos} of {v.type} is {t}, not {Type(results[0])}", caller_location())
    return emit("vector.extract", [v], [t], "static_position = array<i64: " + ", ".join(map(str, pos)) + ">")[0]


def insert(value_to_store, dest, dynamic_position=(), static_position=(), *, results=None, loc=None,
           ip=None) -> Value:
    d = _vector(dest, "vector.insert's destination")
    x = operand(value_to_store, "vector.insert's value")
    pos, t = _static_positions(VectorType(d.type), dynamic_position, static_position, "vector.insert")
    if x.type != t:
        raise DSLTypeError(f"vector.insert: position {pos} of {d.type} holds {t}, the value is {x.type}", caller_location())
    return emit("vector.insert", [x, d], [d.type], "static_position = array<i64: " + ", ".join(map(str, pos)) + ">")[0]


def from_elements(dest, elements, *, loc=None, ip=None) -> Value:
    t = Type(dest)
    if not VectorType.isinstance(t):
        raise DSLTypeError(f"vector.from_elements makes a vector, not {t}", caller_location())
    vt = VectorType(t)
    xs = [operand(e, "a vector element") for e in elements]
    n = 1
    for k in vt.shape:
        n *= k
    if len(xs) != n:
        raise DSLValueError(f"vector.from_elements: {vt} has {n} elements, {len(xs)} given", caller_location())
    for x in xs:
        if x.type != vt.element_type:
            raise DSLTypeError(f"vector.from_elements: the elements of {vt} are {vt.element_type}, got {x.type}",
                               caller_location())
    return emit("vector.from_elements", xs, [vt], "")[0]


def bitcast(result, source, *, loc=None, ip=None) -> Value:
    v = _vector(source, "vector.bitcast's source")
    t = Type(result)
    if not VectorType.isinstance(t):
        raise DSLTypeError(f"vector.bitcast makes a vector, not {t} (llvm.bitcast for a scalar)", caller_location())
    a, b = VectorType(v.type), VectorType(t)
    wa = a.shape[-1] * (bit_width(a.element_type) or 0)
    wb = b.shape[-1] * (bit_width(b.element_type) or 0)
    if a.shape[:-1] != b.shape[:-1] or wa != wb or wa == 0:
        raise DSLTypeError(f"vector.bitcast keeps the bits: {a} to {b} changes them", caller_location())
    return emit("vector.bitcast", [v], [b], "")[0]


def broadcast(vector, source, *, loc=None, ip=None) -> Value:
    t = Type(vector)
    if not VectorType.isinstance(t):
        raise DSLTypeError(f"vector.broadcast makes a vector, not {t}", caller_location())
    x = operand(source, "vector.broadcast's source")
    if x.type != VectorType(t).element_type:
        raise DSLTypeError(f"vector.broadcast: {t} holds {VectorType(t).element_type}, the value is {x.type}",
                           caller_location())
    return emit("vector.broadcast", [x], [t], "")[0]


splat = broadcast

_REDUCTION_KINDS = {"add": "add", "mul": "mul", "minui": "minui", "minsi": "minsi", "minnumf": "minnumf",
                    "maxui": "maxui", "maxsi": "maxsi", "maxnumf": "maxnumf", "and": "and", "or": "or",
                    "xor": "xor", "minimumf": "minimumf", "maximumf": "maximumf"}


class CombiningKind:
    """vector.reduction's kinds, by their MLIR names."""
    ADD, MUL, MINUI, MINSI, MINNUMF, MAXUI, MAXSI, MAXNUMF, AND, OR, XOR, MINIMUMF, MAXIMUMF = (
        "add", "mul", "minui", "minsi", "minnumf", "maxui", "maxsi", "maxnumf", "and", "or", "xor", "minimumf",
        "maximumf")


def reduction(dest, kind, vector, *, acc=None, fastmath=None, loc=None, ip=None) -> Value:
    v = _vector(vector, "vector.reduction's vector")
    k = str(getattr(kind, "name", kind)).lower()
    if k not in _REDUCTION_KINDS:
        raise DSLValueError(f"vector.reduction: unknown kind {kind!r} (one of {', '.join(_REDUCTION_KINDS)})",
                            caller_location())
    t = Type(dest)
    if t != VectorType(v.type).element_type:
        raise DSLTypeError(f"vector.reduction of {v.type} gives {VectorType(v.type).element_type}, not {t}",
                           caller_location())
    ops = [v] + ([operand(acc)] if acc is not None else [])
    return emit("vector.reduction", ops, [t], f"kind = #vector.kind<{_REDUCTION_KINDS[k]}>")[0]


# --- math ---------------------------------------------------------------------------------------------------

def _fastmath(flag) -> str:
    if flag in (None, False):
        return ""
    text = "fast" if flag is True else str(getattr(flag, "name", flag))
    if not re.fullmatch(r"[a-z ,]+", text):
        raise DSLValueError(f"fastmath flags are MLIR's arith.fastmath names (fast, afn, ...), got {flag!r}",
                            caller_location())
    return f"fastmath = #arith.fastmath<{text}>"


def _math_unary(name: str, kind: str = "float"):
    # the parameter is named as the generated builder names it (`math.exp(operand=v)`), shadowing ir_values'
    # operand() here: _as_operand is that
    def op(operand, *, fastmath=None, results=None, loc=None, ip=None):
        a = _as_operand(operand, f"{name}'s operand")
        check_kind(name, a.type, kind)
        return emit(name, [a], [a.type], _fastmath(fastmath) if kind == "float" else "")[0]
    op.__name__ = name.split(".")[1]
    return op


def _math_binary(name: str):
    def op(lhs, rhs, *, fastmath=None, results=None, loc=None, ip=None):
        a, b = operand(lhs, f"{name}'s lhs"), operand(rhs, f"{name}'s rhs")
        if a.type != b.type:
            raise DSLTypeError(f"{name}: operands of one type expected, got {a.type}, {b.type}", caller_location())
        check_kind(name, a.type, "float")
        return emit(name, [a, b], [a.type], _fastmath(fastmath))[0]
    op.__name__ = name.split(".")[1]
    return op


def fma(a, b, c, *, fastmath=None, results=None, loc=None, ip=None) -> Value:
    xs = [operand(x, "math.fma's operand") for x in (a, b, c)]
    if len({x.type for x in xs}) != 1:
        raise DSLTypeError(f"math.fma: operands of one type expected, got {', '.join(str(x.type) for x in xs)}",
                           caller_location())
    check_kind("math.fma", xs[0].type, "float")
    return emit("math.fma", xs, [xs[0].type], _fastmath(fastmath))[0]


MATH_UNARY = ["absf", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan",
              "tanh", "sinh", "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "erf", "erfc", "cbrt",
              "floor", "ceil", "trunc", "round", "roundeven"]
MATH_INT_UNARY = ["absi", "ctpop", "ctlz", "cttz"]
MATH_BINARY = ["atan2", "copysign", "powf"]
math_ops = {n: _math_unary(f"math.{n}") for n in MATH_UNARY}
math_ops.update({n: _math_unary(f"math.{n}", "int") for n in MATH_INT_UNARY})
math_ops.update({n: _math_binary(f"math.{n}") for n in MATH_BINARY})
math_ops["fma"] = fma


# --- insertion points and scf -------------------------------------------------------------------------------

class Block:
    """A block of an scf op being built: its arguments exist while it is the insertion point."""

    def __init__(self, owner, arg_types):
        self.owner = owner
        self.arg_types = [Type(t) for t in arg_types]
        self.arguments = None
        self.done = False

    def _enter(self, where):
        if self.done:
            raise DSLValueError("this block was already filled: an scf op's block is entered once", where)
        if self.owner.written:
            raise DSLValueError("the op of this block is already written", where)
        b = trace.builder()
        self.owner.check_next(self, where)
        ids = b.begin_region([t.text for t in self.arg_types])
        self.arguments = [wrap(i, t) for i, t in zip(ids, self.arg_types)]
        self.yielded = None

    def _exit(self, where):
        if self.yielded is None:
            if self.owner.result_types:
                raise DSLValueError(f"this block of {self.owner.name} ends without scf.yield_ of its "
                                    f"{len(self.owner.result_types)} result(s)", where)
            trace.builder().op0("scf.yield", [])
        trace.builder().end_region()
        self.done = True
        self.owner.block_closed(where)


class InsertionPoint:
    """`with ir.InsertionPoint(block):` the ops written inside go into that block of an scf op. `ip=` arguments are
    accepted and need no effect: ops always go to the insertion point of the user's `with`."""

    _stack: list = []

    def __init__(self, block=None):
        self.block = block

    @staticmethod
    def at_block_begin(block):
        return InsertionPoint(block)

    @staticmethod
    def at_block_terminator(block):
        return InsertionPoint(block)

    def __enter__(self):
        if isinstance(self.block, Block):
            self.block._enter(user_location(2))
        InsertionPoint._stack.append(self)
        return self

    def __exit__(self, exc_type, exc, tb):
        InsertionPoint._stack.pop()
        if isinstance(self.block, Block) and exc_type is None:
            self.block._exit(user_location(2))
        elif isinstance(self.block, Block):
            trace.builder().end_region()  # keep the builder's regions balanced while the error unwinds
        return False

    @staticmethod
    def current_block():
        return InsertionPoint._stack[-1].block if InsertionPoint._stack else None


class _RegionOp:
    name = ""

    def __init__(self, result_types, blocks):
        self.result_types = [Type(t) for t in result_types]
        self._blocks = blocks
        self._results = None
        self.written = False
        self._operands = []
        self._properties = ""

    def check_next(self, block, where):
        for b in self._blocks:
            if b is block:
                return
            if not b.done:
                raise DSLValueError(f"{self.name}: fill its blocks in order", where)

    def block_closed(self, where):
        if all(b.done for b in self._blocks):
            self._results = emit(self.name, self._operands, self.result_types, self._properties,
                                 num_regions=len(self._blocks))
            self.written = True

    @property
    def results(self):
        if self._results is None:
            raise DSLValueError(f"{self.name}'s results exist once its blocks are filled", user_location(2))
        return self._results

    @property
    def result(self):
        r = self.results
        if len(r) != 1:
            raise DSLValueError(f"{self.name} has {len(r)} results, not one", user_location(2))
        return r[0]


class IfOp(_RegionOp):
    """scf.if: `then_block` (and `else_block` with has_else, required when it has results)."""
    name = "scf.if"

    def __init__(self, cond, results_=None, *, has_else=False, loc=None, ip=None):
        c = operand(cond, "scf.if's condition")
        if c.type != Type("i1"):
            raise DSLTypeError(f"scf.if's condition is i1, got {c.type}", user_location(2))
        results_ = list(results_ or [])
        if results_ and not has_else:
            raise DSLValueError("scf.if with results needs has_else=True: both branches yield them", user_location(2))
        self.then_block = Block(self, [])
        self.else_block = Block(self, [])
        super().__init__(results_, [self.then_block, self.else_block])
        self._operands = [c]
        if not has_else:
            self.else_block.done = True  # written empty: the builder takes an empty region for a missing else

    def block_closed(self, where):
        if not self.written and self.then_block.done and self.else_block.done and self.else_block.arguments is None:
            b = trace.builder()  # the else region that was never entered: an empty one, as MLIR prints it
            b.begin_region([])
            b.op0("scf.yield", [])
            b.end_region()
        super().block_closed(where)


class ForOp(_RegionOp):
    """scf.for over [lower, upper) by step (index or integer values), with loop-carried `iter_args`."""
    name = "scf.for"

    def __init__(self, lower_bound, upper_bound, step, iter_args=None, *, loc=None, ip=None):
        bounds = [operand(x, "scf.for's bound") for x in (lower_bound, upper_bound, step)]
        t = bounds[0].type
        if any(x.type != t for x in bounds) or not (IntegerType.isinstance(t) or IndexType.isinstance(t)):
            raise DSLTypeError(f"scf.for's bounds and step are of one integer or index type, got "
                               f"{', '.join(str(x.type) for x in bounds)}", user_location(2))
        carried = [operand(x, "scf.for's iter_arg") for x in (iter_args or [])]
        self.body = Block(self, [t] + [x.type for x in carried])
        super().__init__([x.type for x in carried], [self.body])
        self._operands = bounds + carried

    @property
    def induction_variable(self):
        return self._arguments()[0]

    @property
    def inner_iter_args(self):
        return self._arguments()[1:]

    def _arguments(self):
        if self.body.arguments is None:
            raise DSLValueError("scf.for's block arguments exist inside `with ir.InsertionPoint(op.body)`",
                                user_location(3))
        return self.body.arguments


def yield_(results_=(), *, loc=None, ip=None):
    """scf.yield: ends the current block of an scf op with its values (of the op's result types)."""
    where = user_location(2)
    block = InsertionPoint.current_block()
    if not isinstance(block, Block) or block.done:
        raise DSLValueError("scf.yield_ outside the block of an scf op (`with ir.InsertionPoint(op.then_block)`)",
                            where)
    if block.yielded is not None:
        raise DSLValueError("scf.yield_ twice in one block", where)
    vals = [operand(v, "a yielded value") for v in results_]
    want = block.owner.result_types
    if [v.type for v in vals] != want:
        raise DSLTypeError(f"scf.yield_ of ({', '.join(str(v.type) for v in vals)}) in {block.owner.name} with "
                           f"results ({', '.join(str(t) for t in want)})", where)
    trace.builder().op0("scf.yield", [v.use() for v in vals])
    block.yielded = vals


def if_(results_, condition, *, loc=None, ip=None):
    """scf.if_ (the generated builder's spelling): the op, to fill through its blocks."""
    return IfOp(condition, results_, has_else=bool(results_))


def for_(start, stop, step, iter_args=None, *, loc=None, ip=None):
    """scf.for_ (the generated builder's spelling and parameter names): the loop op, to fill through its body."""
    return ForOp(start, stop, step, iter_args)


__all__ = ["Block", "CombiningKind", "ForOp", "IfOp", "InsertionPoint", "bitcast", "broadcast", "extract", "fma",
           "from_elements", "insert", "math_ops", "reduction", "splat", "unknown_op", "yield_"]
