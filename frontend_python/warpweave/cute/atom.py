"""`cute.atom`: the kinds of operation an atom is made of, as classes a library tests operations against or names
in its annotations (`op: cute.atom.CopyOp`). Operations here are made from the backends' manifests (a class per
manifest entry, kind COPY or MMA) or are the universal ones, so these classes hold no instances of their own:
isinstance and issubclass ask the operation what kind it is. `kind_of_namespace` narrows a kind to the operations
of one backend namespace (the Blackwell backend's `mma.MmaOp` is MmaOp narrowed to its own namespace)."""
from __future__ import annotations

from .._dsl.atoms.atoms import ManifestOp
from .._dsl.atoms.copy import CopyUniversalOp
from .._dsl.atoms.mma import MmaUniversalOp


class _KindMeta(type):
    def __instancecheck__(cls, obj):
        return cls.__subclasscheck__(type(obj))

    def __subclasscheck__(cls, sub):
        if not isinstance(sub, type):
            return False
        if type.__subclasscheck__(cls, sub):
            return True
        if cls._universal is not None and issubclass(sub, cls._universal) and not cls._prefix:
            return True
        if not issubclass(sub, ManifestOp):
            return False
        return (cls._kind is None or sub.kind == cls._kind) and sub.python_name.startswith(cls._prefix)


class Op(metaclass=_KindMeta):
    """Any operation an atom is made of."""
    _kind = None
    _prefix = ""
    _universal = (CopyUniversalOp, MmaUniversalOp)


class CopyOp(Op):
    """An operation a copy atom is made of (cute.make_copy_atom's first argument)."""
    _kind = "COPY"
    _universal = CopyUniversalOp


class MmaOp(Op):
    """An operation an MMA atom is made of (cute.make_mma_atom's argument)."""
    _kind = "MMA"
    _universal = MmaUniversalOp


def kind_of_namespace(base: type, prefix: str, name: str, doc: str) -> type:
    """`base` narrowed to the operations whose names start with `prefix` (for a backend's namespace)."""
    return _KindMeta(name, (base,), {"_prefix": prefix, "__doc__": doc})


__all__ = ["Op", "CopyOp", "MmaOp", "kind_of_namespace"]
