// Opening a plugin library: the ELF checks, dlopen, the entry point (whatever it throws), the ABI version and the
// manifest's presence and size.
#include "plugin_library.hpp"

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <vector>

#include "elf_check.hpp"

namespace ww::plugins {
namespace {

// A plugin linked with its own static libgcc (warpweave_add_backend links them so) unwinds an exception with its
// own copy of the unwinder, which calls the C++ personality routine of this library's frames; that routine asks
// the shared libgcc_s about the frame, and libgcc_s aborts the process unless it has unwound an exception once
// itself (it sets up its register table on first use). One exception thrown and caught here first makes whatever
// a plugin's entry point throws reach the catch below, instead of killing the process.
void prepare_unwinder() {
  static const bool ready = [] {
    try {
      throw 0;
    } catch (int) {
    }
    return true;
  }();
  (void)ready;
}

// Libraries refused after their code ran (static initialisers, the entry point) stay mapped: what that code set
// up (atexit handlers, thread-local destructors, the allocations of its own C++ runtime) may point into it, and
// unmapping it would turn a refusal into a crash later.
void keep_mapped(std::shared_ptr<boost::dll::shared_library> lib) {
  static std::mutex mutex;
  using Kept = std::vector<std::shared_ptr<boost::dll::shared_library>>;
  static Kept* kept = new Kept;  // never destroyed: nothing unloads them at exit either
  std::lock_guard<std::mutex> lock(mutex);
  kept->push_back(std::move(lib));
}

}  // namespace

PluginLibrary open_plugin_library(const std::string& path, std::string& why) {
  PluginLibrary out;
  auto refuse = [&](std::string reason) {
    why = std::move(reason);
    if (out.lib) keep_mapped(std::move(out.lib));
    return PluginLibrary{};
  };
  if (std::string bad = check_elf_file(path); !bad.empty()) return refuse(bad);
  prepare_unwinder();
  try {
    out.lib = std::make_shared<boost::dll::shared_library>(
        path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    return refuse(std::string("the library does not load: ") + e.what());
  } catch (...) {  // a static initialiser of the library threw
    return refuse("the library does not load: its initialisation threw an exception");
  }
  try {
    if (!out.lib->has(WW_PLUGIN_ENTRY_NAME))
      return refuse(std::string("no entry point ") + WW_PLUGIN_ENTRY_NAME + " (export one with WARPWEAVE_PLUGIN)");
    out.abi = out.lib->get_alias<const ww_plugin_v1*()>(WW_PLUGIN_ENTRY_NAME)();
  } catch (const std::exception& e) {
    return refuse(std::string("the entry point failed: ") + e.what());
  } catch (...) {
    return refuse("the entry point threw an exception that is not a std::exception");
  }
  const ww_plugin_v1* abi = out.abi;
  if (!abi) return refuse("the entry point returned no plugin description");
  if (abi->abi_version != WW_PLUGIN_ABI_VERSION)
    return refuse("plugin ABI version " + std::to_string(abi->abi_version) + ", but this warpweave core speaks " +
                  std::to_string(WW_PLUGIN_ABI_VERSION) + ": rebuild the plugin against this warpweave SDK");
  if (!abi->manifest_text) return refuse("the plugin carries no manifest");
  if (abi->manifest_size > kMaxManifestBytes)
    return refuse("its manifest claims " + std::to_string(abi->manifest_size) + " bytes, more than the " +
                  std::to_string(kMaxManifestBytes) + " a manifest may have");
  return out;
}

std::vector<std::string> plugin_files(const std::vector<std::string>& dirs) {
  std::vector<std::string> out;
  for (auto& dir : dirs) {
    std::error_code ec;
    if (dir.empty() || !std::filesystem::is_directory(dir, ec)) continue;
    std::vector<std::string> files;
    for (auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      auto p = entry.path();
      if (entry.is_regular_file(ec) && p.extension() == ".so") files.push_back(std::filesystem::absolute(p).string());
    }
    std::sort(files.begin(), files.end());
    out.insert(out.end(), files.begin(), files.end());
  }
  return out;
}

}  // namespace ww::plugins
