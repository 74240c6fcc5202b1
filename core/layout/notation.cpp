// Recursive-descent reader of CuTe's layout notation. Errors name the column.
#include "ww/layout/notation.hpp"

#include <cctype>
#include <limits>

#include "ww/layout/error.hpp"

namespace ww {
namespace {

constexpr int kMaxDepth = 64;

class Reader {
 public:
  Reader(std::string_view text, const char* what) : s_(text), what_(what) {}

  [[noreturn]] void fail(const std::string& msg) const {
    throw LayoutError(std::string(what_) + ": " + msg + " at column " + std::to_string(pos_ + 1) + " of '" +
                      std::string(s_) + "'");
  }
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool peek(char c) {
    skip();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  bool eat(char c) {
    if (!peek(c)) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  bool at_end() {
    skip();
    return pos_ == s_.size();
  }
  // The word "o" separating the parts of a composed layout.
  bool eat_compose() {
    skip();
    if (pos_ < s_.size() && s_[pos_] == 'o' && (pos_ + 1 == s_.size() || !std::isalnum(static_cast<unsigned char>(s_[pos_ + 1])))) {
      ++pos_;
      return true;
    }
    return false;
  }
  // CuTe DSL prints a swizzle `S<3,4,3>`, CuTe C++ `Sw<3,4,3>`: both read back. Returns the prefix's length.
  size_t at_swizzle() {
    skip();
    if (s_.compare(pos_, 3, "Sw<") == 0) return 3;
    return s_.compare(pos_, 2, "S<") == 0 ? 2 : 0;
  }

  int64_t integer() {
    skip();
    bool neg = false;
    if (pos_ < s_.size() && s_[pos_] == '-') {
      neg = true;
      ++pos_;
    }
    if (pos_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      if (pos_ < s_.size() && s_[pos_] == '?') fail("a dynamic value '?' has no static reading");
      fail("expected an integer");
    }
    uint64_t v = 0;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      v = v * 10 + static_cast<uint64_t>(s_[pos_] - '0');
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) fail("integer too large");
      ++pos_;
    }
    return neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  }

  IntTuple leaf() {
    skip();
    if (pos_ < s_.size() && s_[pos_] == '_') ++pos_;  // CuTe C++ prints static integers as _4
    int64_t v = integer();
    std::vector<int> path;
    while (eat('@')) {
      int64_t i = integer();
      if (i < 0 || i > 255) fail("basis index out of range");
      path.push_back(static_cast<int>(i));
      if (path.size() > 7) fail("basis path deeper than 7 levels");
    }
    if (path.empty()) return IntTuple(v);
    return IntTuple::scaled_basis(v, Basis::path(path));
  }

  IntTuple int_tuple(int depth = 0) {
    if (depth > kMaxDepth) fail("nesting deeper than 64 levels");
    if (!eat('(')) return leaf();
    std::vector<IntTuple> c;
    if (!eat(')')) {
      do {
        c.push_back(int_tuple(depth + 1));
      } while (eat(','));
      expect(')');
    }
    return IntTuple::tuple(std::move(c));
  }

  Layout layout() {
    IntTuple shape = int_tuple();
    if (!eat(':')) return Layout(shape);
    IntTuple stride = int_tuple();
    return Layout(shape, stride);
  }

  Swizzle swizzle() {
    skip();
    size_t prefix = at_swizzle();
    if (!prefix) fail("expected 'S<' (a swizzle)");
    pos_ += prefix;
    int64_t b = integer();
    expect(',');
    int64_t m = integer();
    expect(',');
    int64_t sh = integer();
    expect('>');
    auto small = [&](int64_t v) {
      if (v < -64 || v > 64) fail("swizzle parameter out of range");
      return static_cast<int>(v);
    };
    return Swizzle(small(b), small(m), small(sh));
  }

  std::variant<Layout, ComposedLayout> any_layout(int depth = 0) {
    if (depth > kMaxDepth) fail("composition deeper than 64 levels");
    if (at_swizzle()) {
      Swizzle sw = swizzle();
      if (!eat_compose()) fail("expected 'o' after the swizzle");
      return composed(sw, depth);
    }
    Layout l = layout();
    if (!eat_compose()) return l;
    return composed(l, depth);
  }

  ComposedLayout composed(ComposedLayout::Inner inner, int depth) {
    IntTuple offset = int_tuple();
    if (!eat_compose()) fail("expected 'o' after the offset");
    auto rest = any_layout(depth + 1);
    if (auto* l = std::get_if<Layout>(&rest)) return ComposedLayout(std::move(inner), offset, *l);
    fail("the outer part of a composed layout must be a plain layout");
  }

  void finish() {
    if (!at_end()) fail("unexpected text");
  }

 private:
  std::string_view s_;
  const char* what_;
  size_t pos_ = 0;
};

}  // namespace

IntTuple parse_int_tuple(std::string_view text) {
  Reader r(text, "parse_int_tuple");
  IntTuple t = r.int_tuple();
  r.finish();
  return t;
}

Layout parse_layout(std::string_view text) {
  Reader r(text, "parse_layout");
  try {
    Layout l = r.layout();
    r.finish();
    return l;
  } catch (const LayoutError& e) {
    std::string m = e.what();
    if (m.rfind("parse_layout", 0) == 0) throw;
    throw LayoutError("parse_layout: '" + std::string(text) + "': " + m);
  }
}

std::variant<Layout, ComposedLayout> parse_any_layout(std::string_view text) {
  Reader r(text, "parse_layout");
  try {
    auto l = r.any_layout();
    r.finish();
    return l;
  } catch (const LayoutError& e) {
    std::string m = e.what();
    if (m.rfind("parse_layout", 0) == 0) throw;
    throw LayoutError("parse_layout: '" + std::string(text) + "': " + m);
  }
}

Swizzle parse_swizzle(std::string_view text) {
  Reader r(text, "parse_swizzle");
  Swizzle s = r.swizzle();
  r.finish();
  return s;
}

}  // namespace ww
