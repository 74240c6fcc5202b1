#pragma once
// CuTe's layout algebra. Each operation keeps CuTe's semantics and the exact shape of CuTe's result; its defining
// property is stated next to it. A violated precondition raises LayoutError naming the operation and operands.
#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include "ww/layout/layout.hpp"

namespace ww {

// A tiler: a layout; an integer n, meaning n:1; `_` (keep the mode as it is); or a tuple of tilers, applied mode by
// mode. A plain shape such as (4,8) is the tuple of tilers (4:1, 8:1).
class Tiler {
 public:
  Tiler(Layout l) : v_(std::move(l)) {}  // NOLINT
  Tiler(const Int& n) : v_(Layout(IntTuple(n))), integer_(true) {}  // NOLINT
  Tiler(int n) : Tiler(Int(n)) {}  // NOLINT
  static Tiler underscore() { return Tiler(Underscore{}); }
  static Tiler tuple(std::vector<Tiler> modes) { return Tiler(std::move(modes)); }
  // A shape as a tiler: each mode of the shape becomes make_layout(mode), applied by mode.
  static Tiler from_shape(const IntTuple& shape);

  bool is_layout() const { return std::holds_alternative<Layout>(v_); }
  bool is_underscore() const { return std::holds_alternative<Underscore>(v_); }
  bool is_tuple() const { return std::holds_alternative<std::vector<Tiler>>(v_); }
  const Layout& layout() const { return std::get<Layout>(v_); }
  const std::vector<Tiler>& modes() const { return std::get<std::vector<Tiler>>(v_); }
  int rank() const { return is_tuple() ? static_cast<int>(modes().size()) : 1; }
  // An integer n: divides and products read it as make_layout(n) (1:0 for n == 1), composition as n:1 (CuTe).
  bool is_integer() const { return integer_; }
  std::string str() const;

 private:
  struct Underscore {};
  explicit Tiler(Underscore u) : v_(u) {}
  explicit Tiler(std::vector<Tiler> m) : v_(std::move(m)) {}
  std::variant<Layout, Underscore, std::vector<Tiler>> v_;
  bool integer_ = false;
};

// --- Construction -----------------------------------------------------------------------------------------------
Layout make_layout(const IntTuple& shape);                          // compact column-major
Layout make_layout(const IntTuple& shape, const IntTuple& stride);
Layout make_layout(std::span<const Layout> modes);                  // each layout becomes one mode
// Compact strides with the mode of smallest `order` fastest.
Layout make_ordered_layout(const IntTuple& shape, const IntTuple& order);
// Maps each coordinate of `shape` to itself: strides are basis elements, L(c) == c.
Layout make_identity_layout(const IntTuple& shape);
// Thread-value layout from a thread layout and a value layout: (tiler_mn, layout_tv) where layout_tv maps
// (thread, value) to the position in the tiler_mn tile produced by raked_product(thr, val).
std::pair<IntTuple, Layout> make_layout_tv(const Layout& thr, const Layout& val);

// --- Coordinates ------------------------------------------------------------------------------------------------
// Offset of a coordinate: an integer coordinate is split colexicographically over a tuple shape, the last mode
// taking what is left.
IntTuple crd2idx(const IntTuple& coord, const IntTuple& shape, const IntTuple& stride);
// Colexicographic coordinate of an index in a shape (the last mode takes what is left).
IntTuple idx2crd(const IntTuple& idx, const IntTuple& shape);

// --- Modes ------------------------------------------------------------------------------------------------------
Layout get(const Layout& l, std::span<const int> path);
Layout select(const Layout& l, std::span<const int> modes);
Layout flatten(const Layout& l);
Layout group_modes(const Layout& l, int begin, int end);
Layout append(const Layout& l, const Layout& x);
Layout prepend(const Layout& l, const Layout& x);
// Pads with x (default 1:0) up to rank n.
Layout append(const Layout& l, int n, const Layout& x = Layout());
Layout prepend(const Layout& l, int n, const Layout& x = Layout());
Layout zip_layouts(const Layout& a, const Layout& b);  // ((a0,b0),(a1,b1),...); ((a,b)) for an integer-shaped a

// --- Simplification ---------------------------------------------------------------------------------------------
// Same function on [0, size), fewest modes, depth <= 1. @post size(r) == size(l), r(i) == l(i).
Layout coalesce(const Layout& l);
// Coalesce each mode named by the terminals of `profile` separately; keeps the profile's rank.
Layout coalesce(const Layout& l, const IntTuple& profile);
// Stride-0 modes become extent 1.
Layout filter_zeros(const Layout& l);
Layout filter_zeros(const Layout& l, const IntTuple& profile);
// coalesce(filter_zeros(l)): no stride-0 and no extent-1 modes.
Layout filter(const Layout& l);
Layout filter(const Layout& l, const IntTuple& profile);

// --- Composition and inverses ----------------------------------------------------------------------------------
// (a o b)(c) == a(b(c)) for every c in b's domain; the result's shape is compatible with b's. Negative strides in
// b are taken (a(-k) == -a(k)), but not of both signs over a left operand of several modes.
Layout composition(const Layout& a, const Layout& b);
// By-mode composition; modes of `a` without a tiler mode are dropped (CuTe), `_` keeps a mode, an integer n is n:1.
Layout composition(const Layout& a, const Tiler& b);
// The layout of the offsets that `a` misses, up to `cotarget` (a shape of positive extents): disjoint from a's
// image, with increasing strides. A gap between a's modes that is no whole number of copies of the modes below it
// rounds down, as in CuTe: the result may then fall short of size(cotarget) / size(filter(a)) (complement of
// (4,6):(1,6) into 72 is 2:36). A LayoutError where no complement exists: a not injective (a stride landing inside
// the offsets its smaller modes reach), negative strides, strides that cannot be ordered, a bad cotarget.
Layout complement(const Layout& a, const IntTuple& cotarget);
Layout complement(const Layout& a);  // cotarget = cosize(a)
// r such that a(r(i)) == i for every i < size(r), r as large as possible.
Layout right_inverse(const Layout& a);
// r such that r(a(i)) == i for every i < size(a) when a is injective; otherwise (stride-0 modes) r inverts a on
// its image: a(r(a(i))) == a(i) (CuTe's quasi-inverse). A LayoutError for negative or dynamic strides, CuTe's
// divisibility condition, and overlapping modes where no such r exists.
Layout left_inverse(const Layout& a);

// --- Divide and product -----------------------------------------------------------------------------------------
// composition(a, (b, complement(b, shape(a)))): mode 0 is the tile, mode 1 the tiles' layout.
Layout logical_divide(const Layout& a, const Tiler& b);
Layout zipped_divide(const Layout& a, const Tiler& b);  // ((tile modes), (rest modes))
// tiled_* and flat_* unpack a mode of rank r > 1 into r modes and keep a mode of rank 1 as it is, a 1-tuple
// included (CuTe slices with `_` repeated rank times).
Layout tiled_divide(const Layout& a, const Tiler& b);   // ((tile modes), rest0, rest1, ...)
Layout flat_divide(const Layout& a, const Tiler& b);    // (tile0, tile1, ..., rest0, rest1, ...)
// (a, composition(complement(a, size(a) * cosize(b)), b)): b's layout of copies of a.
Layout logical_product(const Layout& a, const Tiler& b);
Layout zipped_product(const Layout& a, const Tiler& b);
Layout tiled_product(const Layout& a, const Tiler& b);
Layout flat_product(const Layout& a, const Tiler& b);
// Rank max(rank(a), rank(b)): mode i is (a_i, b_i) (blocked) or (b_i, a_i) (raked).
Layout blocked_product(const Layout& a, const Layout& b);
Layout raked_product(const Layout& a, const Layout& b);
// Repeats `block` to fill `target_shape`, the repetitions ordered by `order` (column-major by default).
Layout tile_to_shape(const Layout& block, const IntTuple& target_shape, const std::optional<IntTuple>& order = {});

// --- Vectors and types ------------------------------------------------------------------------------------------
// The largest r such that a(r(i)) == i and b(r(i)) == i for i < size(r).
Layout max_common_layout(const Layout& a, const Layout& b);
// The number of elements of that common contiguous vector (1 at least).
Int max_common_vector(const Layout& a, const Layout& b);
// The layout of the same memory seen as elements of another width (e.g. 16-bit -> 32-bit halves stride-1 modes).
Layout recast_layout(int new_type_bits, int old_type_bits, const Layout& l);
Layout upcast(const Layout& l, int64_t n);
Layout downcast(const Layout& l, int64_t n);
// The shape of the tiles that a tiler makes of a target shape (the rest modes of logical_divide).
IntTuple ceil_div(const IntTuple& target, const Tiler& tiler);

}  // namespace ww
