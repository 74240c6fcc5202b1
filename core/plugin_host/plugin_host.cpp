// Discovery and loading of backend plugins (Boost.DLL), ABI and manifest checks, the registry, and the bridges
// a plugin's hooks use: the IR emitter and the host services.
#define BOOST_DLL_USE_STD_FS 1
#include "ww/plugin_host/plugin_host.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <boost/dll/shared_library.hpp>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

#include "manifest_validation.hpp"
#include "plugin_library.hpp"
#include "ww/ir/builder.hpp"
#include "ww/jit_cache/jit_cache.hpp"
#include "ww/runtime/tensor_map.hpp"

namespace ww::plugins {
namespace {

std::mutex g_mutex;

// The library file as a digest sees it: its size and modification time (and which file it is), as Python checks
// a .pyc against its source. Hashing its bytes cost a third of loading a backend (a 450 KB library through
// SHA-256); a rebuilt or replaced library has a new modification time, and the manifest text is hashed as it is.
std::string file_identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "unreadable:" + path;
  return std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec) + ":" + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

// --- the emitter a hook writes IR through ------------------------------------------------------------------------

struct EmitterContext {
  ir::Builder* builder;
  std::string error;
  std::vector<std::string> type_strings;
};

int em_op(void* ctx, const char* name, const ww_value* operands, size_t n, const char* const* result_types,
          size_t nr, const char* properties, ww_value* results) {
  auto* c = static_cast<EmitterContext*>(ctx);
  try {
    std::vector<std::string> types(result_types, result_types + nr);
    auto r = c->builder->op(name, std::span<const uint32_t>(operands, n), types, properties ? properties : "");
    std::copy(r.begin(), r.end(), results);
    return WW_OK;
  } catch (const std::exception& e) {
    c->error = e.what();
    return WW_ERROR;
  }
}

int em_inline_asm(void* ctx, const char* text, const char* constraints, const ww_value* operands, size_t n,
                  const char* const* result_types, size_t nr, int side_effects, ww_value* results) {
  auto* c = static_cast<EmitterContext*>(ctx);
  try {
    std::vector<std::string> types(result_types, result_types + nr);
    auto r = c->builder->inline_asm(text, constraints, std::span<const uint32_t>(operands, n), types, side_effects != 0);
    std::copy(r.begin(), r.end(), results);
    return WW_OK;
  } catch (const std::exception& e) {
    c->error = e.what();
    return WW_ERROR;
  }
}

int em_constant_int(void* ctx, int64_t v, const char* type, ww_value* result) {
  auto* c = static_cast<EmitterContext*>(ctx);
  try {
    *result = c->builder->constant_int(v, type);
    return WW_OK;
  } catch (const std::exception& e) {
    c->error = e.what();
    return WW_ERROR;
  }
}

const char* em_type_of(void* ctx, ww_value v) {
  auto* c = static_cast<EmitterContext*>(ctx);
  try {
    c->type_strings.push_back(c->builder->type_of(v));
    return c->type_strings.back().c_str();
  } catch (const std::exception& e) {
    c->error = e.what();
    return "";
  }
}

void em_error(void* ctx, const char* message) { static_cast<EmitterContext*>(ctx)->error = message ? message : "error"; }

// --- host services ----------------------------------------------------------------------------------------------

int hs_encode_tiled(void*, int data_type, uint32_t rank, uint64_t address, const uint64_t* dims,
                    const uint64_t* strides, const uint32_t* box, const uint32_t* elem_strides, int interleave,
                    int swizzle, int l2, int oob, void* out, char* error, size_t error_size) {
  try {
    namespace tm = runtime::tensor_map;
    std::vector<uint64_t> d(dims, dims + rank), s(strides, strides + (rank ? rank - 1 : 0));
    std::vector<uint32_t> b(box, box + rank), e(elem_strides, elem_strides + rank);
    runtime::TensorMap m = runtime::encode_tiled(static_cast<tm::DataType>(data_type), address, d, s, b, e,
                                                 static_cast<tm::Interleave>(interleave), static_cast<tm::Swizzle>(swizzle),
                                                 static_cast<tm::L2Promotion>(l2), static_cast<tm::OobFill>(oob));
    std::memcpy(out, &m, sizeof(m));
    return WW_OK;
  } catch (const std::exception& ex) {
    std::snprintf(error, error_size, "%s", ex.what());
    return WW_ERROR;
  }
}

}  // namespace

PluginHost& PluginHost::instance() {
  static PluginHost host;
  return host;
}

const Plugin* PluginHost::find(const std::string& name) const {
  for (auto& p : plugins_)
    if (p.name == name) return &p;
  return nullptr;
}

int PluginHost::load_directories(const std::vector<std::string>& dirs) {
  // Discovered first, so that a plugin's bases are found among the candidates wherever their files sort.
  const auto files = plugin_files(dirs);
  for (auto& f : files) discover_file(f);
  size_t before = plugins_.size();
  for (auto& f : files) load_file(f);
  return static_cast<int>(plugins_.size() - before);
}

bool PluginHost::load_file(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return load_guarded(path);
}

bool PluginHost::load_guarded(const std::string& path) {
  for (auto& p : plugins_)
    if (p.path == path) return false;
  for (auto& r : refusals_)
    if (r.path == path) return false;
  // Whatever goes wrong with one file (even an exception that is no std::exception, thrown by a plugin's code)
  // refuses that file; the others still load.
  try {
    return load_file_locked(path);
  } catch (const std::exception& e) {
    refusals_.push_back({path, std::string("loading failed: ") + e.what()});
  } catch (...) {
    refusals_.push_back({path, "loading failed with an exception that is not a std::exception"});
  }
  return false;
}

// Loads the bases a plugin's manifest names, each from the first discovered plugin of that name that loads; ""
// when all of them are loaded, else why the plugin cannot be.
std::string PluginHost::load_bases(const std::string& name, const std::vector<std::string>& bases) {
  loading_.push_back(name);
  struct Pop {
    std::vector<std::string>& stack;
    ~Pop() { stack.pop_back(); }
  } pop{loading_};
  for (auto& base : bases) {
    if (find(base)) continue;
    if (auto at = std::find(loading_.begin(), loading_.end(), base); at != loading_.end()) {
      std::string chain;
      for (auto it = at; it != loading_.end(); ++it) chain += "\"" + *it + "\" extends ";
      return "its bases form a cycle: " + chain + "\"" + base + "\"";
    }
    std::vector<std::string> paths = candidate_paths(base);
    if (paths.empty())
      return "it extends \"" + base + "\", which no discovered plugin provides (install it beside this one or "
             "add its directory to WARPWEAVE_PLUGIN_PATH)";
    for (auto& p : paths)
      if (load_guarded(p) || find(base)) break;
    if (!find(base)) {
      std::string why = "it does not load";
      for (auto& r : refusals_)
        if (r.path == paths.front()) why = r.reason;
      return "it extends \"" + base + "\", which was refused: " + why;
    }
  }
  return {};
}

// A target's code-generation settings: two plugins may share a target (one adds atoms to another's generation)
// only when they agree on these.
static std::string target_settings(const warpweave::manifest::Target& t) {
  return "compute capability " + std::to_string(t.compute_capability()) + (t.arch_specific() ? " arch-specific" : "") +
         ", llvm_cpu \"" + t.llvm_cpu() + "\", ptx_features \"" + t.ptx_features() + "\", jit_arch \"" +
         t.jit_arch() + "\"";
}

bool PluginHost::load_file_locked(const std::string& path) {
  auto refuse = [&](const std::string& reason) {
    refusals_.push_back({path, reason});
    return false;
  };
  std::string why;
  PluginLibrary opened = open_plugin_library(path, why);
  if (!opened.lib) return refuse(why);
  std::shared_ptr<boost::dll::shared_library> lib = opened.lib;
  const ww_plugin_v1* abi = opened.abi;
  std::string text(abi->manifest_text, abi->manifest_size);
  // One parse: validation, the JSON that Python reads and the ids all come from it (a large manifest, like a
  // backend's thousand generated wgmma atoms, takes tens of milliseconds to parse).
  warpweave::manifest::Manifest m;
  auto problems = parse_manifest(text, m);
  // Each family instance is checked when first selected, not a sample of every family here (validate_manifest).
  if (problems.empty()) problems = validate_manifest(m, /*sample_families=*/false);
  if (!problems.empty()) {
    std::string reason = "invalid manifest:";
    for (auto& p : problems) reason += "\n  " + p;
    return refuse(reason);
  }
  const std::string& name = m.name();
  if (!abi->name || name != abi->name)
    return refuse("the plugin calls itself \"" + std::string(abi->name ? abi->name : "") +
                  "\" but its manifest is named \"" + name + "\"");
  std::vector<std::string> bases(m.extends().begin(), m.extends().end());
  if (std::string why = load_bases(name, bases); !why.empty()) return refuse(why);
  std::vector<std::string> ids;
  for (auto& a : m.atoms()) ids.push_back(a.id());
  for (auto& a : m.primitives()) ids.push_back(a.id());
  for (auto& f : m.families()) ids.push_back(f.id());
  // A target name means one set of code-generation settings: a plugin that redefines a loaded target differently
  // is refused (the plugins installed with warpweave load first, then WARPWEAVE_PLUGIN_PATH in order), rather
  // than letting the load order pick the code silently.
  for (auto& t : m.targets()) {
    auto it = targets_.find(t.name());
    if (it != targets_.end() && it->second.second != target_settings(t))
      return refuse("it defines the target " + t.name() + " with " + target_settings(t) + ", but the plugin \"" +
                    it->second.first + "\" already loaded defines it with " + it->second.second +
                    "; a plugin may add atoms to a loaded target only with the same settings");
  }
  // A Python name and a target, with the entry that offers it there (the first in manifest order).
  std::map<std::pair<std::string, std::string>, std::string> offers;
  auto offer = [&](const warpweave::manifest::Instruction& ins, const std::string& what) {
    if (ins.python_name().empty()) return;
    for (auto& t : ins.targets()) offers.emplace(std::make_pair(ins.python_name(), t), what);
  };
  for (auto& a : m.atoms()) offer(a, "atom " + a.id());
  for (auto& a : m.primitives()) offer(a, "primitive " + a.id());
  for (auto& f : m.families()) offer(f.template_(), "family " + f.id());
  // Ids must be unique across plugins: the registry resolves atoms by id.
  for (auto& other : plugins_) {
    if (other.name == name) return refuse("a plugin named \"" + name + "\" is already loaded from " + other.path);
    std::set<std::string> taken(other.ids.begin(), other.ids.end());
    for (auto& id : ids)
      if (taken.count(id)) return refuse("id " + id + " clashes with the plugin \"" + other.name + "\"");
    // A Python name is one class or function, whose selection picks among the entries usable on the target: two
    // plugins offering it on one target would leave the choice between them to the load order. (Generations may
    // share a name on their own targets: Hopper's and Blackwell's TMA ops.)
    for (auto& [key, what] : offers)
      if (other.python_offers.count(key))
        return refuse("its " + what + " offers the Python name " + key.first + " for " + key.second +
                      ", which the plugin \"" + other.name + "\" already offers there; a Python name on a target "
                      "belongs to one plugin");
  }
  Plugin p;
  p.name = name;
  p.version = m.version();
  p.path = path;
  p.digest = jit_cache::key_of({text, file_identity(path)});
  p.manifest_text = std::move(text);
  p.manifest_binary = m.SerializeAsString();
  p.ids = std::move(ids);
  for (auto& [key, what] : offers) p.python_offers.insert(key);
  p.extends = std::move(bases);
  p.abi = abi;
  if (m.families_size()) p.families = make_family_set(m);  // validated above
  for (auto& t : m.targets()) targets_.emplace(t.name(), std::make_pair(name, target_settings(t)));
  plugins_.push_back(std::move(p));
  libraries_.push_back(lib);
  return true;
}

std::vector<std::string> PluginHost::validate_manifest_text(const std::string& text, std::string* json, std::string* name) {
  warpweave::manifest::Manifest m;
  auto problems = parse_manifest(text, m);
  if (!problems.empty()) return problems;
  problems = validate_manifest(m);
  if (json) *json = manifest_json(m);
  if (name) *name = m.name();
  return problems;
}

std::vector<uint32_t> PluginHost::lower(const std::string& plugin, const std::string& hook, const std::string& id,
                                        ir::Builder& builder, const std::vector<uint32_t>& operands,
                                        const std::vector<ww_attr>& attrs, size_t max_results) {
  const Plugin* p = find(plugin);
  if (!p) throw PluginError("no plugin named \"" + plugin + "\" is loaded");
  if (!p->abi->lower) throw PluginError("the plugin \"" + plugin + "\" has no lowering hooks");
  EmitterContext ctx{&builder, {}, {}};
  ww_emitter_v1 em{&ctx, em_op, em_inline_asm, em_constant_int, em_type_of, em_error};
  std::vector<uint32_t> results(max_results);
  size_t n = 0;
  int rc = p->abi->lower(hook.c_str(), id.c_str(), &em, operands.data(), operands.size(), attrs.data(), attrs.size(),
                         results.data(), max_results, &n);
  if (rc == WW_UNKNOWN_HOOK) throw PluginError("the plugin \"" + plugin + "\" has no lowering hook \"" + hook + "\"");
  if (rc != WW_OK)
    throw PluginError(plugin + " hook " + hook + " for " + id + ": " + (ctx.error.empty() ? "failed" : ctx.error));
  results.resize(std::min(n, max_results));
  return results;
}

std::optional<std::vector<uint8_t>> PluginHost::host_call_in(const Plugin& p, const std::string& name,
                                                             const std::vector<ww_attr>& attrs, size_t out_size) {
  if (p.abi->host_call) {
    ww_host_services_v1 services{nullptr, hs_encode_tiled};
    std::vector<uint8_t> out(out_size);
    char error[1024] = {0};
    int rc = p.abi->host_call(name.c_str(), &services, attrs.data(), attrs.size(), out.data(), out.size(), error,
                              sizeof(error));
    if (rc == WW_OK) return out;
    if (rc != WW_UNKNOWN_HOOK) throw PluginError(p.name + " host hook " + name + ": " + (error[0] ? error : "failed"));
  }
  // A base is loaded before the plugins that extend it, and never unloaded.
  for (auto& base : p.extends)
    if (const Plugin* b = find(base))
      if (auto out = host_call_in(*b, name, attrs, out_size)) return out;
  return std::nullopt;
}

std::vector<uint8_t> PluginHost::host_call(const std::string& plugin, const std::string& name,
                                           const std::vector<ww_attr>& attrs, size_t out_size) {
  const Plugin* p = find(plugin);
  if (!p) throw PluginError("no plugin named \"" + plugin + "\" is loaded");
  if (auto out = host_call_in(*p, name, attrs, out_size)) return *out;
  if (!p->abi->host_call && p->extends.empty()) throw PluginError("the plugin \"" + plugin + "\" has no host hooks");
  std::string bases;
  for (auto& b : p->extends) bases += (bases.empty() ? " (nor has its base \"" : ", nor \"") + b + "\"";
  if (!bases.empty()) bases += ")";
  throw PluginError("the plugin \"" + plugin + "\" has no host hook \"" + name + "\"" + bases);
}

}  // namespace ww::plugins
