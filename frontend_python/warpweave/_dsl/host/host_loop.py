"""`for` in the host side of a @cute.jit function over a bound only a call knows (`for i in cutlass.range(
cute.size(t))` with a dynamic extent, `for k in range(n)` with an Int32 argument), and `while` on a condition only
a call decides (run until it is false; its condition is a program of each trip too).

The body is traced once, with the loop variable a host symbol of no single value. What it computes from it is a
program of its own (host_program.py's values, made while the body was traced), and what it does with it (element
reads and writes of host memory, prints) its own host actions; each call runs them once per trip, with the
variable's value of that trip. Integer variables the body assigns and that are defined before the loop are
carried: each trip starts from the previous trip's values, and after the loop they are the last ones, integers
of the host program that layouts, grids and kernels take like any other.

A kernel launched in the body is launched at each trip (launches_of_call), with the trip's values: its grid and
parameters may depend on the loop variable. What a trip must not do is refused at the user's line: carry a float
or a Boolean, or carry a number read from tensor elements (the program cannot express it).

A body that only copies elements between host memories at offsets computed from the loop variable (CuTe DSL's
scale-factor conversions copy a whole tensor so) is run for many trips at once (host_loop_bulk.py).
"""
from __future__ import annotations

import itertools

from ... import _core
from ..base import trace
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..tracing.carried_values import Undefined
from ..values import hooks
from ..values.numeric import Int32, Int64, Numeric, SymInt
from . import host_branch, host_guards, host_loop_bulk, host_program
from .host_values import TripSlots


class Carried:
    """A variable carried from trip to trip: `in_sid` holds its value during a trip, `next_code` computes the next
    trip's from the body's values, `out_sid` is its value after the loop."""

    def __init__(self, in_sid, out_sid, init_code, type_code):
        self.in_sid, self.out_sid, self.init_code, self.type_code = in_sid, out_sid, init_code, type_code
        self.next_code: list = []


class HostLoop:
    """One host loop of a compiled function: an entry of its host program (the carried values) and, where the body
    has actions, one of its host actions. `guards`: the host branches it is under (it runs when all are taken)."""
    kind = "loop"
    sid = None
    code: list = []

    def __init__(self, iv_sid, bounds, carried, where, guards):
        self.iv_sid = iv_sid
        self.bounds = bounds          # program code of start, stop, step
        self.carried = carried
        self.where = where
        self.guards = guards
        self.body = host_program.HostProgram()
        self.body_guards: list = []
        self.actions: list = []
        self.bulk = None              # host_loop_bulk.BulkCopy where the body is an element copy
        self.cond = None if bounds is not None else host_program.HostProgram()  # a while: its condition's values
        self.cond_code: list = []
        self.cond_guards: list = []

    def _trips(self, values, env):
        start, stop, step = (host_program.run_code(c, values, env) for c in self.bounds)
        if step == 0:
            raise DSLValueError("the host loop's step is 0 for these arguments", self.where)
        return range(int(start), int(stop), int(step))

    def _condition(self, values, env, scalars) -> bool:
        self.cond.run(values, env, scalars)
        if self.cond_guards:
            host_guards.check(self.cond_guards, env)
        return bool(host_program.run_code(self.cond_code, values, env))

    def trips(self, values, env, scalars=None, bulk=False):
        """The loop at a call, one trip after another: each is yielded with the body's values of the trip in env
        (and scalars); after the last, the carried values are the loop's results there. With bulk, a body of
        element copies is done at once instead (no trip is yielded)."""
        taken = not self.guards or all(env[g] for g in self.guards)
        try:
            cur = [host_program.cast(host_program.run_code(c.init_code, values, env), c.type_code)
                   for c in self.carried] if taken else [0] * len(self.carried)
            trips = (self._trips(values, env) if self.cond is None else itertools.count()) if taken else range(0)
            if bulk and self.bulk is not None and len(trips) > 1 and self.bulk.run(trips, values, env):
                trips = range(0)
            for i in trips:
                for c, v in zip(self.carried, cur):
                    env[c.in_sid] = v
                if self.cond is None:
                    env[self.iv_sid] = i
                elif not self._condition(values, env, scalars):
                    break
                self.body.run(values, env, scalars)
                if self.body_guards:
                    host_guards.check(self.body_guards, env)
                yield i
                cur = [host_program.cast(host_program.run_code(c.next_code, values, env), c.type_code)
                       for c in self.carried]
        except host_guards.GuardMismatch:
            raise
        except DSLValueError as e:
            if e.location is not None:
                raise
            raise DSLValueError(e.bare_message, self.where) from None
        for c, v in zip(self.carried, cur):
            env[c.out_sid] = int(v)
            if scalars is not None:
                scalars[("derived", c.out_sid)] = int(v)

    def run(self, values, env, scalars=None) -> None:
        """The loop's carried values at a call (its entry of the host program)."""
        for _ in self.trips(values, env, scalars):
            pass


def launch_groups(launches, depth=0):
    """The launches of a call at a depth of host loops, in order: (k, None, k + 1) for launch k made there, and
    (k, loop, j) for launches k..j-1, a run of them in the same host loop at that depth (made at each of its
    trips). The Python call, the native path (native_call.py) and exported C order launches by it."""
    k = 0
    while k < len(launches):
        loops = getattr(launches[k], "loops", ())
        if len(loops) <= depth:
            yield k, None, k + 1
            k += 1
            continue
        loop, j = loops[depth], k + 1
        while j < len(launches) and len(getattr(launches[j], "loops", ())) > depth and \
                launches[j].loops[depth] is loop:
            j += 1
        yield k, loop, j
        k = j


def launches_of_call(launches, values, env, scalars, depth=0):
    """Each launch a call makes, in order: one inside host loops once per trip of them, yielded with that trip's
    values in env and scalars (a generator: the caller reads what the launch takes before the next trip)."""
    for k, loop, j in launch_groups(launches, depth):
        if loop is None:
            yield launches[k]
            continue
        for _ in loop.trips(values, env, scalars):
            yield from launches_of_call(launches[k:j], values, env, scalars, depth + 1)


class LoopActions:
    """The host action of a loop whose body has actions: its trips, at the loop's place among the actions."""

    def __init__(self, loop: HostLoop):
        self.loop = loop

    def run(self, values, env) -> None:
        scope = TripSlots()
        for _ in self.loop.trips(values, env, bulk=True):
            for a in self.loop.actions:
                a.run(values, env)
            scope.end_trip()


def _symbol(st, t, name):
    sid = st.next_host_symbol
    st.next_host_symbol += 1
    bits = 64 if t.width == 64 else 32
    st.host_symbols[sid] = trace.HostSymbol(sid, None, ("derived", host_program.type_code(t)), bits, 1, name)
    return sid, t._wrap(_core.SymInt.symbol(sid, divisibility=1, nonneg=False, bits=bits, name=name))


def _code(x, where, what):
    code: list = []
    try:
        host_program.code_of(x, code)
    except host_program.Unexpressible as e:
        raise DSLTypeError(f"host loop: {e} cannot be {what}; compute it in a kernel", where) from None
    return code


def _integer_type(v):
    """The integer type a carried variable has, or None where it is not an integer of the host program."""
    if isinstance(v, Numeric):
        return type(v) if type(v).is_integer and host_program.type_code(type(v)) else None
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return Int32 if -(1 << 31) <= v < (1 << 31) else Int64
    if isinstance(v, SymInt):
        return Int64 if v.bits == 64 else Int32
    return None


def _as_integer(v, t):
    if isinstance(v, Numeric):
        return v if type(v) is t else t(v)
    if isinstance(v, SymInt):
        return t._wrap(v)
    return t(v)


def _where(lineno):
    where = user_location(4)
    if where is not None and lineno:
        where = (where[0], lineno) + tuple(where[2:])
    return where


def _carry_in(st, names, values, where):
    """The variables a loop carries (position -> (type, Carried)) and the values its body is traced with."""
    carried, inner = {}, []
    for i, (name, v) in enumerate(zip(names, values)):
        t = _integer_type(v) if not isinstance(v, Undefined) else None
        if t is None:
            inner.append(v)
            continue
        init = _code(_as_integer(v, t), where, "carried by a loop run at each call")
        in_sid, x = _symbol(st, t, name)
        out_sid, _ = _symbol(st, t, name)
        carried[i] = (t, Carried(in_sid, out_sid, init, host_program.type_code(t)))
        inner.append(x)
    return carried, inner


def _traced(st, fn, args):
    """fn(*args) traced as code of each trip: (its result, the program values, actions, guards it made, the
    number of launches before it). Its values are computed at each trip, under the loop's own guards."""
    prog = host_program.program_of(st)
    n_entries, n_actions, n_guards = len(prog.entries), len(st.host_actions), len(st.host_guards)
    stack = st.__dict__.setdefault("host_branches", [])
    saved, stack[:] = list(stack), []
    try:
        out = fn(*args)
    finally:
        stack[:] = saved
    entries, prog.entries[n_entries:] = prog.entries[n_entries:], []
    actions, st.host_actions[n_actions:] = st.host_actions[n_actions:], []
    guards, st.host_guards[n_guards:] = st.host_guards[n_guards:], []
    return out, entries, actions, guards


def _traced_body(st, hl, fn, args):
    n_launches = len(st.launches)
    out, hl.body.entries, hl.actions, hl.body_guards = _traced(st, fn, args)
    for launch in st.launches[n_launches:]:  # made once per trip (launches_of_call), innermost loop last
        launch.loops = (hl,) + tuple(getattr(launch, "loops", ()))
    return out, len(st.launches) > n_launches


def _carry_out(st, hl, carried, names, values, out, launches, lineno):
    """The variables after the loop (carried ones are its results); the loop recorded in the program and the
    actions."""
    where = hl.where
    results = list(out) if isinstance(out, (tuple, list)) else [out]
    for i, (name, before, after) in enumerate(zip(names, values, results)):
        if i in carried:
            t, c = carried[i]
            if isinstance(after, Undefined) or _integer_type(after) is None:
                raise DSLTypeError(f"variable '{name}' changes from an integer to a {type(after).__name__} inside "
                                   f"the host loop at line {lineno}", where)
            c.next_code = _code(_as_integer(after, t), where, "carried by a loop run at each call")
            results[i] = t._wrap(_core.SymInt.symbol(c.out_sid, divisibility=1, nonneg=False,
                                                     bits=64 if t.width == 64 else 32, name=name))
        elif isinstance(before, Undefined):
            results[i] = before
        elif not host_branch.same_value(before, after):
            kind = "a float or a Boolean" if isinstance(before, (Numeric, float, bool)) else \
                f"a {type(before).__name__}"
            raise DSLTypeError(f"variable '{name}' ({kind}) is reassigned inside the host loop at line {lineno}, "
                               "whose trip count only a call knows; only integers can be carried from trip to trip "
                               "there", where)
    if hl.carried or launches:
        # An entry of the program: the carried values after it. The launches of each trip are made by the Python
        # call (launches_of_call), the native path (bindings/host_program_run.cpp) and exported C alike.
        host_program.program_of(st).entries.append(hl)
    if hl.actions:
        hl.bulk = host_loop_bulk.plan(hl) if hl.cond is None else None
        st.host_actions.append(LoopActions(hl))
    return type(out)(results) if isinstance(out, (tuple, list)) else results[0]


@hooks.loop_on_host.register
def loop(body, bounds, names, values, lineno):
    """A host `for` over a runtime bound: the body traced once as the program and actions of each trip."""
    st, where = trace.current(), _where(lineno)
    wide = any(isinstance(b, Numeric) and type(b).width == 64 or isinstance(b, SymInt) and b.bits == 64
               for b in bounds)
    it = Int64 if wide else Int32
    codes = [_code(b if isinstance(b, Numeric) else _as_integer(b, it), where, "a bound of a loop run at each call")
             for b in bounds]
    carried, inner = _carry_in(st, names, values, where)
    iv_sid, iv = _symbol(st, it, "i")
    hl = HostLoop(iv_sid, codes, [c for _, c in carried.values()], where, tuple(st.__dict__.get("host_branches", ())))
    out, launches = _traced_body(st, hl, body, (iv,) + tuple(inner))
    return _carry_out(st, hl, carried, names, values, out, launches, lineno)


@hooks.while_on_host.register
def while_loop(cond_fn, body_fn, names, values, lineno):
    """A host `while` on a runtime condition: the condition and the body traced once, run at each call until the
    condition is false (a condition that never is makes the call run forever, as a compiled loop would)."""
    st, where = trace.current(), _where(lineno)
    carried, inner = _carry_in(st, names, values, where)
    hl = HostLoop(None, None, [c for _, c in carried.values()], where, tuple(st.__dict__.get("host_branches", ())))
    n_launches = len(st.launches)
    cond, hl.cond.entries, actions, hl.cond_guards = _traced(st, cond_fn, tuple(inner))
    if actions or len(st.launches) > n_launches:
        raise DSLTypeError(f"the condition of the host while loop at line {lineno} reads tensor elements or "
                           "launches a kernel; compute it from the arguments' numbers", where)
    cond = cond if isinstance(cond, Numeric) else _as_integer(cond, Int32) if not isinstance(cond, bool) else cond
    if isinstance(cond, Numeric) and type(cond).is_integer:
        cond = cond != 0
    if not isinstance(cond, Numeric):
        raise DSLTypeError(f"the condition of the host while loop at line {lineno} is a {type(cond).__name__}; "
                           "it is a runtime number or Boolean", where)
    hl.cond_code = _code(cond, where, "the condition of a loop run at each call")
    out, launches = _traced_body(st, hl, body_fn, tuple(inner))
    return _carry_out(st, hl, carried, names, values, out, launches, lineno)


# --- the JIT cache's form --------------------------------------------------------------------------------------

def stored_program(prog: host_program.HostProgram, encode_guard, loops: list) -> list:
    """A host program as plain data (the JIT cache's entry), its host loops included: each loop's fields, its
    body (and a while's condition) stored the same way, and its number in `loops` (the order they are met), by
    which launches name the loops they are in. encode_guard: a guard of a trip as plain data."""
    out = []
    for d in prog.entries:
        if d.kind != "loop":
            out.extend(host_program.HostProgram([d]).stored())
            continue
        loops.append(d)
        out.append({"loop": len(loops) - 1, "iv_sid": d.iv_sid, "bounds": _codes(d.bounds),
                    "carried": [(c.in_sid, c.out_sid, _codes([c.init_code])[0], _codes([c.next_code])[0],
                                 c.type_code) for c in d.carried],
                    "where": d.where, "guards": list(d.guards),
                    "body": stored_program(d.body, encode_guard, loops),
                    "body_guards": [encode_guard(g) for g in d.body_guards],
                    "cond": None if d.cond is None else stored_program(d.cond, encode_guard, loops),
                    "cond_code": _codes([d.cond_code])[0], "cond_guards": [encode_guard(g) for g in d.cond_guards]})
    return out


def program_from_stored(items, decode_guard, loops: list) -> host_program.HostProgram:
    """The host program stored_program wrote, its loops appended to `loops` by their numbers there."""
    entries = []
    for i in items:
        if "loop" not in i:
            entries.extend(host_program.HostProgram.from_stored([i]).entries)
            continue
        if i["loop"] != len(loops):
            raise ValueError("a host loop stored out of order")
        carried = []
        for in_sid, out_sid, init, nxt, tc in i["carried"]:
            c = Carried(in_sid, out_sid, [tuple(x) for x in init], tc)
            c.next_code = [tuple(x) for x in nxt]
            carried.append(c)
        bounds = None if i["bounds"] is None else [[tuple(x) for x in b] for b in i["bounds"]]
        hl = HostLoop(i["iv_sid"], bounds, carried, tuple(i["where"]) if i["where"] else None, tuple(i["guards"]))
        loops.append(hl)
        hl.body = program_from_stored(i["body"], decode_guard, loops)
        hl.body_guards = [decode_guard(g) for g in i["body_guards"]]
        if i["cond"] is not None:
            hl.cond = program_from_stored(i["cond"], decode_guard, loops)
        hl.cond_code = [tuple(x) for x in i["cond_code"]]
        hl.cond_guards = [decode_guard(g) for g in i["cond_guards"]]
        entries.append(hl)
    return host_program.HostProgram(entries)


def _codes(codes):
    return None if codes is None else [[list(op) for op in c] for c in codes]
