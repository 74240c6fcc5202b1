// Dynamic (runtime) integers in the algebra: symbolic normal forms, decided equalities and divisibility, and the
// agreement of every dynamic result with the static one once the symbols get values.
#include <gtest/gtest.h>

#include <map>

#include "layout_test_util.hpp"
#include "ww/layout/assumptions.hpp"
#include "ww/layout/error.hpp"
#include <iostream>

namespace ww::test {
namespace {

Int sym(uint64_t id, int64_t div = 1) { return Int::symbol(id, div, true, 32, "s" + std::to_string(id)); }

TEST(DynamicInt, NormalFormDecidesEqualities) {
  Int m = sym(1), n = sym(2);
  EXPECT_TRUE((m * n).same(n * m));
  EXPECT_TRUE(((m + n) * Int(2)).same(m * Int(2) + n + n));
  EXPECT_TRUE((m * Int(4) / Int(4)).same(m));
  EXPECT_TRUE((m * Int(4) % Int(4)).is_constant(0));
  EXPECT_TRUE(((m * Int(8) + Int(3)) / Int(4)).same(m * Int(2)));
  EXPECT_TRUE(((m * Int(8) + Int(3)) % Int(4)).is_constant(3));
  EXPECT_TRUE((m * n / n).same(m));
  EXPECT_EQ((m - m).static_value(), 0);
  EXPECT_EQ(m.known_eq(n), std::nullopt);
  EXPECT_EQ((m + Int(1)).known_eq(m), false);
  EXPECT_EQ((m + Int(1)).known_lt(m + Int(2)), true);
}

TEST(DynamicInt, Divisibility) {
  Int m = sym(1, 16), n = sym(2, 3);
  EXPECT_EQ(m.divisibility(), 16);
  EXPECT_EQ((m * n).divisibility(), 48);
  EXPECT_EQ((m * Int(2) + Int(8)).divisibility(), 8);
  EXPECT_EQ((m / Int(4)).divisibility(), 4);
  EXPECT_TRUE((m % Int(32)).known_divisible_by(16));
  Int t = sym(3);
  EXPECT_EQ((t % Int(32) * Int(8)).divisibility(), 8);
}

TEST(DynamicInt, EvaluatesFloorDivisionAndModulo) {
  Int m = sym(1), n = sym(2);
  Int e = (m * Int(3) + n) / Int(4) + (m % Int(5)) * n - min(m, n) + max(m, Int(7));
  std::map<uint64_t, int64_t> env{{1, 13}, {2, 6}};
  auto val = [&](uint64_t id) { return env.at(id); };
  EXPECT_EQ(e.evaluate(val), (13 * 3 + 6) / 4 + (13 % 5) * 6 - 6 + 13);
  EXPECT_EQ(e.str(), "?");
  EXPECT_NE(e.expr_str().find("s1"), std::string::npos);
}

TEST(DynamicLayout, CoalesceMergesSymbolicStrides) {
  Int m = sym(1), n = sym(2);
  Layout col = make_layout(tup({IntTuple(m), IntTuple(n)}));  // (M,N):(1,M)
  Layout c = coalesce(col);
  ASSERT_TRUE(c.shape().is_leaf());
  EXPECT_TRUE(c.shape().value().same(m * n));
  EXPECT_TRUE(c.stride().value().is_constant(1));
}

TEST(DynamicLayout, RightInverseFollowsSymbolicStrides) {
  Int m = sym(1), n = sym(2);
  Layout row = make_layout(tup({IntTuple(m), IntTuple(n)}), tup({IntTuple(n), IntTuple(1)}));
  Layout r = right_inverse(row);
  ASSERT_EQ(r.rank(), 2);
  EXPECT_TRUE(r.shape()[0].value().same(n));
  EXPECT_TRUE(r.shape()[1].value().same(m));
  EXPECT_TRUE(r.stride()[0].value().same(m));
  EXPECT_TRUE(r.stride()[1].value().is_constant(1));
}

TEST(DynamicLayout, ZippedDivideOfDynamicRowMajor) {
  Int m = sym(1), n = sym(2, 8);
  Layout row = make_layout(tup({IntTuple(m), IntTuple(n)}), tup({IntTuple(n), IntTuple(1)}));
  Layout z = zipped_divide(row, Tiler::from_shape(T("(4,128)")));
  EXPECT_EQ(z.str(), "((4,128),(?,?)):((?,1),(?,128))");
  std::map<uint64_t, int64_t> env{{1, 1000}, {2, 1024}};
  auto val = [&](uint64_t id) { return env.at(id); };
  EXPECT_EQ(z.shape()[1][0].value().evaluate(val), 250);
  EXPECT_EQ(z.shape()[1][1].value().evaluate(val), 8);
  EXPECT_EQ(z.stride()[1][0].value().evaluate(val), 4 * 1024);
  EXPECT_EQ(z.stride()[1][0].value().divisibility(), 32);
}

TEST(DynamicLayout, SymbolicCoordinatesGiveExpressions) {
  Int tid = sym(7);
  Layout thr = L("(4,32):(32,1)");
  IntTuple off = thr(IntTuple(tid));
  for (int64_t t = 0; t < 128; ++t) EXPECT_EQ(off.value().evaluate([&](uint64_t) { return t; }), at(thr, t));
}

// Replaces some leaves of a static layout by symbols whose values are the replaced integers.
struct Dynamized {
  Layout layout;
  std::map<uint64_t, int64_t> env;
};

Dynamized dynamize(const Layout& a, LayoutGen& g, uint64_t& next_id) {
  Dynamized d;
  auto sub = [&](const IntTuple& t) {
    auto leaves = flatten_leaves(t);
    for (auto& l : leaves) {
      int64_t v = l.value().value();
      if (v > 1 && g.uniform(0, 2) == 0) {
        int64_t div = v & -v;  // the power of two the caller can promise
        uint64_t id = next_id++;
        d.env[id] = v;
        l = IntTuple(Int::symbol(id, div, true, 32));
      }
    }
    return unflatten(leaves, t);
  };
  d.layout = Layout::trusted(sub(a.shape()), sub(a.stride()));
  return d;
}

void expect_same_function(const Layout& dyn, const std::map<uint64_t, int64_t>& env, const Layout& stat,
                          const std::string& what) {
  auto val = [&](uint64_t id) { return env.at(id); };
  ASSERT_EQ(dyn.size().evaluate(val), stat.size().value()) << what;
  for (int64_t i = 0; i < stat.size().value(); ++i)
    ASSERT_EQ(dyn(IntTuple(i)).value().evaluate(val), at(stat, i)) << what << " at " << i;
}

// Runs a dynamic operation under an assumption scope. The result must agree with the static one whenever the
// recorded assumptions hold for the symbols' values; when one fails, the host side would refuse the launch.
template <class F>
bool run_dynamic(F&& f, const std::map<uint64_t, int64_t>& env, Layout& out) {
  AssumptionScope scope;
  try {
    out = f();
  } catch (const LayoutError&) {
    return false;  // less is known than in the static case: refusing is allowed, a wrong answer is not
  }
  auto val = [&](uint64_t id) { return env.at(id); };
  for (auto& a : scope.assumptions())
    if (!a.holds(val)) return false;
  return true;
}

TEST(DynamicLayout, AgreesWithStaticAlgebra) {
  LayoutGen g(21);
  int checked = 0, refused = 0;
  for (int t = 0; t < 1500 / WW_TRIAL_SCALE; ++t) {
    Layout a = g.injective(2, g.uniform(0, 1));
    uint64_t ids = 100;
    Dynamized d = dynamize(a, g, ids);
    std::string what = a.str() + " as " + d.layout.str();
    Layout r;
    if (run_dynamic([&] { return coalesce(d.layout); }, d.env, r)) expect_same_function(r, d.env, coalesce(a), "coalesce " + what);
    Layout b = g.injective(1, false);
    Layout stat;
    try {
      stat = composition(a, b);
    } catch (const LayoutError&) {
      continue;
    }
    if (run_dynamic([&] { return composition(d.layout, b); }, d.env, r)) {
      expect_same_function(r, d.env, stat, "composition " + what + " o " + b.str());
      ++checked;
    } else {
      ++refused;
    }
    if (b.size().value() <= a.size().value() && a.size().value() % b.size().value() == 0) {
      try {
        stat = logical_divide(a, b);
        if (run_dynamic([&] { return logical_divide(d.layout, b); }, d.env, r))
          expect_same_function(r, d.env, stat, "logical_divide " + what + " by " + b.str());
      } catch (const LayoutError&) {
      }
    }
    Layout ri;
    if (run_dynamic([&] { return right_inverse(d.layout); }, d.env, ri)) {
      auto val = [&](uint64_t id) { return d.env.at(id); };
      for (int64_t i = 0; i < ri.size().evaluate(val); ++i)
        ASSERT_EQ(at(a, ri(IntTuple(i)).value().evaluate(val)), i) << "right_inverse " << what;
    }
  }
  EXPECT_GT(checked, 300 / WW_TRIAL_SCALE);
  std::cout << "dynamic compositions checked: " << checked << ", refused by their assumptions: " << refused << "\n";
}

TEST(DynamicLayout, AssumptionsAreRecordedAndDecided) {
  Int m = sym(1), n = sym(2, 8);
  AssumptionScope scope;
  Layout row = make_layout(tup({IntTuple(m), IntTuple(n)}), tup({IntTuple(n), IntTuple(1)}));
  // Tiling N by 8 is decided by N's divisibility (no assumption); the rest mode of a divide rounds up.
  zipped_divide(row, Tiler::from_shape(T("(4,8)")));
  EXPECT_EQ(scope.assumptions().size(), 0u);
  // Walking 16 consecutive elements of a column-major (M,N) with its strides kept apart needs M to divide 16.
  Layout col = Layout::trusted(tup({IntTuple(m), IntTuple(n)}), tup({IntTuple(n), IntTuple(1)}));
  composition(col, L("16:1"));
  ASSERT_GT(scope.assumptions().size(), 0u);
  auto good = [](uint64_t id) -> int64_t { return id == 1 ? 16 : 64; };
  for (auto& a : scope.assumptions()) EXPECT_TRUE(a.holds(good)) << a.str() << " (" << a.what << ")";
  auto bad = [](uint64_t id) -> int64_t { return id == 1 ? 3 : 64; };
  bool any_fails = false;
  for (auto& a : scope.assumptions()) any_fails |= !a.holds(bad);
  EXPECT_TRUE(any_fails);
  // Without a scope nothing is recorded and nothing is raised.
}

}  // namespace
}  // namespace ww::test
