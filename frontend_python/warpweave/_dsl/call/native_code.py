"""The programs of the native fast path (grids, host program values, host loop bounds: postfix [(operation,
operand)] over value slots, native_call.py) made shorter once, when the path is built, so that each call
(bindings/host_program_eval.cpp) evaluates fewer operations: constants folded, multiplications by 1 and additions
of 0 dropped, `x + -y` written `x - y`, and conversions of integers already in their type's range left out.

The traced programs carry all of these: the algebra writes `1 * s3 + -1 * s8`, and each step of a host value ends
in the conversion to its type, also where it converts a value of that very type. A rewrite is made only where it
gives the same number for every input (the native path computes in 64 bits and leaves to the Python call any
value that leaves them; where both programs stay within 64 bits they compute the same exact integer, float
operations are kept as they are; no operation that may raise is dropped), so the native path still computes what
the Python call computes.
"""
from __future__ import annotations

_INT64 = (-(1 << 63), (1 << 63) - 1)
_UNARY = {"neg", "abs", "not", "cast", "ctlz", "cttz", "popc"}
_LEAF = {"const", "sym", "arg", "fconst"}
_COMPARE = {"lt", "le", "gt", "ge", "eq", "ne", "not"}


def cast_range(code: int) -> tuple:
    """The integers a conversion (Op::Cast's operand: bits, plus 256 when signed; 0: a Boolean) leaves."""
    bits, signed = code & 255, bool(code & 256)
    if bits == 0:
        return (0, 1)
    if bits == 64:
        return _INT64 if signed else (0, _INT64[1])  # an unsigned value past 63 bits goes the Python way
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


class _Node:
    __slots__ = ("op", "x", "kids", "kind", "range")

    def __init__(self, op, x, kids, kind, rng):
        self.op, self.x, self.kids, self.kind, self.range = op, x, kids, kind, rng  # kind: 'i', 'f' or '?'


def _const(v: int) -> _Node:
    return _Node("const", v, (), "i", (v, v))


def _fits(v: int) -> bool:
    return _INT64[0] <= v <= _INT64[1]


def _fold(op: str, a: int, b: int):
    """op on two integer constants as the native path computes it, or None where it leaves the call to Python."""
    if op in ("floordiv", "mod") and b == 0:
        return None
    r = {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b, "floordiv": lambda: a // b,
         "mod": lambda: a % b, "xor": lambda: a ^ b, "and": lambda: a & b, "or": lambda: a | b,
         "min": lambda: min(a, b), "max": lambda: max(a, b), "lt": lambda: int(a < b), "le": lambda: int(a <= b),
         "gt": lambda: int(a > b), "ge": lambda: int(a >= b), "eq": lambda: int(a == b),
         "ne": lambda: int(a != b)}.get(op)
    if r is None:
        return None
    v = r()
    return v if _fits(v) else None


def _binary(op: str, a: _Node, b: _Node) -> _Node:
    ints = a.kind == "i" and b.kind == "i"
    if ints and a.op == "const" and b.op == "const":
        v = _fold(op, a.x, b.x)
        if v is not None:
            return _const(v)
    if op == "mul":  # 1 * x is x for an integer or a float alike
        if a.op == "const" and a.x == 1:
            return b
        if b.op == "const" and b.x == 1:
            return a
    if ints and op == "mul" and a.op == "const" and a.x == -1:  # -1 * y is -y (both leave 64 bits alike)
        return _unary("neg", 0, b)
    if ints and op in ("add", "sub") and b.op == "const" and b.x == 0:
        return a
    if ints and op == "add" and a.op == "const" and a.x == 0:
        return b
    if ints and op in ("add", "sub") and b.op == "neg":  # x + -y is x - y (the same integer where both fit)
        return _binary("sub" if op == "add" else "add", a, b.kids[0])
    if ints and op == "add" and b.op == "const" and b.x < 0 and _fits(-b.x):
        return _binary("sub", a, _const(-b.x))
    kind = "f" if op == "truediv" or "f" in (a.kind, b.kind) else "i" if ints else "?"
    if op in _COMPARE:
        kind, rng = "i", (0, 1)
    elif op in ("min", "max") and a.range and b.range:
        f = min if op == "min" else max
        rng = (f(a.range[0], b.range[0]), f(a.range[1], b.range[1]))
    else:
        rng = None
    return _Node(op, 0, (a, b), kind, rng if kind == "i" else None)


def _unary(op: str, x: int, a: _Node) -> _Node:
    if op == "cast":
        if x >= 512:
            return _Node(op, x, (a,), "f", None)
        lo, hi = cast_range(x)
        if a.kind == "i" and a.range and lo <= a.range[0] and a.range[1] <= hi:
            return a  # already an integer of the type's range: the conversion leaves it as it is
        if a.kind == "i" and a.op == "const":
            return _const(int(a.x != 0)) if x == 0 else a if lo <= a.x <= hi else _Node(op, x, (a,), "i", (lo, hi))
        return _Node(op, x, (a,), "i", (lo, hi))
    if op == "neg" and a.op == "const" and _fits(-a.x):
        return _const(-a.x)
    if op == "neg" and a.op == "neg" and a.kind == "i":
        return a.kids[0]
    if op == "not":
        return _Node(op, x, (a,), "i", (0, 1))
    if op in ("ctlz", "cttz", "popc"):  # a count of x bits: 0 to x
        return _Node(op, x, (a,), "i", (0, x))
    return _Node(op, x, (a,), a.kind, None)


def simplify(code: list, ranges: dict | None = None) -> list:
    """The native program `code` (native_call's [(operation, operand)] over slots) rewritten to compute the same
    value in fewer operations; ranges: slot -> (lo, hi) of integer slots whose values are known to lie there (an
    argument of 32 bits, a host value converted to its type)."""
    ranges = ranges or {}
    st: list = []
    for op, x in code:
        if op == "const":
            st.append(_const(x))
        elif op == "sym":
            st.append(_Node(op, x, (), "i", ranges.get(x, _INT64)))
        elif op in ("arg", "fconst"):
            st.append(_Node(op, x, (), "?" if op == "arg" else "f", None))
        elif op in _UNARY:
            st.append(_unary(op, x, st.pop()))
        elif op == "select":
            b, a, c = st.pop(), st.pop(), st.pop()  # both kept: the Python call computes both (and may raise)
            kind = a.kind if a.kind == b.kind else "?"
            rng = (min(a.range[0], b.range[0]), max(a.range[1], b.range[1])) if a.range and b.range else None
            st.append(_Node(op, 0, (c, a, b), kind, rng if kind == "i" else None))
        else:
            b = st.pop()
            st.append(_binary(op, st.pop(), b))
    if len(st) != 1:
        return list(code)  # not one value: left for FastCall to refuse as it is
    out: list = []

    def emit(n: _Node):
        for k in n.kids:
            emit(k)
        out.append((n.op, n.x))
    emit(st[0])
    return out


def split_invariant(body: list, loops: list, variant: set) -> tuple:
    """A host loop's body steps (native_call's: (slot, code, guards, ...) values and ("loop", j) steps) as (the
    values every trip computes alike, the rest), in their order: the first are computed at the first trip only
    (a trip's value is the same at every trip where it reads nothing the loop changes; computed at the first,
    it fails, and so leaves the call to Python, exactly where the first trip would). variant: the slots the loop
    writes outside its body (its variable, its carried values, its condition's values)."""
    variant = set(variant)
    first, rest = [], []
    for s in body:
        if isinstance(s[0], str):  # an inner loop: what it writes changes from trip to trip
            variant |= loop_writes(loops, s[1])
            rest.append(s)
            continue
        reads = {x for op, x in s[1] if op == "sym"} | set(s[2])
        if reads & variant:
            variant.add(s[0])
            rest.append(s)
        else:
            first.append(s)
    return first, rest


def loop_writes(loops: list, j: int) -> set:
    """The slots native loop j (native_call's description) writes: its variable, carried values and the values of
    its condition and body, those of the loops in it included."""
    guards, is_while, bounds, cond, cond_code, iv, carried, body = loops[j][:8]
    out = {iv} if iv >= 0 else set()
    for i, o, _, _ in carried:
        out |= {i, o}
    for steps in (cond, body) + tuple(loops[j][8:]):
        for s in steps:
            out |= loop_writes(loops, s[1]) if isinstance(s[0], str) else {s[0]}
    return out


_FLOAT_LEAVES = {"arg", "fconst", "truediv"}


def _tree(code: list):
    """A program's expression tree as nested tuples (op, operand, kids...), equal where the programs are."""
    st: list = []
    for op, x in code:
        n = 0 if op in _LEAF else 1 if op in _UNARY else 3 if op == "select" else 2
        kids = tuple(st[len(st) - n:]) if n else ()
        del st[len(st) - n:]
        st.append((op, x) + kids)
    return st[0] if len(st) == 1 else None


def _code(t, out: list) -> list:
    for k in t[2:]:
        _code(k, out)
    out.append(t[:2])
    return out


def _subtrees(t, out: list) -> list:
    """t's subtrees of more than one operation, largest first (each before those in it)."""
    if len(t) > 2:
        out.append(t)
        for k in t[2:]:
            _subtrees(k, out)
    return out


def _size(t) -> int:
    return 1 + sum(_size(k) for k in t[2:])


def _contains(t, sub) -> bool:
    return t == sub or any(_contains(k, sub) for k in t[2:])


def _replace(t, old, new):
    if t == old:
        return new
    if len(t) == 2:
        return t
    return t[:2] + tuple(_replace(k, old, new) for k in t[2:])


def share_common(steps: list, new_slot) -> list:
    """Host program steps (native_call's values (slot, code, guards, is_float[, expected]) and ("loop", j)) with
    an integer expression that a later value computes again computed once: the later value reads the earlier's
    slot, or, where the earlier computes it as a part, a new value (new_slot() gives its slot) computed just
    before the earlier one, which both read. Only values that every call (or trip) computes (no guards) give
    theirs to later ones, and only within a run of values with no loop between (a loop may write what they
    read): the shared value is computed where the earlier computed it, so it fails exactly where that did."""
    out = list(steps)
    known: dict = {}  # subtree -> (index in out of the value computing it, whether it is that value's whole tree)
    k = 0
    while k < len(out):
        s = out[k]
        if isinstance(s[0], str):
            known.clear()
            k += 1
            continue
        tree = _tree(s[1]) if not s[3] and not any(op in _FLOAT_LEAVES or op == "cast" and x >= 512
                                                        for op, x in s[1]) else None
        if tree is None:
            k += 1
            continue
        for sub in _subtrees(tree, []):
            if sub not in known or not _contains(tree, sub):  # (not in a part already read from a slot)
                continue
            i, whole = known[sub]
            if not whole and _size(sub) < 4:
                continue  # a new value costs more than the few operations it saves
            if not whole:  # a part of value i: computed into a new slot before it, which value i reads
                slot = new_slot()
                out.insert(i, (slot, _code(sub, []), [], False))
                t_i = _replace(_tree(out[i + 1][1]), sub, ("sym", slot))
                out[i + 1] = (out[i + 1][0], _code(t_i, [])) + tuple(out[i + 1][2:])
                k += 1
                known = {t: ((j + 1 if j >= i else j), w) for t, (j, w) in known.items()}
                for t in _subtrees(t_i, []):
                    known[t] = (i + 1, t == t_i)
                for t in _subtrees(sub, []):
                    known[t] = (i, t == sub)
            tree = _replace(tree, sub, ("sym", out[i][0]))
        if tree != _tree(s[1]):
            s = (s[0], _code(tree, [])) + tuple(s[2:])
            out[k] = s
        if not s[2]:
            for t in _subtrees(tree, []):
                known.setdefault(t, (k, t == tree))
        k += 1
    return out
