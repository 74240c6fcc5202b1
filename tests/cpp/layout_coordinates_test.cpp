// Offsets back to coordinates (get_hier_coord, get_flat_coord, get_1d_coord) over random compact layouts: each
// offset in [0, size) has exactly one coordinate, which the layout maps back to it.
#include <gtest/gtest.h>

#include <set>

#include "layout_test_util.hpp"
#include "ww/layout/coordinates.hpp"
#include "ww/layout/error.hpp"
#include "ww/layout/layout_algebra.hpp"

namespace ww::test {
namespace {

constexpr int kTrials = 2000 / WW_TRIAL_SCALE;

TEST(Coordinates, HierCoordInvertsCompactLayouts) {
  LayoutGen g(41);
  for (int t = 0; t < kTrials; ++t) {
    Layout l = g.injective(2, /*gaps=*/false);
    std::set<std::string> seen;
    for (int64_t i = 0; i < l.size().value(); ++i) {
      IntTuple c = get_hier_coord(l, Int(i));
      ASSERT_TRUE(congruent(c, l.shape())) << l.str() << " at " << i << ": " << c.str();
      ASSERT_EQ(l(c).value().value(), i) << l.str() << " at " << c.str();
      seen.insert(c.str());
    }
    ASSERT_EQ(static_cast<int64_t>(seen.size()), l.size().value()) << l.str();
  }
}

TEST(Coordinates, FlatAnd1dCoordsAreColexicographicPerModeAndOverall) {
  LayoutGen g(42);
  for (int t = 0; t < kTrials; ++t) {
    Layout l = g.injective(2, false);
    for (int64_t i = 0; i < l.size().value(); ++i) {
      IntTuple hier = get_hier_coord(l, Int(i));
      IntTuple flat = get_flat_coord(l, Int(i));
      int64_t one = get_1d_coord(l, Int(i)).value();
      ASSERT_EQ(one, crd2idx(hier, l.shape(), compact_col_major(l.shape())).value().value());
      ASSERT_EQ(at(l, one), i) << l.str();
      if (l.rank() == 1) {
        ASSERT_TRUE(flat.is_leaf());
        ASSERT_EQ(flat.value().value(), one);
        continue;
      }
      ASSERT_EQ(flat.rank(), l.rank());
      ASSERT_EQ(depth(flat), 1);
      int64_t sum = 0;
      for (int m = 0; m < l.rank(); ++m) sum += at(l[m], flat[m].value().value());
      ASSERT_EQ(sum, i) << l.str() << " flat " << flat.str();
    }
  }
}

TEST(Coordinates, DynamicIndexEvaluatesLikeStatic) {
  Int idx = Int::symbol(7001), ext = Int::symbol(7002);
  Layout dyn(tup({tup({4, ext}), 3}), tup({tup({1, 12}), 4}));
  for (int64_t n : {1, 2, 5}) {
    Layout stat(tup({tup({4, n}), 3}), tup({tup({1, 12}), 4}));
    for (int64_t i = 0; i < stat.size().value(); ++i) {
      auto env = [&](uint64_t id) { return id == 7001 ? i : n; };
      IntTuple f = get_flat_coord(dyn, idx), s = get_flat_coord(stat, Int(i));
      for (int m = 0; m < 2; ++m) ASSERT_EQ(f[m].value().evaluate(env), s[m].value().value()) << n << " " << i;
    }
  }
}

TEST(Coordinates, NonInvertibleModesAreRefused) {
  EXPECT_THROW(get_hier_coord(L("(4,2):(0,4)"), Int(3)), LayoutError);
  EXPECT_THROW(get_flat_coord(L("4:-1"), Int(1)), LayoutError);
  // Extent-1 modes take coordinate 0 whatever their stride.
  EXPECT_EQ(get_hier_coord(L("(1,4):(0,1)"), Int(3)).str(), "(0,3)");
}

}  // namespace
}  // namespace ww::test
