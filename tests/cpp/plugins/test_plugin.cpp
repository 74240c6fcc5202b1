// A minimal plugin for the plugin host's tests: its manifest (one target, no atoms) is chosen at build time, and
// WW_TEST_THROW makes its entry point throw an object that is not a std::exception.
#include <algorithm>
#include <cstring>
#include <string_view>
#include <warpweave/plugin.hpp>

extern "C" const char ww_manifest_text[];
extern "C" const size_t ww_manifest_size;

namespace {
#ifdef WW_TEST_HOST_HOOK
// One host hook, WW_TEST_HOST_HOOK, that writes the plugin's name: which plugin answered a call is then visible.
int host_call(const char* name, const ww_host_services_v1*, const ww_attr*, size_t, void* out, size_t out_size,
              char*, size_t) {
  if (!name || std::string_view(name) != WW_TEST_HOST_HOOK) return WW_UNKNOWN_HOOK;
  std::string_view me = WW_TEST_NAME;
  std::memcpy(out, me.data(), std::min(out_size, me.size()));
  return WW_OK;
}
const ww_plugin_v1 plugin = {WW_PLUGIN_ABI_VERSION, WW_TEST_NAME, ww_manifest_text, ww_manifest_size, nullptr,
                             host_call};
#else
const ww_plugin_v1 plugin = {WW_PLUGIN_ABI_VERSION, WW_TEST_NAME, ww_manifest_text, ww_manifest_size, nullptr, nullptr};
#endif

#ifdef WW_TEST_THROW
struct NotAnException {
  int code;
};
const ww_plugin_v1* throwing_entry() { throw NotAnException{42}; }
#endif
}  // namespace

#ifdef WW_TEST_THROW
BOOST_DLL_ALIAS(throwing_entry, warpweave_plugin_entry_v1)
#else
WARPWEAVE_PLUGIN(plugin)
#endif
