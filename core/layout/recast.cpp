// Common vectors of two layouts, and layouts seen through elements of another width.
#include <numeric>

#include "algebra_detail.hpp"
#include "ww/layout/assumptions.hpp"
#include "ww/layout/layout_algebra.hpp"

namespace ww {
namespace {

// The leading stride-1 mode of coalesce(a o b^-1): the elements a and b both reach contiguously, in order.
Layout common_mode(const Layout& a, const Layout& inv_b) {
  Layout common = coalesce(composition(a, inv_b));
  Layout first = common.shape().is_leaf() ? common : common[0];
  if (first.shape().is_leaf() && first.shape().value().is_static() && first.stride().is_leaf() &&
      !first.stride().has_basis() && first.stride().value().is_constant(1))
    return first;
  return Layout();
}

template <class F>
Layout map_modes(const IntTuple& shape, const IntTuple& stride, F&& f) {
  if (shape.is_leaf()) return f(shape.value(), stride);
  std::vector<Layout> modes;
  for (int i = 0; i < shape.rank(); ++i) modes.push_back(map_modes(shape[i], stride[i], f));
  return make_layout(modes);
}

}  // namespace

Layout max_common_layout(const Layout& a, const Layout& b) {
  return detail::with_context([&] { return "max_common_layout(" + a.str() + ", " + b.str() + ")"; }, [&] {
    Layout inv_b = right_inverse(b);
    Layout m = common_mode(a, inv_b);
    if (m.size().is_constant(1)) return Layout();
    return composition(inv_b, m);
  });
}

Int max_common_vector(const Layout& a, const Layout& b) {
  return detail::with_context([&] { return "max_common_vector(" + a.str() + ", " + b.str() + ")"; },
                              [&] { return common_mode(a, right_inverse(b)).size(); });
}

Layout upcast(const Layout& l, int64_t n) {
  if (n <= 0) throw LayoutError("upcast(" + l.str() + ", " + std::to_string(n) + "): the factor must be positive");
  return detail::with_context([&] { return "upcast(" + l.str() + ", " + std::to_string(n) + ")"; }, [&] {
    return map_modes(l.shape(), l.stride(), [&](const Int& s, const IntTuple& d) {
      if (d.has_basis()) throw LayoutTypeError("needs integer strides");
      const Int& dv = d.value();
      if (dv.is_constant(0)) return Layout::trusted(IntTuple(s), d);
      if (auto v = dv.static_value()) {
        int64_t ad = *v < 0 ? -*v : *v;
        if (ad % n != 0 && n % ad != 0)
          throw LayoutError("the stride " + dv.str() + " and the factor " + std::to_string(n) + " do not divide each other");
        Int shape = ceil_div(s, ceil_div(Int(n), Int(ad)));
        return Layout::trusted(IntTuple(shape), IntTuple(ceil_div(Int(ad), Int(n)) * signum(dv)));
      }
      // A dynamic stride must be a multiple of n (a larger stride of a contiguous row, say).
      require({Assumption::Kind::Divides, Int(n), dv}, [&] { return "the stride " + dv.str() + " is not a multiple of " + std::to_string(n); });
      return Layout::trusted(IntTuple(s), IntTuple(dv / Int(n)));
    });
  });
}

Layout downcast(const Layout& l, int64_t n) {
  if (n <= 0) throw LayoutError("downcast(" + l.str() + ", " + std::to_string(n) + "): the factor must be positive");
  return map_modes(l.shape(), l.stride(), [&](const Int& s, const IntTuple& d) {
    if (d.has_basis()) throw LayoutTypeError("downcast(" + l.str() + "): needs integer strides");
    if (d.value().is_constant(1) || d.value().is_constant(-1)) return Layout::trusted(IntTuple(s * Int(n)), d);
    return Layout::trusted(IntTuple(s), IntTuple(d.value() * Int(n)));
  });
}

Layout recast_layout(int new_type_bits, int old_type_bits, const Layout& l) {
  if (new_type_bits <= 0 || old_type_bits <= 0)
    throw LayoutError("recast_layout: type widths must be positive, got " + std::to_string(new_type_bits) + " and " +
                      std::to_string(old_type_bits));
  int g = std::gcd(new_type_bits, old_type_bits);
  int num = new_type_bits / g, den = old_type_bits / g;
  if (num == 1 && den == 1) return l;
  if (num == 1) return downcast(l, den);
  if (den == 1) return upcast(l, num);
  return downcast(upcast(l, num), den);
}

}  // namespace ww
