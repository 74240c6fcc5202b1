// Divides and products: tiling a layout by a tiler, and repeating a layout over one.
#include "algebra_detail.hpp"
#include "ww/layout/assumptions.hpp"
#include "ww/layout/layout_algebra.hpp"

namespace ww {
namespace {

// Applies f to the modes of `a` that the tuple tiler names; the other modes stay as they are.
template <class F>
Layout by_mode(const Layout& a, const Tiler& t, const char* op, F&& f) {
  if (t.rank() > a.rank())
    throw LayoutError(std::string(op) + "(" + a.str() + ", " + t.str() + "): the tiler has more modes than the layout");
  std::vector<Layout> modes;
  for (int i = 0; i < a.rank(); ++i) modes.push_back(i < t.rank() ? f(a[i], t.modes()[i]) : a[i]);
  return make_layout(modes);
}

// zip2_by: ((A,a),(B,b),x) guided by a rank-2 tiler becomes ((A,B),(a,b,x)).
IntTuple zip2_by(const IntTuple& t, const Tiler& guide) {
  if (!guide.is_tuple()) {
    if (t.rank() != 2 || t.is_leaf())
      throw LayoutError("a mode divided by a layout tiler must be rank 2, got " + t.str());
    return t;
  }
  std::vector<IntTuple> firsts, seconds;
  for (int i = 0; i < guide.rank(); ++i) {
    IntTuple split = zip2_by(t[i], guide.modes()[i]);
    firsts.push_back(split[0]);
    seconds.push_back(split[1]);
  }
  for (int i = guide.rank(); i < t.rank(); ++i) seconds.push_back(t[i]);
  return tup({IntTuple::tuple(std::move(firsts)), IntTuple::tuple(std::move(seconds))});
}

Layout tile_unzip(const Layout& l, const Tiler& t) {
  return Layout::trusted(zip2_by(l.shape(), t), zip2_by(l.stride(), t));
}

// Unpacks the chosen top-level modes one level: (X,(a,b)) with mode 1 unpacked is (X,a,b). As in CuTe (which
// slices the mode with `_` repeated rank times), a mode of rank 1 is kept as it is: (X,(a)) stays (X,(a)).
Layout unpack_modes(const Layout& l, bool first, bool second) {
  std::vector<Layout> modes;
  for (int i = 0; i < l.rank(); ++i) {
    Layout m = l[i];
    bool unpack = (i == 0 && first) || (i == 1 && second);
    if (unpack && m.shape().is_tuple() && m.rank() > 1) {
      for (int j = 0; j < m.rank(); ++j) modes.push_back(m[j]);
    } else {
      modes.push_back(m);
    }
  }
  return make_layout(modes);
}

Layout logical_divide_impl(const Layout& a, const Tiler& t) {
  if (t.is_underscore()) return a;
  if (t.is_tuple()) return by_mode(a, t, "logical_divide", logical_divide_impl);
  const Layout& b = t.layout();
  Layout rest = detail::complement_covering(b, coalesce(a).shape());
  return composition(a, make_layout(std::vector<Layout>{b, rest}));
}

Layout logical_product_impl(const Layout& a, const Tiler& t) {
  if (t.is_underscore()) return a;
  if (t.is_tuple()) return by_mode(a, t, "logical_product", logical_product_impl);
  const Layout& b = t.layout();
  Int bound = a.size() * b.cosize().value();
  return make_layout(std::vector<Layout>{a, composition(complement(a, IntTuple(bound)), b)});
}

std::string call_str(const char* op, const Layout& a, const Tiler& t) {
  return std::string(op) + "(" + a.str() + ", " + t.str() + ")";
}

}  // namespace

Tiler Tiler::from_shape(const IntTuple& shape) {
  if (shape.is_leaf()) return Tiler(shape.value());
  std::vector<Tiler> modes;
  for (auto& c : shape.children()) modes.push_back(c.is_leaf() ? Tiler(c.value()) : Tiler(make_layout(c)));
  return tuple(std::move(modes));
}

std::string Tiler::str() const {
  if (is_underscore()) return "_";
  if (is_layout()) return layout().str();
  std::string s = "[";
  for (size_t i = 0; i < modes().size(); ++i) s += (i ? "," : "") + modes()[i].str();
  return s + "]";
}

Layout logical_divide(const Layout& a, const Tiler& b) {
  return detail::with_context([&] { return call_str("logical_divide", a, b); }, [&] { return logical_divide_impl(a, b); });
}

Layout zipped_divide(const Layout& a, const Tiler& b) {
  return detail::with_context([&] { return call_str("zipped_divide", a, b); },
                              [&] { return tile_unzip(logical_divide_impl(a, b), b); });
}

Layout tiled_divide(const Layout& a, const Tiler& b) { return unpack_modes(zipped_divide(a, b), false, true); }

Layout flat_divide(const Layout& a, const Tiler& b) { return unpack_modes(zipped_divide(a, b), true, true); }

Layout logical_product(const Layout& a, const Tiler& b) {
  return detail::with_context([&] { return call_str("logical_product", a, b); }, [&] { return logical_product_impl(a, b); });
}

Layout zipped_product(const Layout& a, const Tiler& b) {
  return detail::with_context([&] { return call_str("zipped_product", a, b); },
                              [&] { return tile_unzip(logical_product_impl(a, b), b); });
}

Layout tiled_product(const Layout& a, const Tiler& b) { return unpack_modes(zipped_product(a, b), false, true); }

Layout flat_product(const Layout& a, const Tiler& b) { return unpack_modes(zipped_product(a, b), true, true); }

namespace {
Layout rank_sensitive_product(const Layout& a, const Layout& b, bool raked) {
  int r = std::max(a.rank(), b.rank());
  Layout result = logical_product_impl(append(a, r), Tiler(append(b, r)));
  return raked ? zip_layouts(result[1], result[0]) : zip_layouts(result[0], result[1]);
}
}  // namespace

Layout blocked_product(const Layout& a, const Layout& b) {
  return detail::with_context([&] { return "blocked_product(" + a.str() + ", " + b.str() + ")"; },
                              [&] { return rank_sensitive_product(a, b, false); });
}

Layout raked_product(const Layout& a, const Layout& b) {
  return detail::with_context([&] { return "raked_product(" + a.str() + ", " + b.str() + ")"; },
                              [&] { return rank_sensitive_product(a, b, true); });
}

Layout tile_to_shape(const Layout& block, const IntTuple& target_shape, const std::optional<IntTuple>& order) {
  return detail::with_context(
      [&] { return "tile_to_shape(" + block.str() + ", " + target_shape.str() + ")"; },
      [&] {
        int r = target_shape.rank();
        if (block.rank() > r)
          throw LayoutError("the block has rank " + std::to_string(block.rank()) + " > the target's " + std::to_string(r));
        Layout padded = append(block, r);
        IntTuple block_shape = product_each(padded.shape());
        IntTuple target = product_each(target_shape);
        auto bl = flatten_leaves(wrap(block_shape)), tl = flatten_leaves(wrap(target));
        for (size_t i = 0; i < tl.size(); ++i)
          require({Assumption::Kind::Divides, bl[i].value(), tl[i].value()}, [&] { return "the block extent " + bl[i].str() + " does not divide the target extent " + tl[i].str(); });
        IntTuple product_shape = ceil_div(target, block_shape);
        Layout reps = order ? make_ordered_layout(product_shape, *order) : make_layout(product_shape);
        return rank_sensitive_product(padded, reps, false);
      });
}

IntTuple ceil_div(const IntTuple& target, const Tiler& tiler) {
  if (tiler.is_underscore()) return target;
  if (tiler.is_tuple()) {
    if (tiler.rank() > target.rank())
      throw LayoutError("ceil_div(" + target.str() + ", " + tiler.str() + "): the tiler has more modes than the shape");
    std::vector<IntTuple> r;
    for (int i = 0; i < target.rank(); ++i) r.push_back(i < tiler.rank() ? ceil_div(target[i], tiler.modes()[i]) : target[i]);
    return IntTuple::tuple(std::move(r));
  }
  return complement(tiler.layout(), target).shape();
}

}  // namespace ww
