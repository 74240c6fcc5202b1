// The plugin host's side of atom families: selection across the loaded plugins, and the instances conformance
// enumerates. The families themselves are in atom_family.cpp.
#include <google/protobuf/descriptor.pb.h>

#include "atom_family.hpp"
#include "manifest_validation.hpp"
#include "ww/plugin_host/plugin_host.hpp"

namespace ww::plugins {

std::string PluginHost::manifest_schema() {
  google::protobuf::FileDescriptorProto fd;
  warpweave::manifest::Manifest::descriptor()->file()->CopyTo(&fd);
  return fd.SerializeAsString();
}

std::string PluginHost::manifest_binary_of_text(const std::string& text) {
  warpweave::manifest::Manifest m;
  if (!parse_manifest(text, m).empty()) return {};
  return m.SerializeAsString();
}

std::shared_ptr<const FamilySet> make_family_set(const warpweave::manifest::Manifest& m) {
  return std::make_shared<const FamilySet>(m);
}

std::vector<Expansion> PluginHost::expand_python(const std::string& python_name,
                                                 const std::map<std::string, std::string>& params,
                                                 std::vector<std::string>& problems) const {
  std::vector<Expansion> out;
  try {
    for (auto& p : plugins_) {
      if (!p.families) continue;
      for (auto& f : p.families->select_python(python_name, params, problems))
        out.push_back({p.name, f.family->id(), f.binary});
    }
  } catch (const FamilyError& e) {
    throw PluginError(python_name + ": " + e.what());
  }
  return out;
}

std::optional<Expansion> PluginHost::expand_id(const std::string& id) const {
  for (auto& p : plugins_) {
    if (!p.families || id.rfind(p.name + ".", 0) != 0) continue;
    try {
      if (auto f = p.families->select_id(id)) return Expansion{p.name, f->family->id(), f->binary};
    } catch (const FamilyError& e) {
      throw PluginError(id + ": " + e.what());
    }
  }
  return std::nullopt;
}

namespace {

std::vector<Expansion> instances_of(const FamilySet& set, const AtomFamily& f, uint64_t seed, size_t sample) {
  std::vector<Expansion> out;
  std::vector<Assignment> all = f.corners(), more = f.sample(seed, sample);
  all.insert(all.end(), more.begin(), more.end());
  for (auto& a : all) {
    try {
      out.push_back({set.backend(), f.id(), set.instance_binary(f, a)});
    } catch (const FamilyError&) {
      // An instance that does not expand is left out; validate_family_instances reports it, and the family's
      // other instances are still tested.
    }
  }
  return out;
}

}  // namespace

std::vector<Expansion> PluginHost::family_instances(const std::string& plugin, const std::string& family,
                                                    uint64_t seed, size_t sample) const {
  const Plugin* p = find(plugin);
  if (!p) throw PluginError("no plugin named \"" + plugin + "\" is loaded");
  const AtomFamily* f = p->families ? p->families->find(family) : nullptr;
  if (!f) throw PluginError("the plugin \"" + plugin + "\" has no family \"" + family + "\"");
  try {
    return instances_of(*p->families, *f, seed, sample);
  } catch (const FamilyError& e) {
    throw PluginError(family + ": " + e.what());
  }
}

std::vector<std::string> PluginHost::validate_family_instances(const std::string& plugin, uint64_t seed,
                                                                size_t sample) const {
  const Plugin* p = find(plugin);
  if (!p) throw PluginError("no plugin named \"" + plugin + "\" is loaded");
  warpweave::manifest::Manifest m;
  if (!m.ParseFromString(p->manifest_binary)) throw PluginError("the manifest of \"" + plugin + "\" does not parse");
  return ww::plugins::validate_family_instances(m, seed, sample);
}

std::vector<std::string> PluginHost::validate_family_instances_of_text(const std::string& text, uint64_t seed,
                                                                       size_t sample) {
  warpweave::manifest::Manifest m;
  if (!parse_manifest(text, m).empty()) return {};  // validate_manifest_text says why
  return ww::plugins::validate_family_instances(m, seed, sample);
}

std::vector<Expansion> PluginHost::family_instances_of_text(const std::string& text, uint64_t seed, size_t sample) {
  warpweave::manifest::Manifest m;
  if (!parse_manifest(text, m).empty()) return {};
  std::vector<Expansion> out;
  try {
    FamilySet set(m);
    for (auto& f : set.families()) {
      auto more = instances_of(set, f, seed, sample);
      out.insert(out.end(), more.begin(), more.end());
    }
  } catch (const FamilyError&) {
    // validate_manifest reports the broken family; the instances of the families before it stand.
  }
  return out;
}

}  // namespace ww::plugins
