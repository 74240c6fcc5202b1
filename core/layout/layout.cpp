// Layout: validation, evaluation, construction helpers and mode manipulation.
#include "ww/layout/layout.hpp"

#include "ww/layout/error.hpp"
#include "ww/layout/layout_algebra.hpp"

namespace ww {
namespace {

void check_shape(const IntTuple& shape, const char* op) {
  if (shape.is_tuple()) {
    if (shape.rank() == 0) throw LayoutError(std::string(op) + ": a shape cannot hold the empty tuple ()");
    for (auto& c : shape.children()) check_shape(c, op);
    return;
  }
  if (shape.has_basis())
    throw LayoutError(std::string(op) + ": the shape extent " + shape.str() + " is a basis element, not an integer");
  if (auto v = shape.value().static_value(); v && *v <= 0)
    throw LayoutError(std::string(op) + ": extents must be positive, got " + std::to_string(*v));
}

IntTuple normalize_codomain(const IntTuple& v) {
  if (v.is_leaf() && v.has_basis()) return basis_value_tuple(v.value(), v.basis());
  return v;
}

IntTuple crd2idx_impl(const IntTuple& coord, const IntTuple& shape, const IntTuple& stride) {
  if (coord.is_tuple()) {
    if (shape.is_leaf() || coord.rank() != shape.rank())
      throw LayoutError("crd2idx: the coordinate " + coord.str() + " does not match the shape " + shape.str());
    IntTuple r(0);
    for (int i = 0; i < coord.rank(); ++i) r = codomain_add(r, crd2idx_impl(coord[i], shape[i], stride[i]));
    return r;
  }
  if (coord.has_basis()) throw LayoutTypeError("crd2idx: the coordinate " + coord.str() + " is a basis element");
  if (shape.is_leaf()) return scale_stride(stride, coord.value());
  Int c = coord.value();
  IntTuple r(0);
  int last = shape.rank() - 1;
  if (last < 0) return r;  // the empty shape has the single coordinate 0
  for (int i = 0; i < last; ++i) {
    Int extent = product(shape[i]);
    r = codomain_add(r, crd2idx_impl(IntTuple(c % extent), shape[i], stride[i]));
    c = c / extent;
  }
  return codomain_add(r, crd2idx_impl(IntTuple(c), shape[last], stride[last]));
}

void make_basis_like(const IntTuple& shape, std::vector<int>& path, std::vector<IntTuple>& out) {
  if (shape.is_leaf()) {
    out.push_back(IntTuple::scaled_basis(1, Basis::path(path)));
    return;
  }
  for (int i = 0; i < shape.rank(); ++i) {
    path.push_back(i);
    make_basis_like(shape[i], path, out);
    path.pop_back();
  }
}

IntTuple tuple_of(std::vector<IntTuple> v) { return IntTuple::tuple(std::move(v)); }

}  // namespace

Layout::Layout() : shape_(1), stride_(0) {}

Layout::Layout(const IntTuple& shape) : shape_(shape) {
  check_shape(shape_, "make_layout");
  stride_ = compact_col_major(shape_);
}

Layout::Layout(IntTuple shape, IntTuple stride) : shape_(std::move(shape)), stride_(std::move(stride)) {
  check_shape(shape_, "make_layout");
  if (!congruent(shape_, stride_))
    throw LayoutError("make_layout: the shape " + shape_.str() + " and the stride " + stride_.str() +
                      " are not congruent");
}

Layout Layout::trusted(IntTuple shape, IntTuple stride) {
  Layout l;
  l.shape_ = std::move(shape);
  l.stride_ = std::move(stride);
  return l;
}

IntTuple Layout::cosize() const {
  if (has_basis_stride()) {
    IntTuple last = (*this)(IntTuple(size() - Int(1)));
    auto leaves = flatten_leaves(wrap(last));
    for (auto& l : leaves) l = IntTuple(l.value() + Int(1));
    return unflatten(leaves, wrap(last));
  }
  // Static negative strides make L(size-1) smaller than other offsets: CuTe's definition assumes non-negative ones.
  return IntTuple(crd2idx_impl(IntTuple(size() - Int(1)), shape_, stride_).value() + Int(1));
}

Layout Layout::operator[](int i) const { return trusted(shape_[i], stride_[i]); }

IntTuple Layout::operator()(const IntTuple& coord) const { return normalize_codomain(crd2idx_impl(coord, shape_, stride_)); }

bool Layout::has_basis_stride() const {
  for (auto& l : flatten_leaves(stride_))
    if (l.has_basis()) return true;
  return false;
}

// --- Construction -----------------------------------------------------------------------------------------------

Layout make_layout(const IntTuple& shape) { return Layout(shape); }
Layout make_layout(const IntTuple& shape, const IntTuple& stride) { return Layout(shape, stride); }

Layout make_layout(std::span<const Layout> modes) {
  std::vector<IntTuple> s, d;
  for (auto& m : modes) {
    s.push_back(m.shape());
    d.push_back(m.stride());
  }
  return Layout::trusted(tuple_of(std::move(s)), tuple_of(std::move(d)));
}

Layout make_ordered_layout(const IntTuple& shape, const IntTuple& order) {
  Layout checked(shape);  // validates the extents
  return Layout::trusted(shape, compact_order(shape, order));
}

Layout make_identity_layout(const IntTuple& shape) {
  Layout checked(shape);
  if (shape.is_leaf()) return Layout::trusted(shape, IntTuple(1));
  std::vector<int> path;
  std::vector<IntTuple> strides;
  make_basis_like(shape, path, strides);
  return Layout::trusted(shape, unflatten(strides, shape));
}

std::pair<IntTuple, Layout> make_layout_tv(const Layout& thr, const Layout& val) {
  Layout mn = raked_product(thr, val);
  IntTuple tiler = product_each(mn.shape());
  Layout tv = composition(right_inverse(mn), make_layout(tup({thr.size(), val.size()})));
  return {tiler, tv};
}

// --- Coordinates ------------------------------------------------------------------------------------------------

IntTuple crd2idx(const IntTuple& coord, const IntTuple& shape, const IntTuple& stride) {
  if (!congruent(shape, stride))
    throw LayoutError("crd2idx: the shape " + shape.str() + " and the stride " + stride.str() + " are not congruent");
  return normalize_codomain(crd2idx_impl(coord, shape, stride));
}

IntTuple idx2crd(const IntTuple& idx, const IntTuple& shape) {
  if (idx.is_tuple()) {
    if (shape.is_leaf() || idx.rank() != shape.rank())
      throw LayoutError("idx2crd: the index " + idx.str() + " does not match the shape " + shape.str());
    std::vector<IntTuple> r;
    for (int i = 0; i < idx.rank(); ++i) r.push_back(idx2crd(idx[i], shape[i]));
    return tuple_of(std::move(r));
  }
  if (shape.is_leaf()) return idx;
  Int c = idx.value();
  std::vector<IntTuple> r;
  int last = shape.rank() - 1;
  if (last < 0) return IntTuple();
  for (int i = 0; i < last; ++i) {
    Int extent = product(shape[i]);
    r.push_back(idx2crd(IntTuple(c % extent), shape[i]));
    c = c / extent;
  }
  r.push_back(idx2crd(IntTuple(c), shape[last]));
  return tuple_of(std::move(r));
}

// --- Modes ------------------------------------------------------------------------------------------------------

Layout get(const Layout& l, std::span<const int> path) {
  return Layout::trusted(get(l.shape(), path), get(l.stride(), path));
}

Layout select(const Layout& l, std::span<const int> modes) {
  std::vector<IntTuple> s, d;
  for (int m : modes) {
    s.push_back(l.shape()[m]);
    d.push_back(l.stride()[m]);
  }
  return Layout::trusted(tuple_of(std::move(s)), tuple_of(std::move(d)));
}

Layout flatten(const Layout& l) { return Layout::trusted(flatten(l.shape()), flatten(l.stride())); }

Layout group_modes(const Layout& l, int begin, int end) {
  int r = l.rank();
  if (begin < 0 || end > r || begin > end)
    throw LayoutError("group_modes: [" + std::to_string(begin) + "," + std::to_string(end) + ") is out of range for " +
                      l.str() + " of rank " + std::to_string(r));
  auto group = [&](const IntTuple& t) {
    std::vector<IntTuple> out;
    for (int i = 0; i < begin; ++i) out.push_back(t[i]);
    out.push_back(take(wrap(t), begin, end));
    for (int i = end; i < r; ++i) out.push_back(t[i]);
    return tuple_of(std::move(out));
  };
  return Layout::trusted(group(l.shape()), group(l.stride()));
}

Layout append(const Layout& l, const Layout& x) {
  return Layout::trusted(ww::append(l.shape(), x.shape()), ww::append(l.stride(), x.stride()));
}

Layout prepend(const Layout& l, const Layout& x) {
  return Layout::trusted(ww::prepend(l.shape(), x.shape()), ww::prepend(l.stride(), x.stride()));
}

Layout append(const Layout& l, int n, const Layout& x) {
  if (l.rank() > n)
    throw LayoutError("append: " + l.str() + " already has rank " + std::to_string(l.rank()) + " > " + std::to_string(n));
  if (l.shape().is_leaf() && n == 1) return l;
  Layout r = l;
  while (r.shape().is_leaf() || r.rank() < n) r = append(r, x);
  return r;
}

Layout prepend(const Layout& l, int n, const Layout& x) {
  if (l.rank() > n)
    throw LayoutError("prepend: " + l.str() + " already has rank " + std::to_string(l.rank()) + " > " + std::to_string(n));
  if (l.shape().is_leaf() && n == 1) return l;
  Layout r = l;
  while (r.shape().is_leaf() || r.rank() < n) r = prepend(r, x);
  return r;
}

Layout zip_layouts(const Layout& a, const Layout& b) {
  // CuTe's zip of two layouts transposes the pair (a, b): with a single-mode `a` (an integer shape) the pair
  // itself becomes the one mode, ((a,b)); otherwise mode i is (a_i, b_i), which needs b to have as many modes.
  if (a.shape().is_leaf()) return make_layout(std::vector<Layout>{make_layout(std::vector<Layout>{a, b})});
  if (b.shape().is_leaf() || a.rank() != b.rank())
    throw LayoutError("zip: " + a.str() + " and " + b.str() + " do not have the same number of modes");
  std::vector<Layout> modes;
  for (int i = 0; i < a.rank(); ++i) modes.push_back(make_layout(std::vector<Layout>{a[i], b[i]}));
  return make_layout(modes);
}

}  // namespace ww
