// complement: the layout of what a layout misses, up to a cotarget.
#include <algorithm>
#include <optional>
#include <string>

#include "algebra_detail.hpp"
#include "ww/layout/assumptions.hpp"
#include "ww/layout/layout_algebra.hpp"

namespace ww {
namespace {

constexpr int64_t kMaxCheckedSize = int64_t{1} << 16;  // left_inverse checks overlapping layouts up to this size

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

bool holds_empty_tuple(const IntTuple& t) {
  if (t.is_leaf()) return false;
  if (t.rank() == 0) return true;
  for (auto& c : t.children())
    if (holds_empty_tuple(c)) return true;
  return false;
}

void check_cotarget(const IntTuple& cotarget) {
  if (holds_empty_tuple(cotarget))
    throw LayoutError("the cotarget " + cotarget.str() + " must be a shape: it holds the empty tuple ()");
  for (auto& c : flatten_leaves(cotarget)) {
    if (c.has_basis()) throw LayoutTypeError("the cotarget " + cotarget.str() + " must be a shape of integers");
    if (auto v = c.value().static_value(); v && *v < 1)
      throw LayoutError("the cotarget " + cotarget.str() + " must be a shape of positive extents");
  }
}

Layout complement_impl(const Layout& a, const IntTuple& cotarget, bool check_cover) {
  check_plain_strides(a, "complement");
  check_cotarget(cotarget);
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
    // The gap below min_stride holds floor(min_stride / extent so far) copies of what was found so far (CuTe's
    // rounding: a gap that is not a whole number of copies is left partly unused). A stride below that extent
    // lands on offsets already reached: the layout is not injective.
    require({Assumption::Kind::Less, last_stride - Int(1), min_stride}, [&] {
      return "the layout is not injective: the stride " + min_stride.str() + " lands inside the offsets [0," +
             last_stride.str() + ") that its smaller modes already reach";
    });
    rs.emplace_back(min_stride / last_stride);
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
  Layout result = coalesce(Layout::trusted(tup({IntTuple::tuple(std::move(rs)), rest_shape}),
                                           tup({IntTuple::tuple(std::move(rd)), rest_stride})));
  // Rounded gaps can leave the result short of size(cotarget) / size(filter(a)) (for (4,4):(6,1) into 96 the
  // copies cover 64 offsets; CuTe gives 4:24 all the same, and so does complement). A divide built on such a
  // complement would silently miss part of its target, so the divide asks for the check.
  auto have = result.size().static_value(), want = product(cotarget).static_value(), n = f.size().static_value();
  if (check_cover && have && want && n && *have < *want / *n)
    throw LayoutError("the gaps between its modes round down so that " + result.str() + " (size " +
                      std::to_string(*have) + ") misses part of the cotarget: size(complement) must be at least " +
                      std::to_string(*want / *n));
  return result;
}

}  // namespace

Layout complement(const Layout& a, const IntTuple& cotarget) {
  return detail::with_context([&] { return "complement(" + a.str() + ", " + cotarget.str() + ")"; },
                              [&] { return complement_impl(a, cotarget, false); });
}

Layout detail::complement_covering(const Layout& a, const IntTuple& cotarget) {
  return detail::with_context([&] { return "complement(" + a.str() + ", " + cotarget.str() + ")"; },
                              [&] { return complement_impl(a, cotarget, true); });
}

Layout complement(const Layout& a) {
  return detail::with_context([&] { return "complement(" + a.str() + ")"; },
                              [&] { return complement_impl(a, filter(a).cosize(), false); });
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

// r(a(i)) == i for an injective a; for any a, a(r(a(i))) == a(i) (CuTe's quasi-inverse: stride-0 modes, which
// a cannot tell apart, are skipped and r inverts a on its image). The modes are taken in order of increasing
// stride; each stride must be a multiple of the extent the faster modes span (CuTe's divisibility condition).
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
      if (*v < 0) throw LayoutError("a negative stride (" + stride[i].str() + ") has no left inverse");
    }
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
      return *stride[x].value().static_value() < *stride[y].value().static_value();
    });
    Int span = 1;   // size of the result so far
    Int reach = 0;  // the largest offset the faster non-zero modes reach
    std::optional<std::string> overlap;
    std::vector<IntTuple> rs, rd{IntTuple(0)};
    for (int i : order) {
      Int d = stride[i].value();
      if (d.is_constant(0)) continue;
      if (!(d % span).is_constant(0))
        throw LayoutError("left inverse divisibility condition violated: the stride " + d.str() +
                          " is not a multiple of " + span.str() + ", the extent its faster modes span");
      if (!reach.known_lt(d).value_or(false) && !overlap)
        overlap = "the stride " + d.str() + " lands inside offsets [0," + (reach + Int(1)).str() +
                  ") that faster modes already reach";
      reach = reach + (shape[i].value() - Int(1)) * d;
      rs.emplace_back(d / span);
      rd.emplace_back(preprod[i]);
      span = d;
    }
    // The fastest mode's extent closes the result; with no mode of non-zero stride a's image is {0}, which 1:0
    // inverts (as CuTe's left_inverse(n:0) gives), not n:0.
    rs.push_back(rs.empty() ? IntTuple(1) : shape[order.back()]);
    Layout r = coalesce(Layout::trusted(IntTuple::tuple(std::move(rs)), IntTuple::tuple(std::move(rd))));
    // Stride-0 modes only repeat offsets: r inverts a on its image. Modes of non-zero stride that overlap give
    // CuTe's construction no such guarantee (for (8,2,3):(16,16,2), a(r(a(1))) == 2 != 32), so its result is
    // returned only where a(r(a(i))) == a(i) is checked to hold.
    if (overlap) {
      auto n = a.size().static_value();
      if (!a.is_static() || !n || *n > kMaxCheckedSize)
        throw LayoutError("the layout is not injective apart from its stride-0 modes (" + *overlap +
                          "), and is too large or dynamic to check a quasi-inverse");
      for (int64_t i = 0; i < *n; ++i) {
        IntTuple ai = a(IntTuple(i));
        if (!a(r(ai)).same(ai))
          throw LayoutError("the layout is not injective apart from its stride-0 modes (" + *overlap +
                            "), and no layout inverts it on its image");
      }
    }
    return r;
  });
}

}  // namespace ww
