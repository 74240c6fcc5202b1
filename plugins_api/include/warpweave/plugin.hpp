// Thin C++ helpers over the plugin ABI (warpweave/plugin_abi.h) for backend authors.
//
//   #include <warpweave/plugin.hpp>
//   extern "C" const char ww_manifest_text[]; extern "C" const size_t ww_manifest_size;  // embedded by CMake
//   static int lower(...) { ... }
//   static const ww_plugin_v1 plugin = {WW_PLUGIN_ABI_VERSION, "mybackend", ww_manifest_text, ww_manifest_size,
//                                       lower, nullptr};
//   WARPWEAVE_PLUGIN(plugin)
#pragma once

#include <boost/dll/alias.hpp>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "warpweave/plugin_abi.h"

// Exports `plugin` (a ww_plugin_v1) under the entry-point name the core looks for.
#define WARPWEAVE_PLUGIN(plugin)                                              \
  static const ww_plugin_v1* warpweave_plugin_entry_fn() { return &(plugin); } \
  BOOST_DLL_ALIAS(warpweave_plugin_entry_fn, warpweave_plugin_entry_v1)

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

// The integer value of attribute `name`, or `fallback`.
inline int64_t attr_int(const ww_attr* attrs, size_t n, const char* name, int64_t fallback) {
  for (size_t i = 0; i < n; ++i)
    if (std::string(attrs[i].name) == name) return attrs[i].int_value;
  return fallback;
}

}  // namespace warpweave::plugin
