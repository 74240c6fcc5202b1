// Manifests (and expanded atom-family instances) as Python dicts, straight from their protobuf binary: the mapping
// the DSL's instruction code indexes, built by walking the message with protobuf's reflection. Python then needs
// neither protobuf's Python runtime (~20 ms to import, on every process's first compile) nor a second parse.
//
// The mapping is protobuf's JSON mapping as json_format.MessageToDict(preserving_proto_field_name=True,
// always_print_fields_with_no_presence=True) gives it (warpweave/_dsl/registry/manifest_view.py's as_dict is the Python
// form, and tests/python/test_atom_families.py compares the three): proto field names; every scalar and repeated
// field present, also at its default; unset sub-messages left out; enum values by name; 64-bit integers as
// decimal strings; map keys as strings.
#include <memory>
#include <string>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

namespace nb = nanobind;
namespace pb = google::protobuf;

namespace {

constexpr const char* kPackage = "warpweave.manifest.";

nb::object convert(const pb::Message& msg);

nb::object enum_value(const pb::EnumDescriptor* type, int number) {
  const pb::EnumValueDescriptor* v = type->FindValueByNumber(number);
  if (v) return nb::str(v->name().data(), v->name().size());
  return nb::int_(number);  // a value this schema does not name: its number, as the JSON mapping gives it
}

nb::object map_key(const pb::Message& entry, const pb::FieldDescriptor* key) {
  const pb::Reflection* r = entry.GetReflection();
  switch (key->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_STRING: {
      std::string s = r->GetString(entry, key);
      return nb::str(s.data(), s.size());
    }
    case pb::FieldDescriptor::CPPTYPE_INT32: return nb::str(std::to_string(r->GetInt32(entry, key)).c_str());
    case pb::FieldDescriptor::CPPTYPE_INT64: return nb::str(std::to_string(r->GetInt64(entry, key)).c_str());
    case pb::FieldDescriptor::CPPTYPE_UINT32: return nb::str(std::to_string(r->GetUInt32(entry, key)).c_str());
    case pb::FieldDescriptor::CPPTYPE_UINT64: return nb::str(std::to_string(r->GetUInt64(entry, key)).c_str());
    case pb::FieldDescriptor::CPPTYPE_BOOL: return nb::str(r->GetBool(entry, key) ? "True" : "False");
    default: throw std::runtime_error("manifest map with an unsupported key type: " + std::string(key->full_name()));
  }
}

// One value of field f: the single value, or element i of a repeated field.
nb::object value(const pb::Message& msg, const pb::FieldDescriptor* f, int i) {
  const pb::Reflection* r = msg.GetReflection();
  bool rep = f->is_repeated();
  switch (f->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_INT32: return nb::int_(rep ? r->GetRepeatedInt32(msg, f, i) : r->GetInt32(msg, f));
    case pb::FieldDescriptor::CPPTYPE_UINT32:
      return nb::int_(rep ? r->GetRepeatedUInt32(msg, f, i) : r->GetUInt32(msg, f));
    case pb::FieldDescriptor::CPPTYPE_INT64:
      return nb::str(std::to_string(rep ? r->GetRepeatedInt64(msg, f, i) : r->GetInt64(msg, f)).c_str());
    case pb::FieldDescriptor::CPPTYPE_UINT64:
      return nb::str(std::to_string(rep ? r->GetRepeatedUInt64(msg, f, i) : r->GetUInt64(msg, f)).c_str());
    case pb::FieldDescriptor::CPPTYPE_DOUBLE:
      return nb::float_(rep ? r->GetRepeatedDouble(msg, f, i) : r->GetDouble(msg, f));
    case pb::FieldDescriptor::CPPTYPE_FLOAT:
      return nb::float_(static_cast<double>(rep ? r->GetRepeatedFloat(msg, f, i) : r->GetFloat(msg, f)));
    case pb::FieldDescriptor::CPPTYPE_BOOL: return nb::bool_(rep ? r->GetRepeatedBool(msg, f, i) : r->GetBool(msg, f));
    case pb::FieldDescriptor::CPPTYPE_ENUM:
      return enum_value(f->enum_type(), rep ? r->GetRepeatedEnumValue(msg, f, i) : r->GetEnumValue(msg, f));
    case pb::FieldDescriptor::CPPTYPE_STRING: {
      std::string s = rep ? r->GetRepeatedString(msg, f, i) : r->GetString(msg, f);
      if (f->type() == pb::FieldDescriptor::TYPE_BYTES) return nb::bytes(s.data(), s.size());
      return nb::str(s.data(), s.size());
    }
    case pb::FieldDescriptor::CPPTYPE_MESSAGE:
      return convert(rep ? r->GetRepeatedMessage(msg, f, i) : r->GetMessage(msg, f));
  }
  throw std::runtime_error("manifest field of an unknown type: " + std::string(f->full_name()));
}

nb::object convert(const pb::Message& msg) {
  const pb::Descriptor* d = msg.GetDescriptor();
  const pb::Reflection* r = msg.GetReflection();
  nb::dict out;
  for (int k = 0; k < d->field_count(); ++k) {
    const pb::FieldDescriptor* f = d->field(k);
    nb::str name(f->name().data(), f->name().size());
    if (f->is_map()) {
      nb::dict m;
      const pb::FieldDescriptor* key = f->message_type()->map_key();
      const pb::FieldDescriptor* val = f->message_type()->map_value();
      for (int i = 0, n = r->FieldSize(msg, f); i < n; ++i) {
        const pb::Message& entry = r->GetRepeatedMessage(msg, f, i);
        m[map_key(entry, key)] = value(entry, val, -1);
      }
      out[name] = m;
    } else if (f->is_repeated()) {
      int n = r->FieldSize(msg, f);
      nb::list l;
      for (int i = 0; i < n; ++i) l.append(value(msg, f, i));
      out[name] = l;
    } else if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
      if (r->HasField(msg, f)) out[name] = value(msg, f, -1);
    } else {
      out[name] = value(msg, f, -1);
    }
  }
  return out;
}

}  // namespace

void bind_manifest_dict(nb::module_& m) {
  m.def("manifest_dict", [](nb::bytes data, const std::string& message) {
    const pb::Descriptor* d = pb::DescriptorPool::generated_pool()->FindMessageTypeByName(kPackage + message);
    if (!d) throw nb::value_error(("manifest.proto has no message " + message).c_str());
    std::unique_ptr<pb::Message> msg(pb::MessageFactory::generated_factory()->GetPrototype(d)->New());
    if (!msg->ParseFromArray(data.c_str(), static_cast<int>(data.size())))
      throw nb::value_error(("not a serialized warpweave.manifest." + message).c_str());
    return convert(*msg);
  }, nb::arg("data"), nb::arg("message") = "Manifest",
     "A serialized manifest.proto message (Manifest by default, or e.g. Instruction) as a dict in protobuf's JSON "
     "mapping (proto field names, every scalar present, enums by name, 64-bit integers as strings).");
}
