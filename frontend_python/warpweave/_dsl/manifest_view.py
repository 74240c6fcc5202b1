"""The typed view of manifests: message classes made from manifest.proto itself.

The core hands Python each manifest serialized (protobuf binary) together with the schema it was compiled with
(manifest.proto as a FileDescriptorProto); protobuf's Python package builds the message classes from that schema
at first use, so the view always matches the core (no generated module to keep in step, no protoc at build time).
`Manifest`, `Instruction`, `Family`, `ElementType`, ... are those classes; `as_dict` gives an entry in protobuf's
JSON mapping (proto field names, every scalar present), the form the DSL's instruction code indexes.
"""
from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

from .. import _core

_PACKAGE = "warpweave.manifest"
_classes: dict = {}
_pool = None


def message_class(name: str):
    """The class of message `name` of manifest.proto (e.g. "Manifest", "Instruction", "Family")."""
    global _pool
    if name not in _classes:
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
    """The message in protobuf's JSON mapping: proto field names, enum values by name, every scalar field present
    even at its default, unset sub-messages left out."""
    return json_format.MessageToDict(message, preserving_proto_field_name=True,
                                     always_print_fields_with_no_presence=True)


def instruction_dict(data: bytes) -> dict:
    return as_dict(parse_instruction(data))
