"""Operand kinds: how the DSL meets each kind of manifest operand.

A manifest operand has a kind (manifest.proto, Operand.kind; the role's name when empty). The kind's adapter says
what a fragment of that operand holds (its element type and, where the manifest gives none, its thread-value
layout) and turns a fragment into the IR values one atom instance takes, or stores the values it produces. The
frontend registers the adapters of the kinds every generation shares (registers, addresses, predicates,
scalars); a backend's Python package registers the rest (shared-memory descriptors, tensor memory, ...) or kinds
of its own through warpweave.ext.register_operand_kind, so that a new operand model needs no frontend change.
"""
from __future__ import annotations

from ... import _core
from ..base.errors import DSLTypeError, user_location
from ..registry.backend_python import ensure_loaded
from ..values import numeric
from ..values.tensor import (
    RMEM, Tensor, full_layout, load_scalar, load_scalars, make_fragment_like, storage_bits, store_scalars,
)
from .instructions import ELEMENT_TYPES, REGISTER_TYPES, PackedRegisters

_ELEMENT_DTYPES = {"f16": "Float16", "bf16": "BFloat16", "f32": "Float32", "tf32": "TFloat32", "f64": "Float64",
                   "s8": "Int8", "u8": "Uint8", "s32": "Int32", "u32": "Uint32", "s64": "Int64", "u64": "Uint64",
                   "e4m3": "Float8E4M3FN", "e5m2": "Float8E5M2", "e2m1": "Float4E2M1FN", "ue8m0": "Float8E8M0FNU"}


def kind_of(operand: dict) -> str:
    return operand.get("kind") or operand["role"].lower()


class OperandKind:
    """The adapter of one operand kind. Subclasses override what differs; the defaults read and write register
    fragments value by value."""

    name = ""

    def element_dtype(self, atom_id: str, operand: dict, hint):
        """The DSL type of the fragment's values (hint: the op's own dtype parameter, if it has one)."""
        if hint is not None:
            return numeric.dtype(hint)
        name = _ELEMENT_DTYPES.get(operand.get("element_type", ""))
        if name is None:
            raise DSLTypeError(f"{atom_id}: no DSL type for the element type {operand.get('element_type')!r} of "
                               f"operand {operand['name']} (kind {kind_of(operand)!r})", user_location(5))
        return getattr(numeric, name)

    def layout_tv(self, atom_id: str, operand: dict):
        text = operand.get("layout_tv")
        if not text:
            raise DSLTypeError(f"{atom_id}: operand {operand['name']} (kind {kind_of(operand)!r}) has no thread-value "
                               "layout, and its kind's adapter derives none", user_location(5))
        return _core.parse_layout(text)

    def check_fragment(self, atom_id: str, operand: dict, tensor) -> None:
        if not isinstance(tensor, Tensor) or tensor.iterator.memspace != RMEM:
            raise DSLTypeError(f"cute.gemm: {operand['name']} must be a register fragment for {atom_id}, got "
                               f"{tensor!r}", user_location(4))

    def make_fragment(self, atom_id: str, operand: dict, tensor, dtype):
        """The fragment a tiled MMA makes for this operand from a thread's partition (make_fragment_A/B/C):
        registers shaped like the partition by default. A kind whose atom reads memory directly (a shared-memory
        descriptor) returns the partition itself."""
        return make_fragment_like(tensor, dtype)

    def read(self, operand: dict, tensor, coords) -> list:
        """IR values of one atom instance: the fragment's values at coords (one coordinate per value); where they
        sit in its storage as the operand's registers hold them (consecutive, aligned, of the same width), the
        registers themselves (PackedRegisters)."""
        offs = [full_layout(tensor)(c) for c in coords]
        whole = _whole_registers(operand, tensor, offs)
        if whole is not None:
            return whole
        return [v.ir() for v in load_scalars(tensor.iterator, offs)]

    def write(self, operand: dict, tensor, coords, values, dtype) -> None:
        store_scalars(tensor.iterator, [full_layout(tensor)(c) for c in coords], [dtype.from_ir(x) for x in values])


def _whole_registers(operand: dict, tensor, offs):
    if operand.get("role") != "REGISTERS" or operand.get("register_type") != "b32":
        return None
    ebits = ELEMENT_TYPES[operand["element_type"]][1]
    rbits = REGISTER_TYPES["b32"][1]
    k = rbits // ebits
    ptr = tensor.iterator
    if k < 2 or storage_bits(tensor.element_type) != ebits or not all(isinstance(x, int) for x in offs) or \
            len(offs) % k or not isinstance(ptr.offset, int) or (ptr.offset * ebits) % rbits:
        return None
    # Register by register: a retiled fragment may place an atom's registers apart, each one whole.
    firsts = offs[::k]
    if any(f % k or offs[i * k:(i + 1) * k] != list(range(f, f + k)) for i, f in enumerate(firsts)):
        return None
    words = ptr.recast(numeric.Int32)
    return PackedRegisters(load_scalar(words, f // k).ir() for f in firsts)


class RegistersKind(OperandKind):
    name = "registers"


_kinds: dict[str, OperandKind] = {}


def register(kind: OperandKind, name: str | None = None) -> None:
    name = name or kind.name
    if not name:
        raise ValueError("an operand kind needs a name")
    if not isinstance(kind, OperandKind):
        raise TypeError(f"operand kind {name!r}: the adapter must be an OperandKind, got {type(kind).__name__}")
    _kinds[name] = kind


def adapter(operand: dict, atom_id: str) -> OperandKind:
    """The adapter of an operand's kind; a clear error when no loaded backend registers one."""
    k = kind_of(operand)
    a = _kinds.get(k)
    if a is None:
        ensure_loaded()  # a backend's package may register it when mounted
        a = _kinds.get(k)
    if a is None:
        known = ", ".join(sorted(_kinds))
        raise DSLTypeError(f"{atom_id}: operand {operand['name']} is of kind {k!r}, and no loaded backend registers "
                           f"an adapter for it (registered kinds: {known})", user_location(5))
    return a


register(RegistersKind())
