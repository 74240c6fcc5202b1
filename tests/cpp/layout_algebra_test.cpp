// Fixed cases of the layout algebra: CuTe's documented worked examples and hand-derived results.
#include <gtest/gtest.h>

#include "layout_test_util.hpp"

namespace ww::test {
namespace {

void expect_layout(const Layout& got, const char* want) { EXPECT_EQ(got.str(), want); }

TEST(LayoutBasics, MakeLayoutDefaultsToColumnMajor) {
  expect_layout(make_layout(T("(4,(2,3))")), "(4,(2,3)):(1,(4,8))");
  // Extent-1 modes get stride 0, as in CuTe.
  expect_layout(make_layout(T("(4,1,2)")), "(4,1,2):(1,0,4)");
  expect_layout(make_layout(T("8")), "8:1");
}

TEST(LayoutBasics, SizeCosizeRankDepth) {
  Layout l = L("((2,2),3):((24,2),8)");
  EXPECT_EQ(l.size().value(), 12);
  EXPECT_EQ(l.cosize().value().value(), 24 + 2 + 16 + 1);
  EXPECT_EQ(l.rank(), 2);
  EXPECT_EQ(l.depth(), 2);
  EXPECT_EQ(L("8:1").rank(), 1);
  EXPECT_EQ(L("8:1").depth(), 0);
}

TEST(LayoutBasics, EvaluationByIndexAndCoordinate) {
  Layout l = L("(4,(2,3)):(1,(4,8))");
  EXPECT_EQ(at(l, 5), 5);
  EXPECT_EQ(l(T("(1,(1,2))")).value().value(), 1 + 4 + 16);
  EXPECT_EQ(l(T("(3,5)")).value().value(), 3 + 4 + 16);  // (3,(1,2)) by colexicographic order in mode 1
  // The last mode takes any overflow of a 1-D index (CuTe's function past the domain).
  EXPECT_EQ(at(L("(2,3):(1,10)"), 8), 40);
}

TEST(LayoutBasics, Crd2IdxIdx2Crd) {
  EXPECT_EQ(crd2idx(T("(1,2)"), T("(4,8)"), T("(8,1)")).str(), "10");
  EXPECT_EQ(idx2crd(IntTuple(13), T("(4,(2,3))")).str(), "(1,(1,1))");
  EXPECT_EQ(idx2crd(IntTuple(30), T("(4,2)")).str(), "(2,7)");  // last mode unbounded
}

TEST(LayoutBasics, IdentityLayoutMapsCoordinatesToThemselves) {
  Layout id = make_identity_layout(T("(4,(2,3))"));
  EXPECT_EQ(id.str(), "(4,(2,3)):(1@0,(1@1@0,1@1@1))");
  EXPECT_EQ(id(IntTuple(13)).str(), "(1,(1,1))");
  Layout id2 = make_identity_layout(T("(4,8)"));
  EXPECT_EQ(id2(T("(3,5)")).str(), "(3,5)");
  // Composition keeps coordinates: tiles of the identity give global coordinates.
  Layout tile = composition(id2, Tiler::from_shape(T("(2,4)")));
  EXPECT_EQ(tile.str(), "(2,4):(1@0,1@1)");
}

TEST(LayoutBasics, ModeManipulation) {
  Layout l = L("(2,3,4):(1,2,6)");
  int m1[] = {1};
  EXPECT_EQ(get(l, m1).str(), "3:2");
  int sel[] = {2, 0};
  EXPECT_EQ(select(l, sel).str(), "(4,2):(6,1)");
  EXPECT_EQ(group_modes(l, 0, 2).str(), "((2,3),4):((1,2),6)");
  EXPECT_EQ(flatten(L("((2,3),(4,5)):((1,2),(6,24))")).str(), "(2,3,4,5):(1,2,6,24)");
  EXPECT_EQ(append(L("4:1"), L("2:4")).str(), "(4,2):(1,4)");
  EXPECT_EQ(prepend(L("4:1"), L("2:4")).str(), "(2,4):(4,1)");
  EXPECT_EQ(append(L("4:1"), 3).str(), "(4,1,1):(1,0,0)");
}

TEST(LayoutBasics, OrderedLayout) {
  EXPECT_EQ(make_ordered_layout(T("(4,8)"), T("(1,0)")).str(), "(4,8):(8,1)");
  EXPECT_EQ(make_ordered_layout(T("(2,3,4)"), T("(2,0,1)")).str(), "(2,3,4):(12,1,3)");
}

TEST(Coalesce, DocumentedExamples) {
  Layout a = L("(2,(1,6)):(1,(6,2))");
  expect_layout(coalesce(a), "12:1");
  expect_layout(coalesce(a, T("(1,1)")), "(2,6):(1,2)");
  expect_layout(coalesce(L("(2,4):(1,2)")), "8:1");
  expect_layout(coalesce(L("(4,1):(1,0)")), "4:1");
  expect_layout(coalesce(L("(1,1):(3,5)")), "1:0");
  expect_layout(coalesce(L("(2,4):(4,1)")), "(2,4):(4,1)");
}

TEST(Coalesce, Filter) {
  expect_layout(filter_zeros(L("(4,2):(1,0)")), "(4,1):(1,0)");
  expect_layout(filter(L("(4,2,3):(1,0,4)")), "12:1");
  expect_layout(filter(L("(2,2):(0,0)")), "1:0");
}

TEST(Composition, DocumentedExamples) {
  expect_layout(composition(L("(6,2):(8,2)"), L("(4,3):(3,1)")), "((2,2),3):((24,2),8)");
  expect_layout(composition(L("20:2"), L("(5,4):(4,1)")), "(5,4):(8,2)");
  expect_layout(composition(L("(10,2):(16,4)"), L("(5,4):(1,5)")), "(5,(2,2)):(16,(80,4))");
  // By-mode with a tiler of layouts and with a shape.
  Layout a = L("(12,(4,8)):(59,(13,1))");
  expect_layout(composition(a, Tiler::tuple({L("3:4"), L("8:2")})), "(3,(2,4)):(236,(26,1))");
  expect_layout(composition(a, Tiler::from_shape(T("(3,8)"))), "(3,(4,2)):(59,(13,1))");
  // Modes of `a` beyond the tiler are dropped; `_` keeps a mode.
  expect_layout(composition(L("(4,8,2):(1,4,32)"), Tiler::tuple({Tiler(2)})), "(2):(1)");
  expect_layout(composition(L("(4,8):(1,4)"), Tiler::tuple({Tiler::underscore(), Tiler(2)})), "(4,2):(1,4)");
}

TEST(Composition, StrideZeroAndTrivial) {
  expect_layout(composition(L("4:1"), L("4:0")), "4:0");
  expect_layout(composition(L("1:0"), L("1:0")), "1:0");
  expect_layout(composition(L("4:2"), L("2:2")), "2:4");
}

TEST(Complement, DocumentedExamples) {
  expect_layout(complement(L("4:1"), IntTuple(24)), "6:4");
  expect_layout(complement(L("6:4"), IntTuple(24)), "4:1");
  expect_layout(complement(L("(4,6):(1,4)"), IntTuple(24)), "1:0");
  expect_layout(complement(L("4:2"), IntTuple(24)), "(2,3):(1,8)");
  expect_layout(complement(L("(2,4):(1,6)"), IntTuple(24)), "3:2");
  expect_layout(complement(L("(2,2):(1,6)"), IntTuple(24)), "(3,2):(2,12)");
  expect_layout(complement(L("4:2")), "2:1");
}

TEST(Inverse, RightAndLeft) {
  expect_layout(right_inverse(L("(4,8):(8,1)")), "(8,4):(4,1)");
  expect_layout(right_inverse(L("(2,4):(2,8)")), "1:0");
  expect_layout(right_inverse(L("(4,2):(1,8)")), "4:1");
  expect_layout(left_inverse(L("4:2")), "(2,4):(0,1)");
  expect_layout(left_inverse(L("(4,8):(8,1)")), "(8,4):(4,1)");
}

TEST(Divide, DocumentedExamples) {
  expect_layout(logical_divide(L("(4,2,3):(2,1,8)"), L("4:2")), "((2,2),(2,3)):((4,1),(2,8))");
  Layout a = L("(9,(4,8)):(59,(13,1))");
  Tiler t = Tiler::tuple({L("3:3"), L("(2,4):(1,8)")});
  Layout ld = logical_divide(a, t);
  EXPECT_EQ(product_each(ld.shape()).str(), "(9,32)");
  EXPECT_EQ(ld[0].shape().str(), "(3,3)");
  Layout zd = zipped_divide(a, t);
  EXPECT_EQ(product_each(zd.shape()).str(), "(24,12)");
  // The tile mode of zipped_divide is the composition.
  Layout tile = zd[0];
  Layout comp = composition(a, t);
  EXPECT_EQ(coalesce(tile).str(), coalesce(comp).str());
  EXPECT_EQ(comp.str(), "(3,(2,4)):(177,(13,2))");
  EXPECT_EQ(tiled_divide(a, t).rank(), 3);
  EXPECT_EQ(flat_divide(a, t).rank(), 4);
}

TEST(Divide, ZippedDivideOfRowMajorMatrix) {
  // A 16x64 row-major matrix in tiles of 4x8: ((4,8),(4,8)).
  Layout m = L("(16,64):(64,1)");
  expect_layout(zipped_divide(m, Tiler::from_shape(T("(4,8)"))), "((4,8),(4,8)):((64,1),(256,8))");
  expect_layout(tiled_divide(m, Tiler::from_shape(T("(4,8)"))), "((4,8),4,8):((64,1),256,8)");
  expect_layout(flat_divide(m, Tiler::from_shape(T("(4,8)"))), "(4,8,4,8):(64,1,256,8)");
}

TEST(Product, DocumentedExamples) {
  expect_layout(logical_product(L("(2,2):(4,1)"), L("6:1")), "((2,2),(2,3)):((4,1),(2,8))");
  expect_layout(blocked_product(L("(2,5):(5,1)"), L("(3,4):(1,3)")), "((2,3),(5,4)):((5,10),(1,30))");
  expect_layout(raked_product(L("(2,5):(5,1)"), L("(3,4):(1,3)")), "((3,2),(4,5)):((10,5),(30,1))");
  EXPECT_EQ(zipped_product(L("(2,5):(5,1)"), Tiler::from_shape(T("(3,4)"))).str(), "((2,5),(3,4)):((5,1),(1,5))");
  EXPECT_EQ(tiled_product(L("(2,5):(5,1)"), Tiler::from_shape(T("(3,4)"))).rank(), 3);
  EXPECT_EQ(flat_product(L("(2,5):(5,1)"), Tiler::from_shape(T("(3,4)"))).rank(), 4);
}

TEST(Product, TileToShape) {
  expect_layout(tile_to_shape(L("(8,8):(8,1)"), T("(32,16)")), "((8,4),(8,2)):((8,64),(1,256))");
  expect_layout(tile_to_shape(L("(8,8):(8,1)"), T("(32,16)"), T("(1,0)")), "((8,4),(8,2)):((8,128),(1,64))");
}

TEST(LayoutTV, ThreadValueLayout) {
  // 4x32 threads, each with 4 contiguous values along N of a row-major thread layout (the elementwise pattern).
  auto [tiler, tv] = make_layout_tv(L("(4,32):(32,1)"), L("(1,4):(4,1)"));
  EXPECT_EQ(tiler.str(), "(4,128)");
  EXPECT_EQ(tv.size().value(), 512);
  // Thread t, value v sits at column 4*(t%32)+v of row t/32 in the column-major (4,128) tile.
  for (int t = 0; t < 128; ++t)
    for (int v = 0; v < 4; ++v) {
      int64_t pos = tv(tup({IntTuple(t), IntTuple(v)})).value().value();
      EXPECT_EQ(pos, (t / 32) + 4 * (4 * (t % 32) + v));
    }
}

TEST(CommonVector, MaxCommonVectorAndLayout) {
  EXPECT_EQ(max_common_vector(L("(4,8):(1,4)"), L("(4,8):(1,4)")).value(), 32);
  EXPECT_EQ(max_common_vector(L("(4,8):(1,4)"), L("(4,8):(8,1)")).value(), 1);
  EXPECT_EQ(max_common_vector(L("(4,8):(8,1)"), L("(4,8):(8,1)")).value(), 32);
  EXPECT_EQ(max_common_vector(L("(8,4):(1,16)"), L("(8,4):(1,8)")).value(), 8);
  expect_layout(max_common_layout(L("(8,4):(1,16)"), L("(8,4):(1,8)")), "8:1");
}

TEST(Recast, Widths) {
  expect_layout(recast_layout(32, 16, L("(8,4):(1,8)")), "(4,4):(1,4)");
  expect_layout(recast_layout(16, 32, L("(4,4):(1,4)")), "(8,4):(1,8)");
  expect_layout(recast_layout(8, 8, L("(4,4):(1,4)")), "(4,4):(1,4)");
  expect_layout(upcast(L("(4,8):(8,1)"), 4), "(4,2):(2,1)");
}

TEST(CeilDiv, TargetByTiler) {
  EXPECT_EQ(ceil_div(T("(1000,1003)"), Tiler::from_shape(T("(4,128)"))).str(), "(250,8)");
  EXPECT_EQ(ceil_div(T("10"), Tiler(4)).str(), "3");
}

}  // namespace
}  // namespace ww::test
