// The IR builder: MLIR text in generic syntax, regions as nested text buffers, symbolic integers materialised
// with per-region reuse.
#include "ww/ir/builder.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <sstream>
#include <unordered_map>

namespace ww::ir {
namespace {

std::string quote(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      r += '\\';
      r += c;
    } else if (c == '\n') {
      r += "\\0A";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\%02X", static_cast<unsigned char>(c));
      r += buf;
    } else {
      r += c;
    }
  }
  return r + "\"";
}

std::string value_name(Value v) { return "%" + std::to_string(v); }

struct IntKey {
  Int value;
  std::string type;
};
struct IntKeyHash {
  size_t operator()(const IntKey& k) const { return k.value.hash() ^ std::hash<std::string>()(k.type); }
};
struct IntKeyEq {
  bool operator()(const IntKey& a, const IntKey& b) const { return a.type == b.type && a.value.same(b.value); }
};

// A division or modulo of the algebra, by its operands.
struct DivKey {
  sym::Atom::Kind kind;
  Int a, b;
  std::string type;
};
struct DivKeyHash {
  size_t operator()(const DivKey& k) const {
    return k.a.hash() * 31 ^ k.b.hash() ^ static_cast<size_t>(k.kind) ^ std::hash<std::string>()(k.type);
  }
};
struct DivKeyEq {
  bool operator()(const DivKey& x, const DivKey& y) const {
    return x.kind == y.kind && x.type == y.type && x.a.same(y.a) && x.b.same(y.b);
  }
};

// One open region (or function body): its text and what may be reused inside it.
struct Frame {
  uint64_t id = 0;  // which scope its values belong to (values of a closed frame are visible nowhere)
  std::string text;
  std::unordered_map<uint64_t, Value> symbols;
  std::unordered_map<IntKey, Value, IntKeyHash, IntKeyEq> ints;
  std::unordered_map<std::string, Value> float_constants;
  std::unordered_map<DivKey, Value, DivKeyHash, DivKeyEq> divisions;  // by runtime divisors (IntEmitter)
  // A region with block arguments: a loop body (scf.for, scf.while). Divisions are not moved out of it: what
  // is invariant LLVM hoists itself when registers allow, and a GEMM's main loop has none to spare.
  bool loop = false;
};

}  // namespace

struct Builder::Impl {
  std::vector<std::string> types{""};  // value 0 is unused
  std::string module_text;
  std::map<std::string, std::string> module_attributes;
  std::string function_header;      // "llvm.func @name(" and the arguments so far
  std::string function_attributes;  // ") attributes {...} {\n"
  std::vector<Frame> frames;  // frames[0] is the function body when in a function
  // What the function computes once, before anything else (allocas, special registers): kept apart from the body
  // so that it stays in the entry block even after the body's first structured op (LLVM's SROA and mem2reg only
  // promote entry-block allocas).
  Frame prologue;
  std::vector<std::string> closed_regions;
  Location loc;
  std::string loc_text = "loc(unknown)";
  // The text names each distinct location and each long type once, in aliases (#loc3 = loc("prog.py":12:1),
  // !ww_t0 = !llvm.struct<(f32, ...)>), and its ops refer to them: a GEMM's
  // ~6000 ops each repeat a ~90-character location, and a 128-register accumulator's struct type (~700
  // characters) is spelled by every one of its ~1000 extracts. MLIR resolves the aliases as it parses; the
  // module is the same, its text a third the size, and each location and type is parsed and uniqued once.
  std::unordered_map<std::string, size_t> loc_aliases;
  std::string loc_definitions;
  std::unordered_map<std::string, size_t> type_aliases;
  std::vector<std::string> type_alias_names;
  std::string type_definitions;
  std::vector<int32_t> spelling{-1};  // per value: its type's alias (an index of type_alias_names), or -1
  std::vector<uint32_t> uses{0};      // per value: operands that name it
  uint64_t next_symbol = uint64_t{1} << 48;  // host-side ids stay below
  size_t ops = 0;
  bool at_entry = false;
  // A division by a runtime value is emitted in the outermost open region where its operands are defined
  // (IntEmitter), not in every branch that uses it: LLVM does not move a division out of a branch, nor share it
  // between sibling branches. The region ops are appended to while it is emitted; -1: the innermost.
  int hoist_to = -1;

  // The scope (frame id) each value is defined in, and where each region was opened: a value used outside its
  // region (it escaped through a Python list, attribute or closure, which dynamic control flow does not carry) is
  // refused when the op is built, naming that region, instead of failing to parse later.
  std::vector<uint64_t> scopes{0};
  std::unordered_map<uint64_t, Location> region_opened_at;
  uint64_t next_frame_id = 1;

  // A type as the text spells it: long ones by their alias.
  static constexpr size_t kAliasedTypeLength = 64;
  int32_t alias_of(const std::string& type) {
    if (type.size() < kAliasedTypeLength) return -1;
    auto [it, added] = type_aliases.try_emplace(type, type_alias_names.size());
    if (added) {
      type_alias_names.push_back("!ww_t" + std::to_string(it->second));
      type_definitions += type_alias_names.back() + " = " + type + " ";
    }
    return static_cast<int32_t>(it->second);
  }
  const std::string& spelled(Value v) const { return spelling[v] < 0 ? types[v] : type_alias_names[spelling[v]]; }

  Value new_value(const std::string& type) {
    types.push_back(type);
    spelling.push_back(alias_of(type));
    uses.push_back(0);
    scopes.push_back(frames.empty() ? 0 : top().id);
    return static_cast<Value>(types.size() - 1);
  }
  void check_visible(Value v) {  // (each operand passes here once: it counts the use)
    type(v);  // an unknown value
    uint64_t s = scopes[v];
    if (s == 0) return void(++uses[v]);
    for (Frame* f : visible())
      if (f->id == s) return void(++uses[v]);
    auto r = region_opened_at.find(s);
    if (r == region_opened_at.end())
      throw IRError("a value of another kernel or function (or of the kernel's body, in code that runs at its "
                    "entry) is used here");
    std::string where = r->second.file.empty() ? std::string("a dynamic loop or branch")
                                               : "the dynamic loop or branch at line " + std::to_string(r->second.line);
    throw IRError("a value computed inside " + where + " is used after that region has ended: dynamic control "
                  "flow carries plain variables assigned before it and lists of numbers it stores into by index, "
                  "not values kept in a dict, an attribute, a list it appends to or a nonlocal/global variable; "
                  "assign it to a plain variable defined before the loop or branch (e.g. `acc = "
                  "cutlass.Float32(0.0)` before, `acc += x` inside), or keep several values in a register tensor "
                  "(cute.make_rmem_tensor)");
  }
  Frame& top() {
    if (frames.empty()) throw IRError("IR builder: an operation was created outside any function");
    if (at_entry) return prologue;
    return hoist_to >= 0 ? frames[hoist_to] : frames.back();
  }
  size_t depth() const { return hoist_to >= 0 ? static_cast<size_t>(hoist_to) + 1 : frames.size(); }
  void line(const std::string& s) {
    std::string& t = top().text;
    t.append(2 * (at_entry ? 1 : depth()), ' ');
    t += s;
    t += '\n';
  }
  // The frames whose values the current insertion point sees, innermost first: the prologue alone, or the open
  // regions and then the prologue.
  std::vector<Frame*> visible() {
    std::vector<Frame*> out;
    if (!at_entry)
      for (size_t i = depth(); i-- > 0;) out.push_back(&frames[i]);
    out.push_back(&prologue);
    return out;
  }
  // The index of the innermost open region that defines symbol `id` (0 for the function body and its prologue),
  // or -1 when no visible region does.
  int symbol_depth(uint64_t id) {
    if (at_entry) return prologue.symbols.count(id) ? 0 : -1;
    for (size_t i = depth(); i-- > 0;)
      if (frames[i].symbols.count(id)) return static_cast<int>(i);
    return prologue.symbols.count(id) ? 0 : -1;
  }
  const std::string& type(Value v) const {
    if (v == 0 || v >= types.size()) throw IRError("IR builder: unknown value %" + std::to_string(v));
    return types[v];
  }
  Value lookup_symbol(uint64_t id) {
    for (Frame* fr : visible()) {
      auto f = fr->symbols.find(id);
      if (f != fr->symbols.end()) return f->second;
    }
    return 0;
  }
};

Builder::Builder() : impl_(std::make_unique<Impl>()) {}
Builder::~Builder() = default;

void Builder::add_module_text(std::string text) {
  impl_->module_text += "  " + text + "\n";
}

std::vector<Value> Builder::begin_function(const std::string& name, const std::vector<std::string>& arg_types,
                                           const std::string& attributes,
                                           const std::vector<std::string>& arg_attributes) {
  if (!impl_->frames.empty()) throw IRError("IR builder: functions do not nest (" + name + ")");
  std::vector<Value> args;
  std::string h = "llvm.func @" + name + "(";
  for (size_t i = 0; i < arg_types.size(); ++i) {
    Value v = impl_->new_value(arg_types[i]);
    args.push_back(v);
    if (i) h += ", ";
    h += value_name(v) + ": " + arg_types[i];
    if (i < arg_attributes.size() && !arg_attributes[i].empty()) h += " {" + arg_attributes[i] + "}";
  }
  impl_->function_header = h;
  impl_->function_attributes = ")" + (attributes.empty() ? std::string() : " attributes {" + attributes + "}") +
                               " {\n";
  impl_->frames.emplace_back();
  impl_->frames.back().id = impl_->next_frame_id++;
  impl_->prologue.id = impl_->next_frame_id++;
  // The arguments are the entry block's: visible in the body and in the prologue alike (a parameter converted
  // where the kernel starts, e.g. a Boolean's byte to its bit, is an op of the prologue on an argument).
  for (Value v : args) impl_->scopes[v] = impl_->prologue.id;
  return args;
}

Value Builder::add_function_argument(const std::string& type, const std::string& attributes) {
  if (impl_->frames.empty()) throw IRError("IR builder: add_function_argument outside a function");
  Value v = impl_->new_value(type);
  impl_->scopes[v] = impl_->prologue.id;  // an argument, as begin_function's
  std::string& h = impl_->function_header;
  if (h.back() != '(') h += ", ";
  h += value_name(v) + ": " + type;
  if (!attributes.empty()) h += " {" + attributes + "}";
  return v;
}

void Builder::end_function() {
  if (impl_->frames.size() != 1) throw IRError("IR builder: end_function with regions still open");
  impl_->line("llvm.return " + impl_->loc_text);
  impl_->module_text += "  " + impl_->function_header + impl_->function_attributes + impl_->prologue.text +
                        impl_->frames.back().text + "  }\n";
  impl_->frames.clear();
  impl_->prologue = Frame{};
}

bool Builder::in_function() const { return !impl_->frames.empty(); }

void Builder::set_module_attribute(const std::string& name, std::string value) {
  impl_->module_attributes[name] = std::move(value);
}

std::string Builder::str() const {
  std::string head = "module ";
  if (!impl_->module_attributes.empty()) {
    head += "attributes {";
    for (const auto& [name, value] : impl_->module_attributes)
      head += (head.back() == '{' ? "" : ", ") + name + " = " + value;
    head += "} ";
  }
  // Type aliases must precede their uses, location aliases may follow them. An op the text gives no location (a
  // function) is located at its line of the text, and line info carries that line into the PTX: the type aliases
  // share the module's first line and the location aliases follow it, so that every line stays where it was.
  return impl_->type_definitions + head + "{\n" + impl_->module_text + "}\n" + impl_->loc_definitions;
}

std::vector<Value> Builder::op(std::string_view name, std::span<const Value> operands,
                               std::span<const std::string> result_types, std::string_view properties,
                               std::string_view attributes, int num_regions) {
  Impl& m = *impl_;
  if (num_regions < 0 || num_regions > static_cast<int>(m.closed_regions.size()))
    throw IRError("IR builder: " + std::string(name) + " takes " + std::to_string(num_regions) +
                  " regions but only " + std::to_string(m.closed_regions.size()) + " are closed");
  std::vector<Value> results;
  std::string s;
  for (size_t i = 0; i < result_types.size(); ++i) {
    Value v = m.new_value(result_types[i]);
    results.push_back(v);
    s += (i ? ", " : "") + value_name(v);
  }
  if (!results.empty()) s += " = ";
  s += quote(std::string(name)) + "(";
  std::string in_types;
  for (size_t i = 0; i < operands.size(); ++i) {
    m.check_visible(operands[i]);
    s += (i ? ", " : "") + value_name(operands[i]);
    if (i) in_types += ", ";
    in_types += m.spelled(operands[i]);
  }
  s += ")";
  if (!properties.empty()) s += " <{" + std::string(properties) + "}>";
  if (num_regions > 0) {
    s += " (";
    size_t first = m.closed_regions.size() - static_cast<size_t>(num_regions);
    for (size_t i = first; i < m.closed_regions.size(); ++i) s += (i > first ? ", " : "") + m.closed_regions[i];
    s += ")";
    m.closed_regions.resize(first);
  }
  if (!attributes.empty()) s += " {" + std::string(attributes) + "}";
  s += " : (" + in_types + ") -> (";
  for (size_t i = 0; i < results.size(); ++i) {
    if (i) s += ", ";
    s += m.spelled(results[i]);
  }
  s += ") " + m.loc_text;
  m.line(s);
  ++m.ops;
  return results;
}

Value Builder::op1(std::string_view name, std::span<const Value> operands, const std::string& result_type,
                   std::string_view properties, std::string_view attributes) {
  std::string t[1] = {result_type};
  return op(name, operands, t, properties, attributes)[0];
}

void Builder::op0(std::string_view name, std::span<const Value> operands, std::string_view properties,
                  std::string_view attributes, int num_regions) {
  op(name, operands, {}, properties, attributes, num_regions);
}

std::vector<Value> Builder::inline_asm(const std::string& asm_text, const std::string& constraints,
                                       std::span<const Value> operands, std::span<const std::string> result_types,
                                       bool side_effects) {
  std::string props = "asm_string = " + quote(asm_text) + ", constraints = " + quote(constraints) +
                      (side_effects ? ", has_side_effects" : "");
  if (result_types.empty()) {
    op("llvm.inline_asm", operands, {}, props);
    return {};
  }
  if (result_types.size() == 1) return op("llvm.inline_asm", operands, result_types, props);
  std::string st = "!llvm.struct<(";
  for (size_t i = 0; i < result_types.size(); ++i) st += (i ? ", " : "") + result_types[i];
  st += ")>";
  std::string sts[1] = {st};
  Value s = op("llvm.inline_asm", operands, sts, props)[0];
  std::vector<Value> out;
  for (size_t i = 0; i < result_types.size(); ++i) {
    Value src[1] = {s};
    out.push_back(op1("llvm.extractvalue", src, result_types[i], "position = array<i64: " + std::to_string(i) + ">"));
  }
  return out;
}

std::vector<Value> Builder::custom_op(const std::string& format, std::span<const Value> operands,
                                     std::span<const std::string> result_types) {
  Impl& m = *impl_;
  std::vector<Value> results;
  for (auto& t : result_types) results.push_back(m.new_value(t));
  std::string s;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '$') {
      s += format[i];
      continue;
    }
    bool result = i + 1 < format.size() && format[i + 1] == 'r';
    size_t j = i + 1 + (result ? 1 : 0), k = j;
    while (k < format.size() && std::isdigit(static_cast<unsigned char>(format[k]))) ++k;
    if (k == j) throw IRError("IR builder: bad placeholder in '" + format + "'");
    size_t n = std::stoul(format.substr(j, k - j));
    if (result ? n >= results.size() : n >= operands.size())
      throw IRError("IR builder: placeholder out of range in '" + format + "'");
    if (!result) m.check_visible(operands[n]);  // validates the operand
    s += value_name(result ? results[n] : operands[n]);
    i = k - 1;
  }
  m.line(s + " " + m.loc_text);
  ++m.ops;
  return results;
}

std::vector<Value> Builder::begin_region(std::span<const std::string> arg_types) {
  Impl& m = *impl_;
  if (m.frames.empty()) throw IRError("IR builder: a region was opened outside any function");
  std::vector<Value> args;
  std::string header = "^bb0(";
  for (size_t i = 0; i < arg_types.size(); ++i) {
    Value v = m.new_value(arg_types[i]);
    args.push_back(v);
    header += (i ? ", " : "") + value_name(v) + ": " + m.spelled(v);
  }
  header += "):";
  m.frames.emplace_back();
  m.frames.back().text = std::string(2 * (m.frames.size() - 1), ' ') + header + "\n";
  m.frames.back().id = m.next_frame_id++;
  m.frames.back().loop = !arg_types.empty();
  m.region_opened_at[m.frames.back().id] = m.loc;
  for (Value v : args) m.scopes[v] = m.frames.back().id;
  return args;
}

void Builder::end_region() {
  Impl& m = *impl_;
  if (m.frames.size() < 2) throw IRError("IR builder: end_region without an open region");
  std::string body = std::move(m.frames.back().text);
  m.frames.pop_back();
  m.closed_regions.push_back("{\n" + body + std::string(2 * m.frames.size(), ' ') + "}");
}

int Builder::region_depth() const { return static_cast<int>(impl_->frames.size()) - 1; }

void Builder::set_emit_at_entry(bool at_entry) { impl_->at_entry = at_entry; }

const std::string& Builder::type_of(Value v) const { return impl_->type(v); }

void Builder::set_location(Location loc) {
  Impl& m = *impl_;
  // Asked at every traced op, mostly with the location of the op before.
  if (loc.line == m.loc.line && loc.col == m.loc.col && loc.file == m.loc.file) return;
  m.loc = std::move(loc);
  if (m.loc.file.empty()) {
    m.loc_text = "loc(unknown)";
    return;
  }
  std::string spelled = quote(m.loc.file) + ":" + std::to_string(m.loc.line) + ":" +
                        std::to_string(std::max(m.loc.col, 1));
  auto [it, added] = m.loc_aliases.try_emplace(std::move(spelled), m.loc_aliases.size());
  std::string name = "#loc" + std::to_string(it->second);
  if (added) m.loc_definitions += name + " = loc(" + it->first + ")\n";
  m.loc_text = "loc(" + name + ")";
}

const Location& Builder::location() const { return impl_->loc; }

Value Builder::constant_int(int64_t v, const std::string& type) {
  IntKey key{Int(v), type};
  for (Frame* fr : impl_->visible()) {
    auto f = fr->ints.find(key);
    if (f != fr->ints.end()) return f->second;
  }
  std::string attr = type == "i1" ? (v ? "true" : "false") : std::to_string(v) + " : " + type;
  Value r = op1("arith.constant", {}, type, "value = " + attr);
  impl_->top().ints.emplace(std::move(key), r);
  return r;
}

Value Builder::constant_float(double v, const std::string& type) {
  char buf[64];
  if (std::isnan(v)) {
    std::snprintf(buf, sizeof(buf), "%s", type == "f64" ? "0x7FF8000000000000" : type == "f32" ? "0x7FC00000" : "0x7E00");
  } else if (std::isinf(v)) {
    const char* pos = type == "f64" ? "0x7FF0000000000000" : type == "f32" ? "0x7F800000" : type == "bf16" ? "0x7F80" : "0x7C00";
    const char* neg = type == "f64" ? "0xFFF0000000000000" : type == "f32" ? "0xFF800000" : type == "bf16" ? "0xFF80" : "0xFC00";
    std::snprintf(buf, sizeof(buf), "%s", v > 0 ? pos : neg);
  } else {
    std::snprintf(buf, sizeof(buf), "%.17g", v);
    std::string s = buf;
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    std::snprintf(buf, sizeof(buf), "%s", s.c_str());
  }
  std::string key = type + ":" + buf;
  for (Frame* fr : impl_->visible()) {
    auto f = fr->float_constants.find(key);
    if (f != fr->float_constants.end()) return f->second;
  }
  Value r = op1("arith.constant", {}, type, "value = " + std::string(buf) + " : " + type);
  impl_->top().float_constants.emplace(key, r);
  return r;
}

void Builder::bind_symbol(uint64_t id, Value v) { impl_->top().symbols[id] = v; }

bool Builder::has_symbol(uint64_t id) const { return impl_->lookup_symbol(id) != 0; }

uint64_t Builder::fresh_symbol_id() { return impl_->next_symbol++; }

size_t Builder::num_ops() const { return impl_->ops; }

size_t Builder::use_count(Value v) const {
  impl_->type(v);  // an unknown value
  return impl_->uses[v];
}

namespace {

// Emits the arithmetic of a dynamic Int; `type` is the integer type of the result.
class IntEmitter {
 public:
  IntEmitter(Builder& b, Builder::Impl& m, std::string type) : b_(b), m_(m), type_(std::move(type)) {}

  Value emit(const Int& x) {
    if (auto v = x.static_value()) return b_.constant_int(*v, type_);
    IntKey key{x, type_};
    for (Frame* fr : m_.visible()) {
      auto f = fr->ints.find(key);
      if (f != fr->ints.end()) return f->second;
    }
    const sym::Poly& p = *x.poly();
    Value sum = 0;
    for (auto& t : p.terms) {
      Value prod = 0;
      for (auto& f : t.factors) {
        Value a = atom(*f);
        prod = prod ? binary("arith.muli", prod, a) : a;
      }
      if (t.coef != 1) prod = binary("arith.muli", prod, b_.constant_int(t.coef, type_));
      sum = sum ? binary("arith.addi", sum, prod) : prod;
    }
    if (p.constant != 0) sum = binary("arith.addi", sum, b_.constant_int(p.constant, type_));
    m_.top().ints.emplace(std::move(key), sum);
    return sum;
  }

 private:
  // No overflow flags: user arithmetic may rely on wrapping, and LLVM derives what index math needs.
  Value binary(const char* name, Value a, Value c) {
    Value ops[2] = {a, c};
    return b_.op1(name, ops, type_);
  }

  // Insertion in region `depth` while it lives (nothing changes for the innermost region or at the entry).
  struct Hoist {
    Builder::Impl& m;
    int saved;
    Hoist(Builder::Impl& impl, int depth) : m(impl), saved(impl.hoist_to) {
      if (!m.at_entry && depth >= 0 && static_cast<size_t>(depth) + 1 < m.depth()) m.hoist_to = depth;
    }
    ~Hoist() { m.hoist_to = saved; }
  };

  // The innermost region that defines a symbol of x (where x can first be computed); -1 leaves x where it is
  // used (a symbol no region defines: the emission reports it).
  int home_of(const Int& x) {
    if (x.is_static()) return 0;
    int home = 0;
    for (size_t i = m_.depth(); i-- > 0;) {
      if (m_.frames[i].loop) {
        home = static_cast<int>(i);  // not out of the innermost loop
        break;
      }
    }
    for (auto& t : x.poly()->terms) {
      for (auto& f : t.factors) {
        int d;
        if (f->kind == sym::Atom::Kind::Symbol) {
          d = m_.symbol_depth(f->id);
        } else {
          int da = home_of(f->a), db = home_of(f->b);
          d = da < 0 || db < 0 ? -1 : std::max(da, db);
        }
        if (d < 0) return -1;
        home = std::max(home, d);
      }
    }
    return home;
  }

  // A divisor that is not known to be positive, when its division runs outside the region that used it: a
  // division by zero is undefined in LLVM, so one moved out of `if n != 0:` must not divide by zero. Where the
  // divisor is positive (always, when the division was reached before) the result is the same.
  Value safe_divisor(const sym::Atom& a, Value y, bool nonneg) {
    if (m_.hoist_to < 0 || a.b.known_lt(Int(0)) == true || Int(0).known_lt(a.b) == true) return y;
    Value one = b_.constant_int(1, type_);
    if (nonneg) return binary("arith.maxui", y, one);
    Value zero = b_.constant_int(0, type_);
    Value yz[2] = {y, zero};
    Value is_zero = b_.op1("arith.cmpi", yz, "i1", "predicate = 0 : i64");  // eq
    Value sel[3] = {is_zero, one, y};
    return b_.op1("arith.select", sel, type_);
  }

  Value atom(const sym::Atom& a) {
    using K = sym::Atom::Kind;
    switch (a.kind) {
      case K::Symbol: {
        Value v = m_.lookup_symbol(a.id);
        if (!v) {
          std::string n = a.name.empty() ? "s" + std::to_string(a.id) : a.name;
          throw IRError("the dynamic value " + n +
                        " is not available here: it was defined in another kernel, or inside a dynamic loop or "
                        "branch that has ended");
        }
        return convert(v, a.nonneg);
      }
      case K::Div:
      case K::Mod: {
        // A division by a runtime value costs ~20 instructions: emit it once, where its operands are defined,
        // and reuse it (in a predicated copy every element's address divides by the same extent). Everything
        // else stays where it is used, so that it does not live longer than needed (register pressure).
        if (a.b.is_static()) return divide(a);
        int ha = home_of(a.a), hb = home_of(a.b);
        Hoist hoist(m_, ha < 0 || hb < 0 ? -1 : std::max(ha, hb));
        DivKey key{a.kind, a.a, a.b, type_};
        for (Frame* fr : m_.visible()) {
          auto f = fr->divisions.find(key);
          if (f != fr->divisions.end()) return f->second;
        }
        Value r = divide(a);
        m_.top().divisions.emplace(std::move(key), r);
        return r;
      }
      case K::Min: return binary("arith.minsi", emit(a.a), emit(a.b));
      case K::Max: return binary("arith.maxsi", emit(a.a), emit(a.b));
      case K::Xor: return binary("arith.xori", emit(a.a), emit(a.b));
    }
    throw IRError("IR builder: unknown atom");
  }

  Value divide(const sym::Atom& a) {
    using K = sym::Atom::Kind;
    Value x = emit(a.a), y = emit(a.b);
    bool nonneg = a.a.known_nonneg() && a.b.known_nonneg();
    y = safe_divisor(a, y, nonneg);
    if (nonneg) return binary(a.kind == K::Div ? "arith.divui" : "arith.remui", x, y);
    // Floor semantics for operands of unknown sign: adjust the truncating result where signs differ.
    Value q = binary("arith.divsi", x, y);
    Value r = binary("arith.remsi", x, y);
    Value zero = b_.constant_int(0, type_);
    Value rz[2] = {r, zero}, yz[2] = {y, zero};
    Value r_nonzero = b_.op1("arith.cmpi", rz, "i1", "predicate = 1 : i64");  // ne
    Value rneg = b_.op1("arith.cmpi", rz, "i1", "predicate = 2 : i64");       // slt
    Value yneg = b_.op1("arith.cmpi", yz, "i1", "predicate = 2 : i64");
    Value diff[2] = {rneg, yneg};
    Value d = b_.op1("arith.xori", diff, "i1");
    Value both[2] = {r_nonzero, d};
    Value adjust = b_.op1("arith.andi", both, "i1");
    if (a.kind == K::Div) {
      Value one = b_.constant_int(1, type_);
      Value qm1 = binary("arith.subi", q, one);
      Value sel[3] = {adjust, qm1, q};
      return b_.op1("arith.select", sel, type_);
    }
    Value rpy = binary("arith.addi", r, y);
    Value sel[3] = {adjust, rpy, r};
    return b_.op1("arith.select", sel, type_);
  }

  Value convert(Value v, bool nonneg) {
    const std::string& t = m_.type(v);
    if (t == type_) return v;
    if (t == "index") {
      Value in[1] = {v};
      return b_.op1("arith.index_castui", in, type_);
    }
    int from = std::stoi(t.substr(1)), to = std::stoi(type_.substr(1));
    Value in[1] = {v};
    return b_.op1(from < to ? (nonneg ? "arith.extui" : "arith.extsi") : "arith.trunci", in, type_);
  }

  Builder& b_;
  Builder::Impl& m_;
  std::string type_;
};

}  // namespace

Value Builder::materialize(const Int& x, const std::string& type) {
  if (type != "i32" && type != "i64" && type != "i16" && type != "i8")
    throw IRError("IR builder: integers materialise as i8..i64, not " + type);
  IntEmitter e(*this, *impl_, type);
  return e.emit(x);
}

}  // namespace ww::ir
