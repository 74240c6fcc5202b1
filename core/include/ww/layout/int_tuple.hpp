#pragma once
// IntTuple: an integer or a tuple of IntTuples. Shapes, strides and coordinates are IntTuples.
//
// A stride leaf may carry a basis path (CuTe's scaled basis `v@i@j`): a stride that moves along mode (i, j) of a
// tuple-valued codomain. Identity layouts use them, and so does everything composed from one (the coordinate
// tensors that predicate copies). A leaf without a path is a plain integer.
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ww/layout/int.hpp"

namespace ww {

// A basis path of up to 7 indices, each < 256, packed into one word so that plain strides stay cheap.
class Basis {
 public:
  Basis() = default;
  static Basis path(std::span<const int> indices);
  int depth() const { return static_cast<int>(bits_ & 0xff); }
  int operator[](int i) const { return static_cast<int>((bits_ >> (8 * (i + 1))) & 0xff); }
  bool empty() const { return bits_ == 0; }
  Basis prepend(int index) const;  // the path one level deeper in the codomain
  uint64_t raw() const { return bits_; }
  friend bool operator==(Basis a, Basis b) { return a.bits_ == b.bits_; }

 private:
  uint64_t bits_ = 0;
};

class IntTuple {
 public:
  IntTuple();  // the empty tuple ()
  IntTuple(Int v) : value_(std::move(v)) {}                     // NOLINT: a leaf
  IntTuple(int v) : value_(v) {}                                // NOLINT
  IntTuple(long v) : value_(v) {}                               // NOLINT
  IntTuple(long long v) : value_(v) {}                          // NOLINT
  static IntTuple tuple(std::vector<IntTuple> children);
  static IntTuple tuple(std::initializer_list<IntTuple> children) { return tuple(std::vector<IntTuple>(children)); }
  static IntTuple scaled_basis(Int v, Basis b);

  bool is_leaf() const { return children_ == nullptr; }
  bool is_tuple() const { return children_ != nullptr; }
  // The integer of a leaf (a LayoutTypeError for a tuple).
  const Int& value() const;
  Basis basis() const { return basis_; }
  bool has_basis() const { return !basis_.empty(); }
  // Number of children of a tuple; 1 for a leaf (CuTe: rank(int) == 1).
  int rank() const { return children_ ? static_cast<int>(children_->size()) : 1; }
  // The i-th child; a leaf is its own 0-th child (CuTe: get<0>(int) == int).
  const IntTuple& operator[](int i) const;
  std::span<const IntTuple> children() const;

  bool same(const IntTuple& o) const;
  size_t hash() const;
  bool is_static() const;  // no dynamic leaf anywhere
  std::string str() const;

 private:
  Int value_;
  Basis basis_;
  std::shared_ptr<const std::vector<IntTuple>> children_;
};

inline IntTuple tup(std::initializer_list<IntTuple> c) { return IntTuple::tuple(c); }

// Structure
int depth(const IntTuple& t);   // 0 for a leaf
Int product(const IntTuple& t); // size of a shape; 1 for ()
Int sum(const IntTuple& t);
IntTuple flatten(const IntTuple& t);          // a leaf stays a leaf; a tuple becomes a tuple of leaves
std::vector<IntTuple> flatten_leaves(const IntTuple& t);
IntTuple product_each(const IntTuple& t);     // (product(t0), product(t1), ...)
IntTuple wrap(const IntTuple& t);             // a leaf becomes a 1-tuple
IntTuple unwrap(const IntTuple& t);           // a 1-tuple becomes its child, recursively
IntTuple append(const IntTuple& t, const IntTuple& x);
IntTuple prepend(const IntTuple& t, const IntTuple& x);
IntTuple take(const IntTuple& t, int begin, int end);
IntTuple repeat_like(const IntTuple& like, const IntTuple& x);
// The sub-tuple at a mode path; an empty path is t itself.
const IntTuple& get(const IntTuple& t, std::span<const int> path);
// Builds a tuple with the profile of `profile` from a flat list of leaves (inverse of flatten_leaves).
IntTuple unflatten(std::span<const IntTuple> leaves, const IntTuple& profile);

// Relations (CuTe): congruent = same profile; compatible = every leaf of a splits into the sub-tuple of b;
// weakly_congruent = a's profile is a prefix-tree of b's.
bool congruent(const IntTuple& a, const IntTuple& b);
bool compatible(const IntTuple& a, const IntTuple& b);
bool weakly_congruent(const IntTuple& a, const IntTuple& b);

// Arithmetic with CuTe's tuple semantics.
IntTuple shape_div(const IntTuple& a, const IntTuple& b);  // requires a % b == 0 or b % a == 0 at the leaves
IntTuple ceil_div(const IntTuple& a, const IntTuple& b);
IntTuple elem_scale(const IntTuple& a, const IntTuple& b);
Int shape_div(const Int& a, const Int& b);
// Compact strides for a shape: column-major (leftmost fastest) or row-major, starting at `current`. Modes of size
// 1 get stride 0, as in CuTe.
IntTuple compact_col_major(const IntTuple& shape, const Int& current = 1);
IntTuple compact_row_major(const IntTuple& shape, const Int& current = 1);
// Compact strides following `order` (the mode with the smallest order is fastest), CuTe's compact_order.
IntTuple compact_order(const IntTuple& shape, const IntTuple& order);

// Strides and codomain values. A codomain value is an integer, or, where bases take part, a tuple added at the
// paths of the bases (CuTe's ArithmeticTuple).
IntTuple scale_stride(const IntTuple& stride_leaf, const Int& k);
bool same_stride(const IntTuple& a, const IntTuple& b);
IntTuple codomain_add(const IntTuple& a, const IntTuple& b);
IntTuple basis_value_tuple(const Int& v, Basis b);  // v placed at path b of a tuple of zeros
bool is_zero(const IntTuple& t);

}  // namespace ww
