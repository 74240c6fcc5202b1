"""The element types instructions name, as the loaded manifests declare them (Manifest.element_types): one table
for the frontend, read from the backends instead of written here."""
from __future__ import annotations

from collections.abc import Mapping

from .plugins import registry


class ElementTypes(Mapping):
    """element_type name -> (the MLIR type a value is held in, bits), over every loaded backend's declarations.

    Two backends may declare a name only alike; the first loaded one's declaration stands (the manifest tier
    reports a disagreement)."""

    def __init__(self):
        self._key = None
        self._table: dict = {}
        self._extra: list = []   # manifests in use that are not loaded plugins (conformance's manifest files)
        self._given: dict = {}

    def add_manifest(self, typed) -> None:
        """Declarations of a manifest that is used without being loaded as a plugin."""
        self._extra.append(typed)
        self._key = None

    def add_table(self, table: dict) -> None:
        """Declarations another process read ({name: (MLIR type, bits)}), e.g. a conformance worker's."""
        self._given.update(table)
        self._key = None

    def table(self) -> dict:
        backends = tuple(registry.backends)
        if backends != self._key:
            table = dict(self._given)
            # The loaded backends' manifests as dicts (no typed view: that needs protobuf's Python runtime).
            for b in registry.backends.values():
                for e in b.manifest.get("element_types", []):
                    table.setdefault(e["name"], (e["ir_type"] or f"i{e['bits']}", int(e["bits"])))
            for m in self._extra:
                for e in m.element_types:
                    table.setdefault(e.name, (e.ir_type or f"i{e.bits}", int(e.bits)))
            self._table, self._key = table, backends
        return self._table

    def declared_by(self, name: str) -> list[str]:
        """The loaded backends that declare element type `name`."""
        return [b.name for b in registry.backends.values()
                if any(e["name"] == name for e in b.manifest.get("element_types", []))]


    def __getitem__(self, name):
        table = self.table()
        if name not in table:
            raise KeyError(f"element type {name!r} is declared by no manifest in use (element_types; declared: "
                           f"{', '.join(sorted(table)) or 'none'})")
        return table[name]

    def __iter__(self):
        return iter(self.table())

    def __len__(self):
        return len(self.table())


ELEMENT_TYPES = ElementTypes()
