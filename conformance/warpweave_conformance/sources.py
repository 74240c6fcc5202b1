"""What the suite tests: the loaded plugins' manifests, or manifest text files given on the command line."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from warpweave import _core
from warpweave._dsl.registry import manifest_view
from warpweave._dsl.registry.plugins import TargetInfo, registry


# Each family contributes its corners and this many further instances drawn with FAMILY_SEED: every instance of
# the in-tree families (the largest, blackwell.tcgen05.mma.mxf8f6f4.mixed with its 6- and 4-bit operands, has
# 1200), so that coverage equals the instance lists they replace; a larger family is sampled. `python -m warpweave conformance --family-sample N --seed S`
# sets them.
FAMILY_SAMPLE = 2048
FAMILY_SEED = 1


@dataclass
class Source:
    name: str
    path: str                 # the plugin library, or the manifest file
    manifest: dict            # protobuf JSON mapping; {} when the text does not parse
    text: str                 # protobuf text format ("" for a loaded plugin: the core validated it on loading)
    plugin: bool              # loaded as a plugin: lowering hooks can run
    targets: dict = field(default_factory=dict)  # name -> TargetInfo

    _instances: list | None = None

    def entries(self):
        """(entry, "atom" | "primitive") for every instruction of the manifest: its plain entries, then each atom
        family's legal corners and a seeded sample of FAMILY_SAMPLE further instances (every instance of a family
        that has no more than that)."""
        for e in self.manifest.get("atoms", []):
            yield e, "atom"
        for e in self.manifest.get("primitives", []):
            yield e, "primitive"
        yield from self.family_instances()

    def family_instances(self):
        if self._instances is None:
            primitive = {f["id"]: f.get("primitive", False) for f in self.manifest.get("families", [])}
            found = (_core.family_instances_of_text(self.text, FAMILY_SEED, FAMILY_SAMPLE) if not self.plugin else
                     [x for f in primitive for x in _core.family_instances(self.name, f, FAMILY_SEED, FAMILY_SAMPLE)])
            self._instances = [(manifest_view.instruction_dict(data), "primitive" if primitive.get(fam) else "atom")
                               for _p, fam, data in found]
        return self._instances


def _targets(name: str, manifest: dict) -> dict:
    out = {}
    for t in manifest.get("targets", []):
        out[t["name"]] = TargetInfo(t["name"], name, int(t.get("compute_capability", 0)),
                                    bool(t.get("arch_specific", False)), t.get("llvm_cpu", ""),
                                    t.get("ptx_features", ""), t.get("jit_arch", ""),
                                    tuple(int(x) for x in t.get("also_serves", [])))
    return out


def loaded_sources(names=None) -> list[Source]:
    registry.load()
    out = []
    for b in registry.backends.values():
        if names and b.name not in names:
            continue
        out.append(Source(b.name, b.path, b.manifest, "", True, _targets(b.name, b.manifest)))
    return out


def refusals() -> list[tuple[str, str]]:
    return list(registry.refusals())


def file_source(path: str) -> Source:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    typed = manifest_view.manifest_of_text(text)  # None when it does not parse: the manifest tier says why
    manifest = manifest_view.as_dict(typed) if typed is not None else {}
    if typed is not None:
        from warpweave._dsl.registry.element_types import ELEMENT_TYPES

        ELEMENT_TYPES.add_manifest(typed)  # the file's element types, as a loaded plugin's would be
    name = manifest.get("name") or os.path.splitext(os.path.basename(path))[0]
    return Source(name, os.path.abspath(path), manifest, text, False, _targets(name, manifest))


def plugin_dirs() -> list[str]:
    """Where this process found plugins; workers load the same ones."""
    registry.load()
    return sorted(registry.loaded_dirs)
