// A minimal plugin for the plugin host's tests: its manifest (one target, no atoms) is chosen at build time, and
// WW_TEST_THROW makes its entry point throw an object that is not a std::exception.
#include <warpweave/plugin.hpp>

extern "C" const char ww_manifest_text[];
extern "C" const size_t ww_manifest_size;

namespace {
const ww_plugin_v1 plugin = {WW_PLUGIN_ABI_VERSION, WW_TEST_NAME, ww_manifest_text, ww_manifest_size, nullptr, nullptr};

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
