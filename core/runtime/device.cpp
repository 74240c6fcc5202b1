// Device enumeration and properties, read attribute by attribute (cuDeviceGetProperties is deprecated).
#include "ww/runtime/device.hpp"

#include <cstdio>
#include <ostream>
#include <sstream>
#include <string>

#include "driver_api.hpp"

namespace ww::runtime {

int device_count() {
  // cuInit reports "no device" as an error; to a caller asking how many there are, that is just zero.
  if (detail::loaded_api() != nullptr && detail::init_result() == detail::CUDA_ERROR_NO_DEVICE) return 0;
  int count = 0;
  WW_CU(cuDeviceGetCount, &count);
  return count;
}

DeviceInfo device_info(int ordinal) {
  detail::CUdevice dev = 0;
  WW_CU(cuDeviceGet, &dev, ordinal);
  auto attr = [dev](int attribute) {
    int value = 0;
    WW_CU(cuDeviceGetAttribute, &value, attribute, dev);
    return value;
  };
  DeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  WW_CU(cuDeviceGetName, name, static_cast<int>(sizeof(name) - 1), dev);
  info.name = name;
  info.cc_major = attr(detail::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info.cc_minor = attr(detail::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.multiprocessor_count = attr(detail::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info.max_threads_per_block = attr(detail::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  info.max_threads_per_multiprocessor = attr(detail::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  info.warp_size = attr(detail::CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  info.max_registers_per_block = attr(detail::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  info.max_shared_memory_per_block = attr(detail::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  info.max_shared_memory_per_block_optin = attr(detail::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  info.max_shared_memory_per_multiprocessor = attr(detail::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  info.l2_cache_size = attr(detail::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  info.cluster_launch = attr(detail::CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH) != 0;
  info.cooperative_launch = attr(detail::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH) != 0;
  info.pci_domain = attr(detail::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
  info.pci_bus = attr(detail::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
  info.pci_device = attr(detail::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
  WW_CU(cuDeviceTotalMem, &info.total_memory, dev);
  return info;
}

std::string DeviceInfo::to_string() const {
  char pci[32];
  std::snprintf(pci, sizeof(pci), "%04x:%02x:%02x", pci_domain, pci_bus, pci_device);
  std::ostringstream os;
  os << "device " << ordinal << ": " << name << "\n"
     << "  compute capability: " << cc_major << "." << cc_minor << " (sm_" << compute_capability() << ")\n"
     << "  multiprocessors: " << multiprocessor_count << "\n"
     << "  max threads per block: " << max_threads_per_block << "\n"
     << "  max threads per multiprocessor: " << max_threads_per_multiprocessor << "\n"
     << "  warp size: " << warp_size << "\n"
     << "  max registers per block: " << max_registers_per_block << "\n"
     << "  shared memory per block: " << max_shared_memory_per_block << " B (opt-in "
     << max_shared_memory_per_block_optin << " B)\n"
     << "  shared memory per multiprocessor: " << max_shared_memory_per_multiprocessor << " B\n"
     << "  L2 cache: " << l2_cache_size << " B\n"
     << "  global memory: " << total_memory << " B\n"
     << "  cluster launch: " << (cluster_launch ? "yes" : "no") << "\n"
     << "  cooperative launch: " << (cooperative_launch ? "yes" : "no") << "\n"
     << "  PCI: " << pci << "\n";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const DeviceInfo& info) { return os << info.to_string(); }

}  // namespace ww::runtime
