// Private: the CUDA driver API as warpweave sees it, declared by hand so the core builds and imports on
// machines without the CUDA toolkit. Only the types and entry points the runtime uses are here; their
// layouts and values are copied from CUDA 13.0's cuda.h and are part of the driver's stable ABI.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ww::runtime::detail {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;  // 64-bit builds only, as in cuda.h
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;

inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
inline constexpr CUresult CUDA_ERROR_NOT_INITIALIZED = 3;
inline constexpr CUresult CUDA_ERROR_DEINITIALIZED = 4;
inline constexpr CUresult CUDA_ERROR_STUB_LIBRARY = 34;
inline constexpr CUresult CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER = 36;
inline constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
inline constexpr CUresult CUDA_ERROR_INVALID_CONTEXT = 201;
inline constexpr CUresult CUDA_ERROR_INVALID_HANDLE = 400;
inline constexpr CUresult CUDA_ERROR_NOT_READY = 600;
inline constexpr CUresult CUDA_ERROR_CONTEXT_IS_DESTROYED = 709;

// CUdriverProcAddress_flags: LEGACY_STREAM pins the non-"_ptds/_ptsz" variants, so stream 0 is the legacy
// default stream no matter how the caller was compiled.
inline constexpr std::uint64_t CU_GET_PROC_ADDRESS_LEGACY_STREAM = 1;
inline constexpr int CU_GET_PROC_ADDRESS_SUCCESS = 0;

inline constexpr int CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1;
inline constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8;
inline constexpr int CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10;
inline constexpr int CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK = 12;
inline constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
inline constexpr int CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33;
inline constexpr int CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34;
inline constexpr int CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38;
inline constexpr int CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39;
inline constexpr int CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
inline constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81;
inline constexpr int CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH = 95;
inline constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;
inline constexpr int CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH = 120;

inline constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;

inline constexpr int CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2;
inline constexpr int CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9;

inline constexpr int CU_JIT_INFO_LOG_BUFFER = 3;
inline constexpr int CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4;
inline constexpr int CU_JIT_ERROR_LOG_BUFFER = 5;
inline constexpr int CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;
inline constexpr int CU_JIT_LOG_VERBOSE = 12;

inline constexpr unsigned CU_STREAM_NON_BLOCKING = 0x1;
inline constexpr unsigned CU_EVENT_DISABLE_TIMING = 0x2;

inline constexpr int CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2;
inline constexpr int CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4;
inline constexpr int CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6;
inline constexpr int CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT = 7;
inline constexpr int CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION = 11;
inline constexpr int CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT = 12;

// CUlaunchAttribute: the id, padding to 8 bytes, then a 64-byte union of which we use these members (the
// programmatic-serialization flag is an int like cooperative; the preferred cluster is laid out as clusterDim).
struct CUlaunchAttribute {
  int id;
  char pad[4];
  union {
    char raw[64];
    int cooperative;
    struct {
      unsigned x, y, z;
    } clusterDim;
    struct {
      void* event;
      int flags;
      int triggerAtBlockStart;
    } programmaticEvent;
    struct {
      void* event;
      int flags;
    } launchCompletionEvent;
  } value;
};
static_assert(sizeof(CUlaunchAttribute) == 72);

struct CUlaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute* attrs;
  unsigned numAttrs;
};
static_assert(sizeof(CUlaunchConfig) == 56 && offsetof(CUlaunchConfig, hStream) == 32);

// Every entry point we call, with the CUDA version whose ABI the declared signature matches. That
// version is what we pass to cuGetProcAddress: it selects e.g. cuMemAlloc_v2 rather than cuMemAlloc, and
// keeps cuCtxSynchronize/cuCtxGetDevice on their pre-13.0 signatures even when the driver is newer.
// A signature here must never change; a new ABI of the same function gets a new table entry.
#define WW_CUDA_DRIVER_FUNCTIONS(X)                                                                          \
  X(cuGetErrorName, 12000, (CUresult, const char**))                                                         \
  X(cuGetErrorString, 12000, (CUresult, const char**))                                                       \
  X(cuInit, 12000, (unsigned))                                                                               \
  X(cuDeviceGetCount, 12000, (int*))                                                                         \
  X(cuDeviceGet, 12000, (CUdevice*, int))                                                                    \
  X(cuDeviceGetName, 12000, (char*, int, CUdevice))                                                          \
  X(cuDeviceGetAttribute, 12000, (int*, int, CUdevice))                                                      \
  X(cuDeviceTotalMem, 12000, (std::size_t*, CUdevice))                                                       \
  X(cuDevicePrimaryCtxRetain, 12000, (CUcontext*, CUdevice))                                                 \
  X(cuCtxGetCurrent, 12000, (CUcontext*))                                                                    \
  X(cuCtxSetCurrent, 12000, (CUcontext))                                                                     \
  X(cuCtxPushCurrent, 12000, (CUcontext))                                                                    \
  X(cuCtxPopCurrent, 12000, (CUcontext*))                                                                    \
  X(cuCtxGetDevice, 12000, (CUdevice*))                                                                      \
  X(cuCtxSynchronize, 12000, ())                                                                             \
  X(cuModuleLoadDataEx, 12000, (CUmodule*, const void*, unsigned, int*, void**))                             \
  X(cuModuleUnload, 12000, (CUmodule))                                                                       \
  X(cuModuleGetFunction, 12000, (CUfunction*, CUmodule, const char*))                                        \
  X(cuFuncGetAttribute, 12000, (int*, int, CUfunction))                                                      \
  X(cuFuncSetAttribute, 12000, (CUfunction, int, int))                                                       \
  X(cuLaunchKernel, 12000,                                                                                   \
    (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**,     \
     void**))                                                                                                \
  X(cuLaunchKernelEx, 12000, (const CUlaunchConfig*, CUfunction, void**, void**))                            \
  X(cuStreamCreate, 12000, (CUstream*, unsigned))                                                            \
  X(cuStreamDestroy, 12000, (CUstream))                                                                      \
  X(cuStreamSynchronize, 12000, (CUstream))                                                                  \
  X(cuStreamQuery, 12000, (CUstream))                                                                        \
  X(cuEventCreate, 12000, (CUevent*, unsigned))                                                              \
  X(cuEventDestroy, 12000, (CUevent))                                                                        \
  X(cuEventRecord, 12000, (CUevent, CUstream))                                                               \
  X(cuEventSynchronize, 12000, (CUevent))                                                                    \
  X(cuEventQuery, 12000, (CUevent))                                                                          \
  X(cuEventElapsedTime, 12000, (float*, CUevent, CUevent))                                                   \
  X(cuMemAlloc, 12000, (CUdeviceptr*, std::size_t))                                                          \
  X(cuMemFree, 12000, (CUdeviceptr))                                                                         \
  X(cuMemcpyHtoD, 12000, (CUdeviceptr, const void*, std::size_t))                                            \
  X(cuMemcpyDtoH, 12000, (void*, CUdeviceptr, std::size_t))                                                  \
  X(cuMemcpyDtoD, 12000, (CUdeviceptr, CUdeviceptr, std::size_t))                                            \
  X(cuMemcpyHtoDAsync, 12000, (CUdeviceptr, const void*, std::size_t, CUstream))                             \
  X(cuMemcpyDtoHAsync, 12000, (void*, CUdeviceptr, std::size_t, CUstream))                                   \
  X(cuMemcpyDtoDAsync, 12000, (CUdeviceptr, CUdeviceptr, std::size_t, CUstream))                             \
  X(cuMemsetD8, 12000, (CUdeviceptr, unsigned char, std::size_t))                                            \
  X(cuMemsetD32, 12000, (CUdeviceptr, unsigned, std::size_t))                                                \
  X(cuMemsetD8Async, 12000, (CUdeviceptr, unsigned char, std::size_t, CUstream))                             \
  X(cuMemsetD32Async, 12000, (CUdeviceptr, unsigned, std::size_t, CUstream))                                 \
  X(cuPointerGetAttribute, 12000, (void*, int, CUdeviceptr))                                                 \
  X(cuPointerGetAttributes, 12000, (unsigned, int*, void**, CUdeviceptr))                                    \
  /* the first parameter of both encoders is a CUtensorMap*: 128 bytes, 64-byte aligned */                \
  X(cuTensorMapEncodeTiled, 12000,                                                                           \
    (void*, int, std::uint32_t, void*, const std::uint64_t*, const std::uint64_t*,                          \
     const std::uint32_t*, const std::uint32_t*, int, int, int, int))                                        \
  X(cuTensorMapEncodeIm2col, 12000,                                                                          \
    (void*, int, std::uint32_t, void*, const std::uint64_t*, const std::uint64_t*, const int*,              \
     const int*, std::uint32_t, std::uint32_t, const std::uint32_t*, int, int, int, int))

// The resolved entry points. A null member means the driver lacks that function at the requested ABI;
// `fn()` turns that into a CudaError instead of a crash.
struct DriverApi {
#define WW_DECLARE_MEMBER(name, version, params) CUresult (*name) params = nullptr;
  WW_CUDA_DRIVER_FUNCTIONS(WW_DECLARE_MEMBER)
#undef WW_DECLARE_MEMBER
  int driver_version = 0;  // from cuDriverGetVersion, e.g. 13000
  std::string library;     // the path or name handed to dlopen
};

// Loads the driver on first use (thread-safe) and returns the table; throws CudaError naming `call` when
// the driver is missing, unusable, or failed cuInit. After the first call this is one guarded load.
const DriverApi& api(const char* call);

// The table when libcuda loaded, even if cuInit failed (used to name errors); null otherwise. Never throws.
const DriverApi* loaded_api() noexcept;

// What cuInit returned, or -1 when the library did not load. Never throws.
CUresult init_result() noexcept;

// The enum spelling and the sentence of a CUresult, from the driver when it loaded, else from the few
// codes the runtime raises itself.
std::string error_name(CUresult result);
std::string error_string(CUresult result);

// Throws the CudaError for a call the driver does not provide at the ABI we declared.
[[noreturn]] void throw_missing(const char* call);

// Throws a CudaError for `result` from `call`. Kept out of line so the success path stays small.
[[noreturn]] void throw_error(CUresult result, const char* call, std::string detail = {});

inline void check(CUresult result, const char* call) {
  if (result != CUDA_SUCCESS) [[unlikely]] throw_error(result, call);
}

}  // namespace ww::runtime::detail

// Calls a driver entry point through the table and throws CudaError naming it on failure.
#define WW_CU(name, ...)                                                                                   \
  do {                                                                                                     \
    const auto& ww_api_ = ::ww::runtime::detail::api(#name);                                               \
    if (!ww_api_.name) [[unlikely]] ::ww::runtime::detail::throw_missing(#name);                           \
    ::ww::runtime::detail::check(ww_api_.name(__VA_ARGS__), #name);                                        \
  } while (0)

// Calls a driver entry point and returns its CUresult unchecked, for codes that are answers rather than
// errors (CUDA_ERROR_NOT_READY from a query).
#define WW_CU_RESULT(name, ...)                                                                            \
  ([&]() -> ::ww::runtime::detail::CUresult {                                                              \
    const auto& ww_api_ = ::ww::runtime::detail::api(#name);                                               \
    if (!ww_api_.name) [[unlikely]] ::ww::runtime::detail::throw_missing(#name);                           \
    return ww_api_.name(__VA_ARGS__);                                                                      \
  }())
