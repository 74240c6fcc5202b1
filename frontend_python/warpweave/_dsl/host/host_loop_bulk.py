"""A host loop whose body copies elements (host_loop.py), run for many trips at once.

CuTe DSL's scale-factor conversions copy a whole tensor in a host loop, one element a trip, at offsets that are
integer expressions of the loop variable (`dst[src.layout.get_hier_coord(i)] = src[...]`): millions of
trips for a GEMM's scale factors. Run one trip at a time in Python, that would take minutes; here each offset
expression is evaluated for a block of trips at once (NumPy arrays of the loop variable's values, with the same
floor division and modulo as the symbolic algebra), and the elements move as bytes, gathered and scattered.

The bulk way is taken only where it gives what trips one by one give: each store writes the value its trip's load
read, of the same element type (the same bytes), the memories are host memory of the call's arguments, and the
stores do not write memory that the loads read (where they might, trips run one by one).
"""
from __future__ import annotations

import ast

from ... import _core
from ..base.errors import DSLValueError
from ..values.numeric import Numeric, SymInt
from .host_values import HostLoad, HostLocal, HostMemory, HostStore, HostValue

TRIPS_AT_ONCE = 1 << 18
_SIZES = (1, 2, 4, 8)


def _numpy():
    import numpy

    return numpy


_BINARY = {ast.Add: "add", ast.Sub: "subtract", ast.Mult: "multiply", ast.FloorDiv: "floor_divide",
           ast.Mod: "mod"}


def _supported(node) -> bool:
    """Whether _Offsets evaluates this node of an offset's Python form (else its trips run one by one)."""
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Name) and node.func.id in ("min", "max") and not node.keywords
    return isinstance(node, (ast.Constant, ast.Name, ast.BinOp, ast.UnaryOp, ast.Load, ast.USub)) or \
        type(node) in _BINARY


class _Offsets:
    """An element offset as a function of the loop variable's values (a NumPy array) and the call's symbols: the
    algebra's Python form of it, evaluated node by node, each distinct subexpression once per block of trips (the
    offsets of one copy's load and store share most of theirs: the loop variable's coordinates)."""

    def __init__(self, offset, iv_sid):
        self.const = offset if isinstance(offset, int) else None
        self.supported = True
        if self.const is None:
            self.tree = ast.parse(_core.python_expr(offset, "s"), mode="eval").body
            self.iv = f"s{iv_sid}"
            self.supported = all(_supported(n) for n in ast.walk(self.tree))

    def at(self, np, trips, env, memo: dict):
        """The offsets of these trips (trips: a NumPy array of the loop variable's values); memo: the values of
        the subexpressions evaluated for these trips so far."""
        if self.const is not None:
            return np.full(trips.shape, self.const, dtype=np.int64)
        out = self._node(np, self.tree, trips, env, memo)
        return np.broadcast_to(np.asarray(out, dtype=np.int64), trips.shape)

    def _node(self, np, node, trips, env, memo):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return trips if node.id == self.iv else env[int(node.id[1:])]
        key = ast.dump(node)
        if key in memo:
            return memo[key]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            a, b = self._node(np, node.left, trips, env, memo), self._node(np, node.right, trips, env, memo)
            if isinstance(node.op, ast.Mult) and (isinstance(a, int) and a == 1 or isinstance(b, int) and b == 1):
                v = b if isinstance(a, int) and a == 1 else a  # the algebra's unit factors: no pass over the trips
            else:
                v = getattr(np, _BINARY[type(node.op)])(a, b)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = np.negative(self._node(np, node.operand, trips, env, memo))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("min", "max"):
            fn = np.minimum if node.func.id == "min" else np.maximum
            v = self._node(np, node.args[0], trips, env, memo)
            for x in node.args[1:]:
                v = fn(v, self._node(np, x, trips, env, memo))
        else:
            raise AssertionError(f"an offset of the symbolic algebra: {ast.unparse(node)}")
        memo[key] = v
        return v


class _Copy:
    def __init__(self, load: HostLoad, store: HostStore, iv_sid):
        self.load, self.store = load, store
        self.src, self.dst = _Offsets(load.offset, iv_sid), _Offsets(store.offset, iv_sid)
        self.size = load.dtype.width // 8


class BulkCopy:
    """The element copies of one loop's body, pairs of (load, store of the loaded value)."""

    def __init__(self, copies, iv_sid):
        self.copies = copies
        self.iv_sid = iv_sid

    def run(self, trips: range, values, env) -> bool:
        """The trips' copies; False (nothing done) where the memories do not allow the bulk way."""
        mems = []
        for c in self.copies:
            src = _memory(c.load, values, env)
            dst = _memory(c.store, values, env)
            if src is None or dst is None:
                return False
            mems.append((src, dst))
        if any(d[0] == s[0] for s, _ in mems for _, d in mems):  # stores into what loads read: trip order matters
            return False
        np = _numpy()
        for lo in range(0, len(trips), TRIPS_AT_ONCE):
            part = trips[lo:lo + TRIPS_AT_ONCE]
            ivs = np.arange(part.start, part.stop, part.step, dtype=np.int64)
            memo: dict = {}
            for c, ((saddr, sn), (daddr, dn)) in zip(self.copies, mems):
                so, do = c.src.at(np, ivs, env, memo), c.dst.at(np, ivs, env, memo)
                _check(so, sn, c.load.where)
                _check(do, dn, c.store.where)
                src = _view(np, saddr, so, c.size)
                dst = _view(np, daddr, do, c.size)
                dst[0][do - dst[1]] = src[0][so - src[1]]
        return True


def _check(offsets, n, where):
    if n is not None and offsets.size and (offsets.min() < 0 or offsets.max() >= n):
        bad = int(offsets[(offsets < 0) | (offsets >= n)][0])
        raise DSLValueError(f"host-side element access at offset {bad} is outside the memory of {n} elements", where)


def _view(np, address, offsets, size):
    """The memory from the lowest to the highest offset as unsigned integers of the element's size, and the
    lowest offset."""
    import ctypes

    lo, hi = int(offsets.min()), int(offsets.max())
    buf = (ctypes.c_char * ((hi - lo + 1) * size)).from_address(address + lo * size)
    return np.frombuffer(buf, dtype=f"u{size}"), lo


def _memory(action, values, env):
    """(address, element count or None where unknown) of an action's memory at a call, or None (host registers,
    memory the bulk way does not read)."""
    if isinstance(action.ref, HostLocal):
        return None
    mem = HostMemory(action.ref, action.dtype, values, env)
    if mem.address is not None:
        return mem.address, None
    flat = mem.flat
    if mem.torch:
        return flat.data_ptr(), flat.shape[0]
    return flat.__array_interface__["data"][0], flat.shape[0]


def plan(loop):
    """The BulkCopy of a loop whose body is only element copies (see the module's text), else None."""
    if loop.body.entries or loop.body_guards or loop.carried or len(loop.actions) % 2:
        return None
    copies = []
    for load, store in zip(loop.actions[::2], loop.actions[1::2]):
        if type(load) is not HostLoad or type(store) is not HostStore:
            return None
        v = store.value
        if not (isinstance(v, Numeric) and isinstance(v._v, HostValue) and v._v.slot == load.slot):
            return None
        if load.dtype is not store.dtype or load.dtype.width % 8 or load.dtype.width // 8 not in _SIZES:
            return None
        if isinstance(load.ref, HostLocal) or isinstance(store.ref, HostLocal):
            return None
        if not all(isinstance(o, (int, SymInt)) for o in (load.offset, store.offset)):
            return None
        copy = _Copy(load, store, loop.iv_sid)
        if not (copy.src.supported and copy.dst.supported):
            return None
        copies.append(copy)
    return BulkCopy(copies, loop.iv_sid)
