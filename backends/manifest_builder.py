"""The text-format writer the backends' manifest generators share (backends/<name>/generate_manifest.py).

A generator describes its generation's entries as dicts (manifest.proto's field names; `entry`, `operand`,
`attribute`, `family`, `parameter` make them) and this module writes them in the field order of manifest.proto,
so that every generated textproto reads alike. Plain Python 3, no dependencies: a generator runs anywhere the
repository is checked out.
"""
from __future__ import annotations

import importlib.util
import os
import sys

# Optional operand fields, in the order they are written.
_OPERAND_FIELDS = ("element_type", "values", "registers", "register_type", "layout_tv", "count", "values_expr",
                   "registers_expr", "count_expr", "when", "kind")


def q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def operand(name, role, direction="IN", **fields) -> dict:
    """An Operand: fields left out or None are not written."""
    return {"name": name, "role": role, "direction": direction, **{k: v for k, v in fields.items() if v is not None}}


def attribute(name, *, type_="int", allowed=(), default=None, when=None) -> dict:
    a = {"name": name, "type": type_, "allowed": [str(v) for v in allowed]}
    if default is not None:
        a["default_value"] = str(default)
    if when:
        a["when"] = when
    return a


def entry(section, **fields):
    """(section, fields): an atom or a primitive (an Instruction's fields), or a family (section "families")."""
    return section, fields


def parameter(name, *, values=(), range_=None, set_=(), rule="") -> dict:
    """A family parameter: enumerated values, a (min, max, step) range or a set of integers, with its rule."""
    return {"name": name, "values": list(values), "range": range_, "set": list(set_), "rule": rule}


def family(id_, *, parameters, template, derived=(), rules=(), primitive=False):
    """A Family: its parameters, derived (name, expression) pairs, constraints (rule sentence, expression) and the
    templated instruction (an Instruction's fields; strings may hold {expr} over the parameters)."""
    return {"id": id_, "primitive": primitive, "parameters": parameters, "derived": list(derived),
            "rules": list(rules), "template": template}


def format_operand(o: dict) -> str:
    parts = [f"name: {q(o['name'])}", f"role: {o['role']}", f"direction: {o['direction']}"]
    for k in _OPERAND_FIELDS:
        v = o.get(k)
        if v not in (None, "", 0):
            parts.append(f"{k}: {q(v) if isinstance(v, str) else v}")
    return "  operands { " + " ".join(parts) + " }"


def format_attribute(a: dict) -> str:
    parts = [f"name: {q(a['name'])}", f"type: {q(a['type'])}"]
    parts += [f"allowed: {q(v)}" for v in a.get("allowed", [])]
    if "default_value" in a:
        parts.append(f"default_value: {q(a['default_value'])}")
    if a.get("when"):
        parts.append(f"when: {q(a['when'])}")
    return "  attributes { " + " ".join(parts) + " }"


def format_instruction(section: str, e: dict, target: str) -> str:
    """An Instruction block (`atoms { ... }`, `primitives { ... }`, `template { ... }`), without a final newline."""
    # target: one target's name, or several (a generation with more than one arch-specific chip, e.g. sm_120a
    # and sm_121a, whose instructions are the same).
    targets = [target] if isinstance(target, str) else list(target)
    lines = [section + " {", f"  id: {q(e['id'])}", f"  kind: {e['kind']}"] + [f"  targets: {q(t)}" for t in targets]
    for key in ("description", "python_name"):
        if e.get(key):
            lines.append(f"  {key}: {q(e[key])}")
    for k, v in e.get("python_params", {}).items():
        lines.append(f"  python_params {{ key: {q(k)} value: {q(v)} }}")
    lines += [f"  python_signature: {q(v)}" for v in e.get("python_signature", [])]
    for k, v in e.get("python_defaults", {}).items():
        lines.append(f"  python_defaults {{ key: {q(k)} value: {q(v)} }}")
    for key in ("shape_mnk", "thr_id"):
        if e.get(key):
            lines.append(f"  {key}: {q(e[key])}")
    if e.get("layout_unit_bits"):
        lines.append(f"  layout_unit_bits: {e['layout_unit_bits']}")
    lines += [format_operand(o) for o in e.get("operands", [])]
    lines += [format_attribute(a) for a in e.get("attributes", [])]
    for key in ("ptx_template", "constraints"):
        if e.get(key):
            lines.append(f"  {key}: {q(e[key])}")
    if e.get("has_side_effects"):
        lines.append("  has_side_effects: true")
    if e.get("lowering_hook"):
        lines.append(f"  lowering_hook: {q(e['lowering_hook'])}")
    lines += [f"  sass_opcodes: {q(s)}" for s in e.get("sass_opcodes", [])]
    for key in ("host_hook", "conformance", "cubin_tool"):
        if e.get(key):
            lines.append(f"  {key}: {q(e[key])}")
    lines.append("}")
    return "\n".join(lines)


def format_family(f: dict, target: str) -> str:
    lines = ["families {", f"  id: {q(f['id'])}"]
    if f["primitive"]:
        lines.append("  primitive: true")
    for p in f["parameters"]:
        parts = [f"name: {q(p['name'])}"] + [f"values: {q(v)}" for v in p["values"]]
        if p["range"]:
            lo, hi, step = p["range"]
            parts.append(f"range {{ min: {lo} max: {hi} step: {step} }}")
        parts += [f"set: {v}" for v in p["set"]]
        if p["rule"]:
            parts.append(f"rule: {q(p['rule'])}")
        lines.append("  parameters { " + " ".join(parts) + " }")
    lines += [f"  derived {{ name: {q(n)} expr: {q(e)} }}" for n, e in f["derived"]]
    lines += [f"  constraints {{ rule: {q(r)} expr: {q(e)} }}" for r, e in f["rules"]]
    lines += ["  " + line for line in format_instruction("template", f["template"], target).split("\n")]
    lines.append("}")
    return "\n".join(lines)


def format_entry(section: str, e: dict, target: str) -> str:
    """An entry made by `entry` or `family`, without a final newline."""
    return format_family(e, target) if section == "families" else format_instruction(section, e, target)


def format_element_types(rows, ir_types: dict) -> list[str]:
    """The element type table, one line a (name, bits, DSL type name) row; the MLIR type its values are held in
    is ir_types' or an integer of its width (fp8 and integers)."""
    return [f"element_types {{ name: {q(t)} bits: {bits} dsl_name: {q(dsl)} ir_type: "
            f"{q(ir_types.get(t, f'i{bits}'))} }}" for t, bits, dsl in rows]


def format_target(t: dict) -> str:
    """A Target block from manifest.proto's field names, each written when set."""
    lines = ["targets {"]
    for k, v in t.items():
        if isinstance(v, bool):
            if v:
                lines.append(f"  {k}: true")
        elif isinstance(v, str):
            lines.append(f"  {k}: {q(v)}")
        elif isinstance(v, (list, tuple)):
            lines += [f"  {k}: {q(x) if isinstance(x, str) else x}" for x in v]
        elif v:
            lines.append(f"  {k}: {v}")
    lines.append("}")
    return "\n".join(lines)


def format_header(*, comment: str, name: str, version: str, description: str, extends=(), python_modules=(),
                  module_map=None, on_load=(), conformance_probes=None, python_enums=()) -> str:
    """The manifest's opening: the file's comment (the lines after the proto-file and proto-message ones), then
    its top-level fields up to the targets, each line ending in a newline. python_enums: (name, members) pairs."""
    lines = ["# proto-file: plugins_api/proto/manifest.proto", "# proto-message: warpweave.manifest.Manifest", "#"]
    lines += comment.rstrip("\n").split("\n")
    lines += [f"name: {q(name)}", f"version: {q(version)}", "abi_version: 1", f"description: {q(description)}"]
    lines += [f"extends: {q(b)}" for b in extends]
    lines += [f"python_modules: {q(m)}" for m in python_modules]
    package = [f"  module_map {{ key: {q(k)} value: {q(v)} }}" for k, v in (module_map or {}).items()]
    package += [f"  on_load: {q(m)}" for m in on_load]
    package += [f"  conformance_probes {{ key: {q(k)} value: {q(v)} }}" for k, v in (conformance_probes or {}).items()]
    if package:
        lines += ["python_package {"] + package + ["}"]
    lines += [f"python_enums {{ name: {q(n)}" + "".join(f" members: {q(m)}" for m in members) + " }"
              for n, members in python_enums]
    return "\n".join(lines) + "\n"


def load_tables(name: str, folder: str):
    """The package of a generator's tables (folder, which has an __init__.py), imported as `name`. A generator
    runs as a script or is loaded by file path (by its tests, by another generation's generator), so no package
    holds it; its tables get a package of their own to import one another relatively. name is unique to the
    generation, as several generators' tables may be loaded in one process; an earlier import of it is dropped, so
    that each load of a generator executes its tables as they are on disk, as loading a one-file generator did."""
    for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
        del sys.modules[key]
    spec = importlib.util.spec_from_file_location(name, os.path.join(folder, "__init__.py"),
                                                  submodule_search_locations=[folder])
    package = importlib.util.module_from_spec(spec)
    sys.modules[name] = package
    spec.loader.exec_module(package)
    return package


def write_or_check(path: str, text: str, argv, script: str) -> int:
    """Writes the manifest; with --check in argv, exits 1 instead when the committed file is not `text`."""
    if "--check" in argv:
        with open(path) as f:
            if f.read() != text:
                print(f"{path} is stale: run python3 {script}", file=sys.stderr)
                return 1
        return 0
    with open(path, "w") as f:
        f.write(text)
    print(f"wrote {path}: {text.count(chr(10) + 'families {')} families, {text.count(chr(10) + 'atoms {')} atoms, "
          f"{text.count(chr(10) + 'primitives {')} primitives")
    return 0
