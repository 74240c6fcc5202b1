// The pieces nvjitlink.cpp and nvptxcompiler.cpp share: a CUDA library found at run time and loaded once, and the
// size-then-copy logs both libraries' C APIs hand back.
#pragma once
#include <functional>
#include <initializer_list>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "internal.hpp"

namespace ww::compiler::detail {

// Loaded once and kept for the life of the process (unloading a 100 MB compiler saves nothing worth the risk). A
// failed search is not remembered: set_search_dirs() may make the next one succeed.
template <typename Api>
class LoadedLibrary {
 public:
  using Bind = bool (*)(void*, Api&);
  using Candidates = std::vector<std::string> (*)();
  LoadedLibrary(Candidates candidates, Bind bind, std::string hint)
      : candidates_(candidates), bind_(bind), hint_(std::move(hint)) {}

  // The bound entry points, or nullptr with `why` saying where it looked and how to get the library.
  const Api* get(std::string* why) {
    std::lock_guard lock(mutex_);
    if (loaded_) return &api_;
    std::string tried;
    if (open_library(candidates_(), [this](void* lib) { return bind_(lib, api_); }, &path_, &tried)) {
      loaded_ = true;
      return &api_;
    }
    if (why) *why = hint_ + "; tried:" + tried;
    return nullptr;
  }

 private:
  std::mutex mutex_;
  bool loaded_ = false;
  Api api_;
  std::string path_;
  Candidates candidates_;
  Bind bind_;
  std::string hint_;
};

// The log calls nvJitLink's and nvPTXCompiler's C APIs have alike: (size, copy) of the error and of the info log.
template <typename Handle>
struct LogCalls {
  int (*error_log_size)(Handle, size_t*) = nullptr;
  int (*error_log)(Handle, char*) = nullptr;
  int (*info_log_size)(Handle, size_t*) = nullptr;
  int (*info_log)(Handle, char*) = nullptr;
};

// The error or info log of a handle of nvJitLink or nvPTXCompiler, whose APIs spell them alike (size, then copy);
// empty when there is none or a call fails.
template <typename Api, typename Handle>
std::string read_log(const Api& api, Handle handle, bool error_log) {
  size_t size = 0;
  int rc = error_log ? api.error_log_size(handle, &size) : api.info_log_size(handle, &size);
  if (rc != 0 || size <= 1) return {};
  std::string log(size, '\0');
  rc = error_log ? api.error_log(handle, log.data()) : api.info_log(handle, log.data());
  if (rc != 0) return {};
  log.resize(log.find('\0') == std::string::npos ? size : log.find('\0'));
  return log;
}

// Makes `out` by a compiler library's calls on one handle, in order; each returns the library's status (0 is
// success), and the last ones fill out.cubin. The first that fails ends it, and out.log then names the call and
// holds the handle's error and info logs; otherwise out.log is the info log (ptxas's -v report). Either way the
// handle is destroyed.
template <typename Api, typename Handle>
void run_calls(const Api& api, Handle& handle, const char* library, const char* (*status_name)(int),
               std::initializer_list<std::pair<const char*, std::function<int()>>> calls, CubinOutput& out) {
  for (const auto& [call, fn] : calls) {
    if (int rc = fn(); rc != 0) {
      std::string logs = handle ? read_log(api, handle, true) + read_log(api, handle, false) : std::string();
      out.ok = false;
      out.cubin.clear();
      out.log = std::string(library) + ": " + call + " failed: " + status_name(rc) + (logs.empty() ? "" : "\n") +
                logs;
      if (handle) api.destroy(&handle);
      return;
    }
  }
  out.log = read_log(api, handle, false);
  api.destroy(&handle);
  out.ok = true;
}

}  // namespace ww::compiler::detail
