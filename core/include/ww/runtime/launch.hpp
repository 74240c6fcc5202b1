// Kernel launch.
//
// launch() goes through cuLaunchKernelEx, adding the cluster-dimension attribute only when a cluster is
// given and the cooperative attribute only when asked. It allocates nothing and makes one driver call on
// success; it does not touch the current context unless the launch fails for want of one, in which case it
// binds the kernel's context and retries once. PreparedLaunch checks the kernel and picks the driver entry
// once, for loops that launch the same kernel with the same shape many times.
//
// params is the usual kernelParams array: one pointer per kernel parameter, each pointing at the value
// (for a pointer parameter, at a variable that holds the device address; for a TMA descriptor, at a
// 64-byte aligned TensorMap).
#pragma once

#include <cstddef>

#include "ww/runtime/module.hpp"
#include "ww/runtime/stream.hpp"

namespace ww::runtime {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr Dim3() = default;
  constexpr Dim3(unsigned x_, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
  constexpr unsigned long long volume() const { return 1ull * x * y * z; }
};

struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  // Thread block cluster shape (sm_90+); {0, 0, 0}, or any zero extent, means no cluster attribute. The
  // grid must be a multiple of it. A kernel compiled with a fixed cluster shape needs none here.
  Dim3 cluster{0, 0, 0};
  std::size_t dynamic_smem = 0;  // bytes; above 48 KiB see Function::set_max_dynamic_shared_memory
  StreamRef stream;              // 0: the legacy default stream
  bool cooperative = false;      // grid-wide sync allowed; the whole grid must be co-resident
  // Programmatic dependent launch: the kernel may start before the previous one in the stream ends (it waits
  // with griddepcontrol.wait where it needs that kernel's results).
  bool programmatic_serialization = false;
  // A preferred cluster shape (sm_100+), a multiple of `cluster`, which is then the fallback the driver uses
  // where the preferred one cannot be scheduled; {0, 0, 0}: none.
  Dim3 preferred_cluster{0, 0, 0};
  // Events the driver records for dependent work (CUevent handles; 0: none): when every block of the kernel has
  // started (launch completion), or when every block has triggered its dependents (programmatic).
  uint64_t launch_completion_event = 0;
  int launch_completion_event_flags = 0;
  uint64_t programmatic_event = 0;
  int programmatic_event_flags = 0;
  bool programmatic_event_trigger_at_block_start = false;
};

// Throws CudaError naming cuLaunchKernelEx, with the kernel name and configuration in detail(), when the
// driver refuses the launch (too many threads, too much shared memory, a bad cluster shape, ...). Errors
// inside the kernel surface at the next synchronizing call instead.
void launch(const Function& function, const LaunchConfig& config, void** params);

inline void launch(const Function& function, Dim3 grid, Dim3 block, Dim3 cluster, std::size_t dynamic_smem,
                   StreamRef stream, void** params, bool cooperative = false) {
  launch(function, LaunchConfig{grid, block, cluster, dynamic_smem, stream, cooperative, false, {0, 0, 0}}, params);
}

// A launch with a fixed kernel and configuration. Without cluster or cooperative attributes it calls
// cuLaunchKernel, the driver's shortest path; otherwise cuLaunchKernelEx. Calls allocate nothing.
// Copyable; thread-safe to call concurrently (each call passes its own params).
class PreparedLaunch {
 public:
  // Throws CudaError when the driver is unusable or `function` is empty.
  PreparedLaunch(const Function& function, const LaunchConfig& config);

  void operator()(void** params) const;
  void set_stream(StreamRef stream) noexcept { config_.stream = stream; }
  void set_grid(Dim3 grid) noexcept { config_.grid = grid; }
  const LaunchConfig& config() const noexcept { return config_; }
  const Function& function() const noexcept { return function_; }

 private:
  Function function_;
  LaunchConfig config_;
  void* driver_entry_ = nullptr;  // cuLaunchKernel or cuLaunchKernelEx, resolved once
  bool extended_ = false;         // needs launch attributes, so cuLaunchKernelEx
};

}  // namespace ww::runtime
