// CudaError and the out-of-line throw paths, so that a checked driver call inlines to a compare and a branch.
#include "ww/runtime/error.hpp"

#include <string>
#include <utility>

#include "driver_api.hpp"

namespace ww::runtime {

CudaError::CudaError(int code, std::string name, std::string description, std::string call, std::string detail,
                     std::string what)
    : std::runtime_error(std::move(what)),
      code_(code),
      name_(std::move(name)),
      description_(std::move(description)),
      call_(std::move(call)),
      detail_(std::move(detail)) {}

}  // namespace ww::runtime

namespace ww::runtime::detail {
namespace {

// The codes raised without a loaded driver to name them.
const char* builtin_name(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS: return "CUDA_SUCCESS";
    case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
    case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_STUB_LIBRARY: return "CUDA_ERROR_STUB_LIBRARY";
    case CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER: return "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER";
    case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    default: return nullptr;
  }
}

const char* builtin_string(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS: return "no error";
    case CUDA_ERROR_INVALID_VALUE: return "invalid argument";
    case CUDA_ERROR_NOT_INITIALIZED: return "initialization error";
    case CUDA_ERROR_STUB_LIBRARY: return "CUDA driver is a stub library";
    case CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER: return "API call requires a newer CUDA driver";
    case CUDA_ERROR_NO_DEVICE: return "no CUDA-capable device is detected";
    default: return nullptr;
  }
}

}  // namespace

std::string error_name(CUresult result) {
  if (const DriverApi* a = loaded_api()) {
    const char* s = nullptr;
    if (a->cuGetErrorName(result, &s) == CUDA_SUCCESS && s != nullptr) return s;
  }
  const char* s = builtin_name(result);
  return s ? s : "CUresult " + std::to_string(result);
}

std::string error_string(CUresult result) {
  if (const DriverApi* a = loaded_api()) {
    const char* s = nullptr;
    if (a->cuGetErrorString(result, &s) == CUDA_SUCCESS && s != nullptr) return s;
  }
  const char* s = builtin_string(result);
  return s ? s : "unrecognized error code";
}

void throw_error(CUresult result, const char* call, std::string detail) {
  std::string name = error_name(result);
  std::string description = error_string(result);
  std::string what = std::string(call) + " failed: " + name + " (" + description + ")";
  if (!detail.empty()) what += "; " + detail;
  throw CudaError(result, std::move(name), std::move(description), call, std::move(detail), std::move(what));
}

void throw_missing(const char* call) {
  const DriverApi* a = loaded_api();
  const int version = a ? a->driver_version : 0;
  throw_error(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, call,
              "the driver (CUDA " + std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10) +
                  ") does not provide this entry point at the ABI warpweave was written against");
}

}  // namespace ww::runtime::detail
