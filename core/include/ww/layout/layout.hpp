#pragma once
// Layout: a shape and a congruent stride; a function from coordinates (or 1-D indices) to offsets.
#include <span>
#include <string>

#include "ww/layout/int_tuple.hpp"

namespace ww {

class Layout {
 public:
  Layout();                                      // 1:0
  explicit Layout(const IntTuple& shape);        // compact column-major strides
  Layout(IntTuple shape, IntTuple stride);       // validated: congruent, positive extents, no basis in the shape
  // For results of the algebra, which hold the invariants by construction.
  static Layout trusted(IntTuple shape, IntTuple stride);

  const IntTuple& shape() const { return shape_; }
  const IntTuple& stride() const { return stride_; }
  int rank() const { return shape_.rank(); }
  int depth() const { return ww::depth(shape_); }
  Int size() const { return product(shape_); }
  // One past the largest offset (CuTe: L(size-1) + 1); for basis strides, the last coordinate plus one per mode.
  IntTuple cosize() const;
  // Mode i as a layout (a rank-1 layout is its own mode 0).
  Layout operator[](int i) const;
  // Evaluation: a 1-D index, or a coordinate congruent (or compatible) with the shape. The last mode takes any
  // overflow of a 1-D index, as in CuTe, so the function extends past size().
  IntTuple operator()(const IntTuple& coord) const;

  bool same(const Layout& o) const { return shape_.same(o.shape_) && stride_.same(o.stride_); }
  size_t hash() const { return shape_.hash() * 7919 + stride_.hash(); }
  bool is_static() const { return shape_.is_static() && stride_.is_static(); }
  bool has_basis_stride() const;
  std::string str() const { return shape_.str() + ":" + stride_.str(); }

 private:
  IntTuple shape_, stride_;
};

}  // namespace ww
