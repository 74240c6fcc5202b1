"""Manifest tier (no GPU, no compiler): the core's own validation, attributed to each instruction, plus the
checks the probes and emit_instruction rely on."""
from __future__ import annotations

import re
import time
from collections import defaultdict

from warpweave import _core
from warpweave import cute
from warpweave._dsl.atoms import instructions as _ins

from .records import FAIL, MANIFEST_ENTRY, PASS, Record, record_for
from . import sources as _sources

_PROBLEM = re.compile(r"(atom|primitive) (\S+): (.*)", re.S)
# An instance's own problem, as the core words it: "family F: instance n=8, ...: atom <instance id>: ..."
_INSTANCE_PROBLEM = re.compile(r"(family \S+: instance .*?): (atom|primitive) (\S+): (.*)", re.S)


def _layout_size(text: str):
    l = cute.parse_layout(text)
    return int(cute.size(l)), int(cute.size(cute.filter_zeros(l)))


def extra_checks(entry: dict) -> list[str]:
    """What the core does not check but every user of the manifest relies on."""
    out = []
    threads = None
    if entry.get("thr_id"):
        try:
            threads = _layout_size(entry["thr_id"])[0]
        except Exception as e:  # noqa: BLE001 - the message is the finding
            out.append(f"thr_id {entry['thr_id']}: {e}")
    unit = int(entry.get("layout_unit_bits") or 0)
    covered = {}
    for op in entry.get("operands", []):
        name = op["name"]
        if op["role"] == "REGISTERS":
            et, rt = op.get("element_type", ""), op.get("register_type", "")
            if et not in _ins.ELEMENT_TYPES:
                out.append(f"operand {name}: element_type {et!r} is not one emit_instruction can pack "
                           f"({', '.join(sorted(_ins.ELEMENT_TYPES))})")
                continue
            if rt not in _ins.REGISTER_TYPES:
                out.append(f"operand {name}: register_type {rt!r} is not one of {', '.join(_ins.REGISTER_TYPES)}")
                continue
            n, regs = int(op.get("values") or 0), int(op.get("registers") or 0)
            ebits, rbits = _ins.ELEMENT_TYPES[et][1], _ins.REGISTER_TYPES[rt][1]
            if regs and n and (n % regs or (n // regs) * ebits != rbits):
                out.append(f"operand {name}: {n} {et} values do not fill {regs} {rt} registers exactly")
        if op.get("layout_tv"):
            try:
                size, cover = _layout_size(op["layout_tv"])
            except Exception as e:  # noqa: BLE001
                out.append(f"operand {name}: layout {op['layout_tv']}: {e}")
                continue
            covered[name] = cover
            if entry.get("kind") == "COPY" and unit and threads and op["role"] == "REGISTERS":
                et = op.get("element_type", "")
                if et in _ins.ELEMENT_TYPES:
                    bits = int(op.get("values") or 0) * _ins.ELEMENT_TYPES[et][1]
                    if bits % unit == 0 and size != threads * bits // unit:
                        out.append(f"operand {name}: layout {op['layout_tv']} has size {size}, but {threads} "
                                   f"threads x {bits} bits / {unit}-bit units = {threads * bits // unit}")
    if entry.get("kind") == "COPY" and "src" in covered and "dst" in covered and covered["src"] != covered["dst"]:
        out.append(f"the src layout covers {covered['src']} positions but the dst layout {covered['dst']}: a copy "
                   "moves the same tile")
    return out


def run(sources, refusals=(), progress=None) -> list[Record]:
    records = []
    owners = defaultdict(list)
    for src in sources:
        for entry, _ in src.entries():
            owners[entry.get("id", "")].append(src.name)
    for src in sources:
        t0 = time.perf_counter()
        # A loaded plugin passed the validation of its plain entries and family descriptions when the core loaded
        # it (it would be refused otherwise); running that again costs seconds on the largest manifests and can
        # tell nothing new. Its families' instances were not expanded then: each instance this suite tests (the
        # corners and the seeded sample of sources.py) is checked here, as for a manifest file.
        if src.plugin:
            problems = list(_core.validate_family_instances(src.name, _sources.FAMILY_SEED, _sources.FAMILY_SAMPLE))
        else:
            problems = list(_core.validate_manifest(src.text))
            problems += _core.validate_family_instances_of_text(src.text, _sources.FAMILY_SEED,
                                                                _sources.FAMILY_SAMPLE)
            problems = list(dict.fromkeys(problems))  # validate_manifest checks a few of the same instances
        per, general = defaultdict(list), []
        for p in problems:
            if m := _INSTANCE_PROBLEM.match(p):
                per[m.group(3)].append(f"{m.group(4)} ({m.group(1)})")
            elif m := _PROBLEM.match(p):
                per[m.group(2)].append(m.group(3))
            else:
                general.append(p)
        if not src.manifest:
            general = general or ["the manifest does not parse"]
        dt = time.perf_counter() - t0
        note = "validated by the core when the plugin loaded" if src.plugin else "valid"
        records.append(Record(src.name, MANIFEST_ENTRY, "manifest", "", FAIL if general else PASS,
                              "; ".join(general) if general else f"{note}: {src.path}", "", "", "", dt))
        for entry, what in src.entries():
            ident = entry.get("id", "")
            msgs = list(per.pop(ident, []))
            msgs += extra_checks(entry)
            others = [o for o in owners[ident] if o != src.name]
            if others:
                msgs.append(f"the id is also used by {', '.join(sorted(set(others)))}")
            records.append(record_for(src, entry, what, "manifest", "", FAIL if msgs else PASS, "; ".join(msgs)))
            if progress:
                progress.step()
        for ident, msgs in per.items():  # problems about instructions without a usable id
            records.append(Record(src.name, ident or "<no id>", "manifest", "", FAIL, "; ".join(msgs)))
    for path, reason in refusals:
        records.append(Record(path, MANIFEST_ENTRY, "manifest", "", FAIL, f"plugin refused: {reason}"))
    return records
