#pragma once
// Assumptions the algebra makes about dynamic values.
//
// A precondition that involves a runtime value cannot be decided while tracing: CuTe assumes it silently. warpweave
// records it instead, when an AssumptionScope is open (the tracer opens one per kernel), so that the host side can
// check it against the actual extents and strides before launching, and refuse clearly rather than compute garbage.
#include <functional>
#include <string>
#include <vector>

#include "ww/layout/int.hpp"

namespace ww {

struct Assumption {
  enum class Kind {
    Divides,          // a divides b
    DividesEither,    // a divides b or b divides a
    MultipleOrLess,   // a is a multiple of b, or a < b
    Less,             // a < b
    DividesUnlessEqual,  // c == d, or a divides b
  };
  Kind kind;
  Int a, b, c = 0, d = 0;
  std::string what;  // the operation and operands that needed it

  bool holds(const std::function<int64_t(uint64_t)>& symbol_value) const;
  // Decided now: true/false when the operands allow, nullopt otherwise.
  std::optional<bool> decided() const;
  std::string str() const;
};

class AssumptionScope {
 public:
  AssumptionScope();
  ~AssumptionScope();
  AssumptionScope(const AssumptionScope&) = delete;
  AssumptionScope& operator=(const AssumptionScope&) = delete;
  const std::vector<Assumption>& assumptions() const { return list_; }

 private:
  friend void assume(Assumption a);
[[noreturn]] void throw_layout_error(const std::string& message);
  std::vector<Assumption> list_;
  AssumptionScope* outer_;
};

// Records `a` in the innermost open scope (and the scopes around it); without a scope it is dropped, as in CuTe.
void assume(Assumption a);
[[noreturn]] void throw_layout_error(const std::string& message);

// Checks a condition: raises LayoutError with message() when it is decided false, records it when undecided.
// The message is built only then: the algebra checks conditions on its hot path.
template <class Message>
void require(Assumption a, Message&& message) {
  if (auto d = a.decided()) {
    if (!*d) throw_layout_error(message());
    return;
  }
  a.what = message();
  assume(std::move(a));
}

}  // namespace ww
