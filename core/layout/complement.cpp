// complement: the layout of what a layout misses, up to a cotarget.
#include <algorithm>

#include "algebra_detail.hpp"
#include "ww/layout/assumptions.hpp"
#include "ww/layout/layout_algebra.hpp"

namespace ww {
namespace {

// Index of the smallest stride; the strides must be comparable now.
size_t min_stride_index(const std::vector<IntTuple>& strides, const char* op) {
  size_t best = 0;
  for (size_t i = 1; i < strides.size(); ++i) {
    auto lt = strides[i].value().known_lt(strides[best].value());
    if (!lt) throw LayoutError(std::string(op) + ": cannot order the dynamic strides " + strides[i].str() + " and " +
                               strides[best].str());
    if (*lt) best = i;
  }
  return best;
}

void check_plain_strides(const Layout& l, const char* op) {
  if (l.has_basis_stride()) throw LayoutTypeError(std::string(op) + ": needs integer strides, got " + l.str());
}

Layout complement_impl(const Layout& a, const IntTuple& cotarget) {
  check_plain_strides(a, "complement");
  Layout f = filter(a);
  std::vector<IntTuple> shape = flatten_leaves(f.shape());
  std::vector<IntTuple> stride = flatten_leaves(f.stride());
  if (shape.size() == 1 && stride[0].value().is_constant(0)) return make_layout(detail::coalesce_shape(cotarget));
  for (auto& d : stride)
    if (auto v = d.value().static_value(); v && *v < 0)
      throw LayoutError("negative strides have no complement");

  std::vector<IntTuple> rs;
  Int last_stride = 1;  // stride of the next result mode: the extent covered so far
  std::vector<IntTuple> rd{IntTuple(1)};
  auto add_mode = [&](const Int& min_stride) {
    // The gap below min_stride must be a whole number of the modes found so far, or the complement is no layout.
    auto why = [&] {
      return "the layout is not injective, or its modes interleave so that no layout complements it (stride " +
             min_stride.str() + " against the extent " + last_stride.str() + " below it)";
    };
    require({Assumption::Kind::Less, last_stride - Int(1), min_stride}, why);
    require({Assumption::Kind::Divides, last_stride, min_stride}, why);
    Int new_shape = min_stride / last_stride;
    rs.emplace_back(new_shape);
  };
  while (shape.size() > 1) {
    size_t i = min_stride_index(stride, "complement");
    Int min_stride = stride[i].value();
    add_mode(min_stride);
    last_stride = min_stride * shape[i].value();
    rd.emplace_back(last_stride);
    shape.erase(shape.begin() + static_cast<long>(i));
    stride.erase(stride.begin() + static_cast<long>(i));
  }
  add_mode(stride[0].value());
  Int new_stride = stride[0].value() * shape[0].value();
  IntTuple rest_shape = detail::coalesce_shape(ceil_div(cotarget, IntTuple(new_stride)));
  IntTuple rest_stride = compact_col_major(rest_shape, new_stride);
  Layout result = Layout::trusted(tup({IntTuple::tuple(std::move(rs)), rest_shape}),
                                  tup({IntTuple::tuple(std::move(rd)), rest_stride}));
  return coalesce(result);
}

}  // namespace

Layout complement(const Layout& a, const IntTuple& cotarget) {
  return detail::with_context([&] { return "complement(" + a.str() + ", " + cotarget.str() + ")"; },
                              [&] { return complement_impl(a, cotarget); });
}

Layout complement(const Layout& a) {
  return detail::with_context([&] { return "complement(" + a.str() + ")"; },
                              [&] { return complement_impl(a, filter(a).cosize()); });
}

// r(i) walks a's image in order: starting from offset 1, find the mode whose stride is the next offset not yet
// reached, until none is. Symbolic strides follow the same chain when their equality is decidable.
Layout right_inverse(const Layout& a) {
  return detail::with_context([&] { return "right_inverse(" + a.str() + ")"; }, [&] {
    check_plain_strides(a, "right_inverse");
    Layout c = coalesce(a);
    IntTuple shape = wrap(c.shape()), stride = wrap(c.stride());
    std::vector<Int> preprod{1};
    for (auto& s : shape.children()) preprod.push_back(preprod.back() * s.value());
    std::vector<IntTuple> rs{IntTuple(1)}, rd{IntTuple(0)};
    std::vector<bool> used(shape.rank(), false);
    Int next = 1;
    for (;;) {
      int found = -1;
      for (int i = 0; i < shape.rank() && found < 0; ++i)
        if (!used[i] && stride[i].value().known_eq(next).value_or(false)) found = i;
      if (found < 0) break;
      used[found] = true;
      rs.push_back(shape[found]);
      rd.emplace_back(preprod[found]);
      next = shape[found].value() * stride[found].value();
    }
    return coalesce(Layout::trusted(IntTuple::tuple(std::move(rs)), IntTuple::tuple(std::move(rd))));
  });
}

Layout left_inverse(const Layout& a) {
  return detail::with_context([&] { return "left_inverse(" + a.str() + ")"; }, [&] {
    check_plain_strides(a, "left_inverse");
    Layout c = coalesce(a);
    IntTuple shape = wrap(c.shape()), stride = wrap(c.stride());
    if (c.size().is_constant(1)) return Layout();
    std::vector<Int> preprod{1};
    for (auto& s : shape.children()) preprod.push_back(preprod.back() * s.value());
    std::vector<int> order(shape.rank());
    for (int i = 0; i < shape.rank(); ++i) order[i] = i;
    for (int i = 0; i < shape.rank(); ++i) {
      auto v = stride[i].value().static_value();
      if (!v) throw LayoutError("needs static strides to order the modes, got " + stride[i].str());
      if (*v <= 0) throw LayoutError("the layout is not injective: a mode of extent " + shape[i].str() +
                                     " has stride " + stride[i].str());
    }
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
      return *stride[x].value().static_value() < *stride[y].value().static_value();
    });
    // Injective with an inverse that is a layout: each stride lies past every offset the faster modes reach and is
    // a multiple of the extent they span (CuTe's divisibility condition).
    Int reach = 0, span = 1;
    std::vector<IntTuple> rs, rd{IntTuple(0)};
    for (int i : order) {
      Int d = stride[i].value();
      if (!reach.known_lt(d).value_or(false))
        throw LayoutError("the layout is not injective: the stride " + d.str() + " lands inside offsets [0," +
                          (reach + Int(1)).str() + ") that faster modes already reach");
      if (!(d % span).is_constant(0))
        throw LayoutError("no layout inverts it: the stride " + d.str() + " is not a multiple of " + span.str());
      rs.emplace_back(d / span);
      rd.emplace_back(preprod[i]);
      span = d;
      reach = reach + (shape[i].value() - Int(1)) * d;
    }
    rs.push_back(shape[order.back()]);
    return coalesce(Layout::trusted(IntTuple::tuple(std::move(rs)), IntTuple::tuple(std::move(rd))));
  });
}

}  // namespace ww
