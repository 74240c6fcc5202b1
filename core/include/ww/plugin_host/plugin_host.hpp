#pragma once
// The plugin host: finds backend plugins, loads them with Boost.DLL, checks their ABI version and manifest, and
// keeps the registry of targets, atoms and primitives they offer.
//
// A plugin that cannot be used (wrong ABI version, no entry point, a manifest that does not parse or validate,
// an id that clashes with one already registered) is refused with a reason naming the file; the others load.
// No protobuf or Boost type appears here: manifests cross as JSON text (protobuf's JSON mapping of manifest.proto).
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "warpweave/plugin_abi.h"

namespace ww::ir {
class Builder;
}

namespace ww::plugins {

class FamilySet;  // atom_family.hpp: a manifest's atom families, expanded on request

struct Plugin {
  std::string name;
  std::string version;
  std::string path;
  std::string digest;          // SHA-256 of the manifest and the library file's identity (size, modification
                               // time, device, inode): part of JIT cache keys
  std::string manifest_text;   // as embedded (protobuf text format)
  std::string manifest_binary; // the validated manifest, serialized (what Python's typed view parses)
  std::vector<std::string> ids;  // of its atoms and primitives (ids are unique across plugins)
  // (Python name, target) of its atoms, primitives and families: one plugin's per target.
  std::set<std::pair<std::string, std::string>> python_offers;
  std::vector<std::string> extends;  // the backends it builds on (manifest.proto Manifest.extends), loaded first
  const ww_plugin_v1* abi = nullptr;
  std::shared_ptr<const FamilySet> families;  // null when the manifest has none
};

// One instance of an atom family: a serialized Instruction (manifest.proto).
struct Expansion {
  std::string plugin;
  std::string family;
  std::string binary;
};

// A target as discovery reads it (manifest.proto's Target).
struct TargetInfo {
  std::string name;
  uint32_t compute_capability = 0;
  bool arch_specific = false;
  std::string llvm_cpu, ptx_features, jit_arch;
  std::vector<uint32_t> also_serves;
};

// A plugin found but not loaded: what discovery reads without parsing its manifest's atoms.
struct Candidate {
  std::string path;
  std::string name;
  std::string version;
  std::vector<TargetInfo> targets;
  std::map<std::string, std::string> module_map;  // manifest.proto PythonPackage.module_map
  std::vector<std::string> extends;               // manifest.proto Manifest.extends
};

struct Refusal {
  std::string path;
  std::string reason;
};

class PluginError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class PluginHost {
 public:
  static PluginHost& instance();

  // Loads every plugin library (*.so) in these directories that is not loaded yet, in sorted order per
  // directory (a plugin's bases before it). Returns the number of plugins loaded by this call, bases included.
  int load_directories(const std::vector<std::string>& dirs);
  // Loads one library file, and first the plugins its manifest extends (found among the discovered ones); false
  // (and a refusal) if it cannot be used, a base among the reasons: missing, refused, or extending it back.
  bool load_file(const std::string& path);

  // Discovery (plugin_discovery.cpp): the name, version and targets of each plugin library in these directories,
  // read without parsing the atoms of its manifest, so that only the plugins a target needs are loaded. A library
  // that does not load or speaks another ABI version is refused here already.
  std::vector<Candidate> discover_directories(const std::vector<std::string>& dirs);
  std::optional<Candidate> discover_file(const std::string& path);

  const std::vector<Plugin>& plugins() const { return plugins_; }
  const std::vector<Refusal>& refusals() const { return refusals_; }
  const Plugin* find(const std::string& name) const;

  // Lowers an instruction through its plugin's hook, emitting into `builder`. Throws PluginError with the
  // plugin's message when the hook fails.
  std::vector<uint32_t> lower(const std::string& plugin, const std::string& hook, const std::string& id,
                              ir::Builder& builder, const std::vector<uint32_t>& operands,
                              const std::vector<ww_attr>& attrs, size_t max_results);
  // Runs a host hook of the plugin, or else of the first of its bases (depth first, in the order its manifest
  // names them) that has it; returns the bytes it wrote.
  std::vector<uint8_t> host_call(const std::string& plugin, const std::string& name, const std::vector<ww_attr>& attrs,
                                 size_t out_size);

  // Instances of the loaded families whose Python name is `python_name` and whose Python parameters (canonical
  // spellings) are `params`, each family's python_defaults filling the names left out. When none fits, `problems`
  // gets one sentence per family of that name that has the parameters' form, quoting the rule the values break,
  // e.g. `warpgroup.MmaF16BF16Op: shape_mnk (64,12,16) breaks "N is a multiple of 8 from 8 to 256"`.
  // Expansions are memoised per request.
  std::vector<Expansion> expand_python(const std::string& python_name, const std::map<std::string, std::string>& params,
                                       std::vector<std::string>& problems) const;
  // The instance of a loaded family with this id.
  std::optional<Expansion> expand_id(const std::string& id) const;
  // Conformance: a family's legal corners, then a seeded sample of `sample` further instances (all the others when
  // there are no more than that). Throws PluginError for an unknown plugin or family.
  std::vector<Expansion> family_instances(const std::string& plugin, const std::string& family, uint64_t seed,
                                          size_t sample) const;
  // Conformance's manifest tier: every instance family_instances gives, checked as validate_manifest_text checks
  // the few it samples (as a plain entry, ids unique, found again by selection); one message per problem. Loading
  // checks a plugin's family descriptions only, so that a broken instance shows here and not at first selection.
  // Throws PluginError for an unknown plugin.
  std::vector<std::string> validate_family_instances(const std::string& plugin, uint64_t seed, size_t sample) const;
  static std::vector<std::string> validate_family_instances_of_text(const std::string& text, uint64_t seed,
                                                                    size_t sample);
  // manifest.proto itself, as a serialized FileDescriptorProto: Python builds its typed view of manifests from it.
  static std::string manifest_schema();
  // A manifest given as text, serialized ("" when it does not parse).
  static std::string manifest_binary_of_text(const std::string& text);
  // The same for a manifest given as text (the conformance suite's manifest files): every family's instances.
  static std::vector<Expansion> family_instances_of_text(const std::string& text, uint64_t seed, size_t sample);

  // Validates a manifest given as text (the manifest tier of conformance, and plugin loading): an empty list
  // when it is valid, else one message per problem ("line:col: ..." for parse errors).
  static std::vector<std::string> validate_manifest_text(const std::string& text, std::string* json = nullptr,
                                                         std::string* name = nullptr);

 private:
  PluginHost() = default;
  bool load_file_locked(const std::string& path);
  bool load_guarded(const std::string& path);
  std::vector<std::string> candidate_paths(const std::string& name) const;  // of the discovered plugins of a name
  std::string load_bases(const std::string& name, const std::vector<std::string>& bases);
  std::optional<std::vector<uint8_t>> host_call_in(const Plugin& p, const std::string& name,
                                                  const std::vector<ww_attr>& attrs, size_t out_size);
  std::vector<Plugin> plugins_;
  std::map<std::string, std::pair<std::string, std::string>> targets_;  // target -> (plugin, its settings)
  std::vector<Refusal> refusals_;
  std::vector<Candidate> candidates_;  // discovered, loaded or not
  std::vector<std::string> loading_;   // the plugins whose bases are being loaded, outermost first
  std::vector<std::shared_ptr<void>> libraries_;  // keeps loaded libraries alive
};

}  // namespace ww::plugins
