// The one exception type of the runtime. Every driver call is checked; a failure never aborts the process.
#pragma once

#include <stdexcept>
#include <string>

namespace ww::runtime {

// A failed CUDA driver call, or a driver that cannot be used at all.
//
// code() is the CUresult. When the driver cannot be used at all, what() starts with
// "CUDA driver libcuda.so.1 not found: " (no library) or "CUDA driver libcuda.so.1 not usable: " (not a
// CUDA 12+ driver, the toolkit's stub, or cuInit failed), followed by the reason and the call attempted;
// the code is then CUDA_ERROR_NOT_INITIALIZED (3), CUDA_ERROR_STUB_LIBRARY (34),
// CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER (36) or what cuInit returned (e.g. CUDA_ERROR_NO_DEVICE).
class CudaError : public std::runtime_error {
 public:
  CudaError(int code, std::string name, std::string description, std::string call, std::string detail,
            std::string what);

  int code() const noexcept { return code_; }
  // The enum spelling from cuGetErrorName, e.g. "CUDA_ERROR_INVALID_VALUE".
  const std::string& name() const noexcept { return name_; }
  // The driver's sentence from cuGetErrorString, e.g. "invalid argument".
  const std::string& description() const noexcept { return description_; }
  // The driver entry point that failed, e.g. "cuLaunchKernelEx".
  const std::string& call() const noexcept { return call_; }
  // Extra context: the JIT log of a failed module load, the launch configuration of a failed launch.
  const std::string& detail() const noexcept { return detail_; }

 private:
  int code_;
  std::string name_;
  std::string description_;
  std::string call_;
  std::string detail_;
};

}  // namespace ww::runtime
