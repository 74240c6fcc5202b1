// Offsets back to coordinates for compact layouts.
#include "ww/layout/coordinates.hpp"

#include <vector>

#include "ww/layout/error.hpp"
#include "ww/layout/layout_algebra.hpp"

namespace ww {

IntTuple idx2crd(const Int& idx, const IntTuple& shape, const IntTuple& stride) {
  if (shape.is_tuple()) {
    if (stride.is_leaf() || stride.rank() != shape.rank())
      throw LayoutError("idx2crd: the shape " + shape.str() + " and the stride " + stride.str() + " are not congruent");
    std::vector<IntTuple> r;
    for (int i = 0; i < shape.rank(); ++i) r.push_back(idx2crd(idx, shape[i], stride[i]));
    return IntTuple::tuple(std::move(r));
  }
  if (stride.is_tuple() || stride.has_basis())
    throw LayoutError("idx2crd: the stride " + stride.str() + " of the extent " + shape.str() + " is not an integer");
  const Int& extent = shape.value();
  if (extent.is_constant(1)) return IntTuple(0);
  const Int& d = stride.value();
  if (auto v = d.static_value(); v && *v <= 0)
    throw LayoutError("idx2crd: the mode " + shape.str() + ":" + stride.str() +
                      " has no inverse (only a compact layout maps offsets back to coordinates)");
  return IntTuple((idx / d) % extent);
}

IntTuple get_hier_coord(const Layout& l, const Int& idx) { return idx2crd(idx, l.shape(), l.stride()); }

IntTuple get_flat_coord(const Layout& l, const Int& idx) {
  IntTuple hier = get_hier_coord(l, idx);
  const IntTuple& shape = l.shape();
  if (shape.rank() == 1) return crd2idx(hier, shape, compact_col_major(shape));  // CuTe: repeat<1>(x) is x
  std::vector<IntTuple> r;
  for (int i = 0; i < shape.rank(); ++i) r.push_back(crd2idx(hier[i], shape[i], compact_col_major(shape[i])));
  return IntTuple::tuple(std::move(r));
}

Int get_1d_coord(const Layout& l, const Int& idx) {
  IntTuple c = crd2idx(get_hier_coord(l, idx), l.shape(), compact_col_major(l.shape()));
  return c.value();
}

}  // namespace ww
