#pragma once
// Int: one integer of the layout algebra.
//
// A static Int is a value known while tracing. A dynamic Int stands for a value known only when the kernel runs (a
// runtime extent or stride of a global tensor, a thread index, ...). Dynamic values are kept as a normalised
// polynomial over atoms (symbols and the operations the algebra cannot distribute: floor division, modulo, min,
// max), so that the algebra can still decide equalities such as `stride_1 == shape_0 * stride_0` for (M,N):(1,M),
// prove divisibility (for vectorised accesses), and fold every static part. Arithmetic on dynamic values assumes
// what CuTe assumes of shapes and indices: division and modulo are floor operations.
//
// Static arithmetic is checked for overflow: an overflow is a LayoutError, never undefined behaviour.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ww {

namespace sym {
struct Poly;
struct Atom;
}  // namespace sym

class Int {
 public:
  Int() = default;
  Int(int v) : value_(v) {}            // NOLINT: integers convert implicitly, as in CuTe
  Int(long v) : value_(v) {}           // NOLINT
  Int(long long v) : value_(v) {}      // NOLINT
  Int(unsigned v) : value_(v) {}       // NOLINT
  Int(unsigned long v);                // NOLINT: checked, must fit int64
  Int(unsigned long long v);           // NOLINT

  // A fresh dynamic value. `id` names it for whoever materialises the expression (the tracer maps ids to IR
  // values); `divisibility` is a known divisor (e.g. 8 for a stride known to be a multiple of 8); `nonneg` records
  // that it is never negative (shapes and indices are not); `bits` is the width it has in the IR (32 or 64).
  static Int symbol(uint64_t id, int64_t divisibility = 1, bool nonneg = true, int bits = 32, std::string name = {});

  bool is_static() const { return poly_ == nullptr; }
  bool is_dynamic() const { return poly_ != nullptr; }
  // The static value; a LayoutError naming `what` when the value is dynamic.
  int64_t value(const char* what = "value") const;
  // The static value or nullopt.
  std::optional<int64_t> static_value() const {
    if (poly_) return std::nullopt;
    return value_;
  }
  bool is_constant(int64_t v) const { return !poly_ && value_ == v; }

  // Structural identity: equal static values, or the same normal form.
  bool same(const Int& o) const;
  // Equality when decidable now: both static, same normal form, or a static non-zero difference.
  std::optional<bool> known_eq(const Int& o) const;
  std::optional<bool> known_lt(const Int& o) const;
  // The largest divisor known now: |v| for a static v (0 for 0, which every integer divides), a derived bound for a
  // dynamic one (at least 1).
  int64_t divisibility() const;
  // True when `d` surely divides this value.
  bool known_divisible_by(int64_t d) const;
  bool known_nonneg() const;
  int bits() const;  // 32 unless a 64-bit symbol takes part

  size_t hash() const;
  // CuTe notation: the value, or `?` for a dynamic value.
  std::string str() const;
  // The expression, e.g. `(s0 * 4 + (s1 % 32))`: for diagnostics and tests.
  std::string expr_str() const;

  // Evaluates a dynamic value given values for its symbols (host-side launch parameters).
  int64_t evaluate(const std::function<int64_t(uint64_t id)>& symbol_value) const;

  const sym::Poly* poly() const { return poly_.get(); }

  friend Int operator+(const Int& a, const Int& b);
  friend Int operator-(const Int& a, const Int& b);
  friend Int operator-(const Int& a);
  friend Int operator*(const Int& a, const Int& b);
  // Division truncates for static values (CuTe's C++ integer division) and floors for dynamic ones; they agree on
  // the non-negative values that shapes and indices are.
  friend Int operator/(const Int& a, const Int& b);
  friend Int operator%(const Int& a, const Int& b);
  Int& operator+=(const Int& b) { return *this = *this + b; }
  Int& operator*=(const Int& b) { return *this = *this * b; }

 private:
  friend struct sym::Poly;
  friend Int make_int(std::shared_ptr<const sym::Poly>);
  int64_t value_ = 0;
  std::shared_ptr<const sym::Poly> poly_;
};

Int min(const Int& a, const Int& b);
Int max(const Int& a, const Int& b);
Int abs(const Int& a);
Int signum(const Int& a);
Int ceil_div(const Int& a, const Int& b);
Int gcd(const Int& a, const Int& b);
// Bitwise exclusive or, for swizzled offsets (operands are non-negative offsets).
Int bit_xor(const Int& a, const Int& b);
// x split as `divisible + rest` where `divisible` is known to be a multiple of m (m > 0) and gathers every term of x
// that is (and the floor multiple of m of its constant). Swizzled tensors use it: a multiple of the swizzle's span
// passes through the swizzle unchanged, so it can move into the pointer.
std::pair<Int, Int> split_divisible(const Int& x, int64_t m);

namespace sym {

// The normal form of a dynamic value: constant + sum(coef * product(factors)), terms and factors in a
// deterministic order (independent of pointer values, so printed IR and cache keys are stable).
struct Atom {
  enum class Kind : uint8_t { Symbol, Div, Mod, Min, Max, Xor };
  Kind kind;
  uint64_t id = 0;            // Symbol
  int64_t divisibility = 1;   // Symbol: as given; operations: derived
  bool nonneg = true;
  int bits = 32;
  std::string name;           // Symbol
  Int a, b;                   // operations
  size_t hash = 0;
};
using AtomPtr = std::shared_ptr<const Atom>;

struct Term {
  int64_t coef;
  std::vector<AtomPtr> factors;  // sorted by atom_order, with repetition
};

struct Poly {
  int64_t constant = 0;
  std::vector<Term> terms;  // sorted by monomial order, coefficients non-zero, at least one term
  size_t hash = 0;
  int bits = 32;
  bool nonneg = true;
};

// Total order on atoms and monomials, and structural equality.
int atom_order(const Atom& a, const Atom& b);
bool atom_equal(const Atom& a, const Atom& b);

// Walks a dynamic value for whoever materialises it (the IR builder). Factors repeat in a term for powers.
template <class V>
struct Lowering {
  virtual ~Lowering() = default;
  virtual V constant(int64_t v, int bits) = 0;
  virtual V symbol(const Atom& s) = 0;
  virtual V add(V a, V b) = 0;
  virtual V mul(V a, V b) = 0;
  virtual V div(V a, V b, bool nonneg) = 0;
  virtual V mod(V a, V b, bool nonneg) = 0;
  virtual V min(V a, V b) = 0;
  virtual V max(V a, V b) = 0;
  virtual V bit_xor(V a, V b) = 0;
};

}  // namespace sym
}  // namespace ww
