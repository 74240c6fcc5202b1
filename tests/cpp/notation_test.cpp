// CuTe's notation: printing and reading back, and clear errors on malformed text.
#include <gtest/gtest.h>

#include "layout_test_util.hpp"
#include "ww/layout/error.hpp"

namespace ww::test {
namespace {

TEST(Notation, PrintsCuTeNotation) {
  EXPECT_EQ(L("((2,2),3):((24,2),8)").str(), "((2,2),3):((24,2),8)");
  EXPECT_EQ(L(" ( 4 , ( 2 , 3 ) ) : ( 1 , ( 4 , 8 ) ) ").str(), "(4,(2,3)):(1,(4,8))");
  EXPECT_EQ(L("(_4,_8):(_1,_4)").str(), "(4,8):(1,4)");  // CuTe C++ static marks
  EXPECT_EQ(L("(4,8)").str(), "(4,8):(1,4)");            // a bare shape is column-major
  EXPECT_EQ(L("(2,3):(1@0,1@1)").str(), "(2,3):(1@0,1@1)");
  EXPECT_EQ(L("4:-1").str(), "4:-1");
}

TEST(Notation, ComposedLayouts) {
  auto any = parse_any_layout("Sw<3,4,3> o 0 o (8,64):(64,1)");
  ASSERT_TRUE(std::holds_alternative<ComposedLayout>(any));
  const auto& c = std::get<ComposedLayout>(any);
  // Printed as CuTe DSL prints it; both spellings read back to the same layout.
  EXPECT_EQ(c.str(), "S<3,4,3> o 0 o (8,64):(64,1)");
  EXPECT_TRUE(std::get<ComposedLayout>(parse_any_layout(c.str())).same(c));
  EXPECT_EQ(c(IntTuple(1)).value().value(), Swizzle(3, 4, 3)(64));
  auto lay = parse_any_layout("4:2 o 1 o 4:1");
  EXPECT_EQ(std::get<ComposedLayout>(lay)(IntTuple(2)).value().value(), 6);
}

TEST(Notation, MalformedTextNamesTheColumn) {
  for (const char* bad : {"(4,2", "(4,2):(1,2", "4:", "(4,,2):(1,2)", "(a,2)", "(4,2):(1,2) junk", "", "?:1",
                          "Sw<3,4> o 0 o 4:1", "Sw<3,4,3>", "Sw<3,4,3> o 0", "S<3,4,3>", "S<3,4> o 0 o 4:1", "99999999999999999999:1", "(4,2):(1,(2,3))",
                          "1@999:1"}) {
    try {
      parse_any_layout(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const LayoutError& e) {
      EXPECT_NE(std::string(e.what()).find("parse_layout"), std::string::npos) << e.what();
    }
  }
  try {
    parse_layout("(4,2):(1 2)");
  } catch (const LayoutError& e) {
    EXPECT_NE(std::string(e.what()).find("column 10"), std::string::npos) << e.what();
  }
}

TEST(Notation, DeepNestingIsRefusedNotOverflowed) {
  std::string deep(10000, '(');
  EXPECT_THROW(parse_layout(deep), LayoutError);
}

}  // namespace
}  // namespace ww::test
