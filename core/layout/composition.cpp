// composition: (a o b)(c) == a(b(c)), with the shape of b.
#include "algebra_detail.hpp"
#include "ww/layout/assumptions.hpp"
#include "ww/layout/layout_algebra.hpp"

#include <map>

namespace ww {
namespace {

Layout pack(std::vector<Layout> modes) { return make_layout(modes); }

// Composition distributes over the modes of b: a o (b0, b1) = (a o b0, a o b1). That is a(b(c)) only when the
// offsets the modes of b add inside one mode of a never carry into the next mode of a. Each piece a mode of b
// places in a mode of a is recorded here (its largest offset there), and the sum per mode of a is checked against
// that mode's extent. The last mode of a is unbounded and takes any sum.
struct Reach {
  std::map<std::pair<uint64_t, int>, Int> used;    // (basis path of the sub-layout of a, mode) -> largest offset
  std::map<std::pair<uint64_t, int>, Int> extent;

  void add(uint64_t key, int mode, const Int& extent_of_mode, const Int& count, const Int& stride) {
    auto k = std::make_pair(key, mode);
    auto it = used.find(k);
    Int inc = (count - Int(1)) * abs(stride);
    if (it == used.end()) {
      used.emplace(k, inc);
      extent.emplace(k, extent_of_mode);
    } else {
      it->second = it->second + inc;
    }
  }

  void check() const {
    for (auto& [k, u] : used) {
      const Int& e = extent.at(k);
      require({Assumption::Kind::Less, u, e}, [&] { return "the modes of the right operand overlap inside mode " + std::to_string(k.second) + " (extent " + e.str() +
                  ") of the left one, reaching offset " + u.str() + ": the result would not be a(b(i))"; });
    }
  }
};

// a is flat (coalesced); b is one mode s:d with an integer stride.
Layout compose_mode(const IntTuple& a_shape, const IntTuple& a_stride, const Int& s, const IntTuple& d_leaf,
                    Reach& reach, uint64_t key) {
  const Int& d = d_leaf.value();
  if (d.is_constant(0)) return Layout::trusted(IntTuple(s), IntTuple(0));
  if (a_shape.is_leaf()) return Layout::trusted(IntTuple(s), scale_stride(a_stride, d));
  // A static negative stride walks a at negative indices, where a(-k) == -a(k) (C++'s truncating division splits
  // -k into the negated digits of k): the walk below mirrors the one for |d|, with CuTe's signs. A dynamic stride
  // is assumed non-negative, as the floor division of dynamic values has no such symmetry.
  if (!d.is_static())
    require({Assumption::Kind::Less, Int(-1), d},
            [&] { return "the dynamic stride " + d.str() + " must be non-negative"; });

  const int r = a_shape.rank();
  std::vector<IntTuple> rs, rd;
  Int rest_shape = s;
  Int rest_stride = d;
  for (int i = 0; i < r - 1; ++i) {
    const Int& cs = a_shape[i].value();
    // Stride divisibility: b's stride must step over whole modes of a, or stay inside the first one. The test is
    // on |stride| (CuTe compares the signed stride, which lets any negative stride through: 3:-5 over
    // (4,2,3):(5,4,0) would give 3:0).
    Int abs_stride = abs(rest_stride);
    require({Assumption::Kind::MultipleOrLess, abs_stride, cs}, [&] { return "stride divisibility condition violated: the stride " + rest_stride.str() +
                " neither is a multiple of nor is less than the extent " + cs.str(); });
    Int next_shape = ceil_div(cs, abs_stride);
    Int next_stride = ceil_div(abs_stride, cs) * signum(rest_stride);
    if (next_shape.is_constant(1) || rest_shape.is_constant(1)) {
      rest_stride = next_stride;
      continue;
    }
    Int new_shape = min(next_shape, rest_shape);
    require({Assumption::Kind::Divides, new_shape, rest_shape}, [&] { return "shape divisibility condition violated: the extent " + rest_shape.str() + " is not a multiple of " +
                new_shape.str(); });
    // Walking past this mode must land exactly on the next one: the stride divides the extent it crosses.
    // (CuTe checks only `stride < extent` here, which admits wrong results such as (3,4):(1,10) o 4:2.)
    require({Assumption::Kind::DividesUnlessEqual, abs_stride, cs, new_shape, rest_shape}, [&] { return "stride divisibility condition violated: the stride " + rest_stride.str() +
                " does not divide the extent " + cs.str() + " that the layout walks past"; });
    rs.emplace_back(new_shape);
    rd.push_back(scale_stride(a_stride[i], rest_stride));
    reach.add(key, i, cs, new_shape, rest_stride);
    rest_shape = rest_shape / new_shape;
    rest_stride = next_stride;
  }
  const IntTuple& last_stride = a_stride[r - 1];
  if (rs.empty()) return Layout::trusted(IntTuple(rest_shape), scale_stride(last_stride, rest_stride));
  if (rest_shape.is_constant(1)) {
    if (rs.size() == 1) return Layout::trusted(rs[0], rd[0]);
    return Layout::trusted(IntTuple::tuple(std::move(rs)), IntTuple::tuple(std::move(rd)));
  }
  rs.emplace_back(rest_shape);
  rd.push_back(scale_stride(last_stride, rest_stride));
  return Layout::trusted(IntTuple::tuple(std::move(rs)), IntTuple::tuple(std::move(rd)));
}

Layout compose_impl(const IntTuple& a_shape, const IntTuple& a_stride, const IntTuple& b_shape, const IntTuple& b_stride,
                    Reach& reach, uint64_t key) {
  if (b_shape.is_tuple()) {
    // Right-distributivity: each mode of b composes separately.
    std::vector<Layout> modes;
    for (int i = 0; i < b_shape.rank(); ++i)
      modes.push_back(compose_impl(a_shape, a_stride, b_shape[i], b_stride[i], reach, key));
    return pack(std::move(modes));
  }
  if (b_stride.has_basis()) {
    // A basis stride v@p walks mode p of a with stride v.
    Basis p = b_stride.basis();
    const IntTuple* s = &a_shape;
    const IntTuple* d = &a_stride;
    for (int i = 0; i < p.depth(); ++i) {
      s = &(*s)[p[i]];
      d = &(*d)[p[i]];
    }
    return compose_impl(*s, *d, b_shape, IntTuple(b_stride.value()), reach, p.raw());
  }
  return compose_mode(a_shape, a_stride, b_shape.value(), b_stride, reach, key);
}

// The profile of b's codomain: a leaf for integer strides, the tuple of modes its bases reach otherwise.
IntTuple coprofile(const Layout& b) {
  int width = 0;
  for (auto& d : flatten_leaves(b.stride()))
    if (d.has_basis()) width = std::max(width, d.basis()[0] + 1);
  if (width == 0) return IntTuple(0);
  std::vector<IntTuple> p(width, IntTuple(0));
  return IntTuple::tuple(std::move(p));
}

// a(x + y) == a(x) + a(y) holds for offsets of one sign (a(-k) == -a(k)), not across signs once a has several
// modes: a(-3 + 1) is not a(-3) + a(1) for (3,4):(1,36). So b's strides must not mix signs there.
void check_signs(const Layout& flat, const Layout& b) {
  if (flat.shape().is_leaf() || flat.rank() < 2 || b.has_basis_stride()) return;
  bool pos = false, neg = false;
  auto extents = flatten_leaves(b.shape());
  auto strides = flatten_leaves(b.stride());
  for (size_t i = 0; i < strides.size(); ++i) {
    if (extents[i].value().is_constant(1)) continue;  // its stride is never used
    auto v = strides[i].value().static_value();
    if (v && *v > 0) pos = true;
    if (v && *v < 0) neg = true;
  }
  if (pos && neg)
    throw LayoutError("strides of both signs in the right operand: offsets that cross zero do not add up in the "
                      "left one, so the result would not be a(b(i))");
}

}  // namespace

Layout composition(const Layout& a, const Layout& b) {
  return detail::with_context([&] { return "composition(" + a.str() + ", " + b.str() + ")"; },
                              [&] {
                                Layout flat = detail::coalesce_x(a, coprofile(b));
                                check_signs(flat, b);
                                Reach reach;
                                Layout r = compose_impl(flat.shape(), flat.stride(), b.shape(), b.stride(), reach, 0);
                                reach.check();
                                return r;
                              });
}

Layout composition(const Layout& a, const Tiler& b) {
  if (b.is_integer()) return composition(a, Layout::trusted(b.layout().shape(), IntTuple(1)));
  if (b.is_layout()) return composition(a, b.layout());
  if (b.is_underscore()) return a;
  if (b.rank() > a.rank())
    throw LayoutError("composition(" + a.str() + ", " + b.str() + "): the tiler has more modes than the layout");
  std::vector<Layout> modes;
  for (int i = 0; i < b.rank(); ++i) modes.push_back(composition(a[i], b.modes()[i]));
  return pack(std::move(modes));
}

}  // namespace ww
