// Recording and checking the algebra's assumptions about dynamic values.
#include "ww/layout/assumptions.hpp"

#include "ww/layout/error.hpp"

namespace ww {
namespace {

thread_local AssumptionScope* current = nullptr;

bool holds_values(Assumption::Kind k, int64_t a, int64_t b, int64_t c = 0, int64_t d = 0) {
  switch (k) {
    case Assumption::Kind::DividesUnlessEqual: return c == d || (a != 0 && b % a == 0);
    case Assumption::Kind::Divides: return a != 0 && b % a == 0;
    case Assumption::Kind::DividesEither: return (a != 0 && b % a == 0) || (b != 0 && a % b == 0);
    case Assumption::Kind::MultipleOrLess: return (b != 0 && a % b == 0) || a < b;
    case Assumption::Kind::Less: return a < b;
  }
  return false;
}

}  // namespace

bool Assumption::holds(const std::function<int64_t(uint64_t)>& symbol_value) const {
  return holds_values(kind, a.evaluate(symbol_value), b.evaluate(symbol_value), c.evaluate(symbol_value),
                      d.evaluate(symbol_value));
}

std::optional<bool> Assumption::decided() const {
  if (a.is_static() && b.is_static() && c.is_static() && d.is_static())
    return holds_values(kind, *a.static_value(), *b.static_value(), *c.static_value(), *d.static_value());
  switch (kind) {
    case Kind::DividesUnlessEqual: {
      if (c.same(d)) return true;
      auto divides = Assumption{Kind::Divides, a, b}.decided();
      if (divides && *divides) return true;
      auto eq = c.known_eq(d);
      if (eq && !*eq && divides) return false;
      break;
    }
    case Kind::Divides:
      if (a.is_static() && b.known_divisible_by(*a.static_value())) return true;
      if ((b % a).is_constant(0)) return true;
      break;
    case Kind::DividesEither:
      if (a.same(b)) return true;
      if (a.is_static() && b.known_divisible_by(*a.static_value())) return true;
      if (b.is_static() && a.known_divisible_by(*b.static_value())) return true;
      break;
    case Kind::MultipleOrLess:
      if (b.is_static() && a.known_divisible_by(*b.static_value())) return true;
      if (auto lt = a.known_lt(b); lt && *lt) return true;
      break;
    case Kind::Less:
      return a.known_lt(b);
  }
  return std::nullopt;
}

std::string Assumption::str() const {
  std::string x = a.expr_str(), y = b.expr_str();
  switch (kind) {
    case Kind::Divides: return x + " divides " + y;
    case Kind::DividesEither: return x + " and " + y + " divide one another";
    case Kind::MultipleOrLess: return x + " is a multiple of " + y + " or less than it";
    case Kind::Less: return x + " < " + y;
    case Kind::DividesUnlessEqual: return c.expr_str() + " == " + d.expr_str() + " or " + x + " divides " + y;
  }
  return {};
}

AssumptionScope::AssumptionScope() : outer_(current) { current = this; }
AssumptionScope::~AssumptionScope() { current = outer_; }

void assume(Assumption a) {
  for (AssumptionScope* s = current; s; s = s->outer_) {
    bool dup = false;
    for (auto& x : s->list_)
      if (x.kind == a.kind && x.a.same(a.a) && x.b.same(a.b) && x.c.same(a.c) && x.d.same(a.d)) dup = true;
    if (!dup) s->list_.push_back(a);
  }
}

void throw_layout_error(const std::string& message) { throw LayoutError(message); }

}  // namespace ww
