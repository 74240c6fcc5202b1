#pragma once
// Private helpers shared by the algebra's translation units.
#include <string>
#include <vector>

#include "ww/layout/error.hpp"
#include "ww/layout/layout.hpp"

namespace ww::detail {

// CuTe's bw_coalesce over flat modes. With keep_last, an extent-1 last mode keeps its stride (as extent 2), so the
// function is preserved past the domain too (CuTe's coalesce_x, used by composition).
Layout bw_coalesce(const std::vector<IntTuple>& shape, const std::vector<IntTuple>& stride, bool keep_last);
Layout coalesce_flat(const Layout& l, bool keep_last);
// coalesce_x applied at the terminals of a profile.
Layout coalesce_x(const Layout& l, const IntTuple& profile);
// Product of the static extents and of the dynamic ones, kept apart (CuTe's coalesce of a shape).
IntTuple coalesce_shape(const IntTuple& shape);
// complement that refuses a result whose rounded gaps leave it short of size(cotarget) / size(filter(a)) (a divide's
// rest modes: short, the divide would silently miss part of its target). A product needs no such check: it composes
// the result with its tiler, and composition runs past the last mode, so a short rest mode still reaches every copy.
Layout complement_covering(const Layout& a, const IntTuple& cotarget);

// Runs f; a LayoutError raised inside gets the operation and its operands (built only then) in front.
template <class C, class F>
auto with_context(C&& context, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const LayoutTypeError& e) {
    throw LayoutTypeError(context() + ": " + e.what());
  } catch (const LayoutError& e) {
    throw LayoutError(context() + ": " + e.what());
  }
}

}  // namespace ww::detail
