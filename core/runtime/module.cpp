// Module loading through cuModuleLoadDataEx, with the JIT logs captured for error messages.
#include "ww/runtime/module.hpp"

#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>

#include "context_guard.hpp"
#include "driver_api.hpp"

namespace ww::runtime {
namespace {

constexpr std::size_t kLogBytes = 16 * 1024;
constexpr detail::CUresult CUDA_ERROR_NOT_FOUND = 500;

bool is_binary(const void* image, std::size_t size) {
  constexpr unsigned char kElf[4] = {0x7f, 'E', 'L', 'F'};
  constexpr unsigned char kFatbin[4] = {0x50, 0xed, 0x55, 0xba};  // 0xba55ed50, little-endian
  return size >= 4 && (std::memcmp(image, kElf, 4) == 0 || std::memcmp(image, kFatbin, 4) == 0);
}

std::string trimmed(const std::string& buffer) {
  std::string s(buffer.c_str());  // the driver writes a NUL-terminated string into a larger buffer
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

Module Module::load(const void* image, std::size_t size) {
  if (image == nullptr || size == 0) {
    detail::throw_error(detail::CUDA_ERROR_INVALID_VALUE, "cuModuleLoadDataEx", "empty module image");
  }
  Module m;
  m.context_ = detail::ensure_context("cuModuleLoadDataEx");

  // PTX is read up to its NUL; a string_view of PTX source usually has none.
  std::string ptx_copy;
  const void* data = image;
  if (!is_binary(image, size) && static_cast<const char*>(image)[size - 1] != '\0') {
    ptx_copy.assign(static_cast<const char*>(image), size);
    data = ptx_copy.c_str();
  }

  std::string error_log(kLogBytes, '\0');
  std::string info_log(kLogBytes, '\0');
  int options[] = {detail::CU_JIT_ERROR_LOG_BUFFER, detail::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                   detail::CU_JIT_INFO_LOG_BUFFER, detail::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                   detail::CU_JIT_LOG_VERBOSE};
  void* values[] = {error_log.data(), reinterpret_cast<void*>(static_cast<std::uintptr_t>(kLogBytes - 1)),
                    info_log.data(), reinterpret_cast<void*>(static_cast<std::uintptr_t>(kLogBytes - 1)),
                    reinterpret_cast<void*>(static_cast<std::uintptr_t>(1))};
  detail::CUmodule module = nullptr;
  const detail::CUresult r =
      WW_CU_RESULT(cuModuleLoadDataEx, &module, data, static_cast<unsigned>(std::size(options)), options, values);
  if (r != detail::CUDA_SUCCESS) {
    std::string log = trimmed(error_log);
    const std::string info = trimmed(info_log);
    if (!info.empty()) log += (log.empty() ? "" : "\n") + info;
    detail::throw_error(r, "cuModuleLoadDataEx",
                        std::string(is_binary(image, size) ? "loading a cubin/fatbin" : "JIT-compiling PTX") +
                            (log.empty() ? "" : "; JIT log:\n" + log));
  }
  m.module_ = module;
  m.jit_log_ = trimmed(info_log);
  return m;
}

Module::~Module() { reset(); }

Module::Module(Module&& other) noexcept
    : module_(std::exchange(other.module_, nullptr)),
      context_(std::exchange(other.context_, nullptr)),
      jit_log_(std::move(other.jit_log_)) {}

Module& Module::operator=(Module&& other) noexcept {
  if (this != &other) {
    reset();
    module_ = std::exchange(other.module_, nullptr);
    context_ = std::exchange(other.context_, nullptr);
    jit_log_ = std::move(other.jit_log_);
  }
  return *this;
}

void Module::reset() noexcept {
  if (module_ == nullptr) return;
  try {
    detail::ContextGuard guard(static_cast<detail::CUcontext>(context_));
    WW_CU(cuModuleUnload, static_cast<detail::CUmodule>(module_));
  } catch (...) {
    // A destructor cannot report; at process exit the driver may already be gone.
  }
  module_ = nullptr;
}

Function Module::function(const std::string& name) const {
  detail::CUfunction fn = nullptr;
  const detail::CUresult r =
      WW_CU_RESULT(cuModuleGetFunction, &fn, static_cast<detail::CUmodule>(module_), name.c_str());
  if (r != detail::CUDA_SUCCESS) {
    detail::throw_error(r, "cuModuleGetFunction",
                        r == CUDA_ERROR_NOT_FOUND
                            ? "no kernel named '" + name + "' in the module (C++ kernels need extern \"C\")"
                            : "kernel '" + name + "'");
  }
  return Function(fn, context_, name);
}

int Function::attribute(int attr) const {
  int value = 0;
  const detail::CUresult r = WW_CU_RESULT(cuFuncGetAttribute, &value, attr, static_cast<detail::CUfunction>(function_));
  if (r != detail::CUDA_SUCCESS) {
    detail::throw_error(r, "cuFuncGetAttribute", "attribute " + std::to_string(attr) + " of kernel '" + name_ + "'");
  }
  return value;
}

void Function::set_attribute(int attr, int value) {
  const detail::CUresult r = WW_CU_RESULT(cuFuncSetAttribute, static_cast<detail::CUfunction>(function_), attr, value);
  if (r != detail::CUDA_SUCCESS) {
    detail::throw_error(
        r, "cuFuncSetAttribute",
        "attribute " + std::to_string(attr) + " = " + std::to_string(value) + " on kernel '" + name_ + "'");
  }
}

}  // namespace ww::runtime
