#pragma once
// Swizzle<B,M,S> and ComposedLayout (inner o offset o outer).
//
// A swizzle XORs the B bits of an offset found at position M+S (for S >= 0) into the B bits at position M: it
// permutes offsets within each aligned block of 2^(M+B+|S|) elements, which is how shared-memory tiles avoid bank
// conflicts. A ComposedLayout applies an outer layout, adds an offset, and applies an inner function (a swizzle
// or a layout): f(c) = inner(offset + outer(c)). Shape, size and tiling come from the outer layout.
#include <optional>
#include <string>
#include <variant>

#include "ww/layout/layout_algebra.hpp"

namespace ww {

class Swizzle {
 public:
  Swizzle(int bits, int base, int shift);  // requires bits >= 0, base >= 0, |shift| >= bits
  int bits() const { return bits_; }
  int base() const { return base_; }
  int shift() const { return shift_; }
  int64_t operator()(int64_t offset) const;
  Int operator()(const Int& offset) const;  // dynamic offsets stay symbolic
  bool is_identity() const { return bits_ == 0; }
  bool same(const Swizzle& o) const { return bits_ == o.bits_ && base_ == o.base_ && shift_ == o.shift_; }
  size_t hash() const { return static_cast<size_t>(bits_ * 1000003 + base_ * 1009 + shift_ + 17); }
  std::string str() const;

 private:
  int bits_, base_, shift_;
};

class ComposedLayout {
 public:
  using Inner = std::variant<Swizzle, Layout>;
  ComposedLayout(Inner inner, IntTuple offset, Layout outer);

  const Inner& inner() const { return inner_; }
  const IntTuple& offset() const { return offset_; }
  const Layout& outer() const { return outer_; }
  bool inner_is_swizzle() const { return std::holds_alternative<Swizzle>(inner_); }

  const IntTuple& shape() const { return outer_.shape(); }
  int rank() const { return outer_.rank(); }
  Int size() const { return outer_.size(); }
  IntTuple cosize() const;
  IntTuple operator()(const IntTuple& coord) const;
  // A new composed layout with the same inner function and offset over another outer layout.
  ComposedLayout with_outer(Layout outer) const { return ComposedLayout(inner_, offset_, std::move(outer)); }

  bool same(const ComposedLayout& o) const;
  size_t hash() const;
  std::string str() const;  // e.g. S<3,4,3> o 0 o (8,64):(64,1)

 private:
  Inner inner_;
  IntTuple offset_;
  Layout outer_;
};

// composition(swizzle, layout) = swizzle o 0 o layout.
ComposedLayout composition(const Swizzle& sw, const Layout& l);
// The algebra acts on the outer layout and keeps the inner function and offset.
ComposedLayout composition(const ComposedLayout& a, const Layout& b);
ComposedLayout composition(const ComposedLayout& a, const Tiler& b);
ComposedLayout logical_divide(const ComposedLayout& a, const Tiler& b);
ComposedLayout zipped_divide(const ComposedLayout& a, const Tiler& b);
ComposedLayout tiled_divide(const ComposedLayout& a, const Tiler& b);
ComposedLayout flat_divide(const ComposedLayout& a, const Tiler& b);
ComposedLayout logical_product(const ComposedLayout& a, const Tiler& b);
ComposedLayout zipped_product(const ComposedLayout& a, const Tiler& b);
ComposedLayout tiled_product(const ComposedLayout& a, const Tiler& b);
ComposedLayout flat_product(const ComposedLayout& a, const Tiler& b);
ComposedLayout blocked_product(const ComposedLayout& a, const Layout& b);
ComposedLayout raked_product(const ComposedLayout& a, const Layout& b);
ComposedLayout tile_to_shape(const ComposedLayout& block, const IntTuple& target_shape,
                             const std::optional<IntTuple>& order = {});
ComposedLayout coalesce(const ComposedLayout& l);
ComposedLayout coalesce(const ComposedLayout& l, const IntTuple& profile);
ComposedLayout flatten(const ComposedLayout& l);

}  // namespace ww
