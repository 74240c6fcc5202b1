// Device memory: cuMemAlloc/cuMemFree RAII, copies and fills.
#include "ww/runtime/memory.hpp"

#include <utility>

#include "context_guard.hpp"
#include "driver_api.hpp"
#include "ww/runtime/driver.hpp"

namespace ww::runtime {
namespace {

detail::CUstream as_stream(StreamRef s) { return static_cast<detail::CUstream>(s.handle()); }

}  // namespace

DeviceBuffer::DeviceBuffer(std::size_t bytes) {
  context_ = detail::ensure_context("cuMemAlloc");
  if (bytes == 0) return;  // the driver refuses 0 bytes; an empty buffer is the useful answer
  detail::CUdeviceptr p = 0;
  WW_CU(cuMemAlloc, &p, bytes);
  ptr_ = p;
  size_ = bytes;
}

DeviceBuffer::~DeviceBuffer() { reset(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, 0)),
      size_(std::exchange(other.size_, 0)),
      context_(std::exchange(other.context_, nullptr)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    ptr_ = std::exchange(other.ptr_, 0);
    size_ = std::exchange(other.size_, 0);
    context_ = std::exchange(other.context_, nullptr);
  }
  return *this;
}

void DeviceBuffer::reset() noexcept {
  if (ptr_ != 0) {
    try {
      detail::ContextGuard guard(static_cast<detail::CUcontext>(context_));
      WW_CU(cuMemFree, ptr_);
    } catch (...) {
      // A destructor cannot report; at process exit the driver may already be gone.
    }
  }
  ptr_ = 0;
  size_ = 0;
}

void memcpy_htod(DevicePtr dst, const void* src, std::size_t bytes) {
  detail::ensure_context("cuMemcpyHtoD");
  WW_CU(cuMemcpyHtoD, dst, src, bytes);
}

void memcpy_dtoh(void* dst, DevicePtr src, std::size_t bytes) {
  detail::ensure_context("cuMemcpyDtoH");
  WW_CU(cuMemcpyDtoH, dst, src, bytes);
}

void memcpy_dtod(DevicePtr dst, DevicePtr src, std::size_t bytes) {
  detail::ensure_context("cuMemcpyDtoD");
  WW_CU(cuMemcpyDtoD, dst, src, bytes);
}

void memcpy_htod_async(DevicePtr dst, const void* src, std::size_t bytes, StreamRef stream) {
  detail::ensure_context("cuMemcpyHtoDAsync");
  WW_CU(cuMemcpyHtoDAsync, dst, src, bytes, as_stream(stream));
}

void memcpy_dtoh_async(void* dst, DevicePtr src, std::size_t bytes, StreamRef stream) {
  detail::ensure_context("cuMemcpyDtoHAsync");
  WW_CU(cuMemcpyDtoHAsync, dst, src, bytes, as_stream(stream));
}

void memcpy_dtod_async(DevicePtr dst, DevicePtr src, std::size_t bytes, StreamRef stream) {
  detail::ensure_context("cuMemcpyDtoDAsync");
  WW_CU(cuMemcpyDtoDAsync, dst, src, bytes, as_stream(stream));
}

void memset_d8(DevicePtr dst, std::uint8_t value, std::size_t count) {
  detail::ensure_context("cuMemsetD8");
  WW_CU(cuMemsetD8, dst, value, count);
}

void memset_d32(DevicePtr dst, std::uint32_t value, std::size_t count) {
  detail::ensure_context("cuMemsetD32");
  WW_CU(cuMemsetD32, dst, value, count);
}

void memset_d8_async(DevicePtr dst, std::uint8_t value, std::size_t count, StreamRef stream) {
  detail::ensure_context("cuMemsetD8Async");
  WW_CU(cuMemsetD8Async, dst, value, count, as_stream(stream));
}

void memset_d32_async(DevicePtr dst, std::uint32_t value, std::size_t count, StreamRef stream) {
  detail::ensure_context("cuMemsetD32Async");
  WW_CU(cuMemsetD32Async, dst, value, count, as_stream(stream));
}

int pointer_device(DevicePtr ptr) {
  detail::ensure_context("cuPointerGetAttribute");
  int ordinal = -1;
  WW_CU(cuPointerGetAttribute, &ordinal, detail::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr);
  return ordinal;
}

MemoryType pointer_memory_type(std::uintptr_t address) {
  if (!driver_available()) return MemoryType::unknown;
  int attribute = detail::CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
  unsigned type = 0;  // cuPointerGetAttributes leaves it 0 for an address the driver does not know
  void* data[] = {&type};
  // An error is read the same way: the driver knows no memory there.
  if (WW_CU_RESULT(cuPointerGetAttributes, 1, &attribute, data, address) != detail::CUDA_SUCCESS)
    return MemoryType::unknown;
  return type >= 1 && type <= 4 ? static_cast<MemoryType>(type) : MemoryType::unknown;
}

}  // namespace ww::runtime
