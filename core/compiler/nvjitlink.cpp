// PTX -> cubin in process with libnvJitLink, loaded with dlopen so that neither the build nor the wheel depends on a
// CUDA toolkit. The few declarations we need are written out here (no CUDA headers); the library exports them as
// __nvJitLink*_13_0 (what nvJitLink.h's inline wrappers call) and as plain names.
#include <dlfcn.h>

#include <cstdint>

#include "tool_library.hpp"

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

struct Api : LogCalls<Handle> {
  int (*create)(Handle*, uint32_t, const char**) = nullptr;
  int (*destroy)(Handle*) = nullptr;
  int (*add_data)(Handle, int, const void*, size_t, const char*) = nullptr;
  int (*complete)(Handle) = nullptr;
  int (*cubin_size)(Handle, size_t*) = nullptr;
  int (*cubin)(Handle, void*) = nullptr;
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

LoadedLibrary<Api>& library() {
  static auto* lib = new LoadedLibrary<Api>(candidates, bind_all,
                                            std::string("cannot load ") + kLibrary +
                                                " (set WARPWEAVE_NVJITLINK, or install nvidia-nvjitlink-cu13)");
  return *lib;
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
  // nvJitLink reads PTX as a C string: hand it a terminated copy.
  std::string text(ptx);
  size_t size = 0;
  run_calls(*api, handle, "nvJitLink", result_name,
            {{"nvJitLinkCreate", [&] { return api->create(&handle, static_cast<uint32_t>(argv.size()), argv.data()); }},
             {"nvJitLinkAddData",
              [&] { return api->add_data(handle, kInputPtx, text.c_str(), text.size() + 1, "warpweave.ptx"); }},
             {"nvJitLinkComplete", [&] { return api->complete(handle); }},
             {"nvJitLinkGetLinkedCubinSize", [&] { return api->cubin_size(handle, &size); }},
             {"nvJitLinkGetLinkedCubin", [&] {
                out.cubin.resize(size);
                return api->cubin(handle, out.cubin.data());
              }}},
            out);
  return out;
}

}  // namespace ww::compiler::detail
