"""The native fast path of a compiled call (_core.FastCall, bindings/fast_call.hpp): the plan of the generated
Python fast path (compiled_function._build_fast_call), each argument described by its plan class (ArgPlan.native),
handed to C++ once, so that a call reads its
arguments, evaluates the grids, packs the parameters and launches in one C++ call. Calls it does not accept go
to the Python call, which keeps today's results and errors; functions it cannot describe get none (their calls
take the Python fast path)."""
from __future__ import annotations

import ast
import struct

from ... import _core
from ..host.host_loop import launch_groups
from ..host.launch_plan import dim_source, needs_launch_options, needs_other_launch_options
from ..values.host_inputs import stream_handle
from ..values.numeric import Numeric
from ..values.runtime import RuntimePointer, RuntimeTensor, satisfies
from .arg_kind import (NATIVE_EVENT, NATIVE_INT, NATIVE_POINTER, NATIVE_SKIP, NATIVE_STREAM, NATIVE_TENSOR, NATIVE_TREE,
                       HostStream, NativeSlots)
from .arg_tensor import view_or_error
from .native_code import cast_range, loop_writes, share_common, simplify, split_invariant

_BINARY = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.FloorDiv: "floordiv", ast.Mod: "mod",
           ast.BitXor: "xor"}
_MAX_SLOTS = 256
_MAX_HOSTS = 16  # fast_call_hosts.hpp's kMaxHosts


def grid_program(src: str, slots: dict) -> list | None:
    """The postfix program of a launch extent, Python source over s<symbol id> (dim_source), over value slots:
    [(operation, operand)]; None for anything outside the integer expressions _core.python_expr writes."""
    try:
        tree = ast.parse(src, mode="eval").body
    except SyntaxError:
        return None
    out: list = []

    def emit(node) -> bool:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            if not -(1 << 63) <= node.value < (1 << 63):
                return False
            out.append(("const", node.value))
            return True
        if isinstance(node, ast.Name) and node.id.startswith("s") and node.id[1:].isdigit():
            sid = int(node.id[1:])
            if sid not in slots:
                return False
            out.append(("sym", slots[sid]))
            return True
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            if not emit(node.operand):
                return False
            if isinstance(node.op, ast.USub):
                out.append(("neg", 0))
            return True
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            if not (emit(node.left) and emit(node.right)):
                return False
            out.append((_BINARY[type(node.op)], 0))
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("min", "max") and \
                len(node.args) >= 2 and not node.keywords:
            if not emit(node.args[0]):
                return False
            for a in node.args[1:]:
                if not emit(a):
                    return False
                out.append((node.func.id, 0))
            return True
        return False

    return out if emit(tree) else None


def build(compiled, launchers):
    """The _core.FastCall of a compiled function whose Python fast path was just built (launchers: its
    _core.Launcher objects, one per launch), or None where the native path cannot describe it: assumptions,
    the divisors of host divisions to check, lists of tensors, host arguments of values it does not read."""
    if not hasattr(_core, "FastCall") or compiled._has_assumptions:
        return None
    n = compiled._nargs
    slots = NativeSlots()
    args: list = [(NATIVE_SKIP,)] * n
    for plan in compiled.plans:
        i = plan.index
        if not isinstance(i, int) or not 0 <= i < n:
            return None
        args[i] = plan.native(slots)
        if args[i] is None:
            return None
    sym_slots, ptr_slots, obj_slots = slots.syms, slots.ptrs, slots.objs
    hosts = _host_arguments(compiled, slots, args)  # before the host program adds its values' slots
    if hosts is None:
        return None
    # slot -> the integers it holds where known (a 32-bit argument, a host value of its type): the programs
    # leave out conversions of such values to their own type (native_code.simplify)
    slots.ranges = {a[1]: cast_range(256 + 32) for a in _leaves(args) if a[0] == NATIVE_INT and a[2] == 32}
    loops: list = []
    loop_ids: dict = {}
    derived = _host_program(compiled.host_program, slots, loops, loop_ids)
    checks = _guard_checks(compiled.host_guards, slots)
    order = _launch_order(compiled.launches, loop_ids)
    if derived is None or checks is None or order is None:
        return None
    derived += checks
    launches = []
    for l, target in zip(compiled.launches, launchers):
        grid = [grid_program(dim_source(g), sym_slots) for g in l.grid]
        if len(grid) != 3 or any(g is None for g in grid):
            return None
        grid = [simplify(g, slots.ranges) for g in grid]
        if isinstance(l.stream, HostStream):
            if l.stream.arg_index not in ptr_slots or args[l.stream.arg_index][0] != NATIVE_STREAM:
                return None
            stream_slot, stream = ptr_slots[l.stream.arg_index], 0
        else:
            stream_slot, stream = -1, stream_handle(l.stream)
        packer, offsets = compiled._packers[l.kernel]
        params = []
        for p, off in zip(l.params, offsets):
            if p.kind == "ptr":
                if p.source not in ptr_slots:
                    return None
                params.append(("ptr", p.fmt, ptr_slots[p.source], off))
            elif p.kind == "sym":
                if p.source not in sym_slots:
                    return None
                params.append(("sym", p.fmt, sym_slots[p.source], off))
            elif p.kind == "scalar" and _is_derived(p.source):
                sid = p.source[1]
                if sid not in sym_slots:
                    return None
                params.append(("float" if p.fmt in "efd" else "sym", p.fmt, sym_slots[sid], off))
            elif p.kind == "scalar":
                if p.source not in obj_slots:
                    return None
                params.append(("scalar", p.fmt, obj_slots[p.source], off))
            elif p.kind == "host" and p.source in hosts:
                params.append(("host", "", list(hosts).index(p.source), off))
            else:
                return None
        preds = getattr(l, "predicates", ())
        if any(sid not in sym_slots for sid in preds):
            return None
        flags = _launch_flags(l, sym_slots, ptr_slots, args)
        if flags is False:
            return None
        launches.append((target, l.kernel, grid, stream_slot, stream, packer.size, params,
                         [sym_slots[sid] for sid in preds], flags))
    if (max(len(sym_slots), len(ptr_slots), len(obj_slots), 0) > _MAX_SLOTS or len(launches) > 8 or n > 64
            or len(hosts) > _MAX_HOSTS):
        return None
    constexprs = [(compiled._constexprs[i],) if i in compiled._constexprs else None for i in range(n)]
    return _core.FastCall(tuple(compiled.bound_self), n, list(compiled._defaults), constexprs, args, launches,
                          RuntimeTensor, satisfies, Numeric, derived, loops, order if loops else None,
                          list(hosts.values()))


def _leaves(args):
    """The descriptions of the arguments, those of the elements of a list or tuple (NATIVE_TREE) in its place."""
    for a in args:
        if a[0] == NATIVE_TREE:
            yield from _leaves(a[1])
        else:
            yield a


def _host_arguments(compiled, slots, args) -> dict | None:
    """id -> the native description of each host argument (fast_call.hpp's HostArg): its producer asked once
    per key of the argument's address, its dynamic extents and strides and the symbols of its attributes (values
    read from the arguments); None where one is computed from what the native path does not read."""
    out = {}
    plans = {p.index: p for p in compiled.plans}
    for hid, h in compiled.host_arguments.items():
        i, plan = h.tensor_index, plans.get(h.tensor_index)
        if plan is None or args[i][0] not in (NATIVE_TENSOR, NATIVE_POINTER) or i not in slots.ptrs:
            return None
        own, used = list(plan.symbol_ids()), list(h.symbols)
        if any(sid not in slots.syms for sid in own + used):
            return None
        out[hid] = (_producer(h, plan), i, slots.ptrs[i], [slots.syms[sid] for sid in own + used], len(used),
                    h.size)
    return out


def _producer(h, plan):
    """What the native path asks for a key it has not seen: the host argument's bytes for the call's argument (a
    view, a pointer or a torch tensor) and the values of its symbols, as the Python call computes them."""
    def produce(value, symbols):
        t = value if isinstance(value, (RuntimeTensor, RuntimePointer)) else view_or_error(plan, value)
        return h.value(t, dict(zip(h.symbols, symbols)))
    return produce


def _launch_flags(l, sym_slots, ptr_slots, args):
    """The launch's options as the native path takes them: None (no launch attributes beyond its cluster), or
    ((cooperative, slot), (pdl, slot)) with slot -1 where fixed when compiled, else the slot of the Boolean
    argument's value read at each call (launch_plan.launch_flag), followed, where it has any, by its preferred
    cluster (() or 3 extents) and its events ((completion slot, flags, programmatic slot, flags, trigger at block
    start), a slot -1 for no event, else the slot of the event argument read at each call); False where the
    native path cannot give them."""
    if not needs_launch_options(l):
        return None
    out = []
    for name in ("cooperative", "pdl"):
        sid = getattr(l, name + "_symbol", None)
        if sid is not None and sid not in sym_slots:
            return False
        out.append((bool(getattr(l, name, False)), -1 if sid is None else sym_slots[sid]))
    if not needs_other_launch_options(l):
        return tuple(out)
    pc = getattr(l, "preferred_cluster", None) or ()
    if any(not isinstance(x, int) or x < 1 for x in pc):
        return False
    events = []
    for name in ("launch_completion_event", "programmatic_event"):
        ev = getattr(l, name, None)
        if ev is None:
            events += [-1, 0]
            continue
        if ev.arg_index not in ptr_slots or args[ev.arg_index][0] != NATIVE_EVENT:
            return False
        events += [ptr_slots[ev.arg_index], int(getattr(l, name + "_flags", 0))]
    events.append(bool(getattr(l, "programmatic_event_trigger_at_block_start", False)))
    return (*out, tuple(pc), tuple(events))


def _is_derived(source) -> bool:
    return isinstance(source, (tuple, list)) and len(source) == 2 and source[0] == "derived"


def _host_program(program, slots, loops: list, loop_ids: dict) -> list | None:
    """The host program's steps as native ones: values [(slot, [(operation, operand)], guard slots, is_float)] and
    ("loop", index) of its host loops, described into `loops` (an inner loop before the loop it is in; loop_ids:
    id(HostLoop) -> index); None where one uses what the native path does not compute (an operation outside
    _NATIVE_OPS and the bit counts, a value its arguments do not give)."""
    out = []
    for d in program.entries:
        if d.kind == "loop":
            j = _loop(d, slots, loops, loop_ids)
            if j is None:
                return None
            out.append(("loop", j))
            continue
        code = _native_code(d.code, slots)
        if code is None:
            return None
        guards = [NativeSlots.slot(slots.syms, g) for g in d.guards]
        slot = NativeSlots.slot(slots.syms, d.sid)
        if d.type_code[0] != "f":  # converted to its type (0 where its guards do not hold: in the range too)
            slots.ranges[slot] = cast_range(_cast_code(d.type_code))
        out.append((slot, code, guards, d.type_code[0] == "f"))
    return share_common(out, lambda: NativeSlots.slot(slots.syms, ("shared", len(slots.syms))))


def _loop(hl, slots, loops: list, loop_ids: dict) -> int | None:
    """A host loop (host/host_loop.py's HostLoop) as the native path's (fast_call_bindings.cpp's parse_loop): its
    index in `loops`. Its guards (a divisor that must not be zero in a trip) are checked at each trip, as the
    Python call checks them."""
    sym = slots.syms
    guards = [NativeSlots.slot(sym, g) for g in hl.guards]
    inits = [_native_code(list(c.init_code) + [("cast", c.type_code)], slots) for c in hl.carried]
    bounds = [_native_code(b, slots) for b in hl.bounds] if hl.cond is None else []
    iv = NativeSlots.slot(sym, hl.iv_sid) if hl.cond is None else -1
    ins = [NativeSlots.slot(sym, c.in_sid) for c in hl.carried]
    for c, i in zip(hl.carried, ins):  # each trip's and the results: converted to the carried type
        slots.ranges[i] = slots.ranges[NativeSlots.slot(sym, c.out_sid)] = cast_range(_cast_code(c.type_code))
    cond, cond_code = [], [("const", 1)]
    if hl.cond is not None:
        cond = _host_program(hl.cond, slots, loops, loop_ids)
        checks = _guard_checks(hl.cond_guards, slots, ("cond guard", id(hl)))
        cond = None if cond is None or checks is None else cond + checks
        cond_code = _native_code(hl.cond_code, slots)
    body = _host_program(hl.body, slots, loops, loop_ids)
    checks = _guard_checks(hl.body_guards, slots, ("body guard", id(hl)))
    nexts = [_native_code(list(c.next_code) + [("cast", c.type_code)], slots) for c in hl.carried]
    if any(x is None for x in inits + bounds + nexts + [cond, cond_code, body, checks]):
        return None
    outs = [NativeSlots.slot(sym, c.out_sid) for c in hl.carried]
    variant = {iv, *ins}
    for s in cond:
        variant |= loop_writes(loops, s[1]) if isinstance(s[0], str) else {s[0]}
    first, body = split_invariant(body + checks, loops, variant)
    loops.append((guards, hl.cond is not None, bounds, cond, cond_code, iv,
                  [(i, o, a, b) for i, o, a, b in zip(ins, outs, inits, nexts)], body, first))
    loop_ids[id(hl)] = len(loops) - 1
    return len(loops) - 1


def _launch_order(launches, loop_ids: dict, depth=0, base=0) -> list | None:
    """The launches' order as host_loop.launches_of_call makes them: a launch's index, or ("loop", index, [the
    order of the launches in it]) for a run of launches in the same host loop; None where a loop is not one of
    the program's."""
    out = []
    for k, loop, j in launch_groups(launches, depth):
        if loop is None:
            out.append(base + k)
            continue
        inner = _launch_order(launches[k:j], loop_ids, depth + 1, base + k)
        if inner is None or id(loop) not in loop_ids:
            return None
        out.append(("loop", loop_ids[id(loop)], inner))
    return out


def _guard_checks(guards, slots, key=("guard",)) -> list | None:
    """The guards of the compiled function (a host division's divisor is not zero, a comparison decided when
    compiled), or of a host loop's trips, as host-program values the native path computes and compares: a call
    where one does not hold goes the Python way, which raises what it raises."""
    out = []
    for k, g in enumerate(guards):
        code = grid_program(dim_source(g.diff), slots.syms)
        if code is None:
            return None
        code = simplify(code + [("const", 0), (g.op, 0)], slots.ranges)
        out.append((NativeSlots.slot(slots.syms, key + (k,)), code, [], False, int(bool(g.outcome))))
    return out


def _native_code(code, slots) -> list | None:
    out = []
    for k, (op, x) in enumerate(code):
        if op == "sym":
            if x not in slots.syms:  # neither an argument's symbol nor an earlier value of the program
                return None
            out.append(("sym", slots.syms[x]))
        elif op == "const":
            if isinstance(x, float):
                out.append(("fconst", struct.unpack("q", struct.pack("d", x))[0]))
            elif -(1 << 63) <= int(x) < (1 << 63):
                out.append(("const", int(x)))
            else:
                return None
        elif op == "arg":
            if x not in slots.objs:
                return None
            out.append(("arg", slots.objs[x]))
        elif op == "cast":
            out.append(("cast", _cast_code(x)))
        elif op in _BIT_COUNTS:
            if not 1 <= int(x) <= 64:
                return None
            out.append((op, int(x)))
        elif op == "shl" and k + 1 < len(code) and code[k + 1][0] == "cast" and code[k + 1][1][0] in "iu":
            # converted to an integer of at most 64 bits next: the shift may drop what it moves past 64 bits
            # (the conversion would), where alone it leaves such a value to the Python call
            out.append(("shlw", 0))
        elif op in _NATIVE_OPS:
            out.append((op, 0))
        else:
            return None
    return simplify(out, getattr(slots, "ranges", None))


def _cast_code(tc: str) -> int:
    """A host program type code (host_program.type_code) as Op::Cast's operand."""
    if tc[0] == "f":
        return 512 + int(tc[1:])
    return 0 if tc == "b" else int(tc[1:]) + (256 if tc[0] == "i" else 0)


# The host program's operations the native path evaluates (fast_call.hpp's Op), on integers; the bit counts take
# their width as operand (a fast divisor's set-up on the host: its shift from the leading zeros, its multiplier
# from shifts, as in the persistent GEMMs' tile schedulers).
_NATIVE_OPS = {"add", "sub", "mul", "floordiv", "mod", "xor", "min", "max", "neg", "lt", "le", "gt", "ge", "eq",
               "ne", "and", "or", "not", "abs", "select", "truediv", "shl", "shr"}
_BIT_COUNTS = {"ctlz", "cttz", "popc"}
