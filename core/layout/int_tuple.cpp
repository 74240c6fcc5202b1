// IntTuple: construction, structure and CuTe's tuple arithmetic.
#include "ww/layout/int_tuple.hpp"

#include <algorithm>

#include "ww/layout/assumptions.hpp"
#include "ww/layout/error.hpp"

namespace ww {
namespace {

const std::shared_ptr<const std::vector<IntTuple>>& empty_children() {
  static const auto empty = std::make_shared<const std::vector<IntTuple>>();
  return empty;
}

void flatten_into(const IntTuple& t, std::vector<IntTuple>& out) {
  if (t.is_leaf()) {
    out.push_back(t);
    return;
  }
  for (auto& c : t.children()) flatten_into(c, out);
}

template <class F>
IntTuple transform(const IntTuple& t, F&& f) {
  std::vector<IntTuple> r;
  r.reserve(t.rank());
  for (auto& c : t.children()) r.push_back(f(c));
  return IntTuple::tuple(std::move(r));
}

}  // namespace

Basis Basis::path(std::span<const int> indices) {
  if (indices.size() > 7) throw LayoutError("basis path deeper than 7 levels");
  Basis b;
  b.bits_ = indices.size();
  for (size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] < 0 || indices[i] > 255) throw LayoutError("basis index out of range: " + std::to_string(indices[i]));
    b.bits_ |= static_cast<uint64_t>(indices[i]) << (8 * (i + 1));
  }
  return b;
}

Basis Basis::prepend(int index) const {
  std::vector<int> p{index};
  for (int i = 0; i < depth(); ++i) p.push_back((*this)[i]);
  return path(p);
}

IntTuple::IntTuple() : children_(empty_children()) {}

IntTuple IntTuple::tuple(std::vector<IntTuple> children) {
  IntTuple t;
  if (!children.empty()) t.children_ = std::make_shared<const std::vector<IntTuple>>(std::move(children));
  return t;
}

IntTuple IntTuple::scaled_basis(Int v, Basis b) {
  IntTuple t(std::move(v));
  t.basis_ = b;
  return t;
}

const Int& IntTuple::value() const {
  if (children_) throw LayoutTypeError("expected an integer, got the tuple " + str());
  return value_;
}

const IntTuple& IntTuple::operator[](int i) const {
  if (!children_) {
    if (i != 0) throw LayoutError("mode " + std::to_string(i) + " out of range for the integer " + str());
    return *this;
  }
  if (i < 0 || i >= static_cast<int>(children_->size()))
    throw LayoutError("mode " + std::to_string(i) + " out of range for " + str() + " of rank " + std::to_string(rank()));
  return (*children_)[i];
}

std::span<const IntTuple> IntTuple::children() const {
  if (!children_) return {this, 1};
  return {children_->data(), children_->size()};
}

bool IntTuple::same(const IntTuple& o) const {
  if (is_leaf() != o.is_leaf()) return false;
  if (is_leaf()) return basis_ == o.basis_ && value_.same(o.value_);
  if (children_ == o.children_) return true;
  if (children_->size() != o.children_->size()) return false;
  for (size_t i = 0; i < children_->size(); ++i)
    if (!(*children_)[i].same((*o.children_)[i])) return false;
  return true;
}

size_t IntTuple::hash() const {
  if (is_leaf()) return value_.hash() * 31 + basis_.raw();
  size_t h = 0xabc + children_->size();
  for (auto& c : *children_) h = h * 1000003 + c.hash();
  return h;
}

bool IntTuple::is_static() const {
  if (is_leaf()) return value_.is_static();
  return std::all_of(children_->begin(), children_->end(), [](const IntTuple& c) { return c.is_static(); });
}

std::string IntTuple::str() const {
  if (is_leaf()) {
    std::string s = value_.str();
    for (int i = 0; i < basis_.depth(); ++i) s += "@" + std::to_string(basis_[i]);
    return s;
  }
  std::string s = "(";
  for (size_t i = 0; i < children_->size(); ++i) {
    if (i) s += ",";
    s += (*children_)[i].str();
  }
  return s + ")";
}

int depth(const IntTuple& t) {
  if (t.is_leaf()) return 0;
  int d = 0;
  for (auto& c : t.children()) d = std::max(d, depth(c));
  return d + 1;
}

Int product(const IntTuple& t) {
  if (t.is_leaf()) {
    if (t.has_basis()) throw LayoutTypeError("product: " + t.str() + " is a basis element, not an extent");
    return t.value();
  }
  Int p = 1;
  for (auto& c : t.children()) p = p * product(c);
  return p;
}

Int sum(const IntTuple& t) {
  if (t.is_leaf()) return t.value();
  Int s = 0;
  for (auto& c : t.children()) s = s + sum(c);
  return s;
}

std::vector<IntTuple> flatten_leaves(const IntTuple& t) {
  std::vector<IntTuple> out;
  flatten_into(t, out);
  return out;
}

IntTuple flatten(const IntTuple& t) {
  if (t.is_leaf()) return t;
  return IntTuple::tuple(flatten_leaves(t));
}

IntTuple product_each(const IntTuple& t) {
  if (t.is_leaf()) return t;
  return transform(t, [](const IntTuple& c) { return IntTuple(product(c)); });
}

IntTuple wrap(const IntTuple& t) { return t.is_leaf() ? IntTuple::tuple({t}) : t; }

IntTuple unwrap(const IntTuple& t) {
  if (t.is_tuple() && t.rank() == 1) return unwrap(t[0]);
  return t;
}

IntTuple append(const IntTuple& t, const IntTuple& x) {
  std::vector<IntTuple> r;
  if (t.is_leaf()) {
    r = {t};
  } else {
    r.assign(t.children().begin(), t.children().end());
  }
  r.push_back(x);
  return IntTuple::tuple(std::move(r));
}

IntTuple prepend(const IntTuple& t, const IntTuple& x) {
  std::vector<IntTuple> r{x};
  if (t.is_leaf()) {
    r.push_back(t);
  } else {
    r.insert(r.end(), t.children().begin(), t.children().end());
  }
  return IntTuple::tuple(std::move(r));
}

IntTuple take(const IntTuple& t, int begin, int end) {
  if (begin < 0 || end > t.rank() || begin > end)
    throw LayoutError("take: range [" + std::to_string(begin) + "," + std::to_string(end) + ") out of range for " + t.str());
  auto c = t.children();
  return IntTuple::tuple(std::vector<IntTuple>(c.begin() + begin, c.begin() + end));
}

IntTuple repeat_like(const IntTuple& like, const IntTuple& x) {
  if (like.is_leaf()) return x;
  return transform(like, [&](const IntTuple& c) { return repeat_like(c, x); });
}

const IntTuple& get(const IntTuple& t, std::span<const int> path) {
  const IntTuple* cur = &t;
  for (int i : path) cur = &(*cur)[i];
  return *cur;
}

namespace {
IntTuple unflatten_impl(std::span<const IntTuple> leaves, size_t& pos, const IntTuple& profile) {
  if (profile.is_leaf()) {
    if (pos >= leaves.size()) throw LayoutError("unflatten: too few elements for the profile " + profile.str());
    return leaves[pos++];
  }
  std::vector<IntTuple> r;
  for (auto& c : profile.children()) r.push_back(unflatten_impl(leaves, pos, c));
  return IntTuple::tuple(std::move(r));
}
}  // namespace

IntTuple unflatten(std::span<const IntTuple> leaves, const IntTuple& profile) {
  size_t pos = 0;
  IntTuple r = unflatten_impl(leaves, pos, profile);
  if (pos != leaves.size()) throw LayoutError("unflatten: too many elements for the profile " + profile.str());
  return r;
}

bool congruent(const IntTuple& a, const IntTuple& b) {
  if (a.is_leaf() || b.is_leaf()) return a.is_leaf() == b.is_leaf();
  if (a.rank() != b.rank()) return false;
  for (int i = 0; i < a.rank(); ++i)
    if (!congruent(a[i], b[i])) return false;
  return true;
}

bool compatible(const IntTuple& a, const IntTuple& b) {
  if (a.is_leaf()) return a.value().known_eq(product(b)).value_or(true);
  if (b.is_leaf() || a.rank() != b.rank()) return false;
  for (int i = 0; i < a.rank(); ++i)
    if (!compatible(a[i], b[i])) return false;
  return true;
}

bool weakly_congruent(const IntTuple& a, const IntTuple& b) {
  if (a.is_leaf()) return true;
  if (b.is_leaf() || a.rank() != b.rank()) return false;
  for (int i = 0; i < a.rank(); ++i)
    if (!weakly_congruent(a[i], b[i])) return false;
  return true;
}

Int shape_div(const Int& a, const Int& b) {
  if (b.is_constant(0)) throw LayoutError("shape_div: division of " + a.str() + " by 0");
  if (!a.is_constant(0))
    require({Assumption::Kind::DividesEither, a, b}, [&] { return "shape_div: neither of " + a.str() + " and " + b.str() + " divides the other"; });
  if (b.is_static() && a.known_divisible_by(*b.static_value())) return a / b;
  if (a.same(b)) return Int(1);
  // One divides the other (the precondition): a / b rounded up is then exact, or 1 when b is the larger.
  return ceil_div(a, b);
}

IntTuple shape_div(const IntTuple& a, const IntTuple& b) {
  if (a.is_tuple()) {
    if (b.is_tuple()) {
      if (a.rank() != b.rank())
        throw LayoutError("shape_div: mismatched ranks of " + a.str() + " and " + b.str());
      std::vector<IntTuple> r;
      for (int i = 0; i < a.rank(); ++i) r.push_back(shape_div(a[i], b[i]));
      return IntTuple::tuple(std::move(r));
    }
    std::vector<IntTuple> r;
    IntTuple rest = b;
    for (auto& ai : a.children()) {
      r.push_back(shape_div(ai, rest));
      rest = shape_div(rest, ai);
    }
    return IntTuple::tuple(std::move(r));
  }
  if (b.is_tuple()) return shape_div(a, IntTuple(product(b)));
  return shape_div(a.value(), b.value());
}

IntTuple ceil_div(const IntTuple& a, const IntTuple& b) {
  if (a.is_tuple()) {
    if (b.is_tuple()) {
      if (a.rank() < b.rank()) throw LayoutError("ceil_div: " + b.str() + " has more modes than " + a.str());
      std::vector<IntTuple> r;
      for (int i = 0; i < a.rank(); ++i) r.push_back(i < b.rank() ? ceil_div(a[i], b[i]) : a[i]);
      return IntTuple::tuple(std::move(r));
    }
    std::vector<IntTuple> r;
    IntTuple rest = b;
    for (auto& ai : a.children()) {
      r.push_back(ceil_div(ai, rest));
      rest = ceil_div(rest, ai);
    }
    return IntTuple::tuple(std::move(r));
  }
  if (b.is_tuple()) return ceil_div(a, IntTuple(product(b)));
  if (b.value().is_constant(0)) throw LayoutError("ceil_div: division of " + a.str() + " by 0");
  return ceil_div(a.value(), b.value());
}

IntTuple elem_scale(const IntTuple& a, const IntTuple& b) {
  if (a.is_tuple()) {
    if (!b.is_tuple() || a.rank() != b.rank())
      throw LayoutError("elem_scale: mismatched profiles " + a.str() + " and " + b.str());
    std::vector<IntTuple> r;
    for (int i = 0; i < a.rank(); ++i) r.push_back(elem_scale(a[i], b[i]));
    return IntTuple::tuple(std::move(r));
  }
  return scale_stride(a, product(b));
}

namespace {
// Returns (strides, next current). Modes of extent 1 get stride 0.
IntTuple compact(const IntTuple& shape, Int& current, bool left) {
  if (shape.is_leaf()) {
    const Int& s = shape.value();
    if (s.is_constant(1)) return IntTuple(0);
    Int d = current;
    current = current * s;
    return IntTuple(d);
  }
  std::vector<IntTuple> r(shape.rank());
  if (left) {
    for (int i = 0; i < shape.rank(); ++i) r[i] = compact(shape[i], current, left);
  } else {
    for (int i = shape.rank() - 1; i >= 0; --i) r[i] = compact(shape[i], current, left);
  }
  return IntTuple::tuple(std::move(r));
}
}  // namespace

IntTuple compact_col_major(const IntTuple& shape, const Int& current) {
  Int c = current;
  return compact(shape, c, true);
}

IntTuple compact_row_major(const IntTuple& shape, const Int& current) {
  Int c = current;
  return compact(shape, c, false);
}

namespace {
IntTuple product_like(const IntTuple& shape, const IntTuple& like) {
  // Shape collapsed to the profile of `like` (each leaf of `like` takes the product of its sub-shape).
  if (like.is_leaf()) return IntTuple(product(shape));
  if (shape.is_leaf() || shape.rank() != like.rank())
    throw LayoutError("the order " + like.str() + " does not match the profile of the shape " + shape.str());
  std::vector<IntTuple> r;
  for (int i = 0; i < like.rank(); ++i) r.push_back(product_like(shape[i], like[i]));
  return IntTuple::tuple(std::move(r));
}

IntTuple compact_order_impl(const IntTuple& shape, const IntTuple& order, const std::vector<IntTuple>& ref_shape,
                            const std::vector<int64_t>& ref_order) {
  if (order.is_tuple()) {
    if (shape.is_leaf() || shape.rank() != order.rank())
      throw LayoutError("make_ordered_layout: the order " + order.str() + " does not match the shape " + shape.str());
    std::vector<IntTuple> r;
    for (int i = 0; i < order.rank(); ++i) r.push_back(compact_order_impl(shape[i], order[i], ref_shape, ref_order));
    return IntTuple::tuple(std::move(r));
  }
  int64_t o = order.value().value("make_ordered_layout order");
  Int start = 1;
  for (size_t i = 0; i < ref_shape.size(); ++i)
    if (ref_order[i] < o) start = start * ref_shape[i].value();
  return compact_col_major(shape, start);
}
}  // namespace

IntTuple compact_order(const IntTuple& shape, const IntTuple& order) {
  if (!weakly_congruent(order, shape))
    throw LayoutError("make_ordered_layout: the order " + order.str() + " does not match the profile of the shape " +
                      shape.str());
  std::vector<IntTuple> ref_shape = flatten_leaves(wrap(product_like(shape, order)));
  std::vector<int64_t> ref_order;
  for (auto& o : flatten_leaves(wrap(order))) ref_order.push_back(o.value().value("make_ordered_layout order"));
  return compact_order_impl(shape, order, ref_shape, ref_order);
}

IntTuple scale_stride(const IntTuple& stride, const Int& k) {
  if (stride.is_tuple()) return transform(stride, [&](const IntTuple& c) { return scale_stride(c, k); });
  return IntTuple::scaled_basis(stride.value() * k, stride.basis());
}

bool same_stride(const IntTuple& a, const IntTuple& b) {
  if (a.is_leaf() && b.is_leaf()) {
    if (a.basis() == b.basis()) return a.value().known_eq(b.value()).value_or(false);
    // Two zeros are equal whatever their bases.
    return a.value().is_constant(0) && b.value().is_constant(0);
  }
  return a.same(b);
}

IntTuple basis_value_tuple(const Int& v, Basis b) {
  IntTuple r(v);
  for (int level = b.depth() - 1; level >= 0; --level) {
    std::vector<IntTuple> t(b[level] + 1, IntTuple(0));
    t[b[level]] = r;
    r = IntTuple::tuple(std::move(t));
  }
  return r;
}

IntTuple codomain_add(const IntTuple& a, const IntTuple& b) {
  if (a.is_leaf() && a.has_basis()) return codomain_add(basis_value_tuple(a.value(), a.basis()), b);
  if (b.is_leaf() && b.has_basis()) return codomain_add(a, basis_value_tuple(b.value(), b.basis()));
  if (a.is_leaf() && b.is_leaf()) return IntTuple(a.value() + b.value());
  // A zero integer is the neutral element of every tuple.
  if (a.is_leaf() && a.value().is_constant(0)) return b;
  if (b.is_leaf() && b.value().is_constant(0)) return a;
  if (a.is_leaf() || b.is_leaf())
    throw LayoutTypeError("cannot add the integer and the coordinate tuple " + a.str() + " + " + b.str());
  std::vector<IntTuple> r;
  int n = std::max(a.rank(), b.rank());
  for (int i = 0; i < n; ++i) {
    if (i >= a.rank()) {
      r.push_back(b[i]);
    } else if (i >= b.rank()) {
      r.push_back(a[i]);
    } else {
      r.push_back(codomain_add(a[i], b[i]));
    }
  }
  return IntTuple::tuple(std::move(r));
}

bool is_zero(const IntTuple& t) {
  if (t.is_leaf()) return t.value().is_constant(0);
  for (auto& c : t.children())
    if (!is_zero(c)) return false;
  return true;
}

}  // namespace ww
