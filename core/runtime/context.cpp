// Context selection: reuse the current context, else retain and bind a primary context.
#include "ww/runtime/context.hpp"

#include <mutex>
#include <string>
#include <vector>

#include "context_guard.hpp"
#include "driver_api.hpp"

namespace ww::runtime::detail {
namespace {

constexpr CUresult CUDA_ERROR_INVALID_DEVICE = 101;

std::mutex& primaries_mutex() {
  static auto* m = new std::mutex;
  return *m;
}

// Indexed by ordinal; sized on first use. Leaked with the driver handle so that objects destroyed at exit
// can still find their context.
std::vector<CUcontext>& primaries() {
  static auto* v = new std::vector<CUcontext>;
  return *v;
}

thread_local int t_chosen_device = 0;

}  // namespace

CUcontext primary_context(int ordinal) {
  std::lock_guard lock(primaries_mutex());
  auto& table = primaries();
  if (table.empty()) {
    int count = 0;
    WW_CU(cuDeviceGetCount, &count);
    table.assign(static_cast<std::size_t>(count), nullptr);
  }
  if (ordinal < 0 || static_cast<std::size_t>(ordinal) >= table.size()) {
    throw_error(CUDA_ERROR_INVALID_DEVICE, "cuDeviceGet",
                "device ordinal " + std::to_string(ordinal) + " is out of range; this machine has " +
                    std::to_string(table.size()) + " CUDA device(s)");
  }
  CUcontext& slot = table[static_cast<std::size_t>(ordinal)];
  if (slot == nullptr) {
    CUdevice device = 0;
    WW_CU(cuDeviceGet, &device, ordinal);
    CUcontext ctx = nullptr;
    WW_CU(cuDevicePrimaryCtxRetain, &ctx, device);
    slot = ctx;
  }
  return slot;
}

CUcontext ensure_context(const char* call) {
  const DriverApi& a = api(call);
  CUcontext ctx = nullptr;
  check(a.cuCtxGetCurrent(&ctx), "cuCtxGetCurrent");
  if (ctx != nullptr) [[likely]] {
    return ctx;
  }
  ctx = primary_context(t_chosen_device);
  check(a.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  return ctx;
}

ContextGuard::ContextGuard(CUcontext ctx) {
  if (ctx == nullptr) {
    ensure_context("cuCtxGetCurrent");
    return;
  }
  CUcontext current = nullptr;
  WW_CU(cuCtxGetCurrent, &current);
  if (current != ctx) {
    WW_CU(cuCtxPushCurrent, ctx);
    pushed_ = true;
  }
}

ContextGuard::~ContextGuard() {
  if (!pushed_) return;
  // Cannot fail after a successful push; nothing sensible to do from a destructor if it did.
  if (const DriverApi* a = loaded_api()) {
    CUcontext popped = nullptr;
    a->cuCtxPopCurrent(&popped);
  }
}

}  // namespace ww::runtime::detail

namespace ww::runtime {

void set_device(int ordinal) {
  detail::CUcontext ctx = detail::primary_context(ordinal);
  WW_CU(cuCtxSetCurrent, ctx);
  detail::t_chosen_device = ordinal;
}

int current_device() {
  detail::ensure_context("cuCtxGetDevice");
  detail::CUdevice device = 0;
  WW_CU(cuCtxGetDevice, &device);
  return device;
}

void synchronize() {
  detail::ensure_context("cuCtxSynchronize");
  WW_CU(cuCtxSynchronize);
}

}  // namespace ww::runtime
