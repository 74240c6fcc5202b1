// Bindings of the plugin host: loading, the loaded plugins and their manifests (JSON), refusals, hooks.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "ww/ir/builder.hpp"
#include "ww/plugin_host/plugin_host.hpp"

namespace nb = nanobind;
namespace wp = ww::plugins;

namespace {

// Attributes from a Python dict {name: int | str}; the strings live in `keep`.
std::vector<ww_attr> to_attrs(const nb::dict& d, std::vector<std::string>& keep) {
  keep.reserve(2 * d.size());
  std::vector<ww_attr> out;
  for (auto [k, v] : d) {
    keep.push_back(nb::cast<std::string>(nb::str(k)));
    ww_attr a{nullptr, 0, nullptr};
    if (PyLong_Check(v.ptr())) {
      a.int_value = nb::cast<int64_t>(v);
    } else {
      keep.push_back(nb::cast<std::string>(nb::str(v)));
      a.str_value = keep.back().c_str();
    }
    out.push_back(a);
  }
  // Names: the keys were pushed in order, each followed by its string value when it has one.
  size_t pos = 0, i = 0;
  for (auto [k, v] : d) {
    out[i].name = keep[pos].c_str();
    pos += PyLong_Check(v.ptr()) ? 1 : 2;
    ++i;
  }
  return out;
}

}  // namespace

void bind_manifest_dict(nb::module_& m);  // manifest_dict.cpp

void bind_plugins(nb::module_& m) {
  bind_manifest_dict(m);
  nb::exception<wp::PluginError>(m, "PluginError", PyExc_RuntimeError);
  m.def("load_plugins", [](const std::vector<std::string>& dirs) { return wp::PluginHost::instance().load_directories(dirs); },
        "Loads the plugins in these directories (once each); returns how many were loaded now.");
  m.def("discover_plugins", [](const std::vector<std::string>& dirs) {
    nb::list out;
    for (auto& c : wp::PluginHost::instance().discover_directories(dirs)) {
      nb::list targets;
      for (auto& t : c.targets) {
        nb::dict d;
        d["name"] = t.name;
        d["compute_capability"] = t.compute_capability;
        d["arch_specific"] = t.arch_specific;
        d["llvm_cpu"] = t.llvm_cpu;
        d["ptx_features"] = t.ptx_features;
        d["jit_arch"] = t.jit_arch;
        d["also_serves"] = t.also_serves;
        targets.append(d);
      }
      nb::dict d;
      d["path"] = c.path;
      d["name"] = c.name;
      d["version"] = c.version;
      d["targets"] = targets;
      d["module_map"] = c.module_map;
      d["extends"] = c.extends;
      out.append(d);
    }
    return out;
  }, "The plugins in these directories, each with its name, version and targets, read without loading its atoms.");
  m.def("load_plugin_file", [](const std::string& path) { return wp::PluginHost::instance().load_file(path); });
  m.def("plugins", []() {
    nb::list out;
    for (auto& p : wp::PluginHost::instance().plugins()) {
      nb::dict d;
      d["name"] = p.name;
      d["version"] = p.version;
      d["path"] = p.path;
      d["digest"] = p.digest;
      d["manifest_binary"] = nb::bytes(p.manifest_binary.data(), p.manifest_binary.size());
      out.append(d);
    }
    return out;
  });
  m.def("plugin_manifest_text", [](const std::string& name) {
    for (auto& p : wp::PluginHost::instance().plugins())
      if (p.name == name) return p.manifest_text;
    throw wp::PluginError("no loaded plugin is named \"" + name + "\"");
  }, "The manifest a loaded plugin carries, as embedded (protobuf text format).");
  m.def("plugin_refusals", []() {
    nb::list out;
    for (auto& r : wp::PluginHost::instance().refusals()) out.append(nb::make_tuple(r.path, r.reason));
    return out;
  });
  m.def("validate_manifest", [](const std::string& text) { return wp::PluginHost::validate_manifest_text(text); },
        "The problems of a manifest in protobuf text format (empty when valid).");
  m.def("manifest_to_json", [](const std::string& text) {
    std::string json;
    auto problems = wp::PluginHost::validate_manifest_text(text, &json);
    return nb::make_tuple(json, problems);
  });
  m.def("plugin_lower", [](const std::string& plugin, const std::string& hook, const std::string& id,
                           ww::ir::Builder& b, const std::vector<uint32_t>& operands, const nb::dict& attrs,
                           size_t max_results) {
    std::vector<std::string> keep;
    auto a = to_attrs(attrs, keep);
    return wp::PluginHost::instance().lower(plugin, hook, id, b, operands, a, max_results);
  });
  m.def("plugin_host_call", [](const std::string& plugin, const std::string& name, const nb::dict& attrs,
                               size_t out_size) {
    std::vector<std::string> keep;
    auto a = to_attrs(attrs, keep);
    auto out = wp::PluginHost::instance().host_call(plugin, name, a, out_size);
    return nb::bytes(reinterpret_cast<const char*>(out.data()), out.size());
  });
  // The typed view's schema and manifests as bytes (warpweave/_dsl/registry/manifest_view.py parses them).
  m.def("manifest_schema", []() {
    std::string s = wp::PluginHost::manifest_schema();
    return nb::bytes(s.data(), s.size());
  }, "manifest.proto as a serialized FileDescriptorProto.");
  m.def("manifest_to_binary", [](const std::string& text) {
    std::string s = wp::PluginHost::manifest_binary_of_text(text);
    return nb::bytes(s.data(), s.size());
  }, "A manifest in protobuf text format, serialized (empty when it does not parse).");
  // Atom families: instances expanded on request (memoised in the core), each as (plugin, family, instruction JSON).
  auto expansion = [](const wp::Expansion& e) {
    return nb::make_tuple(e.plugin, e.family, nb::bytes(e.binary.data(), e.binary.size()));
  };
  m.def("expand_atom", [expansion](const std::string& python_name, const std::map<std::string, std::string>& params) {
    std::vector<std::string> problems;
    nb::list found;
    for (auto& e : wp::PluginHost::instance().expand_python(python_name, params, problems)) found.append(expansion(e));
    return nb::make_tuple(found, problems);
  }, "The family instances named python_name with these Python parameters (canonical spellings), and, when there "
     "is none, one sentence per family quoting the rule the parameters break.");
  m.def("expand_atom_id", [expansion](const std::string& id) -> nb::object {
    auto e = wp::PluginHost::instance().expand_id(id);
    return e ? nb::object(expansion(*e)) : nb::none();
  });
  m.def("family_instances", [expansion](const std::string& plugin, const std::string& family, uint64_t seed,
                                        size_t sample) {
    nb::list out;
    for (auto& e : wp::PluginHost::instance().family_instances(plugin, family, seed, sample)) out.append(expansion(e));
    return out;
  }, "A loaded family's legal corners, then a seeded sample of further instances.");
  m.def("family_instances_of_text", [expansion](const std::string& text, uint64_t seed, size_t sample) {
    nb::list out;
    for (auto& e : wp::PluginHost::family_instances_of_text(text, seed, sample)) out.append(expansion(e));
    return out;
  });
  m.def("validate_family_instances", [](const std::string& plugin, uint64_t seed, size_t sample) {
    return wp::PluginHost::instance().validate_family_instances(plugin, seed, sample);
  }, "The problems of a loaded plugin's family instances (the corners and seeded sample family_instances gives).");
  m.def("validate_family_instances_of_text", [](const std::string& text, uint64_t seed, size_t sample) {
    return wp::PluginHost::validate_family_instances_of_text(text, seed, sample);
  });
}
