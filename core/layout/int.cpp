// Int: checked static arithmetic and the normal form of dynamic values.
#include "ww/layout/int.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <sstream>

#include "ww/layout/error.hpp"

namespace ww {
namespace {

using sym::Atom;
using sym::AtomPtr;
using sym::Poly;
using sym::Term;

[[noreturn]] void overflow(const char* op, int64_t a, int64_t b) {
  throw LayoutError("integer overflow in layout algebra: " + std::to_string(a) + " " + op + " " + std::to_string(b));
}

int64_t checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) overflow("+", a, b);
  return r;
}
int64_t checked_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) overflow("-", a, b);
  return r;
}
int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) overflow("*", a, b);
  return r;
}
int64_t checked_div(int64_t a, int64_t b) {
  if (b == 0) throw LayoutError("division by zero in layout algebra: " + std::to_string(a) + " / 0");
  if (a == std::numeric_limits<int64_t>::min() && b == -1) overflow("/", a, b);
  return a / b;
}
bool fits_32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = checked_div(a, b);
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t floor_mod(int64_t a, int64_t b) { return checked_sub(a, checked_mul(floor_div(a, b), b)); }

size_t mix(size_t h, uint64_t v) {
  // splitmix64 step: deterministic across runs, unlike pointer-based hashes.
  uint64_t x = h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<size_t>(x ^ (x >> 31));
}

int int_order(const Int& a, const Int& b);

int poly_order(const Poly& a, const Poly& b);

int monomial_order(const std::vector<AtomPtr>& a, const std::vector<AtomPtr>& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  for (size_t i = 0; i < a.size(); ++i)
    if (int c = sym::atom_order(*a[i], *b[i])) return c;
  return 0;
}

int poly_order(const Poly& a, const Poly& b) {
  if (&a == &b) return 0;
  if (a.hash != b.hash) return a.hash < b.hash ? -1 : 1;
  if (a.constant != b.constant) return a.constant < b.constant ? -1 : 1;
  if (a.terms.size() != b.terms.size()) return a.terms.size() < b.terms.size() ? -1 : 1;
  for (size_t i = 0; i < a.terms.size(); ++i) {
    if (a.terms[i].coef != b.terms[i].coef) return a.terms[i].coef < b.terms[i].coef ? -1 : 1;
    if (int c = monomial_order(a.terms[i].factors, b.terms[i].factors)) return c;
  }
  return 0;
}

int int_order(const Int& a, const Int& b) {
  if (a.is_static() && b.is_static()) {
    int64_t x = *a.static_value(), y = *b.static_value();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.is_static() != b.is_static()) return a.is_static() ? -1 : 1;
  return poly_order(*a.poly(), *b.poly());
}

size_t monomial_hash(const std::vector<AtomPtr>& f) {
  size_t h = 0x51;
  for (auto& a : f) h = mix(h, a->hash);
  return h;
}

// A polynomial with a static value folded in: the working form of every dynamic operation.
struct Work {
  int64_t constant = 0;
  std::vector<Term> terms;
};

Work to_work(const Int& x) {
  Work w;
  if (x.is_static()) {
    w.constant = *x.static_value();
  } else {
    w.constant = x.poly()->constant;
    w.terms = x.poly()->terms;
  }
  return w;
}

}  // namespace

Int make_int(std::shared_ptr<const Poly> p) {
  Int r;
  r.poly_ = std::move(p);
  return r;
}

namespace {

// Sorts, merges and finishes a working polynomial into an Int (static when no term is left).
Int finish(Work w) {
  std::sort(w.terms.begin(), w.terms.end(),
            [](const Term& a, const Term& b) { return monomial_order(a.factors, b.factors) < 0; });
  std::vector<Term> merged;
  for (auto& t : w.terms) {
    if (!merged.empty() && monomial_order(merged.back().factors, t.factors) == 0) {
      merged.back().coef = checked_add(merged.back().coef, t.coef);
    } else {
      merged.push_back(std::move(t));
    }
  }
  std::erase_if(merged, [](const Term& t) { return t.coef == 0; });
  if (merged.empty()) return Int(w.constant);
  auto p = std::make_shared<Poly>();
  p->constant = w.constant;
  p->terms = std::move(merged);
  size_t h = mix(0x77, static_cast<uint64_t>(p->constant));
  bool nonneg = p->constant >= 0;
  // A constant or coefficient beyond 32 bits makes the expression a 64-bit one, as a symbol of 64 bits does: an
  // expression materialised at 32 bits would otherwise carry a constant its type cannot hold.
  int bits = fits_32(p->constant) ? 32 : 64;
  for (auto& t : p->terms) {
    h = mix(mix(h, static_cast<uint64_t>(t.coef)), monomial_hash(t.factors));
    if (!fits_32(t.coef)) bits = 64;
    if (t.coef < 0) nonneg = false;
    for (auto& f : t.factors) {
      nonneg = nonneg && f->nonneg;
      bits = std::max(bits, f->bits);
    }
  }
  p->hash = h;
  p->nonneg = nonneg;
  p->bits = bits;
  return make_int(std::move(p));
}

Int from_atom(std::shared_ptr<Atom> a) {
  Work w;
  w.terms.push_back(Term{1, {std::move(a)}});
  return finish(std::move(w));
}

size_t int_hash(const Int& x) { return x.is_static() ? mix(0x13, static_cast<uint64_t>(*x.static_value())) : x.poly()->hash; }

Int make_op(Atom::Kind kind, const Int& a, const Int& b, int64_t divisibility, bool nonneg) {
  auto at = std::make_shared<Atom>();
  at->kind = kind;
  at->a = a;
  at->b = b;
  at->divisibility = std::max<int64_t>(divisibility, 1);
  at->nonneg = nonneg;
  at->bits = std::max(a.bits(), b.bits());
  at->hash = mix(mix(mix(0x99, static_cast<uint64_t>(kind)), int_hash(a)), int_hash(b));
  return from_atom(std::move(at));
}

Work scale(Work w, int64_t k) {
  w.constant = checked_mul(w.constant, k);
  for (auto& t : w.terms) t.coef = checked_mul(t.coef, k);
  return w;
}

Work add_work(Work a, const Work& b) {
  a.constant = checked_add(a.constant, b.constant);
  a.terms.insert(a.terms.end(), b.terms.begin(), b.terms.end());
  return a;
}

std::vector<AtomPtr> merge_factors(const std::vector<AtomPtr>& a, const std::vector<AtomPtr>& b) {
  std::vector<AtomPtr> r;
  r.reserve(a.size() + b.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(r),
             [](const AtomPtr& x, const AtomPtr& y) { return sym::atom_order(*x, *y) < 0; });
  return r;
}

// When every factor of `den` occurs in `num`, the factors of num without those of den.
std::optional<std::vector<AtomPtr>> remove_factors(const std::vector<AtomPtr>& num, const std::vector<AtomPtr>& den) {
  std::vector<AtomPtr> rest;
  size_t j = 0;
  for (size_t i = 0; i < num.size(); ++i) {
    if (j < den.size() && sym::atom_equal(*num[i], *den[j])) {
      ++j;
    } else {
      rest.push_back(num[i]);
    }
  }
  if (j != den.size()) return std::nullopt;
  return rest;
}

// a / b exactly, when b is a single term that divides every term of a; nullopt otherwise.
std::optional<Int> exact_monomial_div(const Int& a, const Int& b) {
  if (b.is_static() || b.poly()->constant != 0 || b.poly()->terms.size() != 1) return std::nullopt;
  const Term& d = b.poly()->terms[0];
  Work w = to_work(a);
  if (w.constant != 0) return std::nullopt;
  for (auto& t : w.terms) {
    if (t.coef % d.coef != 0) return std::nullopt;
    auto rest = remove_factors(t.factors, d.factors);
    if (!rest) return std::nullopt;
    t.coef /= d.coef;
    t.factors = std::move(*rest);
  }
  // A term whose factors all cancelled is a constant now.
  Work out;
  for (auto& t : w.terms) {
    if (t.factors.empty()) {
      out.constant = checked_add(out.constant, t.coef);
    } else {
      out.terms.push_back(std::move(t));
    }
  }
  return finish(std::move(out));
}

int64_t saturating_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return int64_t{1} << 62;
  return r;
}

}  // namespace

Int::Int(unsigned long v) {
  if (v > static_cast<unsigned long>(std::numeric_limits<int64_t>::max()))
    throw LayoutError("integer " + std::to_string(v) + " does not fit a signed 64-bit layout integer");
  value_ = static_cast<int64_t>(v);
}
Int::Int(unsigned long long v) {
  if (v > static_cast<unsigned long long>(std::numeric_limits<int64_t>::max()))
    throw LayoutError("integer " + std::to_string(v) + " does not fit a signed 64-bit layout integer");
  value_ = static_cast<int64_t>(v);
}

Int Int::symbol(uint64_t id, int64_t divisibility, bool nonneg, int bits, std::string name) {
  if (divisibility < 1) throw LayoutError("symbol divisibility must be >= 1, got " + std::to_string(divisibility));
  if (bits != 32 && bits != 64) throw LayoutError("symbol width must be 32 or 64 bits, got " + std::to_string(bits));
  auto at = std::make_shared<Atom>();
  at->kind = Atom::Kind::Symbol;
  at->id = id;
  at->divisibility = divisibility;
  at->nonneg = nonneg;
  at->bits = bits;
  at->name = std::move(name);
  at->hash = mix(0x5, id);
  return from_atom(std::move(at));
}

int64_t Int::value(const char* what) const {
  if (poly_) throw LayoutError(std::string(what) + ": needs a static integer, got the dynamic value " + expr_str());
  return value_;
}

bool Int::same(const Int& o) const { return int_order(*this, o) == 0; }

std::optional<bool> Int::known_eq(const Int& o) const {
  if (is_static() && o.is_static()) return value_ == o.value_;
  if (same(o)) return true;
  Int d = *this - o;
  if (d.is_static()) return d.value_ == 0;
  return std::nullopt;
}

std::optional<bool> Int::known_lt(const Int& o) const {
  Int d = *this - o;
  if (d.is_static()) return d.value_ < 0;
  return std::nullopt;
}

int64_t Int::divisibility() const {
  if (!poly_) return value_ < 0 ? -value_ : value_;
  int64_t g = poly_->constant < 0 ? -poly_->constant : poly_->constant;
  for (auto& t : poly_->terms) {
    int64_t d = t.coef < 0 ? -t.coef : t.coef;
    for (auto& f : t.factors) d = saturating_mul(d, f->divisibility);
    g = std::gcd(g, d);
  }
  return std::max<int64_t>(g, 1);
}

bool Int::known_divisible_by(int64_t d) const {
  if (d == 0) return is_constant(0);
  if (!poly_) return value_ % d == 0;
  return divisibility() % d == 0;
}

bool Int::known_nonneg() const { return poly_ ? poly_->nonneg : value_ >= 0; }

int Int::bits() const { return poly_ ? poly_->bits : (fits_32(value_) ? 32 : 64); }

size_t Int::hash() const { return int_hash(*this); }

std::string Int::str() const { return poly_ ? std::string("?") : std::to_string(value_); }

namespace {
void print_atom(std::ostream& os, const Atom& a);
void print_int(std::ostream& os, const Int& x) {
  if (x.is_static()) {
    os << *x.static_value();
    return;
  }
  const Poly& p = *x.poly();
  bool single = p.constant == 0 && p.terms.size() == 1;
  if (!single) os << '(';
  bool first = true;
  for (auto& t : p.terms) {
    if (!first) os << " + ";
    first = false;
    if (t.coef != 1) os << t.coef << '*';
    for (size_t i = 0; i < t.factors.size(); ++i) {
      if (i) os << '*';
      print_atom(os, *t.factors[i]);
    }
  }
  if (p.constant != 0) os << " + " << p.constant;
  if (!single) os << ')';
}
void print_atom(std::ostream& os, const Atom& a) {
  switch (a.kind) {
    case Atom::Kind::Symbol:
      if (a.name.empty()) {
        os << 's' << a.id;
      } else {
        os << a.name;
      }
      return;
    case Atom::Kind::Div: os << '('; print_int(os, a.a); os << " / "; print_int(os, a.b); os << ')'; return;
    case Atom::Kind::Mod: os << '('; print_int(os, a.a); os << " % "; print_int(os, a.b); os << ')'; return;
    case Atom::Kind::Min: os << "min("; print_int(os, a.a); os << ", "; print_int(os, a.b); os << ')'; return;
    case Atom::Kind::Max: os << "max("; print_int(os, a.a); os << ", "; print_int(os, a.b); os << ')'; return;
    case Atom::Kind::Xor: os << '('; print_int(os, a.a); os << " ^ "; print_int(os, a.b); os << ')'; return;
  }
}
}  // namespace

std::string Int::expr_str() const {
  std::ostringstream os;
  print_int(os, *this);
  return os.str();
}

int64_t Int::evaluate(const std::function<int64_t(uint64_t)>& symbol_value) const {
  if (!poly_) return value_;
  std::function<int64_t(const Atom&)> atom = [&](const Atom& a) -> int64_t {
    switch (a.kind) {
      case Atom::Kind::Symbol: return symbol_value(a.id);
      case Atom::Kind::Div: return floor_div(a.a.evaluate(symbol_value), a.b.evaluate(symbol_value));
      case Atom::Kind::Mod: return floor_mod(a.a.evaluate(symbol_value), a.b.evaluate(symbol_value));
      case Atom::Kind::Min: return std::min(a.a.evaluate(symbol_value), a.b.evaluate(symbol_value));
      case Atom::Kind::Max: return std::max(a.a.evaluate(symbol_value), a.b.evaluate(symbol_value));
      case Atom::Kind::Xor: return a.a.evaluate(symbol_value) ^ a.b.evaluate(symbol_value);
    }
    return 0;
  };
  int64_t r = poly_->constant;
  for (auto& t : poly_->terms) {
    int64_t v = t.coef;
    for (auto& f : t.factors) v = checked_mul(v, atom(*f));
    r = checked_add(r, v);
  }
  return r;
}

Int operator+(const Int& a, const Int& b) {
  if (a.is_static() && b.is_static()) return Int(checked_add(a.value_, b.value_));
  if (a.is_constant(0)) return b;
  if (b.is_constant(0)) return a;
  return finish(add_work(to_work(a), to_work(b)));
}

Int operator-(const Int& a) {
  if (a.is_static()) return Int(checked_sub(0, a.value_));
  return finish(scale(to_work(a), -1));
}

Int operator-(const Int& a, const Int& b) {
  if (a.is_static() && b.is_static()) return Int(checked_sub(a.value_, b.value_));
  return a + (-b);
}

Int operator*(const Int& a, const Int& b) {
  if (a.is_static() && b.is_static()) return Int(checked_mul(a.value_, b.value_));
  if (a.is_constant(0) || b.is_constant(0)) return Int(0);
  if (a.is_constant(1)) return b;
  if (b.is_constant(1)) return a;
  if (a.is_static()) return finish(scale(to_work(b), a.value_));
  if (b.is_static()) return finish(scale(to_work(a), b.value_));
  Work x = to_work(a), y = to_work(b), r;
  r.constant = checked_mul(x.constant, y.constant);
  for (auto& t : x.terms) {
    if (y.constant != 0) r.terms.push_back(Term{checked_mul(t.coef, y.constant), t.factors});
    for (auto& u : y.terms) r.terms.push_back(Term{checked_mul(t.coef, u.coef), merge_factors(t.factors, u.factors)});
  }
  if (x.constant != 0)
    for (auto& u : y.terms) r.terms.push_back(Term{checked_mul(x.constant, u.coef), u.factors});
  return finish(std::move(r));
}

namespace {
// Floor division of dynamic values; `nonneg` says the caller knows the quotient is never negative.
Int floor_div_dynamic(const Int& a, const Int& b, bool nonneg);
}  // namespace

Int operator/(const Int& a, const Int& b) {
  if (a.is_static() && b.is_static()) return Int(checked_div(a.value_, b.value_));
  return floor_div_dynamic(a, b, false);
}

namespace {
Int floor_div_dynamic(const Int& a, const Int& b, bool nonneg) {
  if (a.is_static() && b.is_static()) return Int(checked_div(*a.static_value(), *b.static_value()));
  if (b.is_constant(0)) throw LayoutError("division by zero in layout algebra: " + a.expr_str() + " / 0");
  if (b.is_constant(1)) return a;
  if (a.is_constant(0)) return Int(0);
  if (a.same(b)) return Int(1);
  if (b.is_static()) {
    // floor((c*q + r) / c) == q + floor(r / c) for integer q: keep the divisible terms exact.
    int64_t c = *b.static_value();
    Work w = to_work(a), q, r;
    q.constant = floor_div(w.constant, c);
    r.constant = floor_mod(w.constant, c);
    for (auto& t : w.terms) {
      if (t.coef % c == 0) {
        q.terms.push_back(Term{t.coef / c, t.factors});
      } else {
        r.terms.push_back(t);
      }
    }
    Int quotient = finish(std::move(q));
    if (r.terms.empty()) return quotient;  // 0 <= r < c (or c < r <= 0): floor(r / c) == 0
    Int rest = finish(std::move(r));
    int64_t rd = rest.divisibility();
    int64_t div = rd % c == 0 ? rd / c : 1;
    return quotient + make_op(Atom::Kind::Div, rest, b, div < 0 ? -div : div, nonneg || (rest.known_nonneg() && c > 0));
  }
  if (auto exact = exact_monomial_div(a, b)) return *exact;
  return make_op(Atom::Kind::Div, a, b, 1, nonneg || (a.known_nonneg() && b.known_nonneg()));
}
}  // namespace

Int operator%(const Int& a, const Int& b) {
  if (a.is_static() && b.is_static()) {
    if (b.value_ == 0) throw LayoutError("modulo by zero in layout algebra: " + std::to_string(a.value_) + " % 0");
    if (b.value_ == -1) return Int(0);
    return Int(a.value_ % b.value_);
  }
  if (b.is_constant(0)) throw LayoutError("modulo by zero in layout algebra: " + a.expr_str() + " % 0");
  if (b.is_constant(1) || b.is_constant(-1) || a.is_constant(0) || a.same(b)) return Int(0);
  if (b.is_static()) {
    int64_t c = b.value_;
    Work w = to_work(a), r;
    r.constant = floor_mod(w.constant, c);
    for (auto& t : w.terms)
      if (t.coef % c != 0) r.terms.push_back(t);
    if (r.terms.empty()) return Int(r.constant);
    Int rest = finish(std::move(r));
    // (x % c) % c == x % c
    if (rest.poly()->constant == 0 && rest.poly()->terms.size() == 1 && rest.poly()->terms[0].coef == 1 &&
        rest.poly()->terms[0].factors.size() == 1) {
      const Atom& f = *rest.poly()->terms[0].factors[0];
      if (f.kind == Atom::Kind::Mod && f.b.is_constant(c)) return rest;
    }
    int64_t cc = c < 0 ? -c : c;
    return make_op(Atom::Kind::Mod, rest, b, std::gcd(rest.divisibility(), cc), c > 0);
  }
  if (exact_monomial_div(a, b)) return Int(0);
  return make_op(Atom::Kind::Mod, a, b, std::gcd(a.divisibility(), b.divisibility()), b.known_nonneg());
}

Int min(const Int& a, const Int& b) {
  if (a.is_static() && b.is_static()) return Int(std::min(*a.static_value(), *b.static_value()));
  if (auto lt = a.known_lt(b)) return *lt ? a : b;
  if (a.same(b)) return a;
  bool swap = int_order(a, b) > 0;
  const Int& x = swap ? b : a;
  const Int& y = swap ? a : b;
  return make_op(sym::Atom::Kind::Min, x, y, std::gcd(a.divisibility(), b.divisibility()),
                 a.known_nonneg() && b.known_nonneg());
}

Int max(const Int& a, const Int& b) {
  if (a.is_static() && b.is_static()) return Int(std::max(*a.static_value(), *b.static_value()));
  if (auto lt = a.known_lt(b)) return *lt ? b : a;
  if (a.same(b)) return a;
  bool swap = int_order(a, b) > 0;
  const Int& x = swap ? b : a;
  const Int& y = swap ? a : b;
  return make_op(sym::Atom::Kind::Max, x, y, std::gcd(a.divisibility(), b.divisibility()),
                 a.known_nonneg() || b.known_nonneg());
}

Int abs(const Int& a) {
  if (a.is_static()) {
    int64_t v = *a.static_value();
    return Int(v < 0 ? checked_sub(0, v) : v);
  }
  if (a.known_nonneg()) return a;
  return max(a, -a);
}

Int signum(const Int& a) {
  if (a.is_static()) return Int((*a.static_value() > 0) - (*a.static_value() < 0));
  // Dynamic values reaching signum are extents and strides the algebra treats as positive.
  if (a.known_nonneg()) return Int(1);
  throw LayoutError("signum: the sign of the dynamic value " + a.expr_str() + " is unknown");
}

Int ceil_div(const Int& a, const Int& b) {
  if (a.is_static() && b.is_static()) return Int(checked_div(checked_sub(checked_add(*a.static_value(), *b.static_value()), 1), *b.static_value()));
  if (b.is_static() && a.known_divisible_by(*b.static_value())) return a / b;
  if (auto exact = exact_monomial_div(a, b)) return *exact;
  // (a + b - 1) / b is never negative for a >= 0 and b > 0, though its numerator's normal form cannot show it.
  return floor_div_dynamic(a + b - Int(1), b, a.known_nonneg() && b.known_nonneg());
}

Int bit_xor(const Int& a, const Int& b) {
  if (a.is_static() && b.is_static()) return Int(*a.static_value() ^ *b.static_value());
  if (a.is_constant(0)) return b;
  if (b.is_constant(0)) return a;
  if (a.same(b)) return Int(0);
  // x ^ y keeps the power-of-two factor that both share.
  int64_t da = a.divisibility(), db = b.divisibility();
  int64_t pa = da == 0 ? (int64_t{1} << 62) : (da & -da), pb = db == 0 ? (int64_t{1} << 62) : (db & -db);
  bool swap = int_order(a, b) > 0;
  return make_op(sym::Atom::Kind::Xor, swap ? b : a, swap ? a : b, std::min(pa, pb), a.known_nonneg() && b.known_nonneg());
}

std::pair<Int, Int> split_divisible(const Int& x, int64_t m) {
  if (m <= 0) throw LayoutError("split_divisible: the modulus must be positive, got " + std::to_string(m));
  Work w = to_work(x), d, r;
  d.constant = checked_mul(floor_div(w.constant, m), m);
  r.constant = floor_mod(w.constant, m);
  for (auto& t : w.terms) {
    int64_t td = t.coef < 0 ? -t.coef : t.coef;
    for (auto& f : t.factors) td = saturating_mul(td, f->divisibility);
    (td % m == 0 ? d : r).terms.push_back(t);
  }
  return {finish(std::move(d)), finish(std::move(r))};
}

Int gcd(const Int& a, const Int& b) {
  return Int(std::gcd(a.value("gcd"), b.value("gcd")));
}

namespace sym {

bool atom_equal(const Atom& a, const Atom& b) { return atom_order(a, b) == 0; }

int atom_order(const Atom& a, const Atom& b) {
  if (&a == &b) return 0;
  if (a.kind != b.kind) return a.kind < b.kind ? -1 : 1;
  if (a.kind == Atom::Kind::Symbol) {
    if (a.id != b.id) return a.id < b.id ? -1 : 1;
    return 0;
  }
  if (int c = int_order(a.a, b.a)) return c;
  return int_order(a.b, b.b);
}

}  // namespace sym
}  // namespace ww
