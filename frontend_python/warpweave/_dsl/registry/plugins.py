"""The backends as Python sees them: plugins loaded by the core, their manifests, and the choice of target.

Plugins are found in warpweave/plugins (installed with warpweave) and in every directory of
WARPWEAVE_PLUGIN_PATH. The device's compute capability (or WARPWEAVE_ARCH) picks the primary backend, whose
target drives code generation; the atoms of every backend whose targets the device satisfies are usable too.

Loading is lazy: discovery reads each plugin's name and targets without parsing its manifest's atoms, and a
backend is loaded (its manifest parsed and validated) only when a target needs it. While a kernel is traced,
`load()` loads the backends usable on the traced target; outside a trace it loads every plugin (listings, tests).
"""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field

from ... import _core
from ..base import trace
from . import manifest_view

PACKAGE_PLUGIN_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "plugins")


@dataclass
class TargetInfo:
    name: str
    backend: str
    compute_capability: int
    arch_specific: bool
    llvm_cpu: str
    ptx_features: str
    jit_arch: str
    also_serves: tuple

    def usable_on(self, cc: int) -> bool:
        """Whether code for this target runs on a device of compute capability cc (e.g. 90)."""
        return cc == self.compute_capability if self.arch_specific else cc >= self.compute_capability

    def as_dict(self) -> dict:
        return {"name": self.name, "llvm_cpu": self.llvm_cpu or self.name, "ptx_features": self.ptx_features,
                "jit_arch": self.jit_arch or self.name}


@dataclass
class Backend:
    name: str
    version: str
    path: str
    digest: str
    manifest: dict         # the validated manifest in protobuf's JSON mapping (made by the core)
    targets: list = field(default_factory=list)
    binary: bytes = b""    # the same manifest, serialized

    @property
    def typed(self):
        """The manifest as a typed message (manifest_view). Made on first use: it brings protobuf's Python runtime,
        which compiling a kernel never needs."""
        if "_typed" not in self.__dict__:
            self.__dict__["_typed"] = manifest_view.parse_manifest(self.binary) if self.binary else None
        return self.__dict__["_typed"]

    @property
    def extends(self) -> list:
        """The backends this one builds on (manifest.proto, Manifest.extends), loaded before it by the core."""
        return self.manifest.get("extends", [])

    @property
    def atoms(self) -> list:
        return self.manifest.get("atoms", [])

    @property
    def primitives(self) -> list:
        return self.manifest.get("primitives", [])

    @property
    def families(self) -> list:
        """Atom families: each stands for the instances its parameters allow (expanded by the core on request)."""
        return self.manifest.get("families", [])

    def instances(self, family_id: str, seed: int = 1, sample: int = 1 << 20) -> list:
        """A family's legal corners, then a seeded sample of `sample` further instances (every other one when
        no more remain), each an entry like those of `atoms`."""
        return [_core.manifest_dict(data, "Instruction")
                for _p, _f, data in _core.family_instances(self.name, family_id, seed, sample)]

    def all_instances(self) -> list:
        """Every instance of every family (for tests and listings: selection never needs this)."""
        return [e for f in self.families for e in self.instances(f["id"])]


class Registry:
    """Every loaded backend, its targets, atoms and primitives by id."""

    def __init__(self):
        self.backends: dict[str, Backend] = {}
        self.instructions: dict[str, tuple[Backend, dict]] = {}
        self.loaded_dirs: set[str] = set()
        self.candidates: dict[str, dict] = {}      # name -> discovered plugin (path, version, targets)
        self._targets: list[TargetInfo] = []      # of every discovered plugin, loaded or not
        self._dirs: list[str] = []                # in search order
        self._all_loaded = False
        self._usable_for: dict[str, list[str]] = {}  # target name -> backends usable there (load() asks often)
        self._discovered_path: str | None = None     # WARPWEAVE_PLUGIN_PATH as discover() last read it

    def discover(self) -> None:
        """Finds the plugins of the package and WARPWEAVE_PLUGIN_PATH and reads their targets (cheap: no atoms)."""
        path = os.environ.get("WARPWEAVE_PLUGIN_PATH", "")
        if path == self._discovered_path:
            return  # asked at most operations of a trace (through load()): nothing new unless the path changed
        self._discovered_path = path
        dirs = [PACKAGE_PLUGIN_DIR] + [d for d in path.split(os.pathsep) if d]
        new = [d for d in dirs if d not in self.loaded_dirs]
        if not new:
            return
        self.loaded_dirs.update(new)
        self._dirs += new
        self._all_loaded = False
        self._usable_for.clear()
        for d in new:
            if d != PACKAGE_PLUGIN_DIR and not os.path.isdir(d):
                # A mistyped path would otherwise just leave its backends out, and the target they serve unknown.
                warnings.warn(f"WARPWEAVE_PLUGIN_PATH names {d!r}, which is not a directory: no plugins are loaded "
                              "from it", RuntimeWarning, stacklevel=2)
        for c in _core.discover_plugins(new):
            if c["name"] in self.candidates:
                continue  # a second plugin of that name: refused when everything is loaded
            self.candidates[c["name"]] = c
            for t in c["targets"]:
                self._targets.append(TargetInfo(t["name"], c["name"], int(t["compute_capability"]),
                                                bool(t["arch_specific"]), t["llvm_cpu"], t["ptx_features"],
                                                t["jit_arch"], tuple(int(x) for x in t["also_serves"])))

    def load(self, names=None) -> None:
        """Loads the named backends; without names, those usable on the target being traced, or outside a trace
        every plugin found."""
        self.discover()
        if names is None:
            st = trace.current_or_none()
            if st is not None:
                # Asked at most operations of a trace: the backends of a target are worked out once per discovery.
                names = self._usable_for.get(st.target["name"])
                if names is None:
                    t = self.target_named(st.target["name"])
                    if t is not None:
                        names = self._usable_for[t.name] = self._usable_names(t.compute_capability)
            if names is None:
                names = list(self.candidates)
                if not self._all_loaded:
                    _core.load_plugins(self._dirs)  # every library, also a second one of a name (refused, reported)
                    self._all_loaded = True
        if all(n in self.backends for n in names):
            return
        wanted_names = set(names)
        wanted = [c for n, c in self.candidates.items() if n in wanted_names and n not in self.backends]
        if not wanted:
            return
        for c in wanted:
            _core.load_plugin_file(c["path"])
        for p in _core.plugins():
            if p["name"] in self.backends:
                continue
            # The manifest as the core validated it, mapped to dicts by the core (no JSON on the way, and no
            # protobuf in Python: its runtime costs ~20 ms to import).
            manifest = _core.manifest_dict(p["manifest_binary"])
            b = Backend(p["name"], p["version"], p["path"], p["digest"], manifest, binary=p["manifest_binary"])
            for t in manifest.get("targets", []):
                b.targets.append(TargetInfo(t["name"], b.name, t["compute_capability"], t["arch_specific"],
                                            t["llvm_cpu"], t["ptx_features"], t["jit_arch"], tuple(t["also_serves"])))
            self.backends[b.name] = b
            for ins in b.atoms + b.primitives:
                self.instructions[ins["id"]] = (b, ins)

    def refusals(self) -> list[tuple[str, str]]:
        self.load()
        return list(_core.plugin_refusals())

    def targets(self) -> list[TargetInfo]:
        """Every discovered plugin's targets (no plugin is loaded for this)."""
        self.discover()
        return list(self._targets)

    def _usable_names(self, cc: int) -> list[str]:
        return [n for n, c in self.candidates.items()
                if any(t.backend == n and t.usable_on(cc) for t in self._targets)]

    def loaded_for_trace(self) -> list[Backend]:
        """The loaded backends that the target being traced uses (after load()); outside a trace every loaded one."""
        st = trace.current_or_none()
        names = None if st is None else self._usable_for.get(st.target["name"])
        if names is None:
            return list(self.backends.values())
        return [self.backends[n] for n in names if n in self.backends]

    def target_named(self, name: str) -> TargetInfo | None:
        for t in self.targets():
            if t.name == name:
                return t
        return None

    def primary_target(self, cc: int) -> TargetInfo | None:
        """The target that drives code generation on a device of compute capability cc: an exact match, a target
        that serves cc, else the newest one below it that is usable there."""
        ts = self.targets()
        exact = [t for t in ts if t.compute_capability == cc]
        if exact:
            return sorted(exact, key=lambda t: not t.arch_specific)[0]
        serving = [t for t in ts if cc in t.also_serves]
        if serving:
            return serving[0]
        usable = [t for t in ts if t.usable_on(cc)]
        return max(usable, key=lambda t: t.compute_capability) if usable else None

    def usable_backends(self, cc: int) -> list[Backend]:
        """The backends whose targets run on compute capability cc, loaded now if they were not yet."""
        self.discover()
        names = self._usable_names(cc)
        self.load(names)
        return [self.backends[n] for n in names if n in self.backends]

    def instruction(self, ident: str):
        self.load()
        found = self.instructions.get(ident)
        if found is None:
            # An instance of a loaded backend's family (most atoms are): no other backend needs loading for it.
            found = self._family_instance(ident)
        if found is None and len(self.backends) < len(self.candidates):
            self.load(list(self.candidates))  # an id of a backend the traced target does not use
            found = self.instructions.get(ident) or self._family_instance(ident)
        return found

    def _family_instance(self, ident: str):
        """The instance of an atom family with this id (expanded by the core), kept like a plain entry."""
        hit = _core.expand_atom_id(ident)
        if hit is None or hit[0] not in self.backends:
            return None
        found = (self.backends[hit[0]], _core.manifest_dict(hit[2], "Instruction"))
        self.instructions[ident] = found
        return found

    def digest(self, cc: int | None = None) -> str:
        """The loaded backends' digests; with cc, those of the backends usable there (what a module for that
        target may use), so that the key does not depend on what else this process loaded."""
        backends = self.usable_backends(cc) if cc is not None else (self.load() or self.backends.values())
        # With the backends they extend: a dependent's Python builds on its bases' (loaded with it by the core).
        named = {b.name: b for b in backends}
        todo = list(named.values())
        while todo:
            for base in todo.pop().extends:
                if base not in named and base in self.backends:
                    named[base] = self.backends[base]
                    todo.append(named[base])
        return ",".join(f"{b.name}:{b.digest}" for _, b in sorted(named.items()))


registry = Registry()
