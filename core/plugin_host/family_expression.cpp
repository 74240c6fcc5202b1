// The expression language of atom families: a recursive-descent parser into a small tree, and its evaluator.
#include "family_expression.hpp"

#include <algorithm>
#include <cctype>

namespace ww::plugins {

struct Expression::Node {
  enum Op { INT, STR, NAME, CALL, UNARY, BINARY, TERNARY } op = INT;
  Value value;          // INT, STR
  std::string name;     // NAME, CALL (function), UNARY/BINARY (operator)
  std::vector<std::shared_ptr<const Node>> kids;
};

namespace {

using NodeP = std::shared_ptr<const Expression::Node>;
using Node = Expression::Node;

class Parser {
 public:
  explicit Parser(const std::string& t) : t_(t) {}

  NodeP whole() {
    NodeP n = expr();
    skip();
    if (p_ != t_.size()) fail("unexpected '" + std::string(1, t_[p_]) + "'");
    return n;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw FamilyError("expression \"" + t_ + "\", at " + std::to_string(p_ + 1) + ": " + what);
  }
  void skip() {
    while (p_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[p_]))) ++p_;
  }
  bool eat(const char* tok) {
    skip();
    size_t n = std::char_traits<char>::length(tok);
    if (t_.compare(p_, n, tok) != 0) return false;
    // '<' must not swallow the first half of '<=', '!' of '!=', '=' is never alone.
    if (n == 1 && p_ + 1 < t_.size() && t_[p_ + 1] == '=' && (tok[0] == '<' || tok[0] == '>' || tok[0] == '!'))
      return false;
    p_ += n;
    return true;
  }
  static NodeP make(Node::Op op, std::string name, std::vector<NodeP> kids) {
    auto n = std::make_shared<Node>();
    n->op = op;
    n->name = std::move(name);
    n->kids = std::move(kids);
    return n;
  }

  NodeP expr() {
    NodeP c = disjunction();
    if (eat("?")) {
      NodeP a = expr();
      if (!eat(":")) fail("expected ':' of a conditional");
      NodeP b = expr();
      return make(Node::TERNARY, "?", {c, a, b});
    }
    return c;
  }
  NodeP disjunction() {
    NodeP l = conjunction();
    while (eat("||")) l = make(Node::BINARY, "||", {l, conjunction()});
    return l;
  }
  NodeP conjunction() {
    NodeP l = comparison();
    while (eat("&&")) l = make(Node::BINARY, "&&", {l, comparison()});
    return l;
  }
  NodeP comparison() {
    NodeP l = sum();
    for (const char* op : {"==", "!=", "<=", ">=", "<", ">"})
      if (eat(op)) return make(Node::BINARY, op, {l, sum()});
    return l;
  }
  NodeP sum() {
    NodeP l = product();
    for (;;) {
      if (eat("+")) l = make(Node::BINARY, "+", {l, product()});
      else if (eat("-")) l = make(Node::BINARY, "-", {l, product()});
      else return l;
    }
  }
  NodeP product() {
    NodeP l = unary();
    for (;;) {
      if (eat("*")) l = make(Node::BINARY, "*", {l, unary()});
      else if (eat("/")) l = make(Node::BINARY, "/", {l, unary()});
      else if (eat("%")) l = make(Node::BINARY, "%", {l, unary()});
      else return l;
    }
  }
  NodeP unary() {
    if (eat("-")) return make(Node::UNARY, "-", {unary()});
    if (eat("!")) return make(Node::UNARY, "!", {unary()});
    return primary();
  }
  NodeP primary() {
    skip();
    if (p_ >= t_.size()) fail("expected a value");
    char c = t_[p_];
    if (c == '(') {
      ++p_;
      NodeP n = expr();
      if (!eat(")")) fail("expected ')'");
      return n;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t start = p_;
      int64_t v = 0;
      while (p_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[p_]))) {
        // A manifest is untrusted text: a literal past 64 bits is refused, not wrapped into another value.
        if (__builtin_mul_overflow(v, int64_t{10}, &v) || __builtin_add_overflow(v, int64_t{t_[p_] - '0'}, &v)) {
          p_ = start;
          fail("the integer " + digits(start) + " does not fit in 64 bits");
        }
        ++p_;
      }
      auto n = std::make_shared<Node>();
      n->op = Node::INT;
      n->value = Value::of(v);
      return n;
    }
    if (c == '\'' || c == '"') {
      size_t end = t_.find(c, p_ + 1);
      if (end == std::string::npos) fail("unterminated string");
      auto n = std::make_shared<Node>();
      n->op = Node::STR;
      n->value = Value::of(t_.substr(p_ + 1, end - p_ - 1));
      p_ = end + 1;
      return n;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t s = p_;
      while (p_ < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[p_])) || t_[p_] == '_')) ++p_;
      std::string name = t_.substr(s, p_ - s);
      if (eat("(")) {
        std::vector<NodeP> args;
        if (!eat(")")) {
          do args.push_back(expr());
          while (eat(","));
          if (!eat(")")) fail("expected ')' closing the arguments of " + name);
        }
        return make(Node::CALL, name, std::move(args));
      }
      return make(Node::NAME, name, {});
    }
    fail("unexpected '" + std::string(1, c) + "'");
  }

  std::string digits(size_t from) const {
    size_t end = from;
    while (end < t_.size() && std::isdigit(static_cast<unsigned char>(t_[end]))) ++end;
    return t_.substr(from, end - from);
  }

  const std::string& t_;
  size_t p_ = 0;
};

// Integer arithmetic on manifest values is checked: a wrapped result would be some other legal-looking number
// (an extent, a register count) in an expanded instance.
int64_t checked(const char* op, int64_t x, int64_t y) {
  int64_t r = 0;
  bool over = false;
  switch (op[0]) {
    case '+': over = __builtin_add_overflow(x, y, &r); break;
    case '-': over = __builtin_sub_overflow(x, y, &r); break;
    case '*': over = __builtin_mul_overflow(x, y, &r); break;
    case '/':
    case '%':
      if (y == 0) throw FamilyError("division by zero");
      // INT64_MIN / -1 is the one quotient that does not fit (and INT64_MIN % -1 traps on x86 alike).
      over = x == INT64_MIN && y == -1;
      if (!over) r = op[0] == '/' ? x / y : x % y;
      break;
  }
  if (over)
    throw FamilyError(std::to_string(x) + " " + op + " " + std::to_string(y) + " overflows a 64-bit integer");
  return r;
}

int64_t as_int(const Value& v, const std::string& what) {
  if (!v.is_int) throw FamilyError(what + ": expected an integer, got '" + v.s + "'");
  return v.i;
}

const ElementInfo& element(const Scope& sc, const Value& v, const std::string& fn) {
  if (sc.types)
    for (auto& e : *sc.types)
      if (e.name == v.text()) return e;
  throw FamilyError(fn + "(" + v.text() + "): " + v.text() + " is not in the manifest's element_types");
}

Value call(const Node& n, const std::vector<Value>& a, const Scope& sc) {
  const std::string& f = n.name;
  auto want = [&](size_t lo, size_t hi) {
    if (a.size() < lo || a.size() > hi)
      throw FamilyError(f + "() takes " + (lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi)) +
                        " arguments, not " + std::to_string(a.size()));
  };
  if (f == "bits") return want(1, 1), Value::of(element(sc, a[0], f).bits);
  if (f == "dsl") return want(1, 1), Value::of(element(sc, a[0], f).dsl_name);
  if (f == "upper" || f == "lower") {
    want(1, 1);
    std::string s = a[0].text();
    for (auto& c : s) c = static_cast<char>(f == "upper" ? std::toupper(static_cast<unsigned char>(c))
                                                         : std::tolower(static_cast<unsigned char>(c)));
    return Value::of(s);
  }
  if (f == "str") return want(1, 1), Value::of(a[0].text());
  if (f == "replace") {
    want(3, 3);
    std::string s = a[0].text(), from = a[1].text(), to = a[2].text();
    if (from.empty()) return Value::of(s);
    for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
    return Value::of(s);
  }
  if (f == "min" || f == "max") {
    want(2, 2);
    int64_t x = as_int(a[0], f), y = as_int(a[1], f);
    return Value::of(f == "min" ? std::min(x, y) : std::max(x, y));
  }
  if (f == "one_of") {
    want(2, 64);
    for (size_t i = 1; i < a.size(); ++i)
      if (a[i] == a[0]) return Value::of(1);
    return Value::of(0);
  }
  if (f == "seq") {
    want(2, 4);
    int64_t first = as_int(a[0], f), count = as_int(a[1], f);
    if (count < 0 || count > 4096) throw FamilyError("seq(): count " + std::to_string(count) + " is out of 0..4096");
    if (count > 0) checked("+", first, count - 1);  // the last number written
    std::string prefix = a.size() > 2 ? a[2].text() : "", sep = a.size() > 3 ? a[3].text() : ",", out;
    for (int64_t i = 0; i < count; ++i) out += (i ? sep : "") + prefix + std::to_string(first + i);
    return Value::of(out);
  }
  if (f == "repeat") {
    want(2, 3);
    int64_t count = as_int(a[1], f);
    if (count < 0 || count > 4096) throw FamilyError("repeat(): count " + std::to_string(count) + " is out of 0..4096");
    std::string sep = a.size() > 2 ? a[2].text() : ",", out;
    for (int64_t i = 0; i < count; ++i) out += (i ? sep : "") + a[0].text();
    return Value::of(out);
  }
  if (f == "join") {
    want(1, 64);
    std::string out;
    bool first = true;
    for (size_t i = 1; i < a.size(); ++i) {
      std::string s = a[i].text();
      if (s.empty()) continue;
      out += (first ? "" : a[0].text()) + s;
      first = false;
    }
    return Value::of(out);
  }
  throw FamilyError("unknown function " + f + "()");
}

Value eval_node(const Node& n, const Scope& sc) {
  switch (n.op) {
    case Node::INT:
    case Node::STR:
      return n.value;
    case Node::NAME: {
      const Value* v = sc.lookup ? sc.lookup(n.name) : nullptr;
      if (!v) throw FamilyError("unknown name " + n.name);
      return *v;
    }
    case Node::CALL: {
      std::vector<Value> args;
      for (auto& k : n.kids) args.push_back(eval_node(*k, sc));
      return call(n, args, sc);
    }
    case Node::UNARY: {
      Value v = eval_node(*n.kids[0], sc);
      if (n.name == "!") return Value::of(v.truth() ? 0 : 1);
      int64_t x = as_int(v, "unary -");
      if (x == INT64_MIN) throw FamilyError("-(" + std::to_string(x) + ") overflows a 64-bit integer");
      return Value::of(-x);
    }
    case Node::TERNARY:
      return eval_node(*n.kids[0], sc).truth() ? eval_node(*n.kids[1], sc) : eval_node(*n.kids[2], sc);
    case Node::BINARY: {
      const std::string& op = n.name;
      if (op == "&&") return Value::of(eval_node(*n.kids[0], sc).truth() && eval_node(*n.kids[1], sc).truth());
      if (op == "||") return Value::of(eval_node(*n.kids[0], sc).truth() || eval_node(*n.kids[1], sc).truth());
      Value l = eval_node(*n.kids[0], sc), r = eval_node(*n.kids[1], sc);
      if (op == "==") return Value::of(l == r ? 1 : 0);
      if (op == "!=") return Value::of(l == r ? 0 : 1);
      if (op == "+" && (!l.is_int || !r.is_int)) return Value::of(l.text() + r.text());
      int64_t x = as_int(l, "operator " + op), y = as_int(r, "operator " + op);
      if (op == "+" || op == "-" || op == "*" || op == "/" || op == "%") return Value::of(checked(op.c_str(), x, y));
      if (op == "<") return Value::of(x < y);
      if (op == "<=") return Value::of(x <= y);
      if (op == ">") return Value::of(x > y);
      if (op == ">=") return Value::of(x >= y);
      throw FamilyError("unknown operator " + op);
    }
  }
  throw FamilyError("bad expression");
}

void collect_names(const Node& n, std::vector<std::string>& out) {
  if (n.op == Node::NAME && std::find(out.begin(), out.end(), n.name) == out.end()) out.push_back(n.name);
  for (auto& k : n.kids) collect_names(*k, out);
}

}  // namespace

Expression Expression::parse(const std::string& text) {
  Expression e;
  e.text_ = text;
  e.root_ = Parser(text).whole();
  return e;
}

Value Expression::eval(const Scope& scope) const {
  try {
    return eval_node(*root_, scope);
  } catch (const FamilyError& err) {
    throw FamilyError("{" + text_ + "}: " + err.what());
  }
}

std::vector<std::string> Expression::names() const {
  std::vector<std::string> out;
  collect_names(*root_, out);
  return out;
}

std::string Expression::bare_name() const { return root_->op == Node::NAME ? root_->name : ""; }

std::pair<std::string, std::string> Expression::call_of_name() const {
  if (root_->op == Node::CALL && root_->kids.size() == 1 && root_->kids[0]->op == Node::NAME)
    return {root_->name, root_->kids[0]->name};
  return {"", ""};
}

bool TemplateText::has_expressions() const {
  return std::any_of(parts.begin(), parts.end(), [](const Part& p) { return p.expr.has_value(); });
}

TemplateText TemplateText::parse(const std::string& t, const std::function<bool(const std::string&)>& known) {
  TemplateText out;
  std::string lit;
  size_t i = 0;
  while (i < t.size()) {
    if (t[i] != '{') {
      lit += t[i++];
      continue;
    }
    // The candidate runs to the first '}' outside quotes; a '{' inside it means this brace is literal text
    // (PTX's own braces: a register list around an expression, a scoped block).
    size_t j = i + 1;
    char quote = 0;
    bool nested = false;
    for (; j < t.size(); ++j) {
      char c = t[j];
      if (quote) {
        if (c == quote) quote = 0;
      } else if (c == '\'' || c == '"') {
        quote = c;
      } else if (c == '{') {
        nested = true;
        break;
      } else if (c == '}') {
        break;
      }
    }
    if (nested || j >= t.size()) {
      lit += t[i++];
      continue;
    }
    std::string body = t.substr(i + 1, j - i - 1);
    std::optional<Expression> e;
    try {
      e = Expression::parse(body);
    } catch (const FamilyError&) {
      lit += t[i++];  // not an expression (PTX text such as "{ .reg .b16 x; ... }"): literal
      continue;
    }
    std::string bare = e->bare_name();
    if (!bare.empty() && !known(bare)) {  // an attribute of the instruction, substituted at emission
      lit += t.substr(i, j - i + 1);
      i = j + 1;
      continue;
    }
    for (const std::string& n : e->names())
      if (!known(n)) throw FamilyError("{" + body + "} names " + n + ", which is not a parameter or derived value");
    if (!lit.empty()) out.parts.push_back({std::move(lit), std::nullopt});
    lit.clear();
    out.parts.push_back({"", std::move(e)});
    i = j + 1;
  }
  if (!lit.empty()) out.parts.push_back({std::move(lit), std::nullopt});
  return out;
}

std::string TemplateText::expand(const Scope& scope) const {
  std::string out;
  for (auto& p : parts) out += p.expr ? p.expr->eval(scope).text() : p.literal;
  return out;
}

}  // namespace ww::plugins
