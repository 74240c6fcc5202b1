#pragma once
// From an offset back to the coordinate that a compact layout maps to it (CuTe's Layout::get_hier_coord,
// get_flat_coord and get_1d_coord).
#include "ww/layout/layout.hpp"

namespace ww {

// CuTe's idx2crd(idx, shape, stride): at each leaf of the shape, (idx / stride) % extent; a leaf of extent 1 is 0.
// For a compact layout (an injective one whose image is [0, size)) l(result) == idx for idx in [0, size).
// Stride-0 and negative-stride leaves of extent > 1 have no such coordinate: a LayoutError.
IntTuple idx2crd(const Int& idx, const IntTuple& shape, const IntTuple& stride);

// The hierarchical coordinate (congruent with l's shape) of offset idx.
IntTuple get_hier_coord(const Layout& l, const Int& idx);
// One integer per top-level mode: the hierarchical coordinate of each mode as that mode's colexicographic 1-D
// coordinate (a rank-r, depth <= 1 tuple; for a rank-1 layout, an integer, as in CuTe).
IntTuple get_flat_coord(const Layout& l, const Int& idx);
// The colexicographic 1-D coordinate of idx over the whole shape.
Int get_1d_coord(const Layout& l, const Int& idx);

}  // namespace ww
