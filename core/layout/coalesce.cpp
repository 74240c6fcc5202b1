// coalesce and filter: the same function with the fewest modes.
#include "algebra_detail.hpp"
#include "ww/layout/error.hpp"
#include "ww/layout/layout_algebra.hpp"

namespace ww {
namespace detail {

Layout bw_coalesce(const std::vector<IntTuple>& shape, const std::vector<IntTuple>& stride, bool keep_last) {
  // Walk from the last mode to the first, keeping a stack whose front is the mode being grown:
  //   an extent-1 mode is dropped; an extent-1 front is replaced; a mode with s*d == front stride is merged in.
  const int r = static_cast<int>(shape.size());
  if (r == 0) return Layout();  // the empty layout () has size 1: it coalesces to 1:0
  std::vector<Int> ns;
  std::vector<IntTuple> nd;  // reversed: back() is the front
  ns.push_back(keep_last && shape[r - 1].value().is_constant(1) ? Int(2) : shape[r - 1].value());
  nd.push_back(stride[r - 1]);
  for (int i = r - 2; i >= 0; --i) {
    const Int& s = shape[i].value();
    if (s.is_constant(1)) continue;
    if (ns.size() == 1 && ns.back().is_constant(1)) {
      ns.back() = s;
      nd.back() = stride[i];
    } else if (same_stride(scale_stride(stride[i], s), nd.back())) {
      ns.back() = s * ns.back();
      nd.back() = stride[i];
    } else {
      ns.push_back(s);
      nd.push_back(stride[i]);
    }
  }
  if (ns.size() == 1) {
    if (ns[0].is_constant(1)) return Layout();
    return Layout::trusted(IntTuple(ns[0]), nd[0]);
  }
  std::vector<IntTuple> s2, d2;
  for (size_t i = ns.size(); i-- > 0;) {
    s2.emplace_back(ns[i]);
    d2.push_back(nd[i]);
  }
  return Layout::trusted(IntTuple::tuple(std::move(s2)), IntTuple::tuple(std::move(d2)));
}

Layout coalesce_flat(const Layout& l, bool keep_last) {
  auto s = flatten_leaves(l.shape());
  auto d = flatten_leaves(l.stride());
  return bw_coalesce(s, d, keep_last);
}

template <class F>
Layout by_profile(const Layout& l, const IntTuple& profile, const char* op, F&& f) {
  if (profile.is_leaf()) return f(l);
  if (profile.rank() > l.rank())
    throw LayoutError(std::string(op) + ": the profile " + profile.str() + " has more modes than " + l.str());
  std::vector<Layout> modes;
  for (int i = 0; i < l.rank(); ++i)
    modes.push_back(i < profile.rank() ? by_profile(l[i], profile[i], op, f) : l[i]);
  return make_layout(modes);
}

Layout coalesce_x(const Layout& l, const IntTuple& profile) {
  return by_profile(l, profile, "composition", [](const Layout& m) { return coalesce_flat(m, true); });
}

IntTuple coalesce_shape(const IntTuple& shape) {
  // Static extents merge with static ones and dynamic with dynamic (CuTe's coalesce of a shape).
  auto leaves = flatten_leaves(shape);
  if (leaves.empty()) return IntTuple(1);  // () has size 1
  std::vector<IntTuple> out{leaves[0]};
  for (size_t i = 1; i < leaves.size(); ++i) {
    const Int& a = leaves[i].value();
    const Int& b = out.back().value();
    if (a.is_static() == b.is_static()) {
      out.back() = IntTuple(b * a);
    } else {
      out.push_back(leaves[i]);
    }
  }
  return out.size() == 1 ? out[0] : IntTuple::tuple(std::move(out));
}

}  // namespace detail

Layout coalesce(const Layout& l) { return detail::coalesce_flat(l, false); }

Layout coalesce(const Layout& l, const IntTuple& profile) {
  return detail::by_profile(l, profile, "coalesce", [](const Layout& m) { return coalesce(m); });
}

namespace {
IntTuple zeros_to_ones(const IntTuple& marker, const IntTuple& shape) {
  if (marker.is_tuple()) {
    if (shape.is_leaf() || shape.rank() != marker.rank())
      throw LayoutError("filter_zeros: " + marker.str() + " does not match the shape " + shape.str());
    std::vector<IntTuple> r;
    for (int i = 0; i < marker.rank(); ++i) r.push_back(zeros_to_ones(marker[i], shape[i]));
    return IntTuple::tuple(std::move(r));
  }
  if (marker.value().is_constant(0)) return repeat_like(shape, IntTuple(1));
  return shape;
}
}  // namespace

Layout filter_zeros(const Layout& l) { return Layout::trusted(zeros_to_ones(l.stride(), l.shape()), l.stride()); }

Layout filter_zeros(const Layout& l, const IntTuple& profile) {
  return Layout::trusted(zeros_to_ones(profile, l.shape()), l.stride());
}

Layout filter(const Layout& l) { return coalesce(filter_zeros(l)); }

Layout filter(const Layout& l, const IntTuple& profile) {
  return detail::by_profile(l, profile, "filter", [](const Layout& m) { return filter(m); });
}

}  // namespace ww
