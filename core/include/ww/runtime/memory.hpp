// Device memory for tests and tools: an owning buffer, copies, fills and pointer queries. Kernels of real
// programs get their memory from the framework (PyTorch, CuPy) through DLPack instead.
//
// All functions work in the current context (see context.hpp). Async copies from or to pageable host
// memory are staged by the driver and may return only once the copy is done; use pinned memory for overlap.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ww/runtime/stream.hpp"

namespace ww::runtime {

// A device address (CUdeviceptr). Integer rather than pointer: it must never be dereferenced on the host.
using DevicePtr = std::uint64_t;

// Owns one cuMemAlloc allocation (RAII, movable, not copyable). The buffer remembers its context and can
// be destroyed from any thread; using one buffer from several threads is safe, destroying it while in
// use is not.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // Allocates `bytes` in the current context; 0 gives an empty buffer.
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  DevicePtr ptr() const noexcept { return ptr_; }
  // The address as a typed pointer, e.g. to store in a kernel parameter; device memory, never dereference.
  template <class T = void>
  T* data() const noexcept {
    return reinterpret_cast<T*>(static_cast<std::uintptr_t>(ptr_));
  }
  std::size_t size() const noexcept { return size_; }
  explicit operator bool() const noexcept { return ptr_ != 0; }
  // Frees now; the buffer becomes empty.
  void reset() noexcept;

 private:
  DevicePtr ptr_ = 0;
  std::size_t size_ = 0;
  void* context_ = nullptr;
};

void memcpy_htod(DevicePtr dst, const void* src, std::size_t bytes);
void memcpy_dtoh(void* dst, DevicePtr src, std::size_t bytes);
void memcpy_dtod(DevicePtr dst, DevicePtr src, std::size_t bytes);
void memcpy_htod_async(DevicePtr dst, const void* src, std::size_t bytes, StreamRef stream);
void memcpy_dtoh_async(void* dst, DevicePtr src, std::size_t bytes, StreamRef stream);
void memcpy_dtod_async(DevicePtr dst, DevicePtr src, std::size_t bytes, StreamRef stream);

// Fill `count` elements of 1 or 4 bytes.
void memset_d8(DevicePtr dst, std::uint8_t value, std::size_t count);
void memset_d32(DevicePtr dst, std::uint32_t value, std::size_t count);
void memset_d8_async(DevicePtr dst, std::uint8_t value, std::size_t count, StreamRef stream);
void memset_d32_async(DevicePtr dst, std::uint32_t value, std::size_t count, StreamRef stream);

// Ordinal of the device that owns `ptr` (CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL); CudaError for a host
// pointer or an address the driver does not know.
int pointer_device(DevicePtr ptr);

// What the driver knows an address as (CU_POINTER_ATTRIBUTE_MEMORY_TYPE). `unknown` for an address no CUDA
// context allocated, mapped or registered (pageable host memory), and wherever no driver is usable: the
// question is then answered, not refused. It never raises for an unknown address, so probing host memory
// leaves no API error in a sanitizer's report (cuPointerGetAttribute would return CUDA_ERROR_INVALID_VALUE).
// Makes no context current.
enum class MemoryType { unknown = 0, host = 1, device = 2, array = 3, unified = 4 };
MemoryType pointer_memory_type(std::uintptr_t address);

}  // namespace ww::runtime
