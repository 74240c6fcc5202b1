// Streams and events.
//
// Every function that takes a stream takes a StreamRef: a raw CUstream handle, given as a pointer or as an
// integer (PyTorch's torch.cuda.current_stream().cuda_stream, CuPy's Stream.ptr), or a Stream. 0 (also
// nullptr) is the legacy default stream; the special handles CU_STREAM_LEGACY (1) and
// CU_STREAM_PER_THREAD (2) pass through to the driver unchanged.
//
// Stream and Event own their handle (RAII, movable, not copyable) and remember their context, so they
// may be destroyed from any thread. Using one object from several threads at once is as safe as the
// driver call underneath (the driver is thread-safe); moving or destroying it while in use is not.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>

namespace ww::runtime {

class StreamRef {
 public:
  constexpr StreamRef() = default;
  constexpr StreamRef(std::nullptr_t) {}
  StreamRef(void* handle) : handle_(handle) {}
  // Any integer, so that a Python int or a literal 0 converts without ambiguity.
  template <std::integral I>
  StreamRef(I handle) : handle_(reinterpret_cast<void*>(static_cast<std::uintptr_t>(handle))) {}

  void* handle() const noexcept { return handle_; }

 private:
  void* handle_ = nullptr;
};

class Stream {
 public:
  Stream() = default;  // empty, which acts as the legacy default stream; create() makes a new one
  // A new stream in the current context. non_blocking: does not synchronize with the legacy default stream.
  static Stream create(bool non_blocking = false);
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  void synchronize() const;
  // True when all work queued so far has finished.
  bool query() const;
  void* handle() const noexcept { return stream_; }
  operator StreamRef() const noexcept { return StreamRef(stream_); }

 private:
  void reset() noexcept;
  void* stream_ = nullptr;
  void* context_ = nullptr;
};

// Waits for all work queued on `stream` (cuStreamSynchronize).
void synchronize(StreamRef stream);

class Event {
 public:
  Event() = default;  // empty; create() makes one
  // A new event in the current context; timing = false makes record/wait cheaper.
  static Event create(bool timing = true);
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(StreamRef stream = {});
  void synchronize() const;
  // True when the work before the last record() has finished.
  bool query() const;
  void* handle() const noexcept { return event_; }

 private:
  void reset() noexcept;
  void* event_ = nullptr;
  void* context_ = nullptr;
};

// Milliseconds between two recorded timing events (cuEventElapsedTime); `end` must have completed.
float elapsed_ms(const Event& start, const Event& end);

}  // namespace ww::runtime
