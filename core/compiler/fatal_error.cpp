// LLVM's fatal errors (e.g. "Cannot select" in instruction selection, a malformed intrinsic call) end in exit() or
// abort() by default. A user's kernel must never take the Python process down, so inside a compile we turn them
// into a failed stage instead.
//
// Why setjmp/longjmp and not an exception: LLVM is built with -fno-exceptions, and an exception thrown through its
// frames would skip their cleanups just the same, but with undefined behaviour. longjmp is what LLVM's own
// CrashRecoveryContext (used by clang to survive fatal errors in process) does; we do the same without its
// process-wide signal handlers, which would fight with Python's. The price: whatever the aborted stage had
// allocated is leaked, and the objects it was using (MLIR context, LLVM context) are abandoned, never reused.
#include <csetjmp>
#include <cstdio>
#include <mutex>

#include <llvm/Support/ErrorHandling.h>

#include "internal.hpp"

namespace ww::compiler::detail {
namespace {

struct Guard {
  std::jmp_buf env;
  std::string reason;
};

thread_local Guard* t_guard = nullptr;

void on_fatal_error(void* /*user_data*/, const char* reason, bool /*gen_crash_diag*/) {
  if (Guard* guard = t_guard) {
    guard->reason = reason ? reason : "(no reason given)";
    t_guard = nullptr;
    std::longjmp(guard->env, 1);
  }
  // Not inside a compile (another thread, a static initialiser): we cannot recover, but say who is dying.
  std::fprintf(stderr, "warpweave: LLVM fatal error outside a guarded compile: %s\n", reason ? reason : "");
  std::fflush(stderr);
}

void install_handler_once() {
  static std::once_flag once;
  std::call_once(once, [] { llvm::install_fatal_error_handler(on_fatal_error, nullptr); });
}

// Kept out of line: the frame that calls setjmp must not hold locals that change between setjmp and longjmp.
[[gnu::noinline]] bool call_with_jmpbuf(Guard* guard, const std::function<void()>* fn) {
  if (setjmp(guard->env) != 0) return false;
  (*fn)();
  return true;
}

}  // namespace

bool run_guarded(const std::function<void()>& fn, std::string* reason) {
  install_handler_once();
  // Heap-allocated so that it is certainly in memory, never in a register, when longjmp returns; nesting restores
  // the outer guard.
  auto guard = std::make_unique<Guard>();
  Guard* outer = t_guard;
  t_guard = guard.get();
  bool ok = call_with_jmpbuf(guard.get(), &fn);
  t_guard = outer;
  if (!ok && reason) *reason = std::move(guard->reason);
  return ok;
}

}  // namespace ww::compiler::detail
