// Swizzle functions and composed layouts.
#include "ww/layout/swizzle.hpp"

#include "ww/layout/error.hpp"

namespace ww {

Swizzle::Swizzle(int bits, int base, int shift) : bits_(bits), base_(base), shift_(shift) {
  if (bits < 0 || base < 0 || (shift < 0 ? -shift : shift) < bits || bits > 30 || base > 30 || shift > 30 || shift < -30)
    throw LayoutError("make_swizzle(" + std::to_string(bits) + ", " + std::to_string(base) + ", " + std::to_string(shift) +
                      "): requires 0 <= bits, 0 <= base, bits <= |shift|, all below 31");
}

int64_t Swizzle::operator()(int64_t offset) const {
  int64_t mask = (int64_t{1} << bits_) - 1;
  int64_t yyy = mask << (base_ + std::max(0, shift_));
  int64_t moved = offset & yyy;
  return offset ^ (shift_ >= 0 ? (moved >> shift_) : (moved << -shift_));
}

Int Swizzle::operator()(const Int& offset) const {
  if (auto v = offset.static_value()) return Int((*this)(*v));
  if (bits_ == 0) return offset;
  // The moved bits, as arithmetic on a non-negative offset: ((o >> (M + max(0,S))) % 2^B) << (M + max(0,-S)).
  int64_t from = base_ + std::max(0, shift_), to = base_ + std::max(0, -shift_);
  Int bitsv = (offset / Int(int64_t{1} << from)) % Int(int64_t{1} << bits_);
  return bit_xor(offset, bitsv * Int(int64_t{1} << to));
}

std::string Swizzle::str() const {
  return "S<" + std::to_string(bits_) + "," + std::to_string(base_) + "," + std::to_string(shift_) + ">";
}

ComposedLayout::ComposedLayout(Inner inner, IntTuple offset, Layout outer)
    : inner_(std::move(inner)), offset_(std::move(offset)), outer_(std::move(outer)) {}

IntTuple ComposedLayout::operator()(const IntTuple& coord) const {
  IntTuple o = codomain_add(offset_, outer_(coord));
  if (auto* sw = std::get_if<Swizzle>(&inner_)) {
    if (o.is_tuple()) throw LayoutTypeError("a swizzle applies to integer offsets, got " + o.str());
    return IntTuple((*sw)(o.value()));
  }
  return std::get<Layout>(inner_)(o);
}

IntTuple ComposedLayout::cosize() const {
  if (inner_is_swizzle()) {
    // A swizzle permutes offsets within aligned blocks; the outer layout's extent rounded up to whole blocks bounds it.
    const Swizzle& sw = std::get<Swizzle>(inner_);
    Int hi = codomain_add(offset_, outer_.cosize()).value();
    int64_t block = int64_t{1} << (sw.base() + sw.bits() + (sw.shift() < 0 ? -sw.shift() : sw.shift()));
    return IntTuple(ceil_div(hi, Int(block)) * Int(block));
  }
  return std::get<Layout>(inner_).cosize();
}

bool ComposedLayout::same(const ComposedLayout& o) const {
  if (inner_.index() != o.inner_.index() || !offset_.same(o.offset_) || !outer_.same(o.outer_)) return false;
  if (inner_is_swizzle()) return std::get<Swizzle>(inner_).same(std::get<Swizzle>(o.inner_));
  return std::get<Layout>(inner_).same(std::get<Layout>(o.inner_));
}

size_t ComposedLayout::hash() const {
  size_t h = inner_is_swizzle() ? std::get<Swizzle>(inner_).hash() : std::get<Layout>(inner_).hash();
  return (h * 31 + offset_.hash()) * 31 + outer_.hash();
}

std::string ComposedLayout::str() const {
  std::string in = inner_is_swizzle() ? std::get<Swizzle>(inner_).str() : std::get<Layout>(inner_).str();
  return in + " o " + offset_.str() + " o " + outer_.str();
}

ComposedLayout composition(const Swizzle& sw, const Layout& l) { return ComposedLayout(sw, IntTuple(0), l); }
ComposedLayout composition(const ComposedLayout& a, const Layout& b) { return a.with_outer(composition(a.outer(), b)); }
ComposedLayout composition(const ComposedLayout& a, const Tiler& b) { return a.with_outer(composition(a.outer(), b)); }
ComposedLayout logical_divide(const ComposedLayout& a, const Tiler& b) { return a.with_outer(logical_divide(a.outer(), b)); }
ComposedLayout zipped_divide(const ComposedLayout& a, const Tiler& b) { return a.with_outer(zipped_divide(a.outer(), b)); }
ComposedLayout tiled_divide(const ComposedLayout& a, const Tiler& b) { return a.with_outer(tiled_divide(a.outer(), b)); }
ComposedLayout flat_divide(const ComposedLayout& a, const Tiler& b) { return a.with_outer(flat_divide(a.outer(), b)); }
ComposedLayout logical_product(const ComposedLayout& a, const Tiler& b) { return a.with_outer(logical_product(a.outer(), b)); }
ComposedLayout zipped_product(const ComposedLayout& a, const Tiler& b) { return a.with_outer(zipped_product(a.outer(), b)); }
ComposedLayout tiled_product(const ComposedLayout& a, const Tiler& b) { return a.with_outer(tiled_product(a.outer(), b)); }
ComposedLayout flat_product(const ComposedLayout& a, const Tiler& b) { return a.with_outer(flat_product(a.outer(), b)); }
ComposedLayout blocked_product(const ComposedLayout& a, const Layout& b) { return a.with_outer(blocked_product(a.outer(), b)); }
ComposedLayout raked_product(const ComposedLayout& a, const Layout& b) { return a.with_outer(raked_product(a.outer(), b)); }
ComposedLayout tile_to_shape(const ComposedLayout& block, const IntTuple& target_shape, const std::optional<IntTuple>& order) {
  return block.with_outer(tile_to_shape(block.outer(), target_shape, order));
}
ComposedLayout coalesce(const ComposedLayout& l) { return l.with_outer(coalesce(l.outer())); }
ComposedLayout coalesce(const ComposedLayout& l, const IntTuple& profile) {
  return l.with_outer(coalesce(l.outer(), profile));
}
ComposedLayout flatten(const ComposedLayout& l) { return l.with_outer(flatten(l.outer())); }

}  // namespace ww
