"""Results: one record per (backend, instruction, tier, target)."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass

PASS, FAIL, SKIP = "pass", "fail", "skip"
TIERS = ("manifest", "compile", "execute")
MANIFEST_ENTRY = "(manifest)"  # the record of a manifest as a whole (name, targets, parse errors, refusals)


@dataclass
class Record:
    backend: str
    atom: str            # instruction id (atom or primitive), or MANIFEST_ENTRY
    tier: str
    target: str          # the target compiled for ("" for the manifest tier; "sm_90" etc. for the device)
    status: str
    reason: str = ""
    instruction: str = ""  # "atom", "primitive" or ""
    kind: str = ""         # the manifest's Kind (MMA, COPY, ...)
    conformance: str = ""  # the execute probe kind
    seconds: float = 0.0

    def as_dict(self) -> dict:
        d = asdict(self)
        d["seconds"] = round(self.seconds, 4)
        return d


def dump_json(records, path: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump([r.as_dict() for r in records], f, indent=1)
        f.write("\n")


def record_for(source, entry: dict, instruction: str, tier: str, target: str, status: str, reason: str = "",
               seconds: float = 0.0) -> Record:
    return Record(source if isinstance(source, str) else source.name, entry.get("id", ""), tier, target, status,
                  reason, instruction, entry.get("kind", ""), entry.get("conformance", ""), seconds)
