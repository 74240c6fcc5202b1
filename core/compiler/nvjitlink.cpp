// PTX -> cubin in process with libnvJitLink, loaded with dlopen so that neither the build nor the wheel depends on a
// CUDA toolkit. The few declarations we need are written out here (no CUDA headers); the library exports them as
// __nvJitLink*_13_0 (what nvJitLink.h's inline wrappers call) and as plain names.
#include <dlfcn.h>

#include <cstdint>
#include <mutex>

#include "internal.hpp"

namespace ww::compiler::detail {
namespace {

using Handle = struct nvJitLink*;
constexpr int kSuccess = 0;
constexpr int kInputPtx = 2;  // NVJITLINK_INPUT_PTX
constexpr const char* kLibrary = "libnvJitLink.so.13";

const char* result_name(int code) {
  static constexpr const char* kNames[] = {
      "SUCCESS",          "ERROR_UNRECOGNIZED_OPTION", "ERROR_MISSING_ARCH",     "ERROR_INVALID_INPUT",
      "ERROR_PTX_COMPILE", "ERROR_NVVM_COMPILE",       "ERROR_INTERNAL",         "ERROR_THREADPOOL",
      "ERROR_UNRECOGNIZED_INPUT", "ERROR_FINALIZE",    "ERROR_NULL_INPUT",       "ERROR_INCOMPATIBLE_OPTIONS",
      "ERROR_INCORRECT_INPUT_TYPE", "ERROR_ARCH_MISMATCH", "ERROR_OUTDATED_LIBRARY", "ERROR_MISSING_FATBIN",
      "ERROR_UNRECOGNIZED_ARCH", "ERROR_UNSUPPORTED_ARCH", "ERROR_LTO_NOT_ENABLED"};
  return code >= 0 && code < static_cast<int>(std::size(kNames)) ? kNames[code] : "unknown error";
}

struct Api {
  int (*create)(Handle*, uint32_t, const char**) = nullptr;
  int (*destroy)(Handle*) = nullptr;
  int (*add_data)(Handle, int, const void*, size_t, const char*) = nullptr;
  int (*complete)(Handle) = nullptr;
  int (*cubin_size)(Handle, size_t*) = nullptr;
  int (*cubin)(Handle, void*) = nullptr;
  int (*error_log_size)(Handle, size_t*) = nullptr;
  int (*error_log)(Handle, char*) = nullptr;
  int (*info_log_size)(Handle, size_t*) = nullptr;
  int (*info_log)(Handle, char*) = nullptr;
};

template <typename Fn>
bool bind(void* lib, const char* name, Fn& fn) {
  std::string versioned = std::string("__") + name + "_13_0";
  void* sym = ::dlsym(lib, versioned.c_str());
  if (!sym) sym = ::dlsym(lib, name);
  fn = reinterpret_cast<Fn>(sym);
  return sym != nullptr;
}

bool bind_all(void* lib, Api& api) {
  return bind(lib, "nvJitLinkCreate", api.create) && bind(lib, "nvJitLinkDestroy", api.destroy) &&
         bind(lib, "nvJitLinkAddData", api.add_data) && bind(lib, "nvJitLinkComplete", api.complete) &&
         bind(lib, "nvJitLinkGetLinkedCubinSize", api.cubin_size) &&
         bind(lib, "nvJitLinkGetLinkedCubin", api.cubin) &&
         bind(lib, "nvJitLinkGetErrorLogSize", api.error_log_size) &&
         bind(lib, "nvJitLinkGetErrorLog", api.error_log) &&
         bind(lib, "nvJitLinkGetInfoLogSize", api.info_log_size) && bind(lib, "nvJitLinkGetInfoLog", api.info_log);
}

std::vector<std::string> candidates() {
  std::vector<std::string> out;
  for (const std::string& entry : split_path_list(getenv_str("WARPWEAVE_NVJITLINK")))
    out.push_back(is_regular_file(entry) ? entry : entry + "/" + kLibrary);
  out.emplace_back(kLibrary);  // the loader's own search (LD_LIBRARY_PATH, ldconfig, an already-loaded copy)
  if (std::string cuda_home = getenv_str("CUDA_HOME"); !cuda_home.empty())
    out.push_back(cuda_home + "/lib64/" + kLibrary);
  out.push_back(std::string("/usr/local/cuda/lib64/") + kLibrary);
  for (const std::string& dir : expand_search_dirs(configured_search_dirs())) out.push_back(dir + "/" + kLibrary);
  return out;
}

// Loaded once and kept for the life of the process (~100 MB; unloading it saves nothing worth the risk). A failed
// search is not remembered: set_search_dirs() may make the next one succeed.
struct Library {
  std::mutex mutex;
  bool loaded = false;
  Api api;
  std::string path;

  const Api* get(std::string* why) {
    std::lock_guard lock(mutex);
    if (loaded) return &api;
    std::string tried;
    for (const std::string& candidate : candidates()) {
      if (candidate.find('/') != std::string::npos && !is_regular_file(candidate)) {
        tried += "\n  " + candidate + ": no such file";
        continue;
      }
      void* lib = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!lib) {
        const char* err = ::dlerror();
        tried += "\n  " + candidate + ": " + (err ? err : "not loadable");
        continue;
      }
      Api bound;
      if (!bind_all(lib, bound)) {
        tried += "\n  " + candidate + ": lacks the nvJitLink 13 entry points";
        ::dlclose(lib);
        continue;
      }
      api = bound;
      path = candidate;
      loaded = true;
      return &api;
    }
    if (why) {
      *why = std::string("cannot load ") + kLibrary +
             " (set WARPWEAVE_NVJITLINK, or install nvidia-nvjitlink-cu13); tried:" + tried;
    }
    return nullptr;
  }
};

Library& library() {
  static auto* lib = new Library;
  return *lib;
}

std::string read_log(const Api& api, Handle handle, bool error_log) {
  size_t size = 0;
  int rc = error_log ? api.error_log_size(handle, &size) : api.info_log_size(handle, &size);
  if (rc != kSuccess || size <= 1) return {};
  std::string log(size, '\0');
  rc = error_log ? api.error_log(handle, log.data()) : api.info_log(handle, log.data());
  if (rc != kSuccess) return {};
  log.resize(log.find('\0') == std::string::npos ? size : log.find('\0'));
  return log;
}

}  // namespace

bool nvjitlink_available(std::string* why) { return library().get(why) != nullptr; }

CubinOutput nvjitlink_compile(std::string_view ptx, const CubinRequest& request) {
  CubinOutput out;
  const Api* api = library().get(&out.log);
  if (!api) return out;

  // -no-cache: with a driver on the machine, nvJitLink keeps the cubins it made in the driver's compute cache and,
  // for PTX it has seen (in this process or another), returns one without running ptxas, so without ptxas's report:
  // no resource use for -v, no warnings. warpweave's JIT cache is the one cache; a compile that reaches nvJitLink
  // assembles.
  std::vector<std::string> options = {"-arch=" + request.arch,
                                      "-O" + std::to_string(request.opt_level == 0 ? 0 : 3), "-no-cache"};
  // "-verbose" only reports nvJitLink's own steps; ptxas's resource report needs ptxas's -v.
  if (request.verbose) options.emplace_back("-Xptxas=-v");
  if (request.line_info) options.emplace_back("-lineinfo");
  for (const std::string& option : request.ptxas_options) options.push_back("-Xptxas=" + option);
  std::vector<const char*> argv;
  for (const std::string& option : options) argv.push_back(option.c_str());

  Handle handle = nullptr;
  auto fail = [&](const char* call, int rc) {
    out.ok = false;
    std::string logs = handle ? read_log(*api, handle, true) + read_log(*api, handle, false) : std::string();
    out.log = std::string("nvJitLink: ") + call + " failed: " + result_name(rc) + (logs.empty() ? "" : "\n") + logs;
    if (handle) api->destroy(&handle);
    return out;
  };
  int rc = api->create(&handle, static_cast<uint32_t>(argv.size()), argv.data());
  if (rc != kSuccess) return fail("nvJitLinkCreate", rc);
  // nvJitLink reads PTX as a C string: hand it a terminated copy.
  std::string text(ptx);
  rc = api->add_data(handle, kInputPtx, text.c_str(), text.size() + 1, "warpweave.ptx");
  if (rc != kSuccess) return fail("nvJitLinkAddData", rc);
  rc = api->complete(handle);
  if (rc != kSuccess) return fail("nvJitLinkComplete", rc);
  size_t size = 0;
  rc = api->cubin_size(handle, &size);
  if (rc != kSuccess) return fail("nvJitLinkGetLinkedCubinSize", rc);
  out.cubin.resize(size);
  rc = api->cubin(handle, out.cubin.data());
  if (rc != kSuccess) return fail("nvJitLinkGetLinkedCubin", rc);
  out.log = read_log(*api, handle, false);
  api->destroy(&handle);
  out.ok = true;
  return out;
}

}  // namespace ww::compiler::detail
