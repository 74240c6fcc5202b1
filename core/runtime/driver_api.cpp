// Loading libcuda and filling the entry-point table.
//
// Only cuGetProcAddress_v2 and cuDriverGetVersion are taken with dlsym. Every other entry point comes from
// cuGetProcAddress with an explicit CUDA version, because a plain dlsym("cuMemAlloc") returns the CUDA 2.x
// ABI and dlsym("cuCtxSynchronize") will one day return whatever the newest one is; the versioned query
// returns exactly the ABI we declared in driver_api.hpp.
#include "driver_api.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <string>

#include "ww/runtime/driver.hpp"
#include "ww/runtime/error.hpp"

namespace ww::runtime::detail {
namespace {

using GetProcAddressFn = CUresult (*)(const char* symbol, void** pfn, int cuda_version, std::uint64_t flags,
                                      int* symbol_status);
using DriverGetVersionFn = CUresult (*)(int*);

constexpr int kMinimumDriverVersion = 12000;  // cuGetProcAddress_v2 and tensor maps start there

struct DriverState {
  DriverApi api;
  bool loaded = false;  // library opened and table filled; errors can be named from here on
  bool usable = false;  // loaded and cuInit succeeded
  CUresult init_result = -1;
  CUresult code = CUDA_ERROR_NOT_INITIALIZED;
  std::string reason;  // why not usable; the start of every CudaError raised for it
};

std::string dl_error() {
  const char* e = dlerror();
  return e ? e : "unknown dlopen error";
}

std::string version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

DriverState* load() {
  auto* s = new DriverState;
  const char* env = std::getenv("WARPWEAVE_LIBCUDA");
  const bool overridden = env != nullptr && *env != '\0';
  s->api.library = overridden ? env : "libcuda.so.1";
  const std::string origin = overridden ? " (WARPWEAVE_LIBCUDA=" + s->api.library + ")" : "";

  // RTLD_LOCAL keeps the driver's symbols out of the global namespace; PyTorch loads its own copy the same
  // way and both handles share the one driver instance.
  void* handle = dlopen(s->api.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    s->reason = "CUDA driver libcuda.so.1 not found: " + dl_error() + origin +
                "; install the NVIDIA driver, or set WARPWEAVE_LIBCUDA to the path of libcuda.so.1";
    return s;
  }
  auto not_usable = [&](const std::string& why) {
    s->reason = "CUDA driver libcuda.so.1 not usable: '" + s->api.library + "' " + why + origin;
    dlclose(handle);
    return s;
  };

  auto get_proc = reinterpret_cast<GetProcAddressFn>(dlsym(handle, "cuGetProcAddress_v2"));
  auto get_version = reinterpret_cast<DriverGetVersionFn>(dlsym(handle, "cuDriverGetVersion"));
  if (get_proc == nullptr || get_version == nullptr) {
    return not_usable(std::string("has no symbol ") +
                      (get_proc == nullptr ? "cuGetProcAddress_v2" : "cuDriverGetVersion") +
                      ": it is not a CUDA driver, or one older than CUDA " + version_string(kMinimumDriverVersion));
  }
  int version = 0;
  if (CUresult r = get_version(&version); r != CUDA_SUCCESS) {
    s->code = r;
    return not_usable(r == CUDA_ERROR_STUB_LIBRARY
                          ? "is the CUDA toolkit's stub library, not the driver (cuDriverGetVersion returned "
                            "CUDA_ERROR_STUB_LIBRARY)"
                          : "failed cuDriverGetVersion with CUresult " + std::to_string(r));
  }
  if (version < kMinimumDriverVersion) {
    s->code = CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER;
    return not_usable("is CUDA " + version_string(version) + "; warpweave needs a driver for CUDA " +
                      version_string(kMinimumDriverVersion) + " or newer");
  }
  s->api.driver_version = version;

  // Every entry point of the minimum version must be there, so the runtime may call those without a null
  // check. A newer one the driver lacks stays null and raises CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER when
  // called, so an older driver still runs everything that does not need it.
  std::string missing;
#define WW_RESOLVE(name, abi_version, params)                                                              \
  if ((abi_version) <= version) {                                                                          \
    void* fn = nullptr;                                                                                    \
    int status = -1;                                                                                       \
    if (get_proc(#name, &fn, (abi_version), CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status) == CUDA_SUCCESS && \
        status == CU_GET_PROC_ADDRESS_SUCCESS && fn != nullptr) {                                          \
      s->api.name = reinterpret_cast<decltype(s->api.name)>(fn);                                           \
    } else if ((abi_version) <= kMinimumDriverVersion) {                                                   \
      missing += (missing.empty() ? "" : ", ") + std::string(#name);                                       \
    }                                                                                                      \
  }
  WW_CUDA_DRIVER_FUNCTIONS(WW_RESOLVE)
#undef WW_RESOLVE
  if (!missing.empty()) return not_usable("does not provide " + missing + " through cuGetProcAddress");
  // The handle stays open for the life of the process: objects destroyed during exit still call in.
  s->loaded = true;
  s->init_result = s->api.cuInit(0);
  if (s->init_result != CUDA_SUCCESS) {
    const char* name = nullptr;
    const char* text = nullptr;
    s->api.cuGetErrorName(s->init_result, &name);
    s->api.cuGetErrorString(s->init_result, &text);
    s->code = s->init_result;
    s->reason = "CUDA driver libcuda.so.1 not usable: cuInit failed with " +
                std::string(name ? name : "CUresult " + std::to_string(s->init_result)) + " (" +
                (text ? text : "no description") + ")" + origin;
    return s;
  }
  s->usable = true;
  return s;
}

const DriverState& state() {
  // Never destroyed, for the same reason the library is never closed.
  static const DriverState* s = load();
  return *s;
}

[[noreturn]] void throw_unusable(const DriverState& s, const char* call) {
  throw CudaError(s.code, error_name(s.code), s.reason, call, {}, s.reason + " (in " + call + ")");
}

}  // namespace

const DriverApi& api(const char* call) {
  const DriverState& s = state();
  if (!s.usable) [[unlikely]] {
    throw_unusable(s, call);
  }
  return s.api;
}

const DriverApi* loaded_api() noexcept {
  const DriverState& s = state();
  return s.loaded ? &s.api : nullptr;
}

CUresult init_result() noexcept { return state().init_result; }

}  // namespace ww::runtime::detail

namespace ww::runtime {

bool driver_available() noexcept { return detail::state().usable; }

int driver_version() {
  const auto& s = detail::state();
  if (!s.loaded) detail::throw_unusable(s, "cuDriverGetVersion");
  return s.api.driver_version;
}

std::string driver_unavailable_reason() { return detail::state().reason; }

}  // namespace ww::runtime
