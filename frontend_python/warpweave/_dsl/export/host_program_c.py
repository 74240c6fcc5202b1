"""The host program of a compiled function (host/host_program.py) as C statements of an exported wrapper: each
derived value computed from the wrapper's arguments before the launches, with the same typing (integers wrapped
to their width, Float32 rounded) and the same errors (a division by zero fails the call with the user's line)."""
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


def value_c(code, arg_names: dict) -> str:
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
                                             "not take", user_location(4))
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
                                             user_location(4))
    return st[0][0]


def statements(program, arg_names: dict, fail) -> list[str]:
    """C statements declaring each derived value (int64_t s<id>, or double s<id> for a float) in order;
    `fail(message)` is the C expression returning the wrapper's error."""
    out = []
    if not program:
        return out
    if program.has_loops:
        loop = next(d for d in program.entries if d.kind == "loop")
        raise DSLNotImplementedError("export_to_c: a host loop over a runtime bound has no C form yet", loop.where)
    out.append("  int ww_bad = 0;")
    for d in program.entries:
        ct = "double" if d.type_code[0] == "f" else "int64_t"
        value = value_c(d.code, arg_names)
        if d.guards:  # made in host branches: computed when the call takes them
            value = "(" + " && ".join(f"s{g}" for g in d.guards) + f") ? ({value}) : 0"
        out.append(f"  const {ct} s{d.sid} = {value};")
        where = f" at {d.where[0]}:{d.where[1]}" if d.where else ""
        out.append(f"  if (ww_bad) return {fail('host code' + where + ': division by zero with these arguments')};")
    return out
