"""The first level of the JIT cache: a compiled function found before tracing.

The key of a compilation is known before its trace: the jit function's identity (its compiled code, line table
included, the values its closure captured, its defaults and the constants of its module it reads), the argument
specialisation (spec_key's view of each argument), the compile-time arguments (by value, never by address),
the options, the target, the compiler build and the installed plugins. An entry holds what a
JitCompiledFunction needs without a trace (argument plans, launches, host symbols, assumptions, the module text)
and the key of the second level (the module text's key), whose entry holds the cubin.

A trace may reach more than the function itself: kernels, helpers, methods of the objects passed. Their source
files are recorded while the first trace runs (every Python function that starts, through sys.monitoring) with
their size and modification time, and the @cute.jit / @cute.kernel functions reached with their identities; a
later process checks them all before it uses the entry, so an edit anywhere the trace went is a miss.

What has no stable key (a compile-time argument that is an opaque object, a function defined outside a file)
makes the compilation skip this level; compile_function traces then and says why in `info["function_cache"]`.
"""
from __future__ import annotations

import enum
import importlib
import marshal
import os
import sys
import types
from types import SimpleNamespace

from ... import _core
from ..._version import __version__
from ..base.errors import DSLError
from ..base.trace import HostSymbol
from ..host.host_guards import Guard
from ..host import host_loop
from ..host.kernel_trace import Decorated
from ..host.launch_plan import DimExpr, Launch, Param
from ..registry.plugins import PACKAGE_PLUGIN_DIR
from ..registry.target import arch_from_environment
from ..tracing.reach_recording import Recording
from ..values.numeric import Numeric
from ..values.user_numeric import numeric_name, numeric_named
from .arg_kind import HostStream
from .arg_plan import arguments_key, kind_named
from .compile_module import compiler_identity, jit_cache, keep_requested
from .compiled_function import JitCompiledFunction

_FORMAT = 5  # 2: argument plans stored by kind (arg_plan.KINDS); 3: the host program; 4: its host loops;
# 5: a Boolean kernel parameter packs as 0 or 1 (launch_plan.BOOL_FMT)


class Unstable(Exception):
    """A part of a compilation that has no key valid in another process."""


# --- identities --------------------------------------------------------------------------------------------------

def _const_repr(c) -> str:
    if isinstance(c, types.CodeType):
        return "code:" + _code_digest(c)
    if isinstance(c, frozenset):  # iteration order depends on string hashing, which differs per process
        return "frozenset(" + ",".join(sorted(_const_repr(x) for x in c)) + ")"
    if isinstance(c, tuple):
        return "(" + ",".join(_const_repr(x) for x in c) + ")"
    return f"{type(c).__name__}:{c!r}"


_code_digests: dict = {}


def _code_digest(code: types.CodeType) -> str:
    d = _code_digests.get(code)
    if d is None:
        parts = [code.co_qualname, code.co_code.hex(), repr(code.co_names), repr(code.co_varnames),
                 repr(code.co_freevars), repr(code.co_cellvars), str(code.co_firstlineno), code.co_linetable.hex(),
                 str(code.co_argcount), str(code.co_kwonlyargcount), str(code.co_flags)]
        parts += [_const_repr(c) for c in code.co_consts]
        d = _code_digests[code] = _digest(parts)
    return d


def _digest(parts) -> str:
    return _core.cache_key(parts)


def _names_read(code: types.CodeType, out: set) -> set:
    out.update(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _names_read(c, out)
    return out


_PLAIN = (type(None), bool, int, float, complex, str, bytes)


def stable(value, _seen=None, _depth=0) -> str:
    """A text that is equal in two processes exactly when the value means the same to a compilation; Unstable
    when there is none (the value is identified only by its address)."""
    if isinstance(value, _PLAIN):
        return f"{type(value).__name__}:{value!r}"
    if _depth > 12:
        raise Unstable("a compile-time value nested too deeply to key")
    if _seen is None:
        _seen = set()
    if id(value) in _seen:
        return "<cycle>"
    _seen = _seen | {id(value)}
    nxt = _depth + 1
    if isinstance(value, (tuple, list)):
        return type(value).__name__ + "(" + ",".join(stable(x, _seen, nxt) for x in value) + ")"
    if isinstance(value, (set, frozenset)):
        return type(value).__name__ + "(" + ",".join(sorted(stable(x, _seen, nxt) for x in value)) + ")"
    if isinstance(value, dict):
        items = sorted((stable(k, _seen, nxt), stable(v, _seen, nxt)) for k, v in value.items())
        return "dict(" + ",".join(f"{k}={v}" for k, v in items) + ")"
    if isinstance(value, type):
        return f"type:{value.__module__}.{value.__qualname__}"
    if isinstance(value, types.ModuleType):
        return f"module:{value.__name__}"
    if isinstance(value, Decorated):
        return "decorated:" + function_identity(value.fn, _seen, nxt)
    if isinstance(value, types.FunctionType):
        return "function:" + function_identity(value, _seen, nxt)
    if isinstance(value, types.MethodType):
        return "method:" + stable(value.__self__, _seen, nxt) + "." + function_identity(value.__func__, _seen, nxt)
    if isinstance(value, enum.Enum):
        return f"enum:{type(value).__module__}.{type(value).__qualname__}.{value.name}"
    t = type(value)
    if t.__module__.startswith("warpweave._core"):
        return f"core:{t.__name__}:{value}"  # layouts, shapes, swizzles: their CuTe notation
    state = getattr(value, "__dict__", None)
    if state is None and hasattr(t, "__slots__"):
        state = {s: getattr(value, s) for s in t.__slots__ if hasattr(value, s)}
    if state is not None:
        return f"object:{t.__module__}.{t.__qualname__}" + stable(dict(state), _seen, nxt)
    raise Unstable(f"a compile-time value of type {t.__module__}.{t.__qualname__} has no stable key")


def function_identity(fn, _seen=None, _depth=0) -> str:
    """Code, closure, defaults and the plain constants of its module that the function reads."""
    code = fn.__code__
    if code.co_filename.startswith("<"):
        raise Unstable(f"{fn.__qualname__} is not defined in a file")
    parts = [_code_digest(code)]
    for cell in fn.__closure__ or ():
        try:
            parts.append(stable(cell.cell_contents, _seen, _depth + 1))
        except ValueError:
            parts.append("<empty cell>")
    parts.append(stable(fn.__defaults__, _seen, _depth + 1))
    parts.append(stable(fn.__kwdefaults__, _seen, _depth + 1))
    g = fn.__globals__
    for name in sorted(_names_read(code, set())):
        v = g.get(name, _MISSING)
        if v is not _MISSING and isinstance(v, _PLAIN + (tuple,)):
            try:
                parts.append(f"{name}={stable(v)}")
            except Unstable:
                pass
        elif v is not _MISSING and _is_data(v):
            # A module-level container or data object the function reads (a config dict, a list of tile sizes)
            # can change while the code does not: its contents are part of the key, and one without a stable
            # key makes the function uncacheable (Unstable propagates) rather than served stale.
            parts.append(f"{name}={stable(v)}")
    return _digest(parts)


_MISSING = object()


def _is_data(v) -> bool:
    """Mutable containers and plain data objects (not modules, classes, functions or kernels, which are keyed by
    what they are, through the files the trace reaches)."""
    if isinstance(v, (dict, list, set, bytearray)):
        return True
    return (not callable(v) and not isinstance(v, (types.ModuleType, type)) and hasattr(v, "__dict__")
            and not type(v).__module__.startswith("warpweave"))


_plugin_identity = None


def _plugins_identity() -> str:
    """The installed plugin libraries by path, size and modification time (no library is opened for this)."""
    global _plugin_identity
    dirs = [PACKAGE_PLUGIN_DIR] + [d for d in os.environ.get("WARPWEAVE_PLUGIN_PATH", "").split(os.pathsep) if d]
    if _plugin_identity is not None and _plugin_identity[0] == dirs:
        return _plugin_identity[1]
    parts = []
    for d in dirs:
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            if not e.name.endswith(".so"):
                continue
            try:
                if not e.is_file():
                    continue
                st = e.stat()
            except OSError:
                # A link that loops or cannot be followed is no plugin: discovery passes over it and loads the
                # others, so it is no part of what compiled code depends on either.
                continue
            parts.append(f"{e.path}:{st.st_size}:{st.st_mtime_ns}")
    _plugin_identity = (dirs, ";".join(parts))
    return _plugin_identity[1]


def target_selector(target) -> str:
    """What picks the target, known before the backends are looked at: the target itself, the one the environment
    names, else the current device's compute capability."""
    if target is not None:
        return target.name
    env = arch_from_environment()
    if env:
        return env
    if not _core.driver_available() or _core.device_count() == 0:
        raise Unstable("no target: neither WARPWEAVE_ARCH nor a device")
    major, minor = _core.device_info(_core.current_device())["compute_capability"]
    return f"cc{major}{minor}"


def function_key(jf, args, kwargs, target, opts) -> str:
    """The first-level key of compiling jf for these arguments (Unstable when there is none)."""
    parts = [f"warpweave function cache {_FORMAT}", sys.implementation.cache_tag, __version__, compiler_identity(), _plugins_identity(),
             target_selector(target), stable(opts), jf.fn.__module__, jf.fn.__qualname__, function_identity(jf.fn)]
    parts += arguments_key(jf.signature, args, kwargs, stable)
    return _core.cache_key(parts)


def reached_functions(recording: Recording) -> list:
    """The identities of the decorated functions a trace reached (checked before a later process uses the entry)."""
    out = []
    for f in recording.functions:
        fn = f.fn
        out.append([fn.__module__, fn.__qualname__, function_identity(fn)])
    return sorted(out)


# --- entries -----------------------------------------------------------------------------------------------------
# Plans, launches and guards are stored as their attributes, encoded generically (marshal keeps tuples, lists and
# dicts); what is not plain data is tagged: symbolic integers as Python source over s<id>, the stream argument,
# numeric types by name, launch parameters. Anything else has no meaning in another process: Unstable.

_TAG = "__ww__"


def _encode(x):
    if isinstance(x, _PLAIN):
        return x
    if isinstance(x, tuple):
        return tuple(_encode(v) for v in x)
    if isinstance(x, list):
        return [_encode(v) for v in x]
    if isinstance(x, _core.SymInt):
        return {_TAG: "expr", "src": _core.python_expr(x, "s")}
    if isinstance(x, DimExpr):
        return {_TAG: "expr", "src": x.src}
    if isinstance(x, HostStream):
        return {_TAG: "stream", "arg": x.arg_index}
    if isinstance(x, type) and issubclass(x, Numeric):
        return {_TAG: "numeric", "name": numeric_name(x)}
    if isinstance(x, Param):
        return {_TAG: "param", "fields": _encode(dict(vars(x)))}
    if isinstance(x, dict) and all(isinstance(k, (str, int)) for k in x):
        return {k: _encode(v) for k, v in x.items()}
    raise Unstable(f"a {type(x).__name__} in the launch plan has no stored form")


def _decode(x):
    if isinstance(x, tuple):
        return tuple(_decode(v) for v in x)
    if isinstance(x, list):
        return [_decode(v) for v in x]
    if not isinstance(x, dict):
        return x
    tag = x.get(_TAG)
    if tag is None:
        return {k: _decode(v) for k, v in x.items()}
    if tag == "expr":
        return DimExpr(x["src"])
    if tag == "stream":
        return HostStream(x["arg"])
    if tag == "numeric":
        return _numeric_type(x["name"], Numeric)
    if tag == "param":
        p = Param.__new__(Param)
        p.__dict__.update(_decode(x["fields"]))
        return p
    raise Unstable(f"an entry with an unknown tag {tag!r}")


_DERIVED = {"static_grid", "static_block", "max_dynamic_smem"}  # Launch recomputes or starts them afresh


def serialise(compiled, st, module_key: str, recording: Recording) -> dict:
    """What a later process needs to rebuild `compiled` without tracing (Unstable when a part cannot be)."""
    if recording.problem:
        raise Unstable(recording.problem)
    for name in ("host_arguments", "host_actions"):
        if getattr(st, name, None):
            raise Unstable(f"the function's {name.replace('_', ' ')} are not stored in the cache yet")
    plans = [_encode({"kind": p.kind, **p.stored_fields()}) for p in compiled.plans]
    loops: list = []  # the host loops, numbered as the program stores them; a launch names those it is in
    program = host_loop.stored_program(compiled.host_program, _guard_fields, loops)
    number = {id(hl): k for k, hl in enumerate(loops)}
    launches = [_encode({k: [number[id(hl)] for hl in v] if k == "loops" else v for k, v in vars(l).items()
                         if k not in _DERIVED}) for l in compiled.launches]
    guards = [_guard_fields(g) for g in getattr(compiled, "host_guards", ())]
    hs = [_encode(dict(vars(h))) for h in st.host_symbols.values()]
    return {"format": _FORMAT, "module_key": module_key, "target": st.target, "plans": plans, "launches": launches,
            "guards": guards, "host_symbols": hs, "host_program": program,
            "assumptions": [tuple(a) for a in compiled.assumptions.exported()],
            "files": recording.files(), "functions": reached_functions(recording), "ir": compiled.ir}


def _guard_fields(g) -> dict:
    # "text": the divisor as the user's names write it, for the error of a call that makes it zero
    text = getattr(g.diff, "expr", None)
    return _encode({"diff": g.diff, "op": g.op, "outcome": g.outcome, "where": g.where, "divisor": g.divisor,
                    "text": text if isinstance(text, str) else None})


_HOLDS = [
    lambda a, b, c, d: a != 0 and b % a == 0,                                  # a divides b
    lambda a, b, c, d: (a != 0 and b % a == 0) or (b != 0 and a % b == 0),     # a divides b or b divides a
    lambda a, b, c, d: (b != 0 and a % b == 0) or a < b,                       # a multiple of b, or a < b
    lambda a, b, c, d: a < b,
    lambda a, b, c, d: c == d or (a != 0 and b % a == 0),
]


class CachedAssumptions:
    """The assumptions of a cached compilation (AssumptionScope's interface for a compiled function)."""

    def __init__(self, exported):
        self.sources = [tuple(e) for e in exported]  # the expressions' text (export_c.py writes them as C)
        self._items = [(int(k), [compile(e, "<warpweave assumption>", "eval") for e in (a, b, c, d)], what)
                       for k, a, b, c, d, what in exported]

    def __len__(self):
        return len(self._items)

    def descriptions(self):
        return [what for _, _, what in self._items]

    def exported(self):
        raise Unstable("assumptions read from the cache")  # never stored twice

    def failed(self, env):
        scope = {f"s{k}": v for k, v in env.items()}
        g = {"__builtins__": {}, "min": min, "max": max}
        out = []
        for kind, exprs, what in self._items:
            vals = [eval(e, g, scope) for e in exprs]
            if not _HOLDS[kind](*vals):
                out.append(what)
        return out


class CachedGuard(Guard):
    """A host comparison of a cached compilation, its difference read back as Python source."""

    def holds(self, env) -> bool:
        # the difference's value for these arguments, decided as a traced guard decides its SymInt's
        return Guard(self.diff.evaluate(env), self.op, self.outcome, self.where).holds({})


def _cached_guard(fields):
    g = _decode(fields)
    if g.get("text") and isinstance(g["diff"], DimExpr):
        g["diff"].expr = g["text"]
    return CachedGuard(g["diff"], g["op"], g["outcome"], g["where"], g.get("divisor"))


def _argument_env(plans, values) -> dict | None:
    """The symbols' values for these arguments (None when one has none: a fake tensor's extents are real)."""
    env = {}
    for p in plans:
        if not p.symbol_env(values[p.index], env):
            return None
    return env


def _still_valid(entry) -> str | None:
    """Why the entry no longer describes the sources (None: it does)."""
    for path, size, mtime in entry["files"]:
        try:
            st = os.stat(path)
        except OSError:
            return f"{path} is gone"
        if st.st_size != size or st.st_mtime_ns != mtime:
            return f"{path} changed"
    for module, qualname, ident in entry["functions"]:
        if "<locals>" in qualname:
            continue  # reached through the key's closure, or through a file checked above
        try:
            obj = sys.modules.get(module) or importlib.import_module(module)
            for part in qualname.split("."):
                obj = getattr(obj, part)
            fn = getattr(obj, "fn", obj)
            if function_identity(fn) != ident:
                return f"{module}.{qualname} changed"
        except (Exception, Unstable):  # noqa: BLE001 - anything unexpected is a miss, never an error
            return f"{module}.{qualname} cannot be found"
    return None


def rebuild(entry, cubin: bytes, jf, args, kwargs, key: str):
    """The JitCompiledFunction an entry describes, for these arguments (Unstable when they decide one of its
    host comparisons otherwise)."""
    bound = jf.signature.bind(*args, **kwargs)
    bound.apply_defaults()
    values = list(bound.arguments.values())
    plans = []
    for fields in entry["plans"]:
        fields = _decode(fields)
        kind = kind_named(fields.pop("kind"))
        p = kind.__new__(kind)
        p.__dict__.update(fields)
        p.restore(values)
        plans.append(p)
    loops: list = []
    program = host_loop.program_from_stored(entry.get("host_program", ()), _cached_guard, loops)
    launches = []
    for fields in entry["launches"]:
        fields = dict(fields)
        numbers = fields.pop("loops", None)
        fields = _decode(fields)
        if numbers is not None:
            fields["loops"] = tuple(loops[k] for k in numbers)
        names = [f for f in Launch.__dataclass_fields__ if f in fields]
        l = Launch(**{f: fields.pop(f) for f in names})
        for k, v in fields.items():  # launch attributes set after construction (cooperative, pdl, ...)
            setattr(l, k, v)
        launches.append(l)
    host_symbols = {}
    for fields in entry["host_symbols"]:
        h = HostSymbol.__new__(HostSymbol)
        h.__dict__.update(_decode(fields))
        host_symbols[h.id] = h
    guards = [_cached_guard(g) for g in entry["guards"]]
    if guards:
        env = _argument_env(plans, values)
        if env is not None and program:
            try:
                program.run(values, env)
            except DSLError:
                env = None
        if env is None or any(not g.holds(env) for g in guards):
            raise Unstable("these arguments decide a host comparison otherwise")
    st = SimpleNamespace(host_symbols=host_symbols, launches=launches, target=entry["target"], host_arguments={},
                         host_actions=[], host_guards=guards, host_program=program)
    info = {"cache": "hit", "level": "function", "key": entry["module_key"], "function_key": key}
    return JitCompiledFunction(jf, plans, st, entry["ir"], cubin, info, CachedAssumptions(entry["assumptions"]),
                               {"trace_s": 0.0, "compile_s": 0.0})


def _numeric_type(name, base):
    if name is None:
        return None
    if "." in name:  # a type of the program's own, by module and qualified name
        t = numeric_named(name)
        if t is None:
            raise Unstable(f"no numeric type {name}")
        return t
    stack = [base]
    while stack:
        t = stack.pop()
        if t.__name__ == name:
            return t
        stack.extend(t.__subclasses__())
    raise Unstable(f"no numeric type {name}")


def load(cache, key: str, jf, args, kwargs):
    """(compiled function or None, why not)."""
    hit = cache.load(key)
    if hit is None:
        return None, "miss"
    try:
        entry = marshal.loads(hit[0])
        if not isinstance(entry, dict) or entry.get("format") != _FORMAT:
            return None, "an entry of another format"
        why = _still_valid(entry)
        if why:
            return None, why
        second = cache.load(entry["module_key"])
        if second is None:
            return None, "its cubin is no longer cached"
        return rebuild(entry, second[0], jf, args, kwargs, key), "hit"
    except (Unstable, KeyError, TypeError, ValueError, AttributeError, EOFError) as e:
        return None, f"the entry cannot be used ({e})"


def store(cache, key: str, entry: dict) -> None:
    # marshal: the entry is plain data (the key holds the interpreter's version, marshal's format follows it)
    cache.store(key, marshal.dumps(entry), "function")


# --- what compile_function calls ---------------------------------------------------------------------------------

def _usable(opts) -> bool:
    # As the module-text level: no cache when disabled, when artefacts are dumped, or for a resource report.
    # A profiled compilation traces (its regions' names are learnt there), so it is not served before tracing.
    return not (_core.JitCache.disabled_by_env() or keep_requested() or getattr(opts, "keep", None)
                or "-v" in getattr(opts, "ptxas_options", ()) or getattr(opts, "profile", None))


def lookup(jf, args, kwargs, target, opts):
    """(key or None, the cached compiled function or None, why none): called before tracing."""
    if not _usable(opts):
        return None, None, "the cache is not used for this compilation"
    try:
        key = function_key(jf, args, kwargs, target, opts)
    except Unstable as e:
        return None, None, f"not cached before tracing: {e}"
    compiled, why = load(jit_cache(), key, jf, args, kwargs)
    return key, compiled, why


def remember(key, compiled, st, recording, why) -> None:
    """Stores a traced compilation under its first-level key (or says in its info why it is not)."""
    if key is None or compiled.info.get("cache") not in ("hit", "miss") or not compiled.info.get("key"):
        compiled.info["function_cache"] = why if key is None else "not cached: the function compiled no kernel"
        return
    try:
        entry = serialise(compiled, st, compiled.info["key"], recording)
    except (Unstable, OSError) as e:
        compiled.info["function_cache"] = f"not cached before tracing: {e}"
        return
    store(jit_cache(), key, entry)
    compiled.info["function_cache"] = "stored" if why == "miss" else f"stored ({why})"
    compiled.info["function_key"] = key
