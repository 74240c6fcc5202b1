"""The typed view of manifests: message classes made from manifest.proto itself.

The core hands Python each manifest serialized (protobuf binary) together with the schema it was compiled with
(manifest.proto as a FileDescriptorProto); protobuf's Python package builds the message classes from that schema
at first use, so the view always matches the core (no generated module to keep in step, no protoc at build time).
`Manifest`, `Instruction`, `Family`, `ElementType`, ... are those classes; `as_dict` gives an entry in protobuf's
JSON mapping (proto field names, every scalar present), the form the DSL's instruction code indexes.
"""
from __future__ import annotations

from ... import _core

_PACKAGE = "warpweave.manifest"


def _protobuf():
    """protobuf's Python modules, imported at the first typed view: about 20 ms that compiling a kernel, which
    reads manifests through the core, never pays (tests/python/test_lazy_imports.py)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

    return descriptor_pb2, descriptor_pool, json_format, message_factory
_classes: dict = {}
_pool = None


def message_class(name: str):
    """The class of message `name` of manifest.proto (e.g. "Manifest", "Instruction", "Family")."""
    global _pool
    if name not in _classes:
        descriptor_pb2, descriptor_pool, _, message_factory = _protobuf()
        if _pool is None:
            pool = descriptor_pool.DescriptorPool()
            pool.Add(descriptor_pb2.FileDescriptorProto.FromString(_core.manifest_schema()))
            _pool = pool
        _classes[name] = message_factory.GetMessageClass(_pool.FindMessageTypeByName(f"{_PACKAGE}.{name}"))
    return _classes[name]


def parse_manifest(data: bytes):
    """A Manifest message from its serialized bytes (as the core validated it)."""
    return message_class("Manifest").FromString(data)


def parse_instruction(data: bytes):
    """An Instruction message (an atom family's instance, as the core expands it)."""
    return message_class("Instruction").FromString(data)


def manifest_of_text(text: str):
    """A Manifest message from protobuf text format; None when it does not parse (validation says why)."""
    data = _core.manifest_to_binary(text)
    return parse_manifest(data) if data else None


def as_dict(message) -> dict:
    """The message in protobuf's JSON mapping: proto field names, enum values by name, 64-bit integers as strings,
    every scalar and repeated field present even at its default, unset sub-messages left out. The same as
    json_format.MessageToDict(preserving_proto_field_name=True, always_print_fields_with_no_presence=True)
    (tests/python/test_atom_families.py checks it), several times faster: a plan per message type, no options."""
    return _convert(message, _plan(message.DESCRIPTOR))


def as_dict_reference(message) -> dict:
    return _protobuf()[2].MessageToDict(message, preserving_proto_field_name=True,
                                        always_print_fields_with_no_presence=True)


_SCALAR, _ENUM, _INT64, _MESSAGE = range(4)
_INT64_TYPES = None
_plans: dict = {}


def _kind(f):
    global _INT64_TYPES
    if _INT64_TYPES is None:
        d = f.__class__
        _INT64_TYPES = {d.TYPE_INT64, d.TYPE_UINT64, d.TYPE_SINT64, d.TYPE_FIXED64, d.TYPE_SFIXED64}
    if f.message_type is not None:
        return _MESSAGE
    if f.enum_type is not None:
        return _ENUM
    return _INT64 if f.type in _INT64_TYPES else _SCALAR


def _is_repeated(f) -> bool:
    # protobuf 6 has FieldDescriptor.is_repeated and no `label` (the GPU machine's torch environment has it);
    # older versions only `label`.
    r = getattr(f, "is_repeated", None)
    if r is not None:
        return bool(r() if callable(r) else r)
    return f.label == f.LABEL_REPEATED


def _plan(desc):
    """[(name, shape, kind, enum names or sub-plan, value kind for maps)] for a message type, made once."""
    plan = _plans.get(desc.full_name)
    if plan is None:
        plan = []
        _plans[desc.full_name] = plan   # before the fields: a message type may contain itself
        for f in desc.fields:
            if f.message_type is not None and f.message_type.GetOptions().map_entry:
                vf = f.message_type.fields_by_name["value"]
                plan.append((f.name, "map", _kind(vf), _sub(vf)))
            else:
                shape = "repeated" if _is_repeated(f) else "single"
                plan.append((f.name, shape, _kind(f), _sub(f)))
    return plan


def _sub(f):
    if f.message_type is not None:
        return f.message_type
    if f.enum_type is not None:
        return {v.number: v.name for v in f.enum_type.values}
    return None


def _value(kind, sub, v):
    if kind == _SCALAR:
        return v
    if kind == _ENUM:
        return sub.get(v, v)
    if kind == _INT64:
        return str(v)
    return _convert(v, _plan(sub))


def _convert(msg, plan) -> dict:
    out = {}
    for name, shape, kind, sub in plan:
        v = getattr(msg, name)
        if shape == "single":
            if kind == _MESSAGE and not msg.HasField(name):
                continue
            out[name] = _value(kind, sub, v)
        elif shape == "repeated":
            out[name] = list(v) if kind == _SCALAR else [_value(kind, sub, x) for x in v]
        else:
            out[name] = {str(k): _value(kind, sub, x) for k, x in v.items()}
    return out


def instruction_dict(data: bytes) -> dict:
    return as_dict(parse_instruction(data))
