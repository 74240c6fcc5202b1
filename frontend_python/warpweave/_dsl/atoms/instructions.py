"""Emitting a backend's instruction (an atom or a primitive of its manifest) into the IR.

This is the one place where manifest operands meet IR values: register operands are packed from values of their
element type into PTX registers (e.g. two f16 values into one b32), the PTX template gets its attributes, and
outputs are unpacked back into values. Instructions with a lowering hook go to the plugin instead. The DSL's
atoms, cute.gemm, cute.copy and the conformance probes all emit through emit_instruction.
"""
from __future__ import annotations

import re

from ... import _core
from ..registry import backend_options
from ..registry.plugins import registry

# element_type -> (MLIR type, bits): the table the loaded manifests declare (Manifest.element_types).
from ..registry.element_types import ELEMENT_TYPES  # noqa: E402
REGISTER_TYPES = {"b32": ("i32", 32), "f32": ("f32", 32), "f64": ("f64", 64), "b64": ("i64", 64),
                  "b16": ("i16", 16), "pred": ("i1", 1)}
# Non-register operand roles -> the MLIR type of the value the template receives.
ROLE_TYPES = {"SMEM_ADDRESS": "i32", "MBARRIER": "i32", "TMEM_ADDRESS": "i32", "GMEM_ADDRESS": "i64",
              "SMEM_DESCRIPTOR": "i64", "TMA_DESCRIPTOR": "i64", "SCALAR": "i32", "PREDICATE": "i1",
              "INSTRUCTION_DESCRIPTOR": "i32", "COORDINATE": "i32"}


class InstructionError(ValueError):
    pass


class PackedRegisters(list):
    """An input operand's registers themselves (not its values): what a fragment whose values sit in its storage
    as the registers hold them gives, read a whole register at a time."""


# Roles that an instruction can produce. An address operand marked OUT names where a copy writes (its
# destination): the instruction still takes the address as an input.
RESULT_ROLES = ("REGISTERS", "SCALAR", "PREDICATE", "COORDINATE")


def is_result(op: dict) -> bool:
    return op["direction"] == "OUT" and op["role"] in RESULT_ROLES


def operand_slots(op: dict) -> int:
    if op["role"] == "REGISTERS":
        return int(op["registers"])
    return int(op.get("count") or 1)


def value_type(op: dict) -> str:
    """The MLIR type of each value of an operand (what callers pass and receive)."""
    if op["role"] == "REGISTERS":
        return ELEMENT_TYPES[op["element_type"]][0]
    if op.get("register_type") in REGISTER_TYPES:
        return REGISTER_TYPES[op["register_type"]][0]
    return ROLE_TYPES[op["role"]]


def values_of(op: dict) -> int:
    return int(op["values"]) if op["role"] == "REGISTERS" else operand_slots(op)


def _pack(b, op: dict, values: list[int]) -> list[int]:
    """Values of an input operand -> its registers."""
    n, regs = int(op["values"]), int(op["registers"])
    if isinstance(values, PackedRegisters):
        if len(values) != regs:
            raise InstructionError(f"operand {op['name']} takes {regs} registers, got {len(values)}")
        return list(values)
    et, ebits = ELEMENT_TYPES[op["element_type"]]
    rt, rbits = REGISTER_TYPES[op["register_type"]]
    if len(values) != n:
        raise InstructionError(f"operand {op['name']} takes {n} values, got {len(values)}")
    k = n // regs
    if k * regs != n or k * ebits != rbits:
        raise InstructionError(f"operand {op['name']}: {n} {op['element_type']} values do not fill {regs} "
                               f"{op['register_type']} registers")
    if ebits < 8:
        # sub-byte values are held in a byte each (the DSL's 4-bit types): the register packs their low bits, by
        # integer shifts (a vector of them would go through memory)
        return [_pack_bits(b, values[r * k:(r + 1) * k], ebits, rt, rbits) for r in range(regs)]
    out = []
    for r in range(regs):
        group = values[r * k:(r + 1) * k]
        if k == 1:
            v = group[0]
            out.append(v if et == rt else b.op1("llvm.bitcast", [v], rt))
        else:
            vec = b.op1("vector.from_elements", group, f"vector<{k}x{et}>")
            out.append(b.op1("llvm.bitcast", [vec], rt))
    return out


def _pack_bits(b, values, bits, rt, rbits):
    it = f"i{rbits}"
    mask = b.constant_int((1 << bits) - 1, it)
    word = None
    for j, v in enumerate(values):
        x = b.op1("arith.andi", [b.op1("arith.extui", [v], it), mask], it)
        if j:
            x = b.op1("arith.shli", [x, b.constant_int(bits * j, it)], it)
        word = x if word is None else b.op1("arith.ori", [word, x], it)
    return word if rt == it else b.op1("llvm.bitcast", [word], rt)


def _unpack(b, op: dict, regs_values: list[int]) -> list[int]:
    n, regs = int(op["values"]), int(op["registers"])
    et, _ = ELEMENT_TYPES[op["element_type"]]
    rt, _ = REGISTER_TYPES[op["register_type"]]
    k = n // regs
    out = []
    for v in regs_values:
        if k == 1:
            out.append(v if et == rt else b.op1("llvm.bitcast", [v], et))
        else:
            vec = b.op1("llvm.bitcast", [v], f"vector<{k}x{et}>")
            for j in range(k):
                out.append(b.op1("vector.extract", [vec], et, f"static_position = array<i64: {j}>"))
    return out


def _substitute(template: str, ins: dict, attrs: dict) -> str:
    declared = {a["name"]: a for a in ins.get("attributes", [])}

    def repl(m):
        name = m.group(1)
        if name not in declared:
            raise InstructionError(f"{ins['id']}: the template uses the undeclared attribute {{{name}}}")
        if name in attrs:
            v = attrs[name]
        elif declared[name].get("default_value"):
            v = declared[name]["default_value"]
        else:
            raise InstructionError(f"{ins['id']} needs the attribute {name}")
        allowed = declared[name].get("allowed") or []
        if allowed and str(v) not in allowed:
            raise InstructionError(f"{ins['id']}: attribute {name}={v} is not one of {', '.join(allowed)}")
        return str(v)

    return re.sub(r"\{([A-Za-z_][A-Za-z_0-9]*)\}", repl, template)


def emit_instruction(b, backend: str, ins: dict, inputs: dict, attrs: dict | None = None) -> dict:
    """Emits instruction `ins` (a manifest entry of `backend`) with IR values for its input operands
    ({operand name: [values]}); returns {output operand name: [values]}."""
    attrs = attrs or {}
    # The module asks the compiler for the tool that keeps this instruction, as its backend says
    # (backend_options.py); the manifest's cubin_tool field says the same for backends without the options hook.
    tool = backend_options.cubin_tool(backend, ins["id"]) or ins.get("cubin_tool")
    if tool:
        b.set_module_attribute("ww.cubin_tool", '"' + tool + '"')
    ops = ins.get("operands", [])
    outs = [o for o in ops if is_result(o)]
    ins_ops = [o for o in ops if not is_result(o)]
    for o in ins_ops:
        if o["name"] not in inputs:
            raise InstructionError(f"{ins['id']} needs the operand {o['name']}")
    if ins.get("lowering_hook"):
        flat = []
        for o in ins_ops:
            flat.extend(inputs[o["name"]])
        nres = sum(values_of(o) for o in outs)
        registry.load()  # the hook lives in the plugin: make sure this process loaded it (e.g. a probe worker)
        res = _core.plugin_lower(backend, ins["lowering_hook"], ins["id"], b, flat, dict(attrs), nres)
        out, pos = {}, 0
        for o in outs:
            n = values_of(o)
            out[o["name"]] = list(res[pos:pos + n])
            pos += n
        return out
    operands = []
    for o in ins_ops:
        given = inputs[o["name"]]
        vals = given if isinstance(given, PackedRegisters) else list(given)
        operands.extend(_pack(b, o, vals) if o["role"] == "REGISTERS" else vals)
    result_types = []
    for o in outs:
        if o["role"] == "REGISTERS":
            result_types.extend([REGISTER_TYPES[o["register_type"]][0]] * int(o["registers"]))
        else:
            result_types.extend([value_type(o)] * operand_slots(o))
    text = _substitute(ins["ptx_template"], ins, attrs)
    res = b.inline_asm(text, ins.get("constraints", ""), operands, result_types,
                       bool(ins.get("has_side_effects")) or not result_types)
    out, pos = {}, 0
    for o in outs:
        n = operand_slots(o)
        regs = list(res[pos:pos + n])
        pos += n
        out[o["name"]] = _unpack(b, o, regs) if o["role"] == "REGISTERS" else regs
    return out
