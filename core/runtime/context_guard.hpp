// Private: binding contexts for the runtime's own calls.
#pragma once

#include "driver_api.hpp"

namespace ww::runtime::detail {

// The context current on this thread; when there is none, the chosen device's primary context is made
// current first. Throws CudaError naming `call` when the driver is unusable.
CUcontext ensure_context(const char* call);

// Device `ordinal`'s primary context, retained on first use and kept for the life of the process.
CUcontext primary_context(int ordinal);

// Makes `ctx` current for a scope when another (or none) is, and restores the previous one after. Objects
// remember the context they were created in and use this to free themselves from any thread. A null
// `ctx` (an object that never got a handle) only makes sure some context is current.
class ContextGuard {
 public:
  explicit ContextGuard(CUcontext ctx);
  ~ContextGuard();
  ContextGuard(const ContextGuard&) = delete;
  ContextGuard& operator=(const ContextGuard&) = delete;

 private:
  bool pushed_ = false;
};

}  // namespace ww::runtime::detail
