// Streams and events: thin RAII over the driver handles.
#include "ww/runtime/stream.hpp"

#include <utility>

#include "context_guard.hpp"
#include "driver_api.hpp"

namespace ww::runtime {
namespace {

detail::CUstream as_stream(void* p) { return static_cast<detail::CUstream>(p); }
detail::CUevent as_event(void* p) { return static_cast<detail::CUevent>(p); }

// cuStreamQuery/cuEventQuery answer "not finished" with an error code that is not an error.
bool ready(detail::CUresult r, const char* call) {
  if (r == detail::CUDA_ERROR_NOT_READY) return false;
  detail::check(r, call);
  return true;
}

}  // namespace

Stream Stream::create(bool non_blocking) {
  Stream s;
  s.context_ = detail::ensure_context("cuStreamCreate");
  detail::CUstream handle = nullptr;
  WW_CU(cuStreamCreate, &handle, non_blocking ? detail::CU_STREAM_NON_BLOCKING : 0u);
  s.stream_ = handle;
  return s;
}

Stream::~Stream() { reset(); }

Stream::Stream(Stream&& other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)), context_(std::exchange(other.context_, nullptr)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    reset();
    stream_ = std::exchange(other.stream_, nullptr);
    context_ = std::exchange(other.context_, nullptr);
  }
  return *this;
}

void Stream::reset() noexcept {
  if (stream_ == nullptr) return;
  try {
    detail::ContextGuard guard(static_cast<detail::CUcontext>(context_));
    WW_CU(cuStreamDestroy, as_stream(stream_));
  } catch (...) {
    // A destructor cannot report; at process exit the driver may already be gone.
  }
  stream_ = nullptr;
}

void Stream::synchronize() const {
  detail::ContextGuard guard(static_cast<detail::CUcontext>(context_));
  WW_CU(cuStreamSynchronize, as_stream(stream_));
}

bool Stream::query() const {
  detail::ContextGuard guard(static_cast<detail::CUcontext>(context_));
  return ready(WW_CU_RESULT(cuStreamQuery, as_stream(stream_)), "cuStreamQuery");
}

void synchronize(StreamRef stream) {
  detail::ensure_context("cuStreamSynchronize");
  WW_CU(cuStreamSynchronize, as_stream(stream.handle()));
}

Event Event::create(bool timing) {
  Event e;
  e.context_ = detail::ensure_context("cuEventCreate");
  detail::CUevent handle = nullptr;
  WW_CU(cuEventCreate, &handle, timing ? 0u : detail::CU_EVENT_DISABLE_TIMING);
  e.event_ = handle;
  return e;
}

Event::~Event() { reset(); }

Event::Event(Event&& other) noexcept
    : event_(std::exchange(other.event_, nullptr)), context_(std::exchange(other.context_, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    reset();
    event_ = std::exchange(other.event_, nullptr);
    context_ = std::exchange(other.context_, nullptr);
  }
  return *this;
}

void Event::reset() noexcept {
  if (event_ == nullptr) return;
  try {
    detail::ContextGuard guard(static_cast<detail::CUcontext>(context_));
    WW_CU(cuEventDestroy, as_event(event_));
  } catch (...) {
  }
  event_ = nullptr;
}

// Events act in their own context; binding it lets a worker thread with no current context use them.
void Event::record(StreamRef stream) {
  detail::ContextGuard guard(static_cast<detail::CUcontext>(context_));
  WW_CU(cuEventRecord, as_event(event_), as_stream(stream.handle()));
}

void Event::synchronize() const {
  detail::ContextGuard guard(static_cast<detail::CUcontext>(context_));
  WW_CU(cuEventSynchronize, as_event(event_));
}

bool Event::query() const {
  detail::ContextGuard guard(static_cast<detail::CUcontext>(context_));
  return ready(WW_CU_RESULT(cuEventQuery, as_event(event_)), "cuEventQuery");
}

float elapsed_ms(const Event& start, const Event& end) {
  detail::ensure_context("cuEventElapsedTime");
  float ms = 0.0f;
  WW_CU(cuEventElapsedTime, &ms, as_event(start.handle()), as_event(end.handle()));
  return ms;
}

}  // namespace ww::runtime
