// Loaded code: a Module owns a cuModule made from a cubin, fatbin or PTX image in memory; a Function is a
// kernel in it.
//
// Thread safety: loading, looking up and launching may happen from any thread at once (the driver
// serializes what it must). A Module must outlive every Function taken from it and every launch of those
// functions still queued; destroying or moving it while another thread uses it is a race. Function is a
// plain handle: copy it freely. set_attribute changes the kernel for all threads and later launches.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace ww::runtime {

// CUfunction_attribute values (cuda.h) for Function::attribute / set_attribute.
namespace func_attr {
inline constexpr int kMaxThreadsPerBlock = 0;         // read-only: the most a launch may use
inline constexpr int kSharedSizeBytes = 1;            // read-only: static shared memory
inline constexpr int kConstSizeBytes = 2;             // read-only
inline constexpr int kLocalSizeBytes = 3;             // read-only: spills and stack, per thread
inline constexpr int kNumRegs = 4;                    // read-only: registers per thread
inline constexpr int kPtxVersion = 5;                 // read-only: 10 * major + minor
inline constexpr int kBinaryVersion = 6;              // read-only: SASS target, 10 * major + minor
inline constexpr int kMaxDynamicSharedSizeBytes = 8;  // settable; above 48 KiB must be set before launch
inline constexpr int kPreferredSharedMemoryCarveout = 9;
inline constexpr int kRequiredClusterWidth = 11;  // from .reqnctapercluster, or settable
inline constexpr int kRequiredClusterHeight = 12;
inline constexpr int kRequiredClusterDepth = 13;
inline constexpr int kNonPortableClusterSizeAllowed = 14;  // settable: clusters above 8 CTAs
}  // namespace func_attr

class Function {
 public:
  Function() = default;

  void* handle() const noexcept { return function_; }  // CUfunction
  void* context() const noexcept { return context_; }  // CUcontext of its module
  const std::string& name() const noexcept { return name_; }
  explicit operator bool() const noexcept { return function_ != nullptr; }

  int attribute(int attr) const;
  void set_attribute(int attr, int value);

  int num_regs() const { return attribute(func_attr::kNumRegs); }
  int local_size_bytes() const { return attribute(func_attr::kLocalSizeBytes); }
  int max_threads_per_block() const { return attribute(func_attr::kMaxThreadsPerBlock); }
  int static_shared_size_bytes() const { return attribute(func_attr::kSharedSizeBytes); }
  // Dynamic shared memory above 48 KiB fails to launch unless allowed here first (up to the device's
  // max_shared_memory_per_block_optin minus the static shared memory).
  void set_max_dynamic_shared_memory(int bytes) { set_attribute(func_attr::kMaxDynamicSharedSizeBytes, bytes); }

 private:
  friend class Module;
  Function(void* function, void* context, std::string name)
      : function_(function), context_(context), name_(std::move(name)) {}

  void* function_ = nullptr;
  void* context_ = nullptr;
  std::string name_;
};

class Module {
 public:
  Module() = default;

  // Loads an image into the current context: a cubin (ELF), a fatbin, or PTX text (JIT-compiled by the
  // driver; need not be NUL-terminated). On failure the CudaError's detail() holds the JIT error log.
  static Module load(const void* image, std::size_t size);
  static Module load(std::string_view image) { return load(image.data(), image.size()); }

  ~Module();
  Module(Module&& other) noexcept;
  Module& operator=(Module&& other) noexcept;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The kernel called `name` (its .entry name: mangled unless declared extern "C"). CudaError
  // (CUDA_ERROR_NOT_FOUND) if there is none.
  Function function(const std::string& name) const;

  // The driver's info log of the load (PTX JIT statistics with verbose logging); empty for most cubins.
  const std::string& jit_log() const noexcept { return jit_log_; }
  void* handle() const noexcept { return module_; }  // CUmodule
  void* context() const noexcept { return context_; }
  explicit operator bool() const noexcept { return module_ != nullptr; }

 private:
  void reset() noexcept;

  void* module_ = nullptr;
  void* context_ = nullptr;
  std::string jit_log_;
};

}  // namespace ww::runtime
