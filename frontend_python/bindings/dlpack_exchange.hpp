// The DLPack C exchange API (DLPack 1.x, `type(tensor).__dlpack_c_exchange_api__`, a PyCapsule named
// "dlpack_exchange_api"): a framework's table of C functions that describe one of its tensors without a Python
// call. Only the parts the compiled call reads are declared; the layout is DLPack's ABI.
#pragma once

#include <cstdint>

namespace ww::py::dlpack {

struct Version {
  uint32_t major, minor;
};

struct Device {
  int32_t device_type;
  int32_t device_id;
};

struct DataType {
  uint8_t code, bits;
  uint16_t lanes;
};

struct Tensor {
  void* data;
  Device device;
  int32_t ndim;
  DataType dtype;
  int64_t* shape;
  int64_t* strides;  // never null for ndim > 0 from DLPack 1.2 on
  uint64_t byte_offset;
};

struct ExchangeApiHeader {
  Version version;
  ExchangeApiHeader* prev_api;
};

// Fills `out` with a non-owning view valid until control returns to the framework; 0 on success, -1 with a
// Python exception set.
using TensorFromPyObject = int (*)(void* py_object, Tensor* out);

struct ExchangeApi {
  ExchangeApiHeader header;
  void* managed_tensor_allocator;
  void* managed_tensor_from_py_object_no_sync;
  void* managed_tensor_to_py_object_no_sync;
  TensorFromPyObject dltensor_from_py_object_no_sync;  // may be null
  void* current_work_stream;
};

constexpr uint32_t kMajorVersion = 1;
constexpr const char* kCapsuleName = "dlpack_exchange_api";

}  // namespace ww::py::dlpack
