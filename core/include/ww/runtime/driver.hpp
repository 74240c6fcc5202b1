// Whether the CUDA driver can be used here. The driver is loaded with dlopen on first use, so nothing of
// CUDA is needed to build, link or import the core.
//
// The library is "libcuda.so.1" as found by the dynamic loader, or the path in the environment variable
// WARPWEAVE_LIBCUDA. It is loaded once per process; changing the variable later has no effect.
#pragma once

#include <string>

namespace ww::runtime {

// True when libcuda loaded, exposes the entry points we need and cuInit succeeded. Never throws.
bool driver_available() noexcept;

// The driver's CUDA version, 1000 * major + 10 * minor (13000 for CUDA 13.0). Throws CudaError when the
// library cannot be loaded.
int driver_version();

// Why the driver cannot be used (the message every call would raise), or "" when it can. Never throws.
std::string driver_unavailable_reason();

}  // namespace ww::runtime
