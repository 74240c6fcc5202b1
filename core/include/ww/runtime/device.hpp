// CUDA devices and what the compiler and launcher need to know about them.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>

namespace ww::runtime {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;  // e.g. "NVIDIA H200"
  int cc_major = 0;  // compute capability, e.g. 9
  int cc_minor = 0;  // e.g. 0
  int multiprocessor_count = 0;
  int max_threads_per_block = 0;
  int max_threads_per_multiprocessor = 0;
  int warp_size = 0;
  int max_registers_per_block = 0;
  int max_shared_memory_per_block = 0;        // without opt-in: 48 KiB
  int max_shared_memory_per_block_optin = 0;  // the ceiling for MAX_DYNAMIC_SHARED_SIZE_BYTES
  int max_shared_memory_per_multiprocessor = 0;
  int l2_cache_size = 0;         // bytes
  std::size_t total_memory = 0;  // bytes
  bool cluster_launch = false;   // thread block clusters (sm_90+)
  bool cooperative_launch = false;
  int pci_domain = 0, pci_bus = 0, pci_device = 0;

  // 10 * major + minor, e.g. 90.
  int compute_capability() const { return cc_major * 10 + cc_minor; }
  // Multi-line "key: value" text, one property a line.
  std::string to_string() const;
};

std::ostream& operator<<(std::ostream& os, const DeviceInfo& info);

// Number of CUDA devices; 0 when the driver is installed but sees no device. Throws CudaError when the
// driver cannot be loaded.
int device_count();

// Properties of device `ordinal`. Needs no context.
DeviceInfo device_info(int ordinal);

}  // namespace ww::runtime
