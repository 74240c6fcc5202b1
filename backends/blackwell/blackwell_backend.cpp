// The Blackwell backend plugin: every instruction lowers through its manifest's PTX template, so the library
// carries the manifest and no hooks.
#include <warpweave/plugin.hpp>

extern "C" const char ww_manifest_text[];
extern "C" const size_t ww_manifest_size;

namespace {

int lower(const char*, const char*, const ww_emitter_v1*, const ww_value*, size_t, const ww_attr*, size_t, ww_value*,
          size_t, size_t*) {
  return WW_UNKNOWN_HOOK;
}

const ww_plugin_v1 plugin = {WW_PLUGIN_ABI_VERSION, "blackwell", ww_manifest_text, ww_manifest_size, lower, nullptr};

}  // namespace

WARPWEAVE_PLUGIN(plugin)
