#pragma once

// The sanitizer build (build-asan/, about ten times slower) runs a fraction of the random trials: the same
// properties over fewer layouts, in CI time.
#ifndef WW_TRIAL_SCALE
#define WW_TRIAL_SCALE 1
#endif
// Helpers for the layout tests: parsing shorthands and random layouts for property tests.
#include <random>
#include <set>
#include <string>

#include "ww/layout/layout_algebra.hpp"
#include "ww/layout/notation.hpp"

namespace ww::test {

inline Layout L(const char* s) { return parse_layout(s); }
inline IntTuple T(const char* s) { return parse_int_tuple(s); }
inline int64_t at(const Layout& l, int64_t i) { return l(IntTuple(i)).value().value(); }

// Random shapes of depth <= 2 with small extents, and strides of several kinds: compact in a random mode order,
// compact with gaps, or small arbitrary integers (which may violate preconditions on purpose).
class LayoutGen {
 public:
  explicit LayoutGen(uint32_t seed) : rng_(seed) {}
  int64_t pick(std::initializer_list<int64_t> v) {
    std::uniform_int_distribution<size_t> d(0, v.size() - 1);
    return *(v.begin() + d(rng_));
  }
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  IntTuple shape(int depth = 2) {
    int r = uniform(1, 3);
    if (depth == 0 || uniform(0, 3) == 0) return IntTuple(pick({1, 2, 2, 3, 4, 4, 6, 8}));
    std::vector<IntTuple> c;
    for (int i = 0; i < r; ++i) c.push_back(uniform(0, 2) == 0 ? shape(depth - 1) : IntTuple(pick({1, 2, 3, 4, 8})));
    return IntTuple::tuple(c);
  }

  // A layout whose flat modes are a random permutation of a compact layout, each stride optionally scaled.
  Layout injective(int depth = 2, bool gaps = true) {
    IntTuple s = shape(depth);
    auto leaves = flatten_leaves(s);
    std::vector<int> order(leaves.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::shuffle(order.begin(), order.end(), rng_);
    std::vector<IntTuple> strides(leaves.size());
    Int cur = 1;
    for (int i : order) {
      if (gaps && uniform(0, 3) == 0) cur = cur * Int(pick({2, 3}));
      strides[i] = IntTuple(cur);
      cur = cur * leaves[i].value();
    }
    return Layout(s, unflatten(strides, s));
  }

  Layout arbitrary(int depth = 2) {
    IntTuple s = shape(depth);
    auto leaves = flatten_leaves(s);
    std::vector<IntTuple> strides;
    for (size_t i = 0; i < leaves.size(); ++i) strides.push_back(IntTuple(pick({0, 1, 2, 3, 4, 6, 8, 12, 16})));
    return Layout(s, unflatten(strides, s));
  }

  Layout any(int depth = 2) { return uniform(0, 2) == 0 ? arbitrary(depth) : injective(depth); }

  std::mt19937& rng() { return rng_; }

 private:
  std::mt19937 rng_;
};

inline std::set<int64_t> image(const Layout& l) {
  std::set<int64_t> s;
  int64_t n = l.size().value();
  for (int64_t i = 0; i < n; ++i) s.insert(at(l, i));
  return s;
}

inline bool is_injective(const Layout& l) { return static_cast<int64_t>(image(l).size()) == l.size().value(); }

}  // namespace ww::test
