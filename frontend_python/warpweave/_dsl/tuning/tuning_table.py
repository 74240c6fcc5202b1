"""The keys of autotuning searches (the tuned kernel, the device, the arguments, the search space) and the on-disk
table of their winners, in the JIT cache's folder."""
from __future__ import annotations

import hashlib
import inspect
import json
import os
import tempfile
import warnings

from ... import _core
from ..call import function_cache
from ..call.compile_module import jit_cache
from ..host.kernel_trace import Decorated
from ..values.runtime import RuntimeTensor, is_torch_tensor
from .candidate_search import PACKAGE_FRAMES, config_text

_FORMAT = 1


# --- keys ----------------------------------------------------------------------------------------------------------

def _sha(parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(str(p).encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


def kernel_identity(fn) -> str:
    """The tuned function's identity: its code, closure, defaults and module constants (function_cache's), and the
    text of the file that defines it (its kernels and helpers usually live there). Unstable when it has none."""
    if isinstance(fn, Decorated):
        fn = fn.fn
    fn = inspect.unwrap(fn)
    if not hasattr(fn, "__code__"):
        call = getattr(type(fn), "__call__", None)
        fn = getattr(call, "fn", call)
        if not hasattr(fn, "__code__"):
            raise function_cache.Unstable(f"{type(fn).__name__} has no code to key")
    ident = function_cache.function_identity(fn)
    path = fn.__code__.co_filename
    try:
        with open(path, "rb") as f:
            source = hashlib.sha256(f.read()).hexdigest()
    except OSError as e:
        raise function_cache.Unstable(f"the source of {fn.__qualname__} cannot be read ({e})") from None
    return _sha([fn.__module__, fn.__qualname__, ident, source])


def device_identity() -> str | None:
    """Name, compute capability and SM count of the current device; None without one."""
    try:
        if not _core.driver_available() or _core.device_count() == 0:
            return None
        d = _core.device_info(_core.current_device())
    except RuntimeError:
        return None
    major, minor = d["compute_capability"]
    return f"{d['name']} sm_{major}{minor} x{d['multiprocessor_count']}"


def tensor_view(v):
    """(element type, shape, strides) of a tensor argument, or None."""
    if is_torch_tensor(v):
        return ("torch", str(v.dtype), tuple(v.shape), tuple(v.stride()), v.data_ptr() % 16)
    if isinstance(v, RuntimeTensor):
        return ("tensor", v.element_type.__name__, tuple(v._shape), tuple(v._strides))
    return None


def arguments_identity(args, kwargs, names_by_value=()) -> str:
    """Tensors by element type, shape and strides (and address alignment); the arguments named in
    names_by_value by value; every other argument by type."""
    parts = []

    def one(name, v):
        t = tensor_view(v)
        if t is not None:
            parts.append(f"{name}={t}")
        elif name in names_by_value:
            try:
                parts.append(f"{name}={function_cache.stable(v)}")
            except function_cache.Unstable:
                parts.append(f"{name}={v!r}")
        elif isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                one(f"{name}[{i}]", x)
        else:
            parts.append(f"{name}:{type(v).__qualname__}")

    for name, v in args:
        one(name, v)
    for name, v in sorted(kwargs.items()):
        one(name, v)
    return _sha(parts)


def space_identity(space: list[dict]) -> str:
    try:
        return _sha([function_cache.stable(c) for c in space])
    except function_cache.Unstable:
        return _sha([config_text(c) for c in space])


# --- the on-disk table ---------------------------------------------------------------------------------------------

class TuningTable:
    """The winners of past searches: `<dir>/<key[:2]>/<key>.json`, written atomically (a concurrent writer of the
    same key replaces the file whole). An entry records the candidate by its index in the space and by its text,
    and is used only when both still agree."""

    def __init__(self, directory: str | None = None):
        if directory is None:
            directory = os.path.join(jit_cache().dir, "autotune")
        self.dir = directory

    @staticmethod
    def disabled() -> bool:
        return _core.JitCache.disabled_by_env()

    @staticmethod
    def key(kernel: str, device: str, arguments: str, space: str) -> str:
        return _sha([f"warpweave autotune {_FORMAT}", kernel, device, arguments, space])

    def path(self, key: str) -> str:
        return os.path.join(self.dir, key[:2], key + ".json")

    def load(self, key: str) -> dict | None:
        try:
            with open(self.path(key), encoding="utf-8") as f:
                entry = json.load(f)
        except (OSError, ValueError):
            return None
        if not isinstance(entry, dict) or entry.get("format") != _FORMAT or entry.get("key") != key:
            return None
        return entry

    def store(self, key: str, entry: dict) -> None:
        entry = dict(entry, format=_FORMAT, key=key)
        d = os.path.dirname(self.path(key))
        try:
            os.makedirs(d, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(entry, f, indent=1)
            os.replace(tmp, self.path(key))
        except OSError as e:  # a read-only cache folder: the search result is kept in memory only
            warnings.warn(f"autotune: the table entry cannot be written to {d} ({e})", RuntimeWarning,
                          skip_file_prefixes=PACKAGE_FRAMES)

    def lookup(self, key: str, space: list[dict]) -> dict | None:
        """The stored configuration of `key`, when its index and text still name the same candidate."""
        entry = self.load(key)
        if entry is None:
            return None
        i = entry.get("index")
        if not isinstance(i, int) or not 0 <= i < len(space) or config_text(space[i]) != entry.get("config"):
            return None
        return space[i]
