"""The host program of a compiled function (host/host_program.py) as C statements of an exported wrapper: each
derived value computed from the wrapper's arguments before the launches, with the same typing (integers wrapped
to their width, Float32 rounded) and the same errors (a division by zero fails the call with the user's line).
A host loop is a C loop: run whole before the launches for the integers it carries, and again, trip by trip, around
the launches made in it (the order the Python call makes them in, host_loop.launches_of_call)."""
from __future__ import annotations

from ..base.errors import DSLNotImplementedError, user_location

# Helpers with Python's floor semantics; *bad is set where Python raises (a division by zero).
HELPERS = """static __attribute__((unused)) int64_t ww_hp_floordiv(int64_t a, int64_t b, int *bad) {
  int64_t q;
  if (b == 0 || (a == INT64_MIN && b == -1)) { *bad = 1; return 0; }
  q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
static __attribute__((unused)) int64_t ww_hp_mod(int64_t a, int64_t b, int *bad) {
  int64_t r;
  if (b == 0) { *bad = 1; return 0; }
  if (b == -1) return 0;
  r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
static __attribute__((unused)) double ww_hp_ffloordiv(double a, double b, int *bad) {
  if (b == 0.0) { *bad = 1; return 0.0; }
  return __builtin_floor(a / b);
}
static __attribute__((unused)) double ww_hp_fmod(double a, double b, int *bad) {
  if (b == 0.0) { *bad = 1; return 0.0; }
  return __builtin_fmod(a, b);
}
"""

_CMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_ARITH = {"add": "+", "sub": "-", "mul": "*"}
_BITS = {"and": "&", "or": "|", "xor": "^"}


def _cast(e: str, is_float: bool, tc: str) -> tuple[str, bool]:
    if tc == "b":
        return f"(int64_t)(({e}) != 0)", False
    if tc == "f32":
        return f"(double)(float)({e})", True
    if tc == "f64":
        return f"(double)({e})", True
    bits, signed = int(tc[1:]), tc[0] == "i"
    ct = f"{'' if signed else 'u'}int{bits}_t"
    if is_float:
        e = f"(int64_t)({e})"  # C truncates toward zero, as the DSL's conversion does
    return f"(int64_t)({ct})(uint64_t)({e})", False


def value_c(code, arg_names: dict, where=None) -> str:
    """The C expression of one derived value's program (over int64_t s<id> and the wrapper's arguments)."""
    st: list[tuple[str, bool]] = []
    for op, x in code:
        if op == "const":
            st.append((repr(float(x)), True) if isinstance(x, float) else (f"INT64_C({int(x)})", False))
        elif op == "sym":
            st.append((f"s{x}", False))
        elif op == "arg":
            if x not in arg_names:
                raise DSLNotImplementedError("export_to_c: the host program reads an argument the C wrapper does "
                                             "not take", where or user_location(4))
            st.append((f"(double)({arg_names[x]})", True))
        elif op == "cast":
            st[-1] = _cast(*st[-1], x)
        elif op == "neg":
            st[-1] = (f"(-({st[-1][0]}))", st[-1][1])
        elif op == "abs":
            e, f = st[-1]
            st[-1] = (f"__builtin_fabs({e})" if f else f"(({e}) < 0 ? -({e}) : ({e}))", f)
        elif op in ("ctlz", "cttz", "popc"):  # of the low x bits, as unsigned
            e = f"((uint64_t)({st[-1][0]}) & UINT64_C({(1 << x) - 1}))"
            st[-1] = ({"ctlz": f"(int64_t)({e} == 0 ? {x} : __builtin_clzll({e}) - {64 - x})",
                       "cttz": f"(int64_t)({e} == 0 ? {x} : __builtin_ctzll({e}))",
                       "popc": f"(int64_t)__builtin_popcountll({e})"}[op], False)
        elif op == "not":
            st[-1] = (f"(int64_t)(!({st[-1][0]}))", False)
        elif op == "select":
            (b, fb), (a, fa), (c, _) = st.pop(), st.pop(), st.pop()
            f = fa or fb
            st.append((f"(({c}) ? ({'(double)' if f else ''}({a})) : ({'(double)' if f else ''}({b})))", f))
        else:
            (b, fb), (a, fa) = st.pop(), st.pop()
            f = fa or fb
            if op in _CMP:
                st.append((f"(int64_t)(({a}) {_CMP[op]} ({b}))", False))
            elif op in _ARITH:
                st.append((f"(({a}) {_ARITH[op]} ({b}))", f))
            elif op == "truediv":
                st.append((f"((double)({a}) / (double)({b}))", True))
            elif op in ("floordiv", "mod"):
                fn = ("ww_hp_ffloordiv" if op == "floordiv" else "ww_hp_fmod") if f else \
                    ("ww_hp_floordiv" if op == "floordiv" else "ww_hp_mod")
                st.append((f"{fn}({a}, {b}, &ww_bad)", f))
            elif op in ("min", "max"):
                st.append((f"((({a}) {'<=' if op == 'min' else '>='} ({b})) ? ({a}) : ({b}))", f))
            elif op in _BITS and not f:
                st.append((f"(({a}) {_BITS[op]} ({b}))", False))
            elif op in ("shl", "shr") and not f:
                st.append((f"((({b}) < 0 || ({b}) > 63) ? 0 : (({a}) {'<<' if op == 'shl' else '>>'} ({b})))",
                           False))
            else:
                raise DSLNotImplementedError(f"export_to_c: the host program's operation {op} has no C form",
                                             where or user_location(4))
    return st[0][0]


def statements(program, arg_names: dict, fail, guard_c) -> list[str]:
    """C statements declaring each derived value (int64_t s<id>, or double s<id> for a float) in order, host loops
    run whole for their carried values (declared after them); `fail(message)` is the C expression returning the
    wrapper's error, `guard_c(guard)` the C statement checking a guard of a loop's trips."""
    if not program:
        return []
    return ["  int ww_bad = 0;"] + _entries(program.entries, arg_names, fail, guard_c, "  ", 0)


def _where(x) -> str:
    return f" at {x.where[0]}:{x.where[1]}" if x.where else ""


def _entries(entries, arg_names, fail, guard_c, ind, depth) -> list[str]:
    out = []
    for d in entries:
        if d.kind == "loop":
            out += loop_c(d, arg_names, fail, guard_c, ind, depth, True)
            continue
        ct = "double" if d.type_code[0] == "f" else "int64_t"
        value = value_c(d.code, arg_names, d.where)
        if d.guards:  # made in host branches: computed when the call takes them
            value = "(" + " && ".join(f"s{g}" for g in d.guards) + f") ? ({value}) : 0"
        out.append(f"{ind}const {ct} s{d.sid} = {value};")
        out.append(f"{ind}if (ww_bad) return {fail('host code' + _where(d) + ': division by zero with these arguments')};")
    return out


def loop_c(hl, arg_names, fail, guard_c, ind, depth, outs, trip=None) -> list[str]:
    """C statements running host loop hl (host/host_loop.py) as the Python call runs it: with `outs`, its carried
    values after it are declared (int64_t s<out id>); trip(indent), where given, gives the statements each trip
    ends with (the launches made in the loop). Names of the loop's own are numbered by its depth, so that a loop
    in a loop's body has its own."""
    L = f"ww_l{depth}_"
    cur = [f"{L}c{j}" for j in range(len(hl.carried))]
    bad = f"if (ww_bad) return {fail('host code' + _where(hl) + ': division by zero with these arguments')};"
    o = [f"{ind}int64_t s{c.out_sid} = 0;" for c in hl.carried] if outs else []
    o.append(f"{ind}{{")
    i2, i3, i4 = ind + "  ", ind + "    ", ind + "      "
    o += [f"{i2}int64_t {v} = 0;" for v in cur]
    o.append(f"{i2}if ({' && '.join(f's{g}' for g in hl.guards) or '1'}) {{")
    for v, c in zip(cur, hl.carried):
        o.append(f"{i3}{v} = {value_c(list(c.init_code) + [('cast', c.type_code)], arg_names, hl.where)};")
    o.append(f"{i3}{bad}")
    if hl.cond is None:
        lo, hi, st = (value_c(b, arg_names, hl.where) for b in hl.bounds)
        o.append(f"{i3}const int64_t {L}lo = {lo}, {L}hi = {hi}, {L}st = {st};")
        o.append(f"{i3}{bad}")
        zero = fail("host code" + _where(hl) + ": the host loop's step is 0 for these arguments")
        o.append(f"{i3}if ({L}st == 0) return {zero};")
        o.append(f"{i3}for (int64_t {L}i = {L}lo; {L}st > 0 ? {L}i < {L}hi : {L}i > {L}hi;) {{")
        o.append(f"{i4}const int64_t s{hl.iv_sid} = {L}i;")
    else:
        o.append(f"{i3}for (;;) {{")
    o += [f"{i4}const int64_t s{c.in_sid} = {v};" for v, c in zip(cur, hl.carried)]
    if hl.cond is not None:
        o += _entries(hl.cond.entries, arg_names, fail, guard_c, i4, depth + 1)
        o += [i4 + guard_c(g) for g in hl.cond_guards]
        o.append(f"{i4}const int64_t {L}go = {value_c(hl.cond_code, arg_names, hl.where)};")
        o.append(f"{i4}{bad}")
        o.append(f"{i4}if (!{L}go) break;")
    o += _entries(hl.body.entries, arg_names, fail, guard_c, i4, depth + 1)
    o += [i4 + guard_c(g) for g in hl.body_guards]
    if trip is not None:
        o += trip(i4)
    if hl.carried:
        o.append(f"{i4}{{")
        o += [f"{i4}  const int64_t {L}n{j} = {value_c(list(c.next_code) + [('cast', c.type_code)], arg_names, hl.where)};"
              for j, c in enumerate(hl.carried)]
        o.append(f"{i4}  {bad}")
        o += [f"{i4}  {v} = {L}n{j};" for j, v in enumerate(cur)]
        o.append(f"{i4}}}")
    if hl.cond is None:
        o.append(f"{i4}if (__builtin_add_overflow({L}i, {L}st, &{L}i)) break;  /* past the stop, an int64_t */")
    o.append(f"{i3}}}")
    o.append(f"{i2}}}")
    if outs:
        o += [f"{i2}s{c.out_sid} = {v};" for v, c in zip(cur, hl.carried)]
    o.append(f"{ind}}}")
    return o


def defined_symbols(entries) -> set[int]:
    """The symbols a host program's entries define, those of its loops' trips included (the launches made in a
    loop read them)."""
    out = set()
    for d in entries:
        if d.kind != "loop":
            out.add(d.sid)
            continue
        out |= {c.in_sid for c in d.carried} | {c.out_sid for c in d.carried}
        if d.iv_sid is not None:
            out.add(d.iv_sid)
        out |= defined_symbols(d.body.entries) | (defined_symbols(d.cond.entries) if d.cond is not None else set())
    return out
