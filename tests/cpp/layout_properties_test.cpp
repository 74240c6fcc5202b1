// Properties of the layout algebra over many random layouts. Each test states the defining property of an
// operation and checks it wherever the operation accepts its operands, and that it accepts enough of them.
#include <gtest/gtest.h>

#include "layout_test_util.hpp"
#include "ww/layout/error.hpp"

namespace ww::test {
namespace {

constexpr int kTrials = 3000 / WW_TRIAL_SCALE;

TEST(Properties, CoalesceKeepsSizeAndFunction) {
  LayoutGen g(1);
  for (int t = 0; t < kTrials; ++t) {
    Layout a = g.any();
    Layout c = coalesce(a);
    ASSERT_EQ(c.size().value(), a.size().value()) << a.str();
    ASSERT_LE(c.depth(), 1) << a.str();
    for (int64_t i = 0; i < a.size().value(); ++i) ASSERT_EQ(at(c, i), at(a, i)) << a.str() << " -> " << c.str();
  }
}

TEST(Properties, CoalesceByProfileKeepsRankAndFunction) {
  LayoutGen g(2);
  for (int t = 0; t < kTrials; ++t) {
    Layout a = g.any();
    IntTuple profile = repeat_like(product_each(a.shape()), IntTuple(1));
    Layout c = coalesce(a, profile);
    ASSERT_EQ(c.rank(), a.rank()) << a.str();
    for (int m = 0; m < a.rank(); ++m) ASSERT_EQ(c[m].size().value(), a[m].size().value());
    for (int64_t i = 0; i < a.size().value(); ++i) ASSERT_EQ(at(c, i), at(a, i)) << a.str() << " -> " << c.str();
  }
}

TEST(Properties, CompositionIsFunctionComposition) {
  LayoutGen g(3);
  int ok = 0;
  for (int t = 0; t < kTrials; ++t) {
    Layout a = g.any();
    Layout b = g.uniform(0, 1) ? g.injective(1) : g.arbitrary(1);
    Layout r;
    try {
      r = composition(a, b);
    } catch (const LayoutError&) {
      continue;
    }
    ++ok;
    ASSERT_TRUE(compatible(b.shape(), r.shape())) << a.str() << " o " << b.str() << " = " << r.str();
    for (int64_t i = 0; i < b.size().value(); ++i)
      ASSERT_EQ(at(r, i), at(a, at(b, i))) << a.str() << " o " << b.str() << " = " << r.str() << " at " << i;
  }
  EXPECT_GT(ok, kTrials / 3);
}

TEST(Properties, CompositionWithCompactSubtiles) {
  // B built to satisfy the divisibility conditions: prefixes of a's compact domain with divisor strides.
  LayoutGen g(4);
  for (int t = 0; t < kTrials; ++t) {
    Layout a = g.any();
    int64_t n = a.size().value();
    std::vector<int64_t> divisors;
    for (int64_t d = 1; d <= n; ++d)
      if (n % d == 0) divisors.push_back(d);
    int64_t s = divisors[g.uniform(0, static_cast<int>(divisors.size()) - 1)];
    int64_t rest = n / s;
    std::vector<int64_t> rdiv;
    for (int64_t d = 1; d <= rest; ++d)
      if (rest % d == 0) rdiv.push_back(d);
    int64_t d = rdiv[g.uniform(0, static_cast<int>(rdiv.size()) - 1)];
    Layout b = make_layout(tup({IntTuple(s), IntTuple(rest / d)}), tup({IntTuple(d), IntTuple(d * s)}));
    Layout r = composition(make_layout(a.shape()), b);
    for (int64_t i = 0; i < b.size().value(); ++i) ASSERT_EQ(at(r, i), at(b, i)) << b.str();
  }
}

TEST(Properties, ComplementIsDisjointOrderedAndBounded) {
  LayoutGen g(5);
  int ok = 0;
  for (int t = 0; t < kTrials; ++t) {
    Layout a = g.injective();
    int64_t cotarget = a.cosize().value().value() * g.pick({1, 1, 2, 3});
    Layout c;
    try {
      c = complement(a, IntTuple(cotarget));
    } catch (const LayoutError&) {
      continue;
    }
    ++ok;
    auto img = image(a);
    int64_t n = c.size().value();
    for (int64_t i = 1; i < n; ++i) {
      ASSERT_LT(at(c, i - 1), at(c, i)) << "complement(" << a.str() << ") = " << c.str();
      ASSERT_EQ(img.count(at(c, i)), 0u) << "complement(" << a.str() << ") = " << c.str();
    }
    // (a, c) is injective and covers the cotarget.
    Layout both = make_layout(std::vector<Layout>{a, c});
    ASSERT_TRUE(is_injective(both)) << a.str() << " , " << c.str();
    ASSERT_GE(both.cosize().value().value(), cotarget) << a.str() << " , " << c.str();
    ASSERT_GE(a.size().value() * n, cotarget / (a.cosize().value().value() / a.size().value())) << a.str();
  }
  EXPECT_GT(ok, kTrials / 2);
}

TEST(Properties, RightInverseInverts) {
  LayoutGen g(6);
  for (int t = 0; t < kTrials; ++t) {
    Layout a = g.any();
    Layout r = right_inverse(a);
    for (int64_t i = 0; i < r.size().value(); ++i) ASSERT_EQ(at(a, at(r, i)), i) << a.str() << " r " << r.str();
  }
  // Compact layouts are bijections: the right inverse covers all of them.
  for (int t = 0; t < kTrials; ++t) {
    Layout a = g.injective(2, false);
    ASSERT_EQ(right_inverse(a).size().value(), a.size().value()) << a.str();
  }
}

TEST(Properties, LeftInverseInverts) {
  LayoutGen g(7);
  int ok = 0;
  for (int t = 0; t < kTrials; ++t) {
    Layout a = g.any();
    bool inj = is_injective(a);
    Layout r;
    try {
      r = left_inverse(a);
    } catch (const LayoutError&) {
      continue;
    }
    ++ok;
    // Injective: r inverts a. Otherwise (stride-0 or overlapping modes) r inverts a on its image, CuTe's
    // quasi-inverse: a(r(a(i))) == a(i), r read past its domain where the last mode extends it.
    for (int64_t i = 0; i < a.size().value(); ++i) {
      if (inj) {
        ASSERT_EQ(at(r, at(a, i)), i) << a.str() << " l " << r.str();
      } else {
        ASSERT_EQ(at(a, at(r, at(a, i))), at(a, i)) << a.str() << " l " << r.str();
      }
    }
  }
  EXPECT_GT(ok, kTrials / 3);
}

TEST(Properties, LogicalDivideStructure) {
  LayoutGen g(8);
  int ok = 0;
  for (int t = 0; t < kTrials; ++t) {
    Layout a = g.any();
    Layout b = g.injective(1);
    Layout d;
    try {
      d = logical_divide(a, b);
    } catch (const LayoutError&) {
      continue;
    }
    ++ok;
    ASSERT_EQ(d.rank(), 2);
    // Mode 0 is the tile: a o b.
    Layout tile = d[0];
    for (int64_t i = 0; i < b.size().value(); ++i) ASSERT_EQ(at(tile, i), at(a, at(b, i)));
    // The whole is a o (b, b*).
    Layout bb = make_layout(std::vector<Layout>{b, complement(b, coalesce(a).shape())});
    for (int64_t i = 0; i < d.size().value(); ++i) ASSERT_EQ(at(d, i), at(a, at(bb, i)));
    ASSERT_GE(d.size().value(), a.size().value());
    // zipped_divide gathers the same modes.
    Layout z = zipped_divide(a, b);
    for (int64_t i = 0; i < d.size().value(); ++i) ASSERT_EQ(at(z, i), at(d, i));
  }
  EXPECT_GT(ok, kTrials / 4);
}

TEST(Properties, ByModeDivideKeepsModeSemantics) {
  LayoutGen g(9);
  int ok = 0;
  for (int t = 0; t < kTrials; ++t) {
    Layout a = make_layout(tup({IntTuple(g.pick({4, 8, 12, 16})), IntTuple(g.pick({4, 6, 8, 32}))}));
    Tiler tl = Tiler::from_shape(tup({IntTuple(g.pick({1, 2, 4})), IntTuple(g.pick({1, 2, 4}))}));
    Layout d;
    try {
      d = logical_divide(a, tl);
    } catch (const LayoutError&) {
      continue;
    }
    ++ok;
    ASSERT_EQ(d.rank(), 2);
    Layout z = zipped_divide(a, tl);
    for (int m = 0; m < 2; ++m) {
      // Each mode keeps its meaning: the tile times the number of tiles covers it (exactly when the tile divides).
      int64_t extent = a[m].size().value(), tile = tl.modes()[m].layout().size().value();
      ASSERT_EQ(d[m].size().value(), tile * ((extent + tile - 1) / tile)) << d.str();
      ASSERT_EQ(z[0][m].size().value(), tile);
    }
  }
  EXPECT_EQ(ok, kTrials);
}

TEST(Properties, LogicalProductStructure) {
  LayoutGen g(10);
  int ok = 0;
  for (int t = 0; t < kTrials; ++t) {
    Layout a = g.injective(1);
    Layout b = g.injective(1, false);
    Layout p;
    try {
      p = logical_product(a, b);
    } catch (const LayoutError&) {
      continue;
    }
    ++ok;
    ASSERT_EQ(p.rank(), 2);
    ASSERT_TRUE(p[0].same(a)) << p.str();
    ASSERT_EQ(p.size().value(), a.size().value() * b.size().value());
    ASSERT_TRUE(compatible(b.shape(), p[1].shape())) << b.str() << " " << p.str();
    // Distinct copies of a: the product is injective when a and b are.
    ASSERT_TRUE(is_injective(p)) << a.str() << " x " << b.str() << " = " << p.str();
  }
  EXPECT_GT(ok, kTrials / 2);
}

TEST(Properties, BlockedAndRakedProducts) {
  LayoutGen g(11);
  for (int t = 0; t < 500; ++t) {
    Layout a = make_layout(tup({IntTuple(g.pick({1, 2, 3, 4})), IntTuple(g.pick({1, 2, 4}))}));
    Layout b = make_layout(tup({IntTuple(g.pick({1, 2, 3})), IntTuple(g.pick({2, 4}))}));
    for (bool raked : {false, true}) {
      Layout p = raked ? raked_product(a, b) : blocked_product(a, b);
      ASSERT_EQ(p.rank(), 2);
      for (int m = 0; m < 2; ++m) ASSERT_EQ(p[m].size().value(), a[m].size().value() * b[m].size().value());
      ASSERT_TRUE(is_injective(p)) << p.str();
      // Blocked: a's block sits at the origin of the result.
      if (!raked)
        for (int64_t i = 0; i < a[0].size().value(); ++i)
          for (int64_t j = 0; j < a[1].size().value(); ++j)
            ASSERT_EQ(p(tup({IntTuple(i), IntTuple(j)})).value().value(), a(tup({IntTuple(i), IntTuple(j)})).value().value());
    }
  }
}

TEST(Properties, MaxCommonVectorIsCommonAndContiguous) {
  LayoutGen g(12);
  for (int t = 0; t < kTrials; ++t) {
    Layout a = g.injective(2, false);
    // b: the same shape with another compact order.
    Layout b = make_layout(a.shape(), compact_row_major(a.shape()));
    if (g.uniform(0, 1)) b = a;
    int64_t n = max_common_vector(a, b).value();
    Layout m = max_common_layout(a, b);
    ASSERT_EQ(m.size().value(), n);
    Layout ib = right_inverse(b);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(at(a, at(m, i)), i) << a.str() << " " << b.str();
      ASSERT_EQ(at(b, at(m, i)), i) << a.str() << " " << b.str();
    }
  }
}

TEST(Properties, NotationRoundTrips) {
  LayoutGen g(13);
  for (int t = 0; t < kTrials; ++t) {
    Layout a = g.any();
    Layout b = parse_layout(a.str());
    ASSERT_TRUE(a.same(b)) << a.str();
    ASSERT_EQ(a.hash(), b.hash());
  }
}

TEST(Properties, SwizzleIsAnInvolutionOnItsBlocks) {
  for (int b = 0; b <= 3; ++b)
    for (int m = 0; m <= 4; ++m)
      for (int s = b; s <= b + 3; ++s) {
        Swizzle sw(b, m, s);
        for (int64_t i = 0; i < 4096; ++i) {
          ASSERT_EQ(sw(sw(i)), i);
          // Only bits [m, m+b) change.
          ASSERT_EQ(sw(i) & ~(((int64_t{1} << b) - 1) << m), i & ~(((int64_t{1} << b) - 1) << m));
        }
      }
}

}  // namespace
}  // namespace ww::test
