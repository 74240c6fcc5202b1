"""The dialect ops user code writes with the IR directly (`cutlass._mlir.dialects.llvm` / `arith`).

Each op is checked here, where the user's line is known, against what MLIR's verifier and LLVM's NVPTX backend
would refuse later without it (operand types that differ, an extractvalue of the wrong type, inline asm whose
constraints do not match its operands and results or whose `$n` names no operand): a DSL error at that line, never
a verifier message about an SSA name or an abort in the backend. `loc=` and `ip=` are accepted as CuTe DSL's
helpers pass them: ops go to the current insertion point at the user's line (trace.builder()). The PTX inside an
inline asm string is the assembler's to judge (ptxas); call/compile_module.py maps its complaint back to the line
of the asm op (`asm_sites`). Only architecture-neutral dialects are here; NVVM's ops of one generation come from backends.
"""
from __future__ import annotations

import enum
import math
import re
import struct

from . import trace
from .errors import DSLTypeError, DSLValueError, user_location
from .ir_op_options import FastMathFlags, RoundingMode, check_results, check_rounding, fastmath_property
from .ir_values import (
    FloatType, IndexType, IntegerType, PointerType, StructType, Type, Value, bit_width, emit, operand,
)

_as_operand = operand  # for the builders whose parameter is named `operand`, as the generated ones name it


# --- MLIR text -----------------------------------------------------------------------------------------------

def mlir_string(text: str) -> str:
    """A Python string as an MLIR string literal: printable ASCII kept, the rest as \\XX bytes."""
    out = []
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        out.append(ch if 0x20 <= byte < 0x7F and ch not in '"\\' else f"\\{byte:02X}")
    return '"' + "".join(out) + '"'


def caller_location():
    return user_location(3)


# Of each float type narrower than Python's: its largest finite value, and the magnitude from which a decimal rounds
# to infinity (half a unit in the last place above it): (2 - 2^(1-p)) * 2^emax and (2 - 2^-p) * 2^emax.
_FLOAT_LIMITS = {name: ((2 - 2.0 ** (1 - p)) * 2.0 ** emax, (2 - 2.0 ** -p) * 2.0 ** emax)
                 for name, p, emax in (("f16", 11, 15), ("bf16", 8, 127), ("f32", 24, 127), ("tf32", 11, 127))}


def _float_literal(value: float) -> str:
    """A finite float as MLIR's lexer reads one: a decimal with a point (`1.0e-300`, never `1e-300`, which MLIR
    reads as the integer 1 followed by a name)."""
    text = repr(value)
    mantissa, e, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + e + exponent


def _same_types(name: str, values: list) -> Type:
    t = values[0].type
    for v in values[1:]:
        if v.type != t:
            raise DSLTypeError(f"{name}: operands of one type expected, got {', '.join(str(x.type) for x in values)}",
                               caller_location())
    return t


def _scalar_or_vector_of(t: Type):
    if t.text.startswith("vector<"):
        from_vector = re.match(r"^vector<(?:\d+x)+(.+)>$", t.text)
        return Type(from_vector.group(1))
    return t


def check_kind(name: str, t: Type, want: str):
    e = _scalar_or_vector_of(t)
    ok = (IntegerType.isinstance(e) or IndexType.isinstance(e)) if want == "int" else FloatType.isinstance(e)
    if not ok:
        raise DSLTypeError(f"{name} works on {'integers' if want == 'int' else 'floats'}, got {t}", caller_location())


# --- inline asm ------------------------------------------------------------------------------------------------

class AsmDialect(enum.IntEnum):
    AD_ATT = 0
    AD_Intel = 1


# NVPTX's register constraints: the width of the register each names.
_REGISTER_BITS = {"b": 1, "c": 16, "h": 16, "r": 32, "l": 64, "q": 128, "f": 32, "d": 64}
_FLOAT_REGISTERS = ("f", "d")
_PLACEHOLDER = re.compile(r"\$(?:(\$)|(\d+)|\{(\d+)(?::[a-zA-Z]+)?\}|([(|)]))")


def _fits(code: str, t: Type) -> bool:
    width = bit_width(t)
    if width is None:
        return False
    reg = _REGISTER_BITS[code]
    if code in _FLOAT_REGISTERS or FloatType.isinstance(t):
        return width == reg  # a float is moved bit for bit: only a register of its width holds it
    return width <= reg  # a narrower integer is extended into the register and truncated out of it


def _parse_constraints(constraints: str, where):
    outputs, inputs, clobbers = [], [], []
    if not constraints:
        return outputs, inputs, clobbers
    for raw in constraints.split(","):
        c = raw.strip()
        if c.startswith("~{") and c.endswith("}"):
            clobbers.append(c)
        elif c.startswith("="):
            code = c[2:] if c.startswith("=&") else c[1:]
            if not code or any(ch not in _REGISTER_BITS for ch in code):
                raise DSLValueError(f"inline asm: output constraint {c!r} names no NVPTX register "
                                    f"(one of {', '.join('=' + k for k in _REGISTER_BITS)})", where)
            outputs.append(code)
        elif c.startswith("+"):
            raise DSLValueError(f"inline asm: {c!r}: LLVM has no read-write constraint; write the output ('=r') "
                                "and tie an input to it by its number ('0')", where)
        elif c.isdigit():
            inputs.append(("tied", int(c)))
        elif c and all(ch in _REGISTER_BITS or ch in "ni" for ch in c):
            inputs.append(("reg", c))
        else:
            raise DSLValueError(f"inline asm: constraint {c!r} is not one NVPTX knows (registers "
                                f"{', '.join(_REGISTER_BITS)}, immediates n/i, a tied output's number, ~{{clobber}})",
                                where)
    return outputs, inputs, clobbers


def _check_placeholders(asm: str, n_operands: int, where):
    pos = 0
    while True:
        i = asm.find("$", pos)
        if i < 0:
            return
        m = _PLACEHOLDER.match(asm, i)
        if m is None:
            raise DSLValueError(f"inline asm: '$' at offset {i} starts no operand reference ($0, ${{0}}, or $$ for a "
                                f"dollar sign): ...{asm[max(0, i - 10):i + 10]!r}...", where)
        n = m.group(2) or m.group(3)
        if n is not None and int(n) >= n_operands:
            raise DSLValueError(f"inline asm: ${n} names no operand: the constraints give {n_operands} "
                                f"(outputs first, then inputs: $0..${n_operands - 1})", where)
        pos = m.end()


def _check_asm_text(asm: str, where):
    """What the assembler would misread or refuse far from this op: PTX is ASCII text, a NUL ends the PTX file
    there (the instructions after it would vanish without a word), and a `{` without its `}` shifts the PTX after
    it into a scope the assembler reports at the end of the file."""
    for i, ch in enumerate(asm):
        if ch in "\t\n\r":
            continue
        if not " " <= ch <= "~":
            raise DSLValueError(f"inline asm: character {ch!r} at offset {i}: PTX is printable ASCII text (with tabs "
                                f"and newlines): ...{asm[max(0, i - 10):i + 10]!r}...", where)
    depth = 0
    for line in asm.splitlines():
        code = line.split("//", 1)[0]
        for ch in code:
            depth += ch == "{"
            depth -= ch == "}"
            if depth < 0:
                raise DSLValueError("inline asm: a '}' closes no '{' (PTX scopes open and close within one asm "
                                    "string)", where)
    if depth:
        raise DSLValueError(f"inline asm: {depth} '{{' left open (PTX scopes open and close within one asm string)",
                            where)


def inline_asm(res, operands_, asm_string, constraints, *, has_side_effects=False, is_align_stack=False,
               tail_call_kind=None, asm_dialect=None, operand_attrs=None, loc=None, ip=None):
    """llvm.inline_asm: `res` the result type (an llvm struct for several outputs, None for none). The operands and
    results are checked against the constraints here; the string reaches the PTX as written. The parameters are
    named as the generated builder names them (`operands_`: programs pass them by keyword too)."""
    where = user_location(2)
    operands = operands_
    if not isinstance(asm_string, str) or not isinstance(constraints, str):
        raise DSLTypeError("inline asm: the asm string and the constraints are strings", where)
    if asm_dialect not in (None, AsmDialect.AD_ATT, 0):
        raise DSLValueError("inline asm: NVPTX assembles the AT&T dialect only (llvm.AsmDialect.AD_ATT)", where)
    if operand_attrs is not None or tail_call_kind is not None:
        raise DSLValueError("inline asm: operand_attrs and tail_call_kind are not supported for NVPTX", where)
    operands = [operand(o, "an inline asm operand") for o in operands]
    res = None if res is None else Type(res)
    results = [] if res is None else (StructType(res).body if StructType.isinstance(res) else [res])
    outputs, inputs, _ = _parse_constraints(constraints, where)
    if len(outputs) != len(results):
        raise DSLValueError(f"inline asm: the constraints {constraints!r} have {len(outputs)} output(s), the result "
                            f"type {res} gives {len(results)}", where)
    if len(inputs) != len(operands):
        raise DSLValueError(f"inline asm: the constraints {constraints!r} have {len(inputs)} input(s), "
                            f"{len(operands)} operand(s) are given", where)
    for i, (code, t) in enumerate(zip(outputs, results)):
        if not _fits(code, t):
            raise DSLTypeError(f"inline asm: output ${i} of type {t} does not fit constraint '={code}'", where)
    suspect = False
    for k, ((kind, code), v) in enumerate(zip(inputs, operands)):
        n = len(outputs) + k
        if kind == "tied":
            if code >= len(outputs):
                raise DSLValueError(f"inline asm: input ${n} is tied to output {code}, which does not exist", where)
            if v.type != results[code]:
                raise DSLTypeError(f"inline asm: input ${n} ({v.type}) is tied to output {code} ({results[code]})",
                                   where)
        elif not any(ch in "ni" or _fits(ch, v.type) for ch in code):
            raise DSLTypeError(f"inline asm: input ${n} of type {v.type} does not fit constraint '{code}'", where)
        elif all(ch in "ni" for ch in code) and v.constant is None:
            suspect = True  # LLVM may still fold it to a constant; if not, codegen refuses it and names this op
    _check_placeholders(asm_string, len(outputs) + len(inputs), where)
    _check_asm_text(asm_string, where)
    props = f"asm_string = {mlir_string(asm_string)}, constraints = {mlir_string(constraints)}"
    if has_side_effects:
        props += ", has_side_effects"
    if is_align_stack:
        props += ", is_align_stack"
    out = emit("llvm.inline_asm", operands, [] if res is None else [res], props)
    trace.current().asm_sites.append((asm_string, where, suspect))
    return out[0] if out else None


def extractvalue(res, container, position, *, loc=None, ip=None) -> Value:
    where = user_location(2)
    container = operand(container, "extractvalue's container")
    if not StructType.isinstance(container.type):
        raise DSLTypeError(f"extractvalue takes a field of an LLVM struct, got a value of type {container.type}", where)
    pos = [position] if isinstance(position, int) else list(position)
    t = container.type
    for p in pos:
        body = StructType(t).body if StructType.isinstance(t) else None
        if body is None or not isinstance(p, int) or not 0 <= p < len(body):
            raise DSLValueError(f"extractvalue: position {pos} is not a field of {container.type}", where)
        t = body[p]
    res = Type(res)
    if res != t:
        raise DSLTypeError(f"extractvalue: field {pos} of {container.type} is {t}, the result type given is {res}",
                           where)
    return emit("llvm.extractvalue", [container], [res], "position = array<i64: " + ", ".join(map(str, pos)) + ">")[0]


def insertvalue(container, value, position, *, results=None, loc=None, ip=None) -> Value:
    where = user_location(2)
    container, value = operand(container), operand(value)
    pos = [position] if isinstance(position, int) else list(position)
    t = container.type
    for p in pos:
        body = StructType(t).body if StructType.isinstance(t) else None
        if body is None or not isinstance(p, int) or not 0 <= p < len(body):
            raise DSLValueError(f"insertvalue: position {pos} is not a field of {container.type}", where)
        t = body[p]
    if value.type != t:
        raise DSLTypeError(f"insertvalue: field {pos} of {container.type} is {t}, the value is {value.type}", where)
    check_results("llvm.insertvalue", results, [container.type], where)
    return emit("llvm.insertvalue", [container, value], [container.type],
                "position = array<i64: " + ", ".join(map(str, pos)) + ">")[0]


def mlir_undef(res, *, loc=None, ip=None) -> Value:
    return emit("llvm.mlir.undef", [], [Type(res)], "")[0]


def total_bits(t: Type):
    """The bits of a scalar type, or of a vector's lanes together (vector<8xi16> and vector<32xi4>: 128)."""
    dims = re.match(r"^vector<((?:\d+x)+)", t.text)
    return bit_width(t) if dims is None else \
        math.prod(int(d) for d in dims.group(1)[:-1].split("x")) * (bit_width(_scalar_or_vector_of(t)) or 0)


def llvm_bitcast(res, arg, *, loc=None, ip=None) -> Value:
    arg = operand(arg)
    res = Type(res)
    if not total_bits(arg.type) or total_bits(arg.type) != total_bits(res):
        raise DSLTypeError(f"bitcast keeps the bits: {arg.type} to {res} changes the width", user_location(2))
    return emit("llvm.bitcast", [arg], [res], "")[0]


def _llvm_pointer_cast(name: str, takes: str, gives: str, doc: str):
    """An llvm cast between pointers and integers (takes / gives: "a pointer" or "an integer"), its operand and
    result checked for those kinds at the user's line."""
    kinds = {"a pointer": PointerType.isinstance, "an integer": IntegerType.isinstance}

    def op(res, arg, *, loc=None, ip=None) -> Value:
        a = operand(arg)
        t = Type(res)
        if not kinds[takes](a.type) or not kinds[gives](t):
            raise DSLTypeError(f"{op.__name__} takes {takes} to {gives} type, got {a.type} to {t}", user_location(2))
        return emit(name, [a], [t], "")[0]

    op.__name__ = name.split(".")[1]
    op.__doc__ = doc
    return op


addrspacecast = _llvm_pointer_cast("llvm.addrspacecast", "a pointer", "a pointer",
                                   "The pointer arg in another address space (to or from the generic one, or shared "
                                   "to a cluster's shared).")
ptrtoint = _llvm_pointer_cast("llvm.ptrtoint", "a pointer", "an integer",
                              "The address the pointer arg holds, as an integer of type res (a narrower one keeps its "
                              "low bits: the 32-bit address of a pointer to shared memory).")
inttoptr = _llvm_pointer_cast("llvm.inttoptr", "an integer", "a pointer",
                              "The pointer of type res to the address the integer arg holds.")


class IntegerOverflowFlags(enum.IntFlag):
    """llvm.trunc's flags (the generated builder takes them as its third parameter): that the dropped bits are
    the sign's (nsw) or zero (nuw); a promise, so leaving it out changes no result."""
    none = 0
    nsw = 1
    nuw = 2


def _llvm_int_cast(name: str, widen: bool):
    # The generated builders' parameters: llvm.trunc's overflow_flags (positional there), llvm.zext's non_neg; both
    # only promise what the operand is, so the op is emitted without them (never a wrong result).
    def op(res, arg, overflow_flags=None, *, non_neg=None, loc=None, ip=None) -> Value:
        a = operand(arg)
        t = Type(res)
        check_kind(name, a.type, "int")
        check_kind(name, t, "int")
        wa, wt = bit_width(_scalar_or_vector_of(a.type)), bit_width(_scalar_or_vector_of(t))
        if wa is not None and wt is not None and not (wt > wa if widen else wt < wa):
            raise DSLTypeError(f"{name}: {a.type} to {t} must {'widen' if widen else 'narrow'}", user_location(2))
        return emit(name, [a], [t], "")[0]

    op.__name__ = name.split(".")[1]
    return op


zext = _llvm_int_cast("llvm.zext", True)    # unsigned widening (arith.extui's meaning)
sext = _llvm_int_cast("llvm.sext", True)    # signed widening
trunc = _llvm_int_cast("llvm.trunc", False)  # the low bits


def intr_ctlz(in_, is_zero_poison, *, loc=None, ip=None) -> Value:
    arg = operand(in_)
    check_kind("llvm.intr.ctlz", arg.type, "int")
    return emit("llvm.intr.ctlz", [arg], [arg.type], f"is_zero_poison = {'true' if is_zero_poison else 'false'}")[0]


# --- arith ------------------------------------------------------------------------------------------------------

class CmpIPredicate(enum.IntEnum):
    eq = 0
    ne = 1
    slt = 2
    sle = 3
    sgt = 4
    sge = 5
    ult = 6
    ule = 7
    ugt = 8
    uge = 9


class CmpFPredicate(enum.IntEnum):
    AlwaysFalse = 0
    OEQ = 1
    OGT = 2
    OGE = 3
    OLT = 4
    OLE = 5
    ONE = 6
    ORD = 7
    UEQ = 8
    UGT = 9
    UGE = 10
    ULT = 11
    ULE = 12
    UNE = 13
    UNO = 14
    AlwaysTrue = 15


def constant(result, value, *, loc=None, ip=None) -> Value:
    where = user_location(2)
    t = Type(result)
    if isinstance(value, bool) or isinstance(value, int):
        if not (IntegerType.isinstance(t) or IndexType.isinstance(t)):
            raise DSLTypeError(f"arith.constant: an integer constant needs an integer type, got {t}", where)
        width = 64 if IndexType.isinstance(t) else IntegerType(t).width
        v = int(value)
        if not (v in (0, 1, -1) if width == 1 else -(1 << (width - 1)) <= v < (1 << width)):
            raise DSLValueError(f"arith.constant: {v} does not fit {t}", where)
        if width == 1:
            out = emit("arith.constant", [], [t], f"value = {'true' if v else 'false'}")[0]
        else:
            signed = v - (1 << width) if v >= 1 << (width - 1) else v  # MLIR prints integer attributes signed
            out = emit("arith.constant", [], [t], f"value = {signed} : {t}")[0]
        out.constant = v
        return out
    if isinstance(value, float):
        if not FloatType.isinstance(t):
            raise DSLTypeError(f"arith.constant: a float constant needs a float type, got {t}", where)
        if value != value or value in (math.inf, -math.inf):
            # NaN and infinities have no decimal spelling in MLIR: their bit pattern, in hex
            if t.text == "bf16":
                n = int.from_bytes(struct.pack("<f", value), "little") >> 16
            else:
                n = int.from_bytes(struct.pack({"f16": "<e", "f32": "<f", "f64": "<d"}[t.text], value), "little")
            return emit("arith.constant", [], [t], f"value = 0x{n:X} : {t}")[0]
        if t.text in _FLOAT_LIMITS and abs(value) >= _FLOAT_LIMITS[t.text][1]:
            # MLIR would round it to infinity without a word: a finite constant the type cannot hold is a mistake
            raise DSLValueError(f"arith.constant: {value!r} does not fit {t} (its largest finite value is "
                                f"{_FLOAT_LIMITS[t.text][0]!r}); write math.inf for an infinity", where)
        return emit("arith.constant", [], [t], f"value = {_float_literal(value)} : {t}")[0]
    raise DSLTypeError(f"arith.constant takes a Python int or float, got {type(value).__name__}", where)


def _binary_op(name: str, kind: str):
    # a float op's fastmath flags go on the op; its roundingmode must be the one the arithmetic does (nearest even)
    def op(lhs, rhs, *, results=None, loc=None, ip=None, **flags):
        where = user_location(2)
        fastmath, rounding = flags.pop("fastmath", None), flags.pop("roundingmode", None)
        if flags or (kind == "int" and (fastmath is not None or rounding is not None)):
            extra = sorted(flags) + [k for k, v in (("fastmath", fastmath), ("roundingmode", rounding))
                                     if kind == "int" and v is not None]
            raise DSLTypeError(f"{name}: unsupported arguments {extra}", where)
        a, b = operand(lhs, f"{name}'s lhs"), operand(rhs, f"{name}'s rhs")
        t = _same_types(name, [a, b])
        check_kind(name, t, kind)
        check_results(name, results, [t], where)
        check_rounding(name, rounding, where)
        return emit(name, [a, b], [t], fastmath_property(name, fastmath, where))[0]

    op.__name__ = name.split(".")[1]
    op.__doc__ = f"{name}: both operands of one {'integer' if kind == 'int' else 'float'} type; the result too."
    return op


def _unary_op(name: str, kind: str):
    # `operand`, as the generated builder names it (arith.negf(operand=v)); ir_values' operand() is _as_operand
    def op(operand, *, loc=None, ip=None):
        a = _as_operand(operand, f"{name}'s operand")
        check_kind(name, a.type, kind)
        return emit(name, [a], [a.type], "")[0]

    op.__name__ = name.split(".")[1]
    return op


def _cast_op(name: str, src_kind: str, dst_kind: str, widen, options=()):
    # options: the keywords this conversion's builder has (fastmath on extf/truncf, roundingmode on truncf)
    def op(out, in_, *, loc=None, ip=None, **kw):
        where = user_location(2)
        if set(kw) - set(options):
            raise DSLTypeError(f"{name}: unsupported arguments {sorted(set(kw) - set(options))}", where)
        check_rounding(name, kw.get("roundingmode"), where)
        props = fastmath_property(name, kw.get("fastmath"), where)
        a = operand(in_, f"{name}'s operand")
        t = Type(out)
        check_kind(name, a.type, src_kind)
        check_kind(name, t, dst_kind)
        if widen is not None:
            wa, wt = bit_width(_scalar_or_vector_of(a.type)), bit_width(_scalar_or_vector_of(t))
            if wa is not None and wt is not None and not (wt > wa if widen else wt < wa):
                raise DSLTypeError(f"{name}: {a.type} to {t} must {'widen' if widen else 'narrow'}", where)
        return emit(name, [a], [t], props)[0]

    op.__name__ = name.split(".")[1]
    return op


addi = _binary_op("arith.addi", "int")
subi = _binary_op("arith.subi", "int")
muli = _binary_op("arith.muli", "int")
divsi = _binary_op("arith.divsi", "int")
divui = _binary_op("arith.divui", "int")
remsi = _binary_op("arith.remsi", "int")
remui = _binary_op("arith.remui", "int")
andi = _binary_op("arith.andi", "int")
ori = _binary_op("arith.ori", "int")
xori = _binary_op("arith.xori", "int")
shli = _binary_op("arith.shli", "int")
shrui = _binary_op("arith.shrui", "int")
shrsi = _binary_op("arith.shrsi", "int")
maxsi = _binary_op("arith.maxsi", "int")
minsi = _binary_op("arith.minsi", "int")
maxui = _binary_op("arith.maxui", "int")
minui = _binary_op("arith.minui", "int")
addf = _binary_op("arith.addf", "float")
subf = _binary_op("arith.subf", "float")
mulf = _binary_op("arith.mulf", "float")
divf = _binary_op("arith.divf", "float")
maxnumf = _binary_op("arith.maxnumf", "float")
minnumf = _binary_op("arith.minnumf", "float")
maximumf = _binary_op("arith.maximumf", "float")
minimumf = _binary_op("arith.minimumf", "float")
negf = _unary_op("arith.negf", "float")
extui = _cast_op("arith.extui", "int", "int", True)
extsi = _cast_op("arith.extsi", "int", "int", True)
trunci = _cast_op("arith.trunci", "int", "int", False)
extf = _cast_op("arith.extf", "float", "float", True, ("fastmath",))
truncf = _cast_op("arith.truncf", "float", "float", False, ("fastmath", "roundingmode"))
sitofp = _cast_op("arith.sitofp", "int", "float", None)
uitofp = _cast_op("arith.uitofp", "int", "float", None)
fptosi = _cast_op("arith.fptosi", "float", "int", None)
fptoui = _cast_op("arith.fptoui", "float", "int", None)
index_cast = _cast_op("arith.index_cast", "int", "int", None)


def bitcast(out, in_, *, loc=None, ip=None) -> Value:
    a = operand(in_, "arith.bitcast's operand")
    t = Type(out)
    wa, wt = bit_width(_scalar_or_vector_of(a.type)), bit_width(_scalar_or_vector_of(t))
    if wa is None or wa != wt:
        raise DSLTypeError(f"arith.bitcast keeps the bits: {a.type} to {t} changes the width", user_location(2))
    return emit("arith.bitcast", [a], [t], "")[0]


def cmpi(predicate, lhs, rhs, *, results=None, loc=None, ip=None) -> Value:
    a, b = operand(lhs), operand(rhs)
    t = _same_types("arith.cmpi", [a, b])
    check_kind("arith.cmpi", t, "int")
    p = CmpIPredicate(int(predicate))
    check_results("arith.cmpi", results, [_bool_like(t)], user_location(2))
    return emit("arith.cmpi", [a, b], [_bool_like(t)], f"predicate = {int(p)} : i64")[0]


def cmpf(predicate, lhs, rhs, *, fastmath=None, results=None, loc=None, ip=None) -> Value:
    where = user_location(2)
    a, b = operand(lhs), operand(rhs)
    t = _same_types("arith.cmpf", [a, b])
    check_kind("arith.cmpf", t, "float")
    p = CmpFPredicate(int(predicate))
    check_results("arith.cmpf", results, [_bool_like(t)], where)
    flags = fastmath_property("arith.cmpf", fastmath, where)
    return emit("arith.cmpf", [a, b], [_bool_like(t)], f"predicate = {int(p)} : i64" + (", " + flags if flags
                                                                                           else ""))[0]


def _bool_like(t: Type) -> Type:
    m = re.match(r"^vector<((?:\d+x)+).+>$", t.text)
    return Type(f"vector<{m.group(1)}i1>") if m else Type("i1")


def select(condition, true_value, false_value, *, results=None, loc=None, ip=None) -> Value:
    c, a, b = operand(condition), operand(true_value), operand(false_value)
    t = _same_types("arith.select", [a, b])
    if c.type != Type("i1") and c.type != _bool_like(t):
        raise DSLTypeError(f"arith.select: the condition is i1, got {c.type}", user_location(2))
    check_results("arith.select", results, [t], user_location(2))
    return emit("arith.select", [c, a, b], [t], "")[0]


# --- vector ------------------------------------------------------------------------------------------------------

def _vector_of(name: str, v: Value):
    m = re.match(r"^vector<((?:\d+x)+)(.+)>$", v.type.text)
    if not m:
        raise DSLTypeError(f"{name} works on a vector, got {v.type}", user_location(3))
    return [int(n) for n in m.group(1).split("x")[:-1]], Type(m.group(2))


def _static_position(name: str, shape: list, dynamic_position, static_position):
    if list(dynamic_position or []):
        raise DSLValueError(f"{name}: dynamic positions are not supported; give the position as static_position",
                            user_location(3))
    pos = [int(p) for p in static_position]
    if len(pos) > len(shape) or any(not 0 <= p < n for p, n in zip(pos, shape)):
        raise DSLValueError(f"{name}: position {pos} is outside vector<{'x'.join(map(str, shape))}>",
                            user_location(3))
    return pos


def _position_type(shape: list, pos: list, elem: Type) -> Type:
    rest = shape[len(pos):]
    return Type("vector<" + "".join(f"{n}x" for n in rest) + elem.text + ">") if rest else elem


def vector_extract(vector, dynamic_position, static_position, *, loc=None, ip=None) -> Value:
    """vector.extract: the element (or sub-vector) of `vector` at static_position (e.g. [2])."""
    v = operand(vector)
    shape, elem = _vector_of("vector.extract", v)
    pos = _static_position("vector.extract", shape, dynamic_position, static_position)
    return emit("vector.extract", [v], [_position_type(shape, pos, elem)],
                f"static_position = array<i64: {', '.join(map(str, pos))}>")[0]


def vector_insert(value_to_store, dest, dynamic_position, static_position, *, loc=None, ip=None) -> Value:
    """vector.insert: `dest` with value_to_store at static_position."""
    x, v = operand(value_to_store), operand(dest)
    shape, elem = _vector_of("vector.insert", v)
    pos = _static_position("vector.insert", shape, dynamic_position, static_position)
    if x.type != _position_type(shape, pos, elem):
        raise DSLTypeError(f"vector.insert: a {_position_type(shape, pos, elem)} goes at {pos} of {v.type}, got "
                           f"{x.type}", user_location(2))
    return emit("vector.insert", [x, v], [v.type], f"static_position = array<i64: {', '.join(map(str, pos))}>")[0]


def vector_bitcast(result, source, *, loc=None, ip=None) -> Value:
    """vector.bitcast: the same bits as another vector type (the innermost dimension's width kept)."""
    v, t = operand(source), Type(result)
    shape, elem = _vector_of("vector.bitcast", v)
    m = re.match(r"^vector<((?:\d+x)+)(.+)>$", t.text)
    to_shape = [int(n) for n in m.group(1).split("x")[:-1]] if m else []

    def bits(sh, e):
        w = bit_width(e)
        return None if w is None else w * sh[-1]

    if not m or shape[:-1] != to_shape[:-1] or bits(shape, elem) is None or \
            bits(shape, elem) != bits(to_shape, Type(m.group(2))):
        raise DSLTypeError(f"vector.bitcast keeps the bits: {v.type} to {t} changes the width", user_location(2))
    return emit("vector.bitcast", [v], [t], "")[0]


def vector_from_elements(result, elements, *, loc=None, ip=None) -> Value:
    """vector.from_elements: a vector of `result`'s type made of the given scalars, in row-major order."""
    t = Type(result)
    m = re.match(r"^vector<((?:\d+x)+)(.+)>$", t.text)
    if not m:
        raise DSLTypeError(f"vector.from_elements makes a vector, not {t}", user_location(2))
    n = math.prod(int(x) for x in m.group(1).split("x")[:-1])
    es = [operand(e) for e in elements]
    if len(es) != n or any(e.type != Type(m.group(2)) for e in es):
        raise DSLTypeError(f"vector.from_elements: {t} takes {n} {m.group(2)} elements, got "
                           f"{', '.join(str(e.type) for e in es) or 'none'}", user_location(2))
    return emit("vector.from_elements", es, [t], "")[0]


def vector_broadcast(result, source, *, loc=None, ip=None) -> Value:
    """vector.broadcast: a scalar repeated into every element of `result`'s vector type."""
    t, s = Type(result), operand(source)
    m = re.match(r"^vector<(?:\d+x)+(.+)>$", t.text)
    if not m or Type(m.group(1)) != s.type:
        raise DSLTypeError(f"vector.broadcast: a scalar of {t}'s element type is broadcast, got {s.type}",
                           user_location(2))
    return emit("vector.broadcast", [s], [t], "")[0]


# --- math ----------------------------------------------------------------------------------------------------------

def _math_op(name: str, kind: str = "float", arity: int = 1):
    def op(*args, fastmath=None, loc=None, ip=None):
        where = user_location(2)
        if len(args) != arity:
            raise DSLTypeError(f"{name} takes {arity} operand{'s' if arity > 1 else ''}, got {len(args)}", where)
        vs = [operand(a, f"{name}'s operand") for a in args]
        t = _same_types(name, vs)
        _check_kind(name, t, kind)
        props = fastmath_property(name, fastmath, where) if kind == "float" else ""
        return emit(name, vs, [t], props)[0]

    op.__name__ = name.split(".")[1]
    op.__doc__ = f"{name}: elementwise on a {kind} scalar or vector; the result has its type."
    return op


(math_absf, math_ceil, math_floor, math_exp, math_exp2, math_log, math_log2, math_log10, math_sqrt, math_rsqrt,
 math_tanh, math_sin, math_cos, math_erf, math_round, math_trunc) = (
    _math_op(f"math.{n}") for n in ("absf", "ceil", "floor", "exp", "exp2", "log", "log2", "log10", "sqrt", "rsqrt",
                                    "tanh", "sin", "cos", "erf", "round", "trunc"))
math_absi = _math_op("math.absi", "int")
math_fma = _math_op("math.fma", arity=3)
math_copysign = _math_op("math.copysign", arity=2)
math_powf = _math_op("math.powf", arity=2)
