#pragma once
// Private: opening one plugin library, the single path by which the host (loading and discovery alike) lets a
// file into the process. Everything a hostile or broken file can do before its manifest is read ends here as a
// reason: a truncated or foreign file (checked before dlopen, which would die of SIGBUS on it), a missing entry
// point, an entry point that throws anything at all, another ABI version, a missing or oversized manifest.
#define BOOST_DLL_USE_STD_FS 1
#include <boost/dll/shared_library.hpp>
#include <memory>
#include <string>
#include <vector>

#include "warpweave/plugin_abi.h"

namespace ww::plugins {

// The largest manifest a plugin may carry (the generated backends' are a few MB).
inline constexpr size_t kMaxManifestBytes = size_t{64} << 20;

struct PluginLibrary {
  std::shared_ptr<boost::dll::shared_library> lib;  // keeps it mapped
  const ww_plugin_v1* abi = nullptr;                // valid while lib lives; manifest_text is set and bounded
};

// The library and its description, or an empty `lib` with `why` set (a sentence; the caller names the file).
PluginLibrary open_plugin_library(const std::string& path, std::string& why);

// The plugin libraries (*.so regular files) of these directories, absolute, sorted within each directory, the
// directories in the order given; a missing directory contributes none. Loading and discovery both read this.
std::vector<std::string> plugin_files(const std::vector<std::string>& dirs);

}  // namespace ww::plugins
