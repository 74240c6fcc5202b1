"""Backends' options: their say in how code that uses their instructions is built (plugin_abi.h,
WW_OPTIONS_HOOK), asked through the plugin's host hook in C strings, so that a new kind of choice needs no
manifest field. The answers are memoised per (backend, stage, attributes)."""
from __future__ import annotations

import functools

from ... import _core
from .plugins import registry

OPTIONS_HOOK = "options"
OUT_BYTES = 4096


def parse(text: str) -> dict[str, list[str]]:
    """"key=value" lines -> {key: [values]} (a key may repeat; lines without "=" are ignored)."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip():
            out.setdefault(key.strip(), []).append(value.strip())
    return out


@functools.lru_cache(maxsize=4096)
def _ask(backend: str, attrs: tuple) -> tuple:
    registry.load([backend])
    if backend not in registry.backends:
        return ()  # a manifest read from a file (conformance) without its plugin: no library to ask
    try:
        raw = bytes(_core.plugin_host_call(backend, OPTIONS_HOOK, dict(attrs), OUT_BYTES))
    except RuntimeError as e:
        if "has no host hook" in str(e):  # the backend has nothing to say (no hook, or not this one)
            return ()
        raise
    text = raw.split(b"\0", 1)[0].decode("utf-8", "replace")
    return tuple((k, tuple(v)) for k, v in parse(text).items())


def ask(backend: str, stage: str, **attrs) -> dict[str, list[str]]:
    items = tuple(sorted({"stage": stage, **{k: str(v) for k, v in attrs.items()}}.items()))
    return {k: list(v) for k, v in _ask(backend, items)}


@functools.lru_cache(maxsize=8192)
def cubin_tool(backend: str, ident: str) -> str:
    """The cubin tool a module that uses instruction `ident` of `backend` needs ("" for either); emitting an
    instruction asks this, so it is memoised per instruction."""
    tools = ask(backend, "compile", instruction=ident).get("cubin_tool")
    return tools[-1] if tools else ""
