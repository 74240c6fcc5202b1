// The example_b1 plugin: its atoms lower through the PTX templates of its manifest, so the library is the
// embedded manifest plus the entry point; `lower` has no hooks to offer.
#include <warpweave/plugin.hpp>

extern "C" const char ww_manifest_text[];
extern "C" const size_t ww_manifest_size;

namespace {

int lower(const char*, const char*, const ww_emitter_v1*, const ww_value*, size_t, const ww_attr*, size_t, ww_value*,
          size_t, size_t*) {
  return WW_UNKNOWN_HOOK;
}

const ww_plugin_v1 plugin = {WW_PLUGIN_ABI_VERSION, "example_b1", ww_manifest_text, ww_manifest_size, lower, nullptr};

}  // namespace

WARPWEAVE_PLUGIN(plugin)
