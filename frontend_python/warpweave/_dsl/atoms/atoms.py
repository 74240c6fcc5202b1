"""Python classes for the backends' atoms and primitives, made from the manifests.

`cute.nvgpu.warp.MmaF16BF16Op(ab_dtype, acc_dtype, shape_mnk)` and its kin exist because a loaded manifest has
atoms whose python_name is "warp.MmaF16BF16Op"; the constructor's arguments select the atom by its
python_params. Primitives (python_name like "cpasync.commit_group") become functions. A third party's plugin
adds classes the same way, with no change here.
"""
from __future__ import annotations

import enum
import types

from ... import _core
from ..base import trace
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..registry.arch_enum import arch_enum
from ..registry.backend_python import ensure_loaded_for_trace, packages
from ..registry.plugins import registry
from ..registry.target import target_named
from ..values.numeric import Boolean, Int32, Int64, Numeric, as_numeric
from ..values.pointer import pointer_like
from .instructions import emit_instruction, is_result, value_type


def canonical(value) -> str:
    """A parameter value as manifests spell it."""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, type):
        return value.__name__
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, (tuple, list)):
        return "(" + ",".join(canonical(v) for v in value) + ")"
    return str(value)


def current_cc() -> int | None:
    st = trace.current_or_none()
    if st is None:
        return None
    return target_named(st.target["name"]).compute_capability


_by_python_name: dict = {}
_families_by_python_name: dict = {}
_indexed: tuple = ()


def _index_state() -> tuple:
    """The loaded manifests (after loading what the current trace needs): the indexes below and select()'s
    memo are valid for one such state. A trace asks this at most operations it emits."""
    global _by_python_name, _families_by_python_name, _indexed
    registry.load()
    state = tuple((b.name, id(b.manifest), len(b.atoms), len(b.primitives)) for b in registry.backends.values())
    if state != _indexed:
        index: dict = {}
        families: dict = {}
        for b in registry.backends.values():
            for ins in b.atoms + b.primitives:
                index.setdefault(ins.get("python_name"), []).append((b, ins))
            for f in b.manifest.get("families", []):
                families.setdefault(f["template"].get("python_name"), []).append((b, f))
        _by_python_name, _families_by_python_name, _indexed = index, families, state
        _selected.clear()
    return state


def entries_named(python_name: str):
    """(backend, entry) of every loaded atom and primitive named python_name, in manifest order."""
    _index_state()
    return list(_by_python_name.get(python_name, ()))


def _families(python_name: str):
    """(backend, family) of every loaded atom family whose instances are named python_name."""
    _index_state()
    return list(_families_by_python_name.get(python_name, ()))


_expansions: dict = {}


def _expand(python_name: str, params: dict):
    """The family instances named python_name with these Python parameters, as (backend, entry), and the
    sentences saying why there is none (the rule each family's parameters break). The core expands each
    instance once per process; this keeps the parsed entries."""
    key = (python_name, tuple(sorted(params.items())))
    if key not in _expansions:
        found, problems = _core.expand_atom(python_name, params)
        _expansions[key] = ([(registry.backends[p], _core.manifest_dict(data, "Instruction")) for p, _f, data in found
                             if p in registry.backends], list(problems))
    return _expansions[key]


def _family_forms(python_name: str) -> list[str]:
    """What each family of this name offers, in a line: its Python parameters over its parameters' domains."""
    out = []
    for _, f in _families(python_name):
        params = ", ".join(f"{k}={v}" for k, v in sorted(f["template"].get("python_params", {}).items()))
        doms = []
        for p in f.get("parameters", []):
            r = p.get("range")
            dom = ("|".join(p["values"]) if p.get("values") else
                   f"{r['min']}..{r['max']} step {r.get('step') or 1}" if r and not p.get("set") else
                   "|".join(str(v) for v in p.get("set", [])))
            doms.append(f"{p['name']} in {dom}")
        out.append(f"{f['id']} ({params}; {', '.join(doms)})")
    return out


def entry_usable(b, ins, cc) -> bool:
    if cc is None:
        return True
    names = set(ins.get("targets", []))
    return any(t.name in names and t.usable_on(cc) for t in b.targets)


def _preference(b, ins):
    """Entries made for the current target first, then those of newer targets (a Hopper kernel prefers Hopper's
    mbarrier primitives to Ampere's)."""
    st = trace.current_or_none()
    current = st.target["name"] if st is not None else None
    ccs = [t.compute_capability for t in b.targets if t.name in set(ins.get("targets", []))]
    return (0 if current in ins.get("targets", []) else 1, -max(ccs, default=0))


# select()'s answers for the loaded manifests (_index_state) and target: a trace selects the same few entries
# again and again (every barrier wait, every copy), and each selection scans and sorts its candidates.
_selected: dict = {}


def select(python_name: str, params: dict, operands: set | None = None):
    """The (backend, entry) whose python_params match `params` (and, for primitives, whose input operands are
    exactly `operands`) and that the current target can use."""
    _index_state()
    st = trace.current_or_none()
    try:
        key = (python_name, tuple(sorted(params.items())), None if operands is None else frozenset(operands),
               st.target["name"] if st is not None else None)
        hit = _selected.get(key)
    except TypeError:   # an unhashable parameter value: select without the memo
        key, hit = None, None
    if hit is not None:
        return hit
    found = _select(python_name, params, operands)
    if key is not None:
        _selected[key] = found
    return found


def _select(python_name: str, params: dict, operands: set | None):
    def fits(ins):
        # An entry's own defaults fill what the caller left out. They are per entry, not per name: Hopper's and
        # Blackwell's TMA ops share a name, and only Blackwell's have a cta_group (default 1).
        own = ins.get("python_params", {})
        want = {**{k: canonical(v) for k, v in ins.get("python_defaults", {}).items()}, **params}
        if not all(own.get(k) == v for k, v in want.items()):
            return False
        if operands is not None:
            names = {o["name"] for o in ins.get("operands", []) if not is_result(o)}
            return names == operands
        return True

    matches = [(b, ins) for b, ins in entries_named(python_name) if fits(ins)]
    if not matches and not _families(python_name) and mount_every_backend():
        # Another generation's instruction (a trace loads its target's backends only): found, it is refused
        # below with the targets that have it.
        matches = [(b, ins) for b, ins in entries_named(python_name) if fits(ins)]
    problems = []
    if _families(python_name):
        # Atom families: the core inverts their templated Python parameters (each family's own defaults fill
        # what the caller left out) and expands the instance.
        found, problems = _expand(python_name, params)
        matches += [(b, ins) for b, ins in found if operands is None or fits(ins)]
    if not matches:
        if problems:
            raise DSLValueError("; ".join(problems), user_location(3))
        known = sorted({canonical(tuple(sorted(ins.get("python_params", {}).items())))
                        for _, ins in entries_named(python_name)}) + _family_forms(python_name)
        what = f"operands {sorted(operands)}" if operands is not None and not params else str(params)
        raise DSLValueError(f"no loaded backend offers {python_name} with {what}; offered: "
                            f"{', '.join(known) or 'none'}", user_location(3))
    cc = current_cc()
    usable = [(b, ins) for b, ins in matches if entry_usable(b, ins, cc)]
    if not usable:
        where = "; ".join(f"{i['id']} for {', '.join(i.get('targets', []))}" for _, i in matches)
        name = st.target["name"] if (st := trace.current_or_none()) is not None else "?"
        given = ", ".join(f"{k}={v}" for k, v in params.items())
        raise DSLValueError(f"{python_name}({given}) exists ({where}) but not for the current target {name} "
                            f"(compute capability {cc}): compile for one of those targets", user_location(3))
    usable.sort(key=lambda e: _preference(*e))
    return usable[0]


class ManifestOp:
    """An operation class made from a manifest: holds the selecting parameters; the atom is chosen when it is
    used (make_mma_atom / make_copy_atom), so that creation-time parameters such as the copy width join in."""

    python_name = ""
    signature: tuple = ()
    kind = ""
    param_names: frozenset = frozenset()
    defaults: dict = {}

    def __init__(self, *args, **kwargs):
        if len(args) > len(self.signature):
            raise DSLTypeError(f"{self.python_name} takes at most {len(self.signature)} positional arguments "
                               f"({', '.join(self.signature)})", user_location(2))
        params = dict(zip(self.signature, args))
        for k, v in kwargs.items():
            if k in params:
                raise DSLTypeError(f"{self.python_name}: {k} given twice", user_location(2))
            if k not in self.param_names:
                raise DSLTypeError(f"{self.python_name} has no parameter {k} (its parameters: "
                                   f"{', '.join(sorted(self.param_names))})", user_location(2))
            params[k] = v
        self.params = {k: canonical(v) for k, v in params.items()}   # as given: each entry has its own defaults
        self.raw_params = params

    def parameter_names(self):
        return self.param_names

    def __getattr__(self, name):
        # CuTe DSL's operations show their parameters as attributes (a library reads store_op.num_matrices): the
        # value given, else the manifest's default for it
        if name.startswith("_") or name not in type(self).param_names:
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")
        if name in self.raw_params:
            return self.raw_params[name]
        if name in type(self).defaults:
            return type(self).defaults[name]
        raise AttributeError(f"{self.python_name}: {name} was not given and has no default")

    def entry(self, **extra):
        more = {k: canonical(v) for k, v in extra.items() if k in self.param_names and k not in self.params}
        return select(self.python_name, {**self.params, **more})

    def _to_ir(self):
        # CuTe DSL's ops are IR attributes that its dialect's atom builders take; here the op object is that
        # attribute (the builders select the instruction from its parameters).
        return self

    def __repr__(self):
        return f"{self.python_name}({', '.join(f'{k}={v}' for k, v in self.params.items())})"

    def __eq__(self, other):
        return type(self) is type(other) and self.params == other.params

    def __hash__(self):
        return hash((self.python_name, tuple(sorted(self.params.items()))))


def _literal(text: str):
    """A manifest's default as the Python value a program would have passed ("True" -> True, "4" -> 4)."""
    if text in ("True", "False"):
        return text == "True"
    try:
        return int(text)
    except ValueError:
        return text


def _make_class(python_name: str):
    # A family's template carries what the class needs: its signature, kind and the names of its parameters.
    entries = entries_named(python_name) + [(b, {**f["template"], "description": f.get("description") or
                                            f["template"].get("description", "")})
                                       for b, f in _families(python_name)]
    if not entries:
        return None
    first = entries[0][1]
    sig = tuple(first.get("python_signature") or sorted(first.get("python_params", {}).keys()))
    kind = first.get("kind", "")
    short = python_name.split(".")[-1]
    if kind in ("MMA", "COPY"):
        names = frozenset(k for _, ins in entries for k in ins.get("python_params", {}))
        defaults = {k: _literal(v) for k, v in first.get("python_defaults", {}).items()}
        return type(short, (ManifestOp,), {"python_name": python_name, "signature": sig, "kind": kind,
                                           "param_names": names, "defaults": defaults,
                                           "admissible_archs": _admissible_archs(entries),
                                           "__doc__": first.get("description", "")})
    return _primitive_function(python_name, short, first)


def _admissible_archs(entries) -> list:
    """The architectures (base_dsl.Arch members) of the targets the op's entries name, in manifest order: CuTe
    DSL's op.admissible_archs, which libraries test the compile target against before choosing an op."""
    arch = arch_enum()
    names = dict.fromkeys(t for _, ins in entries for t in ins.get("targets", []))
    return [arch[n] for n in names if n in arch.__members__]


def _primitive_function(python_name, short, first):
    def primitive(*args, **kwargs):
        # Positional arguments fill the input operands, then the attributes, in the manifest's order; the entry
        # is the one whose operands are exactly those given (e.g. bar.sync with or without a thread count).
        # loc= / ip= (CuTe DSL's IR locations, which libraries pass on to every call) name no operand.
        kwargs.pop("loc", None)
        kwargs.pop("ip", None)
        candidates = [ins for _, ins in entries_named(python_name)]
        chosen = None
        for ins in candidates:
            in_ops = [o["name"] for o in ins.get("operands", []) if not is_result(o)]
            attrs = [a["name"] for a in ins.get("attributes", [])]
            names = in_ops + attrs
            if len(args) > len(names):
                continue
            given = dict(zip(names, args))
            if any(k in given for k in kwargs) or any(k not in names for k in kwargs):
                continue
            given.update(kwargs)
            if set(in_ops) <= set(given):
                chosen = (set(in_ops), given)
                break
        if chosen is None:
            sigs = "; ".join("(" + ", ".join([o["name"] for o in i.get("operands", []) if not is_result(o)]
                                              + [a["name"] + "=" for a in i.get("attributes", [])]) + ")"
                             for i in candidates)
            raise DSLTypeError(f"{python_name}: no form takes these arguments; its forms: {sigs}", user_location(2))
        in_names, given = chosen
        b, ins = select(python_name, {}, in_names)
        attr_names = set(given) - in_names
        if not attr_names <= {a["name"] for a in ins.get("attributes", [])}:
            # forms alike in operands, one with attributes the other lacks (an instruction with and without a
            # rounding mode of the caller's): the form that takes the attributes given
            cc = current_cc()
            forms = [(fb, fi) for fb, fi in entries_named(python_name)
                     if {o["name"] for o in fi.get("operands", []) if not is_result(o)} == in_names
                     and attr_names <= {a["name"] for a in fi.get("attributes", [])} and entry_usable(fb, fi, cc)]
            if not forms:
                raise DSLTypeError(f"{python_name}: no form for the current target takes {sorted(attr_names)}",
                                   user_location(2))
            b, ins = forms[0]
        bld = trace.builder()
        inputs = {}
        for o in ins.get("operands", []):
            if not is_result(o):
                inputs[o["name"]] = _operand_values(o, given.pop(o["name"]))
        static = {}
        for k, v in given.items():
            if hasattr(v, "is_static"):
                if not v.is_static:
                    raise DSLTypeError(f"{python_name}: {k} must be known while tracing (it is an immediate of the "
                                       "instruction)", user_location(2))
                v = v.value
            static[k] = v
        out = emit_instruction(bld, b.name, ins, inputs, static)
        outs = [o for o in ins.get("operands", []) if is_result(o)]
        results = [v for o in outs for v in out[o["name"]]]
        if not results:
            return None
        ty = value_type(outs[0])
        wrap = {"i1": Boolean, "i32": Int32, "i64": Int64}.get(ty)
        vals = [wrap.from_ir(r) if wrap else r for r in results]
        return vals[0] if len(vals) == 1 else tuple(vals)

    primitive.__name__ = short
    primitive.__qualname__ = short
    primitive.__doc__ = first.get("description", "")
    return primitive


def primitive(python_name: str):
    """The function of a backend primitive (e.g. "cpasync.commit_group"), or None when no backend offers it."""
    f = _primitives.get(python_name)
    if f is None:
        entries = entries_named(python_name)
        if not entries:
            return None  # not remembered: a backend loaded later (another target's) may offer it
        f = _primitives[python_name] = _primitive_function(python_name, python_name.split(".")[-1], entries[0][1])
    return f


_primitives: dict = {}


def _operand_values(o, v):
    """IR values for a primitive's operand from DSL values (numbers, or shared-memory pointers)."""
    vals = v if isinstance(v, (list, tuple)) else [v]
    out = []
    ty = value_type(o)
    for x in vals:
        p = None if isinstance(x, (Numeric, int, float, bool)) else pointer_like(x)
        if p is not None:
            out.append(pointer_operand(p, 0, ty))
            continue
        n = x if isinstance(x, Numeric) else as_numeric(x)
        t = {"i1": Boolean, "i32": Int32, "i64": Int64}.get(ty)
        if t is None:
            out.append(n.ir())
        else:
            out.append((t(n) if type(n) is not t else n).ir())
    return out


def pointer_operand(ptr, offset, ir_type: str) -> int:
    """A pointer `offset` elements past `ptr` as the integer an instruction takes: a 32-bit shared address or a
    64-bit global one."""
    b = trace.builder()
    addr = ptr.address(offset)
    return b.op1("llvm.ptrtoint", [addr], ir_type)


# Names that backends' Python packages define in these namespaces (warpweave.ext.register_python_name), e.g. a
# function building an atom from a tensor, or a class wrapping a manifest class with the constructor its users know.
# They take precedence over the manifest-made classes of the same name.
_python_names: dict[str, object] = {}


def register_python_name(qualified: str, obj) -> None:
    if qualified.count(".") != 1 or not all(p.isidentifier() for p in qualified.split(".")):
        raise ValueError(f"register_python_name: {qualified!r} is not '<module>.<name>' (e.g. 'cpasync.tma_partition')")
    _python_names[qualified] = obj
    # A trace mounts only its target's backends: what an earlier trace found for this name without the registering
    # backend (the manifest's class, which manifest_class keeps serving) is dropped from the namespaces, so that the
    # name now means the registered object.
    prefix, attr = qualified.split(".")
    for ns in _namespaces:
        if ns._prefix == prefix and attr not in ns._static:
            ns._cache.pop(attr, None)
    for forget in _name_caches:
        forget(qualified)


_name_caches: list = []  # callables(qualified name) of the modules above that keep what a name resolved to


def on_python_name_registered(forget) -> None:
    """`forget(qualified)` runs whenever a backend registers a name: a module caching what its names resolved to
    drops that name (resolved before the registering backend was mounted)."""
    _name_caches.append(forget)


_manifest_classes: dict = {}


def manifest_class(python_name: str):
    """The class (or primitive function) made from the manifests for python_name, whatever a backend registered
    under that name; None when no manifest has it. One class per name (a backend's subclass stays its subclass)."""
    if python_name not in _manifest_classes:
        _manifest_classes[python_name] = _make_class(python_name)
    return _manifest_classes[python_name]


def backend_python_name(full: str):
    hit = _python_names.get(full)
    if hit is None:
        ensure_loaded_for_trace()  # mounting a backend's package registers its names
        hit = _python_names.get(full)
    return hit


def mount_every_backend() -> bool:
    """Loads every discovered backend and mounts its package; False when all of them already were. Only for
    the error path of a name the traced target's backends lack (cute.arch): selecting it then names the targets
    that have it, instead of a bare "not found"."""
    if len(registry.backends) >= len(registry.candidates) and all(b in packages.mounted or b in packages.refused
                                                                  for b in registry.backends):
        return False
    registry.load(list(registry.candidates))
    packages.mount_all(registry.backends.values())
    return True


_namespaces: list = []  # every _Namespace made (a handful, module-level: cute.nvgpu's submodules)


class _Namespace(types.ModuleType):
    """A cute.nvgpu submodule whose names come from the manifests (and from the backends' Python packages)."""

    def __init__(self, name: str, prefix: str, static: dict | None = None):
        super().__init__(name)
        self._prefix = prefix
        self._static = frozenset(static or ())
        self._cache = dict(static or {})
        _namespaces.append(self)

    def __getattr__(self, attr):
        # no backend name is private: a probe of one (hasattr(x, "_ww_carry_get") on a namespace held by the
        # kernel) mounts no other backend
        if attr.startswith("_"):
            raise AttributeError(attr)
        if attr in self._cache:
            return self._cache[attr]
        full = f"{self._prefix}.{attr}"
        registry.load()
        found = self._find(full, attr)
        # (a private name is a protocol probe, hasattr(ns, "_ww_..."), not a program's name: it loads nothing)
        if found is None and not attr.startswith("_") and mount_every_backend():
            # A trace loads only its target's backends: a name of another generation is found once every backend
            # is, and calling it then names the targets that have its instruction.
            _manifest_classes.pop(full, None)
            found = self._find(full, attr)
        if found is None:
            raise AttributeError(f"no loaded backend offers {full} (check `python -m warpweave plugins`)")
        self._cache[attr] = found
        return found

    def _find(self, full, attr):
        own = backend_python_name(full)
        if own is not None:
            return own
        for b in registry.backends.values():
            for e in b.manifest.get("python_enums", []):
                if e["name"] == full or e["name"].endswith("." + attr) and self._prefix == "nvgpu":
                    return enum.Enum(attr, {m: m for m in e.get("members", [])})
        return manifest_class(full)

    def __dir__(self):
        registry.load()
        names = set(self._cache)
        for b in registry.backends.values():
            for ins in b.atoms + b.primitives + [f["template"] for f in b.manifest.get("families", [])]:
                n = ins.get("python_name", "")
                if n.startswith(self._prefix + "."):
                    names.add(n[len(self._prefix) + 1:])
        names.update(k.split(".", 1)[1] for k in _python_names if k.startswith(self._prefix + "."))
        return sorted(names)


def namespace(name: str, prefix: str, static: dict | None = None) -> _Namespace:
    return _Namespace(name, prefix, static)
