#pragma once
// The expression language of atom families (manifest.proto, message Family): what a constraint, a derived value,
// an operand's `when` or a templated field's {expr} is written in. Private to the plugin host.
//
//   expr    := cond ('?' expr ':' expr)?
//   cond    := and ('||' and)*          and := cmp ('&&' cmp)*
//   cmp     := sum (('=='|'!='|'<'|'<='|'>'|'>=') sum)?
//   sum     := product (('+'|'-') product)*     ('+' of two strings concatenates)
//   product := unary (('*'|'/'|'%') unary)*     unary := ('-'|'!') unary | primary
//   primary := integer | 'string' | "string" | name | name '(' expr (',' expr)* ')' | '(' expr ')'
//
// Values are 64-bit integers (truth: non-zero) or strings. Functions: bits(t) and dsl(t) (the element type table),
// upper(s), lower(s), str(x), replace(s, from, to), min(a, b), max(a, b), one_of(x, a, b, ...),
// seq(first, count[, prefix[, sep]]) ("$0, $1" is seq(0, 2, '$', ', '); sep defaults to ','),
// repeat(s, count[, sep]), join(sep, a, b, ...) (leaves out empty parts).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ww::plugins {

class FamilyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Value {
  bool is_int = true;
  int64_t i = 0;
  std::string s;

  static Value of(int64_t v) { return Value{true, v, {}}; }
  static Value of(std::string v) { return Value{false, 0, std::move(v)}; }
  std::string text() const { return is_int ? std::to_string(i) : s; }
  bool truth() const { return is_int ? i != 0 : !s.empty(); }
  bool operator==(const Value& o) const { return is_int == o.is_int && (is_int ? i == o.i : s == o.s); }
};

// One entry of a manifest's element type table.
struct ElementInfo {
  std::string name;
  int64_t bits = 0;
  std::string dsl_name;
};

// What an expression can see: named values, and the element type table.
struct Scope {
  std::function<const Value*(const std::string&)> lookup;
  const std::vector<ElementInfo>* types = nullptr;
};

class Expression {
 public:
  // Throws FamilyError naming the position and what was expected.
  static Expression parse(const std::string& text);

  Value eval(const Scope& scope) const;
  const std::string& text() const { return text_; }
  // The names it reads (not the functions it calls), in order of first use.
  std::vector<std::string> names() const;
  // A bare name ("n"): its name, else "".
  std::string bare_name() const;
  // A call f(x) of one bare name x: {f, x}, else {"", ""}.
  std::pair<std::string, std::string> call_of_name() const;

  struct Node;

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;
};

// A templated string split into literal text and {expr} parts. `known(name)` says whether a bare {name} is one
// the family defines (others, such as PTX attributes, stay literal).
struct TemplateText {
  struct Part {
    std::string literal;             // when expr is empty
    std::optional<Expression> expr;
  };
  std::vector<Part> parts;
  bool has_expressions() const;

  static TemplateText parse(const std::string& text, const std::function<bool(const std::string&)>& known);
  std::string expand(const Scope& scope) const;
};

}  // namespace ww::plugins
