// Kernel launch. The success path is one driver call on a stack-built config; everything that allocates
// (error text, context rebinding) lives in the out-of-line failure path.
#include "ww/runtime/launch.hpp"

#include <cstdio>
#include <string>

#include "context_guard.hpp"
#include "driver_api.hpp"

namespace ww::runtime {
namespace {

using detail::CUresult;
using LaunchKernelFn = CUresult (*)(detail::CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    unsigned, detail::CUstream, void**, void**);
using LaunchKernelExFn = CUresult (*)(const detail::CUlaunchConfig*, detail::CUfunction, void**, void**);

constexpr std::size_t kDefaultSharedMemoryLimit = 48 * 1024;
constexpr std::size_t kMaxSharedMemoryArgument = 0xffffffffu;  // CUlaunchConfig::sharedMemBytes is unsigned

bool has_cluster(const LaunchConfig& c) { return c.cluster.x != 0 && c.cluster.y != 0 && c.cluster.z != 0; }

bool has_preferred_cluster(const LaunchConfig& c) {
  return c.preferred_cluster.x != 0 && c.preferred_cluster.y != 0 && c.preferred_cluster.z != 0;
}

// Builds the attributes into `attrs` (room for 6) and returns how many were used.
unsigned fill_attributes(const LaunchConfig& c, detail::CUlaunchAttribute* attrs) {
  unsigned n = 0;
  if (has_cluster(c)) {
    attrs[n] = {};
    attrs[n].id = detail::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[n].value.clusterDim = {c.cluster.x, c.cluster.y, c.cluster.z};
    ++n;
  }
  if (c.cooperative) {
    attrs[n] = {};
    attrs[n].id = detail::CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attrs[n].value.cooperative = 1;
    ++n;
  }
  if (c.programmatic_serialization) {
    attrs[n] = {};
    attrs[n].id = detail::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attrs[n].value.cooperative = 1;  // the union's int member
    ++n;
  }
  if (has_preferred_cluster(c)) {
    attrs[n] = {};
    attrs[n].id = detail::CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION;
    attrs[n].value.clusterDim = {c.preferred_cluster.x, c.preferred_cluster.y, c.preferred_cluster.z};
    ++n;
  }
  if (c.programmatic_event != 0) {
    attrs[n] = {};
    attrs[n].id = detail::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT;
    attrs[n].value.programmaticEvent = {reinterpret_cast<void*>(c.programmatic_event), c.programmatic_event_flags,
                                        c.programmatic_event_trigger_at_block_start ? 1 : 0};
    ++n;
  }
  if (c.launch_completion_event != 0) {
    attrs[n] = {};
    attrs[n].id = detail::CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT;
    attrs[n].value.launchCompletionEvent = {reinterpret_cast<void*>(c.launch_completion_event),
                                            c.launch_completion_event_flags};
    ++n;
  }
  return n;
}

CUresult launch_ex(LaunchKernelExFn fn, const Function& f, const LaunchConfig& c, void** params) {
  detail::CUlaunchAttribute attrs[6];
  detail::CUlaunchConfig cfg;
  cfg.gridDimX = c.grid.x;
  cfg.gridDimY = c.grid.y;
  cfg.gridDimZ = c.grid.z;
  cfg.blockDimX = c.block.x;
  cfg.blockDimY = c.block.y;
  cfg.blockDimZ = c.block.z;
  cfg.sharedMemBytes = static_cast<unsigned>(c.dynamic_smem);
  cfg.hStream = static_cast<detail::CUstream>(c.stream.handle());
  cfg.numAttrs = fill_attributes(c, attrs);
  cfg.attrs = cfg.numAttrs != 0 ? attrs : nullptr;
  return fn(&cfg, static_cast<detail::CUfunction>(f.handle()), params, nullptr);
}

CUresult launch_plain(LaunchKernelFn fn, const Function& f, const LaunchConfig& c, void** params) {
  return fn(static_cast<detail::CUfunction>(f.handle()), c.grid.x, c.grid.y, c.grid.z, c.block.x, c.block.y, c.block.z,
            static_cast<unsigned>(c.dynamic_smem), static_cast<detail::CUstream>(c.stream.handle()), params, nullptr);
}

std::string dims(Dim3 d) {
  // Appended piecewise: GCC 12 warns falsely (-Wrestrict) on "(" + std::to_string(...).
  std::string s = "(";
  s += std::to_string(d.x);
  s += ", ";
  s += std::to_string(d.y);
  s += ", ";
  s += std::to_string(d.z);
  s += ")";
  return s;
}

std::string describe(const Function& f, const LaunchConfig& c) {
  char stream[32];
  std::snprintf(stream, sizeof(stream), "%p", c.stream.handle());
  std::string s = "kernel '" + f.name() + "': grid " + dims(c.grid) + ", block " + dims(c.block) + " = " +
                  std::to_string(c.block.volume()) + " threads, cluster " +
                  (has_cluster(c) ? dims(c.cluster) : std::string("none")) + ", dynamic shared memory " +
                  std::to_string(c.dynamic_smem) + " B, stream " + stream + (c.cooperative ? ", cooperative" : "");
  if (c.dynamic_smem > kDefaultSharedMemoryLimit) {
    s += " (dynamic shared memory above 48 KiB needs Function::set_max_dynamic_shared_memory first)";
  }
  return s;
}

// The failure path. A launch from a thread where no context, or another one, is current fails before
// anything is queued (the driver's code for it varies); binding the kernel's own context and trying once
// more fixes exactly that case and costs nothing on the success path.
[[gnu::noinline, gnu::cold]] void launch_failed(CUresult r, const char* call, const Function& f, const LaunchConfig& c,
                                                void** params, void* entry, bool extended) {
  detail::CUcontext current = nullptr;
  const detail::DriverApi& a = detail::api(call);
  if (f.context() != nullptr && a.cuCtxGetCurrent(&current) == detail::CUDA_SUCCESS && current != f.context()) {
    detail::ContextGuard guard(static_cast<detail::CUcontext>(f.context()));
    r = extended ? launch_ex(reinterpret_cast<LaunchKernelExFn>(entry), f, c, params)
                 : launch_plain(reinterpret_cast<LaunchKernelFn>(entry), f, c, params);
    if (r == detail::CUDA_SUCCESS) return;
  }
  detail::throw_error(r, call, describe(f, c));
}

// Arguments the driver would never see correctly: a null kernel, or a size its 32-bit field would truncate.
[[noreturn, gnu::cold]] void reject(const Function& f, const LaunchConfig& c, const char* call) {
  if (f.handle() == nullptr) {
    detail::throw_error(detail::CUDA_ERROR_INVALID_HANDLE, call, "launch of an empty Function");
  }
  detail::throw_error(detail::CUDA_ERROR_INVALID_VALUE, call,
                      "dynamic shared memory does not fit 32 bits; " + describe(f, c));
}

}  // namespace

void launch(const Function& function, const LaunchConfig& config, void** params) {
  const detail::DriverApi& a = detail::api("cuLaunchKernelEx");  // entries of CUDA 12.0 are never null
  if (function.handle() == nullptr || config.dynamic_smem > kMaxSharedMemoryArgument) [[unlikely]] {
    reject(function, config, "cuLaunchKernelEx");
  }
  const CUresult r = launch_ex(a.cuLaunchKernelEx, function, config, params);
  if (r != detail::CUDA_SUCCESS) [[unlikely]] {
    launch_failed(r, "cuLaunchKernelEx", function, config, params, reinterpret_cast<void*>(a.cuLaunchKernelEx), true);
  }
}

PreparedLaunch::PreparedLaunch(const Function& function, const LaunchConfig& config)
    : function_(function), config_(config), extended_(has_cluster(config) || config.cooperative ||
                                                     config.programmatic_serialization ||
                                                     has_preferred_cluster(config) ||
                                                     config.programmatic_event != 0 ||
                                                     config.launch_completion_event != 0) {
  const char* call = extended_ ? "cuLaunchKernelEx" : "cuLaunchKernel";
  const detail::DriverApi& a = detail::api(call);
  driver_entry_ = extended_ ? reinterpret_cast<void*>(a.cuLaunchKernelEx) : reinterpret_cast<void*>(a.cuLaunchKernel);
  if (function.handle() == nullptr || config.dynamic_smem > kMaxSharedMemoryArgument) reject(function, config, call);
}

void PreparedLaunch::operator()(void** params) const {
  const CUresult r = extended_
                         ? launch_ex(reinterpret_cast<LaunchKernelExFn>(driver_entry_), function_, config_, params)
                         : launch_plain(reinterpret_cast<LaunchKernelFn>(driver_entry_), function_, config_, params);
  if (r != detail::CUDA_SUCCESS) [[unlikely]] {
    launch_failed(r, extended_ ? "cuLaunchKernelEx" : "cuLaunchKernel", function_, config_, params, driver_entry_,
                  extended_);
  }
}

}  // namespace ww::runtime
