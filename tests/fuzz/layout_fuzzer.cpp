// libFuzzer entry: two lines of notation, A and B. Every operation must either return a layout that keeps its
// defining property (checked on small domains) or raise LayoutError / LayoutTypeError; nothing else may happen.
#include <cstdint>
#include <set>
#include <string>

#include "ww/layout/error.hpp"
#include "ww/layout/notation.hpp"

namespace {

using namespace ww;

int64_t at(const Layout& l, int64_t i) { return l(IntTuple(i)).value().value(); }
bool small(const Layout& l) { return l.is_static() && l.size().value() <= 512 && !l.has_basis_stride(); }

void check(bool ok) {
  if (!ok) __builtin_trap();
}

template <class F>
void guarded(F&& f) {
  try {
    f();
  } catch (const LayoutError&) {
  } catch (const LayoutTypeError&) {
  }
}

void exercise(const Layout& a, const Layout& b) {
  guarded([&] { check(parse_layout(a.str()).same(a)); });
  guarded([&] {
    Layout c = coalesce(a);
    if (small(a))
      for (int64_t i = 0; i < a.size().value(); ++i) check(at(c, i) == at(a, i));
  });
  guarded([&] {
    Layout r = composition(a, b);
    if (small(a) && small(b))
      for (int64_t i = 0; i < b.size().value(); ++i) check(at(r, i) == at(a, at(b, i)));
  });
  guarded([&] {
    Layout r = right_inverse(a);
    if (small(a) && r.size().value() <= 512)
      for (int64_t i = 0; i < r.size().value(); ++i) check(at(a, at(r, i)) == i);
  });
  guarded([&] {
    Layout r = left_inverse(a);
    if (small(a)) {
      // An inverse for an injective layout; otherwise one on the image (stride-0 or overlapping modes).
      std::set<int64_t> img;
      for (int64_t i = 0; i < a.size().value(); ++i) img.insert(at(a, i));
      bool injective = static_cast<int64_t>(img.size()) == a.size().value();
      for (int64_t i = 0; i < a.size().value(); ++i)
        check(injective ? at(r, at(a, i)) == i : at(a, at(r, at(a, i))) == at(a, i));
    }
  });
  guarded([&] { complement(a, b.size()); });
  guarded([&] { logical_divide(a, b); });
  guarded([&] { zipped_divide(a, Tiler::from_shape(b.shape())); });
  guarded([&] { logical_product(a, b); });
  guarded([&] { blocked_product(a, b); });
  guarded([&] { raked_product(a, b); });
  guarded([&] { max_common_vector(a, b); });
  guarded([&] { recast_layout(32, 16, a); });
  guarded([&] { tile_to_shape(a, b.shape()); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  size_t nl = text.find('\n');
  std::string first = text.substr(0, nl), second = nl == std::string::npos ? "1:0" : text.substr(nl + 1);
  try {
    auto a = parse_any_layout(first);
    auto b = parse_any_layout(second);
    if (auto* la = std::get_if<Layout>(&a))
      if (auto* lb = std::get_if<Layout>(&b)) exercise(*la, *lb);
    if (auto* ca = std::get_if<ComposedLayout>(&a)) {
      guarded([&] { check(parse_any_layout(ca->str()).index() == 1); });
      guarded([&] { if (small(ca->outer())) (*ca)(IntTuple(ca->size().value() - 1)); });
    }
  } catch (const LayoutError&) {
  } catch (const LayoutTypeError&) {
  }
  return 0;
}
