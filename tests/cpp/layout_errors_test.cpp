// Violated preconditions raise LayoutError (LayoutTypeError for wrong kinds) naming the operation and operands.
#include <gtest/gtest.h>

#include "layout_test_util.hpp"
#include "ww/layout/error.hpp"

namespace ww::test {
namespace {

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const LayoutError& e) {
    return e.what();
  } catch (const LayoutTypeError& e) {
    return std::string("type:") + e.what();
  }
  return "no error";
}

TEST(Errors, MalformedLayouts) {
  EXPECT_NE(error_of([] { Layout(T("(4,2)"), T("(1,2,3)")); }).find("not congruent"), std::string::npos);
  EXPECT_NE(error_of([] { Layout(T("(4,0)")); }).find("positive"), std::string::npos);
  EXPECT_NE(error_of([] { Layout(T("(4,-2)"), T("(1,4)")); }).find("positive"), std::string::npos);
}

TEST(Errors, CompositionDivisibility) {
  std::string e = error_of([] { composition(L("(3,4):(1,10)"), L("4:2")); });
  EXPECT_NE(e.find("composition((3,4):(1,10), 4:2)"), std::string::npos) << e;
  EXPECT_NE(e.find("divisibility"), std::string::npos) << e;
  e = error_of([] { composition(L("(4,6):(1,10)"), L("6:3")); });
  EXPECT_NE(e.find("divisibility"), std::string::npos) << e;
  e = error_of([] { composition(L("(4,8):(1,4)"), Tiler::tuple({Tiler(2), Tiler(2), Tiler(2)})); });
  EXPECT_NE(e.find("more modes"), std::string::npos) << e;
}

TEST(Errors, ComplementOfNonInjective) {
  std::string e = error_of([] { complement(L("(2,2):(1,1)"), IntTuple(8)); });
  EXPECT_NE(e.find("complement((2,2):(1,1), 8)"), std::string::npos) << e;
  EXPECT_NE(e.find("not injective"), std::string::npos) << e;
  EXPECT_EQ(error_of([] { complement(make_identity_layout(T("(2,2)")), IntTuple(8)); }).rfind("type:", 0), 0u);
}

TEST(Errors, ComplementCotargetMustBePositive) {
  // A cotarget below 1 names no codomain to complement into (it used to give (2,0):(1,8)).
  for (const char* c : {"-8", "0", "(2,-2)", "(4,0)"}) {
    std::string e = error_of([&] { complement(L("4:2"), T(c)); });
    EXPECT_NE(e.find("complement(4:2, "), std::string::npos) << c << ": " << e;
    EXPECT_NE(e.find("positive"), std::string::npos) << c << ": " << e;
  }
  EXPECT_NE(error_of([] { complement(L("4:0"), T("-1")); }).find("positive"), std::string::npos);
  // The empty tuple is no cotarget (it used to crash: found by the Python hostile-argument fuzz).
  for (const char* c : {"()", "(())", "(4,())"})
    EXPECT_NE(error_of([&] { complement(L("(4,4):(4,1)"), T(c)); }).find("empty tuple"), std::string::npos) << c;
}

TEST(Errors, LeftInversePreconditions) {
  // CuTe's divisibility condition: each stride a multiple of the extent its faster modes span.
  std::string e = error_of([] { left_inverse(L("(3,2):(2,3)")); });
  EXPECT_NE(e.find("left_inverse((3,2):(2,3))"), std::string::npos) << e;
  EXPECT_NE(e.find("divisibility"), std::string::npos) << e;
  e = error_of([] { left_inverse(L("(4,2):(1,-4)")); });
  EXPECT_NE(e.find("negative stride"), std::string::npos) << e;
  e = error_of([] { left_inverse(make_layout(T("(4,2)"), tup({IntTuple(1), IntTuple(Int::symbol(1))}))); });
  EXPECT_NE(e.find("static strides"), std::string::npos) << e;
}

TEST(Errors, ShapeDivAndTileToShape) {
  EXPECT_NE(error_of([] { shape_div(T("6"), T("4")); }).find("divides"), std::string::npos);
  std::string e = error_of([] { tile_to_shape(L("(3,3):(1,3)"), T("(8,8)")); });
  EXPECT_NE(e.find("tile_to_shape"), std::string::npos) << e;
  EXPECT_NE(e.find("does not divide"), std::string::npos) << e;
}

TEST(Errors, ModesAndIndices) {
  EXPECT_NE(error_of([] { L("(2,3):(1,2)")[2]; }).find("out of range"), std::string::npos);
  EXPECT_NE(error_of([] { group_modes(L("(2,3):(1,2)"), 1, 5); }).find("group_modes"), std::string::npos);
  EXPECT_NE(error_of([] { L("(2,3):(1,2)")(T("(1,2,3)")); }).find("does not match"), std::string::npos);
  EXPECT_NE(error_of([] { make_ordered_layout(T("(2,3)"), T("(1,2,3)")); }).find("order"), std::string::npos);
}

TEST(Errors, SwizzleParameters) {
  EXPECT_NE(error_of([] { Swizzle(3, 4, 2); }).find("make_swizzle(3, 4, 2)"), std::string::npos);
  EXPECT_NE(error_of([] { Swizzle(-1, 4, 2); }).find("make_swizzle"), std::string::npos);
}

TEST(Errors, Overflow) {
  EXPECT_NE(error_of([] { make_layout(T("(4294967296,4294967296,4)")).size(); }).find("overflow"), std::string::npos);
  EXPECT_NE(error_of([] { recast_layout(0, 16, L("4:1")); }).find("positive"), std::string::npos);
}

}  // namespace
}  // namespace ww::test
