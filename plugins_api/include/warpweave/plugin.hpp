// Thin C++ helpers over the plugin ABI (warpweave/plugin_abi.h) for backend authors.
//
//   #include <warpweave/plugin.hpp>
//   static int lower(...) { ... }                 // or warpweave::plugin::no_lowering_hooks
//   WARPWEAVE_DEFINE_PLUGIN("mybackend", lower, nullptr)   // the manifest is the one CMake embeds
//
// warpweave/plugin_attrs.hpp reads hook attributes; warpweave/tma_encoding.hpp encodes TMA tensor maps.
#pragma once

#include <boost/dll/alias.hpp>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "warpweave/plugin_abi.h"

// Exports `plugin` (a ww_plugin_v1) under the entry-point name the core looks for.
#define WARPWEAVE_PLUGIN(plugin)                                              \
  static const ww_plugin_v1* warpweave_plugin_entry_fn() { return &(plugin); } \
  BOOST_DLL_ALIAS(warpweave_plugin_entry_fn, warpweave_plugin_entry_v1)

// The whole plugin description in one line, at namespace scope: its name (the manifest's), its `lower` and its
// `host_call` (nullptr for none), with the manifest warpweave_add_backend embeds.
#define WARPWEAVE_DEFINE_PLUGIN(name, lower_fn, host_call_fn)                                              \
  extern "C" const char ww_manifest_text[];                                                               \
  extern "C" const size_t ww_manifest_size;                                                               \
  static const ww_plugin_v1 ww_plugin_description = {WW_PLUGIN_ABI_VERSION, name, ww_manifest_text,        \
                                                     ww_manifest_size, lower_fn, host_call_fn};            \
  WARPWEAVE_PLUGIN(ww_plugin_description)

namespace warpweave::plugin {

// An error raised inside a hook; caught by the hook wrapper and reported through the emitter.
struct HookError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The emitter with C++ conveniences; every call throws HookError when the core reports a failure.
class Emitter {
 public:
  explicit Emitter(const ww_emitter_v1* em) : em_(em) {}

  ww_value op(const char* name, std::initializer_list<ww_value> operands, const char* result_type,
              const char* properties = nullptr) const {
    ww_value r = 0;
    const char* types[1] = {result_type};
    check(em_->op(em_->ctx, name, operands.begin(), operands.size(), types, result_type ? 1 : 0, properties, &r));
    return r;
  }
  void op0(const char* name, std::initializer_list<ww_value> operands, const char* properties = nullptr) const {
    check(em_->op(em_->ctx, name, operands.begin(), operands.size(), nullptr, 0, properties, nullptr));
  }
  std::vector<ww_value> inline_asm(const std::string& text, const std::string& constraints,
                                   const std::vector<ww_value>& operands, const std::vector<const char*>& result_types,
                                   bool side_effects = true) const {
    std::vector<ww_value> r(result_types.size());
    check(em_->inline_asm(em_->ctx, text.c_str(), constraints.c_str(), operands.data(), operands.size(),
                          result_types.data(), result_types.size(), side_effects ? 1 : 0, r.data()));
    return r;
  }
  ww_value constant(int64_t v, const char* type) const {
    ww_value r = 0;
    check(em_->constant_int(em_->ctx, v, type, &r));
    return r;
  }
  std::string type_of(ww_value v) const { return em_->type_of(em_->ctx, v); }
  void fail(const std::string& message) const { em_->error(em_->ctx, message.c_str()); }

 private:
  void check(int rc) const {
    if (rc != WW_OK) throw HookError("the core's emitter refused an operation");
  }
  const ww_emitter_v1* em_;
};

// `lower` of a plugin whose instructions all lower through their PTX templates.
inline int no_lowering_hooks(const char*, const char*, const ww_emitter_v1*, const ww_value*, size_t, const ww_attr*,
                             size_t, ww_value*, size_t, size_t*) {
  return WW_UNKNOWN_HOOK;
}

// Runs a lowering hook's body, turning what it throws into the ABI's status: the message goes to the core through
// the emitter (which names the user's line), unless a refused emitter call already reported the core's reason.
template <class Body>
int run_lowering_hook(const ww_emitter_v1* em_c, Body&& body) {
  Emitter em(em_c);
  try {
    body(em);
    return WW_OK;
  } catch (const std::exception& e) {
    if (dynamic_cast<const HookError*>(&e) && std::string(e.what()) == "the core's emitter refused an operation")
      return WW_ERROR;
    em.fail(e.what());
  } catch (...) {
    em.fail("the lowering hook failed");
  }
  return WW_ERROR;
}

// Runs a host hook's body, turning what it throws into WW_ERROR with the message in `error` (the core prefixes the
// plugin's and the hook's names).
template <class Body>
int run_host_hook(char* error, size_t error_size, Body&& body) {
  try {
    body();
    return WW_OK;
  } catch (const std::exception& e) {
    if (error_size) std::snprintf(error, error_size, "%s", e.what());
  } catch (...) {
    if (error_size) std::snprintf(error, error_size, "the host hook failed");
  }
  return WW_ERROR;
}

}  // namespace warpweave::plugin
