"""JIT argument adapters (CuTe DSL's JitArgAdapterRegistry): a program registers, for a type of its own (a
framework's tensor, a parameter object), a callable that turns such an argument into one warpweave takes (an object
of the JitArgument protocol, a tensor, a DSL number, a tuple of them). Every argument of that exact type is
converted at each entry of the call path: a @cute.jit call, cute.compile, and a call of the compiled function, so
that the compiled function is called with the same objects it was compiled with. Elements of list and tuple
arguments are converted too. The types warpweave takes itself (Python numbers, lists, tuples) have no adapter.

Scopes: an adapter registered with scope=... is found inside `using_scope(that scope)`, where it is asked before
the common ones; outside any scope, a type with one scoped adapter only gets it, and one with several is an error
(which one is meant is the program's to say). lazy=True registers under a "module.QualName" string, for a type
whose module the program does not want to import; it is found once that module is loaded.
"""
from __future__ import annotations

import contextlib
import sys
from contextvars import ContextVar

from ..base.errors import DSLRuntimeError, DSLTypeError, user_location

# Taken by warpweave itself: an adapter for them would change what every program's numbers and tuples are.
_OWN_TYPES = (bool, int, float, list, tuple)


class JitArgAdapterRegistry:
    """The registered adapters: by type, by scope and type, and by "module.QualName" for lazy ones."""

    jit_arg_adapter_registry: dict = {}
    scoped_jit_arg_adapter_registries: dict = {}
    lazy_jit_arg_adapter_registry: dict = {}
    _scope = ContextVar("warpweave_jit_arg_adapter_scope", default=None)

    @classmethod
    def register_jit_arg_adapter(cls, python_type=None, *, scope: str | None = None, lazy: bool = False):
        """@register_jit_arg_adapter(MyType): decorates the adapter (a function or a class, called with the
        argument), which it returns unchanged."""
        if python_type is None:
            raise DSLRuntimeError("a Python type must be provided for registering JIT argument adapter",
                                  user_location(2))
        if lazy:
            if not isinstance(python_type, str) or "." not in python_type:
                raise DSLRuntimeError("a fully-qualified 'module.QualName' string must be provided for registering "
                                      f"a lazy JIT argument adapter, got {python_type!r}", user_location(2))
        elif not isinstance(python_type, type):
            raise DSLRuntimeError(f"non-lazy JIT argument adapters must be registered with a Python type, got "
                                  f"{python_type!r}", user_location(2))
        if python_type in _OWN_TYPES:
            raise DSLRuntimeError(f"JIT argument adapter for {python_type} is already registered! (warpweave takes "
                                  "Python numbers, lists and tuples itself)", user_location(2))
        location = user_location(2)

        def register(adapter):
            if not callable(adapter):
                raise DSLTypeError(f"a JIT argument adapter is a callable (a function or a class), got "
                                   f"{adapter!r}", location)
            table = (cls.lazy_jit_arg_adapter_registry if lazy else
                     cls.scoped_jit_arg_adapter_registries.setdefault(scope, {}) if scope is not None else
                     cls.jit_arg_adapter_registry)
            if python_type in table:
                raise DSLRuntimeError(f"JIT argument adapter for {python_type} is already registered!", location)
            table[python_type] = adapter
            return adapter

        return register

    @classmethod
    @contextlib.contextmanager
    def using_scope(cls, scope: str | None):
        """Adapters of `scope` are asked first inside the block."""
        token = cls._scope.set(scope)
        try:
            yield
        finally:
            cls._scope.reset(token)

    @classmethod
    def call_with_scope(cls, scope: str | None, callback, *args, **kwargs):
        with cls.using_scope(scope):
            return callback(*args, **kwargs)

    @classmethod
    def _lazy(cls, t: type):
        name = f"{t.__module__}.{t.__qualname__}"
        adapter = cls.lazy_jit_arg_adapter_registry.get(name)
        if adapter is not None and t.__module__ in sys.modules:
            cls.jit_arg_adapter_registry.setdefault(t, adapter)  # found by type from now on
        return adapter

    @classmethod
    def get_registered_adapter(cls, arg):
        """The adapter for arg's exact type, or None."""
        t = type(arg)
        scope = cls._scope.get()
        if scope is not None:
            adapter = cls.scoped_jit_arg_adapter_registries.get(scope, {}).get(t)
            if adapter is not None:
                return adapter
        adapter = cls.jit_arg_adapter_registry.get(t)
        if adapter is not None or (cls.lazy_jit_arg_adapter_registry and (adapter := cls._lazy(t)) is not None):
            return adapter
        if scope is None:
            found = [r[t] for r in cls.scoped_jit_arg_adapter_registries.values() if t in r]
            if len(found) > 1:
                raise DSLRuntimeError(f"JIT argument adapter for {t} is ambiguous; perform the lookup inside "
                                      "JitArgAdapterRegistry.using_scope(<scope>)", user_location(2))
            return found[0] if found else None
        return None


register_jit_arg_adapter = JitArgAdapterRegistry.register_jit_arg_adapter


def _any_registered() -> bool:
    r = JitArgAdapterRegistry
    return bool(r.jit_arg_adapter_registry or r.scoped_jit_arg_adapter_registries or r.lazy_jit_arg_adapter_registry)


def _adapt(value):
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        out = [_adapt(v) for v in value]
        return value if all(a is b for a, b in zip(out, value)) else type(value)(out)
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    adapter = JitArgAdapterRegistry.get_registered_adapter(value)
    return value if adapter is None else adapter(value)


def adapt_arguments(args: tuple, kwargs: dict):
    """The arguments with each of a registered type converted by its adapter (the same objects where none is)."""
    if not _any_registered():
        return args, kwargs
    return tuple(_adapt(a) for a in args), {k: _adapt(v) for k, v in kwargs.items()}
