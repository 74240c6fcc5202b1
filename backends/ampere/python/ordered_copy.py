"""CuTe DSL's global-memory copy operations with a memory order and scope: cute.nvgpu.CopyG2ROp (loads into
registers) and CopyR2GOp (stores from registers), made atoms by make_copy_atom(op, dtype, num_bits_per_copy=32, 64
or 128, memory_order=MemoryOrder.X, memory_scope=MemoryScope.Y). The atom is the manifest's common.CopyG2ROp /
common.CopyR2GOp of that width, its sem attribute the order and scope: WEAK (the default) and VOLATILE take no
scope, RELAXED and ACQUIRE (loads) or RELEASE (stores) one (GPU when none is given). Flags and data that other
GPUs or the host write while a kernel runs are read so (VOLATILE or RELAXED at SYS scope: read anew each time).

The cache options CuTe DSL's atoms also take are accepted at their defaults (the plain access); another value is
refused, not ignored."""
from __future__ import annotations

import enum

import warpweave.cute as cute
from warpweave import ext


# CuTe DSL's names of the PTX memory model's scopes and orders; each member's value is its PTX qualifier
MemoryScope = enum.Enum("MemoryScope", {s.upper(): s for s in ("cta", "cluster", "gpu", "sys")})
MemoryOrder = enum.Enum("MemoryOrder", {o.upper(): o for o in ("weak", "relaxed", "acquire", "release", "acq_rel",
                                                               "sc", "mmio", "constant", "volatile")})


# option -> the value meaning "the plain access" (its name, as CuTe DSL's enums spell it, or a Python value)
_PLAIN_OPTIONS = {"l2_prefetch_size": "NONE", "l1c_evict_priority": "EVICT_NORMAL", "load_cache_mode": "ALWAYS",
                  "shared_space": "CTA", "invariant": False}


def _plain(name, value) -> bool:
    want = _PLAIN_OPTIONS[name]
    return value is None or value == want or getattr(value, "name", None) == want


def sem_qualifier(what: str, order, scope, orders) -> str:
    """The sem attribute (".weak", ".volatile", ".relaxed.sys", ...) of memory_order and memory_scope."""
    o = order if order is not None else MemoryOrder.WEAK
    o = getattr(o, "value", o)
    if o not in orders:
        raise ext.user_error(f"{what}: memory_order is one of {', '.join(x.upper() for x in orders)}, got {order!r}")
    sc = getattr(scope, "value", scope)
    if o in ("weak", "volatile"):
        if scope is not None and sc != "sys":
            # a weak or volatile access has no scope of its own (volatile ones act at system scope)
            raise ext.user_error(f"{what}: memory_order {o.upper()} takes no memory_scope, got {scope!r}")
        return "." + o
    sc = "gpu" if scope is None else sc
    if sc not in ("cta", "cluster", "gpu", "sys"):
        raise ext.user_error(f"{what}: memory_scope is CTA, CLUSTER, GPU or SYS, got {scope!r}")
    return f".{o}.{sc}"


class _OrderedCopyOp:
    _name = ""
    _orders: tuple = ()

    def __repr__(self):
        return f"{self._name}()"

    def __eq__(self, other):
        return type(other) is type(self)

    def __hash__(self):
        return hash(self._name)

    def __ww_make_copy_atom__(self, value_type, num_bits_per_copy=None, *, memory_order=None, memory_scope=None,
                              **options):
        what = f"make_copy_atom({self._name})"
        for k, v in options.items():
            if k not in _PLAIN_OPTIONS:
                raise ext.user_error(f"{what} got an unexpected keyword argument {k!r}", ext.DSLTypeError)
            if not _plain(k, v):
                raise ext.user_error(f"{what}: {k}={v!r} is not offered (only {_PLAIN_OPTIONS[k]!r}, the plain access)")
        sem = sem_qualifier(what, memory_order, memory_scope, self._orders)
        bits = num_bits_per_copy if num_bits_per_copy is not None else value_type.width
        if bits not in (32, 64, 128):
            raise ext.user_error(f"{what}: num_bits_per_copy is 32, 64 or 128, got {bits}")
        op = ext.manifest_class(f"common.{self._name}")(num_bits_per_copy=bits)
        atom = cute.make_copy_atom(op, value_type, num_bits_per_copy=bits)
        atom.attributes = {"sem": sem}
        return atom


class CopyG2ROp(_OrderedCopyOp):
    """Loads from global memory into registers (make_copy_atom's memory_order: WEAK, VOLATILE, RELAXED, ACQUIRE)."""
    _name = "CopyG2ROp"
    _orders = ("weak", "volatile", "relaxed", "acquire")


class CopyR2GOp(_OrderedCopyOp):
    """Stores registers to global memory (make_copy_atom's memory_order: WEAK, VOLATILE, RELAXED, RELEASE)."""
    _name = "CopyR2GOp"
    _orders = ("weak", "volatile", "relaxed", "release")


NAMES = {"CopyG2ROp": CopyG2ROp, "CopyR2GOp": CopyR2GOp, "MemoryScope": MemoryScope, "MemoryOrder": MemoryOrder}
