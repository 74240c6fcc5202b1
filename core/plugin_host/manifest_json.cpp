// A manifest as JSON, in protobuf's JSON mapping (proto field names, enum values by name, 64-bit integers as
// strings, maps as objects, every scalar field printed even at its default), which Python reads at each start.
//
// A small reflection walk rather than protobuf's JsonPrinter: that one re-serialises the message to binary and
// converts through a type resolver, which cost ~70 ms per large manifest (thousands of atoms), most of a warm
// compile. tests/python/test_plugins.py checks that both give the same JSON for every in-tree manifest.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/reflection.h>

#include <cstdio>
#include <string>

#include "manifest_validation.hpp"

namespace ww::plugins {
namespace {

namespace pb = google::protobuf;

void put_string(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void put_message(std::string& out, const pb::Message& m);

// One value of field f: element `i` of a repeated field, or the singular value when i < 0.
void put_value(std::string& out, const pb::Message& m, const pb::FieldDescriptor* f, int i) {
  const pb::Reflection* r = m.GetReflection();
  const bool rep = i >= 0;
  switch (f->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_INT32:
      out += std::to_string(rep ? r->GetRepeatedInt32(m, f, i) : r->GetInt32(m, f));
      break;
    case pb::FieldDescriptor::CPPTYPE_UINT32:
      out += std::to_string(rep ? r->GetRepeatedUInt32(m, f, i) : r->GetUInt32(m, f));
      break;
    case pb::FieldDescriptor::CPPTYPE_INT64:
      out += '"' + std::to_string(rep ? r->GetRepeatedInt64(m, f, i) : r->GetInt64(m, f)) + '"';
      break;
    case pb::FieldDescriptor::CPPTYPE_UINT64:
      out += '"' + std::to_string(rep ? r->GetRepeatedUInt64(m, f, i) : r->GetUInt64(m, f)) + '"';
      break;
    case pb::FieldDescriptor::CPPTYPE_BOOL:
      out += (rep ? r->GetRepeatedBool(m, f, i) : r->GetBool(m, f)) ? "true" : "false";
      break;
    case pb::FieldDescriptor::CPPTYPE_ENUM: {
      const int v = rep ? r->GetRepeatedEnumValue(m, f, i) : r->GetEnumValue(m, f);
      const pb::EnumValueDescriptor* e = f->enum_type()->FindValueByNumber(v);
      if (e) {
        put_string(out, e->name());
      } else {
        out += std::to_string(v);
      }
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_STRING:
      put_string(out, rep ? r->GetRepeatedString(m, f, i) : r->GetString(m, f));
      break;
    case pb::FieldDescriptor::CPPTYPE_MESSAGE:
      put_message(out, rep ? r->GetRepeatedMessage(m, f, i) : r->GetMessage(m, f));
      break;
    default:  // floating point: the manifest has none
      out += "null";
  }
}

void put_message(std::string& out, const pb::Message& m) {
  const pb::Descriptor* d = m.GetDescriptor();
  const pb::Reflection* r = m.GetReflection();
  out += '{';
  bool first = true;
  for (int k = 0; k < d->field_count(); ++k) {
    const pb::FieldDescriptor* f = d->field(k);
    if (!f->is_repeated() && f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE && !r->HasField(m, f)) continue;
    if (!first) out += ',';
    first = false;
    put_string(out, f->name());
    out += ':';
    if (f->is_map()) {
      // Map entries are messages (key = field 1, value = field 2); JSON keys are strings.
      out += '{';
      const int n = r->FieldSize(m, f);
      for (int i = 0; i < n; ++i) {
        const pb::Message& entry = r->GetRepeatedMessage(m, f, i);
        const pb::FieldDescriptor* key = f->message_type()->map_key();
        const pb::FieldDescriptor* value = f->message_type()->map_value();
        if (i) out += ',';
        if (key->cpp_type() == pb::FieldDescriptor::CPPTYPE_STRING) {
          put_value(out, entry, key, -1);
        } else {
          std::string k;
          put_value(k, entry, key, -1);
          put_string(out, k[0] == '"' ? k.substr(1, k.size() - 2) : k);
        }
        out += ':';
        put_value(out, entry, value, -1);
      }
      out += '}';
    } else if (f->is_repeated()) {
      out += '[';
      const int n = r->FieldSize(m, f);
      for (int i = 0; i < n; ++i) {
        if (i) out += ',';
        put_value(out, m, f, i);
      }
      out += ']';
    } else {
      put_value(out, m, f, -1);
    }
  }
  out += '}';
}

}  // namespace

std::string manifest_json(const warpweave::manifest::Manifest& m) {
  std::string out;
  out.reserve(1 << 20);
  put_message(out, m);
  return out;
}

std::string message_json(const google::protobuf::Message& m) {
  std::string out;
  put_message(out, m);
  return out;
}

}  // namespace ww::plugins
