#pragma once
// CuTe's printed notation, read back: `(4,(2,3)):(1,(4,8))`, `8:1`, scaled bases `1@0`, swizzles `S<3,4,3>`
// (CuTe C++'s `Sw<3,4,3>` too), composed layouts `S<3,4,3> o 0 o (8,64):(64,1)`. CuTe C++'s static marks (`_4`)
// are accepted. Printing is each type's str(), in CuTe DSL's spelling. Backend manifests store atom layouts in
// this notation.
#include <string_view>
#include <variant>

#include "ww/layout/swizzle.hpp"

namespace ww {

IntTuple parse_int_tuple(std::string_view text);
// A layout `shape:stride`, or a bare shape (compact column-major).
Layout parse_layout(std::string_view text);
// A layout or a composed layout.
std::variant<Layout, ComposedLayout> parse_any_layout(std::string_view text);
Swizzle parse_swizzle(std::string_view text);

}  // namespace ww
