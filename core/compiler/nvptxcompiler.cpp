// PTX -> cubin in process with NVIDIA's PTX compiler library (ptxas as a library), whole-program like the ptxas
// program. nvJitLink assembles PTX as relocatable code (ptxas -c) so that it can link it, and that costs registers:
// 210 against 162 on CuTe DSL's nvfp4 GEMM, 244 against 236 on its Ampere tensor-op GEMM. NVIDIA ships the
// library only as a static archive; the build wraps it into libww_nvptxcompiler.so (core/compiler/CMakeLists.txt)
// when it finds one, and this file loads that with dlopen, so that neither the build nor the wheel needs it.
#include <dlfcn.h>

#include <cstdint>

#include "tool_library.hpp"

namespace ww::compiler::detail {
namespace {

using Handle = struct nvPTXCompiler*;
constexpr int kSuccess = 0;
constexpr const char* kLibrary = "libww_nvptxcompiler.so";

const char* result_name(int code) {
  static constexpr const char* kNames[] = {
      "SUCCESS",           "ERROR_INVALID_COMPILER_HANDLE",        "ERROR_INVALID_INPUT",
      "ERROR_COMPILATION_FAILURE", "ERROR_INTERNAL",               "ERROR_OUT_OF_MEMORY",
      "ERROR_COMPILER_INVOCATION_INCOMPLETE", "ERROR_UNSUPPORTED_PTX_VERSION", "ERROR_UNSUPPORTED_DEVSIDE_SYNC",
      "ERROR_CANCELLED"};
  return code >= 0 && code < static_cast<int>(std::size(kNames)) ? kNames[code] : "unknown error";
}

struct Api : LogCalls<Handle> {
  int (*create)(Handle*, size_t, const char*) = nullptr;
  int (*destroy)(Handle*) = nullptr;
  int (*compile)(Handle, int, const char* const*) = nullptr;
  int (*program_size)(Handle, size_t*) = nullptr;
  int (*program)(Handle, void*) = nullptr;
};

template <typename Fn>
bool bind(void* lib, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(::dlsym(lib, name));
  return fn != nullptr;
}

bool bind_all(void* lib, Api& api) {
  return bind(lib, "nvPTXCompilerCreate", api.create) && bind(lib, "nvPTXCompilerDestroy", api.destroy) &&
         bind(lib, "nvPTXCompilerCompile", api.compile) &&
         bind(lib, "nvPTXCompilerGetCompiledProgramSize", api.program_size) &&
         bind(lib, "nvPTXCompilerGetCompiledProgram", api.program) &&
         bind(lib, "nvPTXCompilerGetErrorLogSize", api.error_log_size) &&
         bind(lib, "nvPTXCompilerGetErrorLog", api.error_log) &&
         bind(lib, "nvPTXCompilerGetInfoLogSize", api.info_log_size) &&
         bind(lib, "nvPTXCompilerGetInfoLog", api.info_log);
}

// Beside the compiler first (the build writes the library next to _core, and the wheel installs it there), then
// where this build made it (the C++ tests and ww_compile run from the build tree).
std::vector<std::string> candidates() {
  std::vector<std::string> out;
  for (const std::string& entry : split_path_list(getenv_str("WARPWEAVE_NVPTXCOMPILER")))
    out.push_back(is_regular_file(entry) ? entry : entry + "/" + kLibrary);
  if (std::string dir = own_directory(); !dir.empty()) out.push_back(dir + "/" + kLibrary);
#ifdef WW_NVPTXCOMPILER_BUILD_PATH
  out.emplace_back(WW_NVPTXCOMPILER_BUILD_PATH);
#endif
  return out;
}

LoadedLibrary<Api>& library() {
  static const std::string hint = std::string("cannot load ") + kLibrary +
                                  " (the build makes it where it finds libnvptxcompiler_static.a: the CUDA "
                                  "toolkit's or the nvidia-nvptxcompiler wheel's; or set WARPWEAVE_NVPTXCOMPILER)";
  static auto* lib = new LoadedLibrary<Api>(candidates, bind_all, hint);
  return *lib;
}

}  // namespace

bool nvptxcompiler_available(std::string* why) { return library().get(why) != nullptr; }

CubinOutput nvptxcompiler_compile(std::string_view ptx, const CubinRequest& request) {
  // The ptxas program's options, as ptxas_compile() passes them.
  std::vector<std::string> options = {"--gpu-name=" + request.arch, "-O" + std::to_string(request.opt_level)};
  if (request.verbose) options.emplace_back("-v");
  if (request.line_info) options.emplace_back("-lineinfo");
  options.insert(options.end(), request.ptxas_options.begin(), request.ptxas_options.end());
  std::vector<const char*> argv;
  for (const std::string& option : options) argv.push_back(option.c_str());

  CubinOutput out;
  const Api* api = library().get(&out.log);
  if (!api) return out;

  Handle handle = nullptr;
  size_t size = 0;
  run_calls(*api, handle, "nvPTXCompiler", result_name,
            {{"nvPTXCompilerCreate", [&] { return api->create(&handle, ptx.size(), ptx.data()); }},
             {"nvPTXCompilerCompile",
              [&] { return api->compile(handle, static_cast<int>(argv.size()), argv.data()); }},
             {"nvPTXCompilerGetCompiledProgramSize", [&] { return api->program_size(handle, &size); }},
             {"nvPTXCompilerGetCompiledProgram", [&] {
                out.cubin.resize(size);
                return api->program(handle, out.cubin.data());
              }}},
            out);
  return out;
}

}  // namespace ww::compiler::detail
