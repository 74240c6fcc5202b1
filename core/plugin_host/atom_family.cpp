// Atom families: domains, constraints, expansion of the templated instruction, corners and seeded samples, and
// selection by inverting the templated Python parameters or id.
#include "atom_family.hpp"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/reflection.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <random>
#include <set>

#include "manifest_validation.hpp"

namespace ww::plugins {

namespace pb = google::protobuf;
using warpweave::manifest::Family;
using warpweave::manifest::Instruction;
using warpweave::manifest::Manifest;
using warpweave::manifest::Parameter;

namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::optional<int64_t> parse_int(const std::string& s) {
  if (s.empty()) return std::nullopt;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size()) return std::nullopt;
  // Accumulated negative, so that INT64_MIN reads too; a number past 64 bits is no value of any domain.
  int64_t v = 0;
  for (; i < s.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return std::nullopt;
    if (__builtin_mul_overflow(v, int64_t{10}, &v) || __builtin_sub_overflow(v, int64_t{s[i] - '0'}, &v))
      return std::nullopt;
  }
  if (s[0] == '-') return v;
  if (v == INT64_MIN) return std::nullopt;
  return -v;
}

// Parameters of one family; in-tree families have up to 8.
constexpr int kMaxParameters = 16;

std::string join_values(const std::vector<Value>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? (i + 1 == v.size() ? " or " : ", ") : "") + v[i].text();
  return out;
}

}  // namespace

// Every expression of the family, parsed once.
struct AtomFamily::Compiled {
  struct Check {
    Expression expr;
    std::string rule;
    size_t depth;  // 1 + the last parameter it depends on
  };
  std::vector<std::pair<std::string, Expression>> derived;
  std::vector<size_t> derived_depth;
  std::vector<Check> constraints;
  std::unordered_map<std::string, TemplateText> texts;  // every templated string of the template, by its text
  std::unordered_map<std::string, Expression> exprs;    // values_expr, registers_expr, count_expr, when
};

AtomFamily::AtomFamily(const Family& f, const std::vector<ElementInfo>* types) : f_(&f), types_(types) {
  auto fail = [&](const std::string& m) { throw FamilyError("family " + f.id() + ": " + m); };
  auto c = std::make_shared<Compiled>();
  // The corners are every combination of the parameters' extremes: 2^n of them, counted in a 64-bit mask.
  if (f.parameters_size() > kMaxParameters)
    fail("has " + std::to_string(f.parameters_size()) + " parameters, more than " + std::to_string(kMaxParameters));
  std::set<std::string> taken;
  for (const Parameter& p : f.parameters()) {
    if (!is_identifier(p.name())) fail("parameter \"" + p.name() + "\" is not an identifier");
    if (!taken.insert(p.name()).second) fail("parameter " + p.name() + " is repeated");
    int kinds = (p.values_size() > 0) + p.has_range() + (p.set_size() > 0);
    if (kinds != 1) fail("parameter " + p.name() + " needs exactly one domain: values, range or set");
    Domain d;
    std::string auto_rule;
    if (p.values_size()) {
      for (auto& v : p.values()) d.values.push_back(Value::of(v));
      auto_rule = p.name() + " is " + join_values(d.values);
    } else if (p.set_size()) {
      for (auto v : p.set()) d.values.push_back(Value::of(v));
      auto_rule = p.name() + " is " + join_values(d.values);
    } else {
      const auto& r = p.range();
      int64_t step = r.step() ? r.step() : 1;
      if (step < 0 || r.min() > r.max()) fail("parameter " + p.name() + ": the range is empty");
      // In unsigned arithmetic: max - min of a 64-bit range may not fit in int64_t, and stepping past a max near
      // INT64_MAX would overflow.
      uint64_t span = static_cast<uint64_t>(r.max()) - static_cast<uint64_t>(r.min());
      if (span / static_cast<uint64_t>(step) > (1 << 16))
        fail("parameter " + p.name() + ": the range has over 65536 values");
      for (uint64_t i = 0; i <= span / static_cast<uint64_t>(step); ++i) {
        uint64_t v = static_cast<uint64_t>(r.min()) + i * static_cast<uint64_t>(step);
        d.values.push_back(Value::of(static_cast<int64_t>(v)));
      }
      auto_rule = step == 1 ? p.name() + " is from " + std::to_string(r.min()) + " to " + std::to_string(r.max())
                            : p.name() + " is a multiple of " + std::to_string(step) + " from " +
                                  std::to_string(r.min()) + " to " + std::to_string(r.max());
      if (step != 1 && r.min() % step) auto_rule = p.name() + " is " + std::to_string(r.min()) + " plus a multiple of " +
                                                   std::to_string(step) + ", up to " + std::to_string(r.max());
    }
    if (d.values.empty()) fail("parameter " + p.name() + " has no value");
    d.rule = p.rule().empty() ? auto_rule : p.rule();
    names_.push_back(p.name());
    domains_.push_back(std::move(d));
  }
  if (names_.empty()) fail("has no parameter");
  // Which parameters each name depends on, as the index one past the last: a constraint is checked as soon as
  // the search has set them.
  std::map<std::string, size_t> depth;
  for (size_t i = 0; i < names_.size(); ++i) depth[names_[i]] = i + 1;
  auto parse = [&](const std::string& text, const std::string& where) {
    try {
      Expression e = Expression::parse(text);
      for (auto& n : e.names())
        if (!depth.count(n)) fail(where + " {" + text + "} names " + n + ", which is not a parameter or derived value");
      return e;
    } catch (const FamilyError& e) {
      if (std::string(e.what()).rfind("family ", 0) == 0) throw;
      throw FamilyError("family " + f.id() + ": " + where + ": " + e.what());
    }
  };
  auto depth_of = [&](const Expression& e) {
    size_t d = 0;
    for (auto& n : e.names()) d = std::max(d, depth.at(n));
    return d;
  };
  for (auto& d : f.derived()) {
    if (!is_identifier(d.name()) || depth.count(d.name())) fail("derived value \"" + d.name() + "\" is not a new identifier");
    Expression e = parse(d.expr(), "derived value " + d.name());
    size_t dd = depth_of(e);
    c->derived.emplace_back(d.name(), std::move(e));
    c->derived_depth.push_back(dd);
    depth[d.name()] = dd;
  }
  for (auto& k : f.constraints()) {
    if (k.rule().empty()) fail("constraint {" + k.expr() + "} needs a rule (the sentence an error quotes)");
    Expression e = parse(k.expr(), "constraint \"" + k.rule() + "\"");
    size_t dd = depth_of(e);
    c->constraints.push_back({std::move(e), k.rule(), dd});
  }
  const Instruction& t = f.template_();
  if (t.python_name().find('{') != std::string::npos) fail("python_name must not be templated: selection looks it up");
  if (t.id().empty()) fail("the template needs an id");
  auto known = [&](const std::string& n) { return depth.count(n) > 0; };
  auto add_text = [&](const std::string& s) {
    if (s.find('{') == std::string::npos || c->texts.count(s)) return;
    try {
      c->texts.emplace(s, TemplateText::parse(s, known));
    } catch (const FamilyError& e) {
      fail(std::string("template text \"") + s + "\": " + e.what());
    }
  };
  // Every string of the template, through reflection, so that a new field of Instruction is templated as well.
  std::function<void(const pb::Message&)> walk = [&](const pb::Message& m) {
    const pb::Descriptor* d = m.GetDescriptor();
    const pb::Reflection* r = m.GetReflection();
    for (int k = 0; k < d->field_count(); ++k) {
      const pb::FieldDescriptor* fd = d->field(k);
      if (fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_STRING) {
        if (fd->is_repeated()) {
          for (int i = 0; i < r->FieldSize(m, fd); ++i) add_text(r->GetRepeatedString(m, fd, i));
        } else {
          add_text(r->GetString(m, fd));
        }
      } else if (fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
        if (fd->is_repeated()) {
          for (int i = 0; i < r->FieldSize(m, fd); ++i) walk(r->GetRepeatedMessage(m, fd, i));
        } else if (r->HasField(m, fd)) {
          walk(r->GetMessage(m, fd));
        }
      }
    }
  };
  walk(t);
  for (auto& o : t.operands())
    for (const std::string* s : {&o.values_expr(), &o.registers_expr(), &o.count_expr(), &o.when()})
      if (!s->empty() && !c->exprs.count(*s)) c->exprs.emplace(*s, parse(*s, "operand " + o.name()));
  for (auto& a : t.attributes())
    if (!a.when().empty() && !c->exprs.count(a.when())) c->exprs.emplace(a.when(), parse(a.when(), "attribute " + a.name()));
  c_ = std::move(c);
}

Scope AtomFamily::scope_of(const Assignment& a, std::vector<Value>& derived) const {
  // Derived values are evaluated in order; a name resolves to a parameter, else to a derived value already set.
  Scope s;
  s.types = types_;
  s.lookup = [this, &a, &derived](const std::string& n) -> const Value* {
    for (size_t i = 0; i < names_.size() && i < a.size(); ++i)
      if (names_[i] == n) return &a[i];
    for (size_t i = 0; i < c_->derived.size() && i < derived.size(); ++i)
      if (c_->derived[i].first == n) return &derived[i];
    return nullptr;
  };
  derived.clear();
  derived.reserve(c_->derived.size());
  for (size_t i = 0; i < c_->derived.size(); ++i) {
    // One that depends on a parameter not set yet is a placeholder: nothing checkable now reads it.
    Value v = Value::of("");
    if (c_->derived_depth[i] <= a.size()) {
      try {
        v = c_->derived[i].second.eval(s);
      } catch (const FamilyError&) {
        if (a.size() == names_.size()) throw;
      }
    }
    derived.push_back(std::move(v));
  }
  return s;
}

bool AtomFamily::in_domain(size_t p, const Value& v) const {
  const auto& vals = domains_[p].values;
  return std::find(vals.begin(), vals.end(), v) != vals.end();
}

int AtomFamily::first_broken(const Assignment& a, size_t depth) const {
  std::vector<Value> derived;
  Scope s;
  try {
    s = scope_of(a, derived);
  } catch (const FamilyError&) {
    return static_cast<int>(c_->constraints.size());  // a derived value fails: not an instance
  }
  for (size_t i = 0; i < c_->constraints.size(); ++i) {
    const auto& k = c_->constraints[i];
    if (k.depth != depth && !(depth == names_.size() && k.depth == 0)) continue;
    try {
      if (!k.expr.eval(s).truth()) return static_cast<int>(i);
    } catch (const FamilyError&) {
      return static_cast<int>(i);  // e.g. bits() of a type the table lacks: not an instance
    }
  }
  return -1;
}

std::string AtomFamily::rule_of(int i) const {
  return static_cast<size_t>(i) < c_->constraints.size() ? c_->constraints[i].rule
                                                         : "every derived value can be computed";
}

std::string AtomFamily::broken_rule(const Assignment& a) const {
  if (a.size() != names_.size()) return "the assignment has " + std::to_string(a.size()) + " values for " +
                                        std::to_string(names_.size()) + " parameters";
  for (size_t p = 0; p < a.size(); ++p)
    if (!in_domain(p, a[p])) return domains_[p].rule;
  Assignment part;
  for (size_t d = 0; d <= a.size(); ++d) {
    if (d) part.push_back(a[d - 1]);
    if (int i = first_broken(part, d); i >= 0) return rule_of(i);
  }
  return {};
}

std::string AtomFamily::describe(const Assignment& a) const {
  std::string out;
  for (size_t i = 0; i < a.size() && i < names_.size(); ++i) out += (i ? ", " : "") + names_[i] + "=" + a[i].text();
  return out;
}

Instruction AtomFamily::expand(const Assignment& a) const {
  std::vector<Value> derived;
  Scope s = scope_of(a, derived);
  auto text = [&](const std::string& v) -> std::string {
    auto it = c_->texts.find(v);
    return it == c_->texts.end() ? v : it->second.expand(s);
  };
  auto eval = [&](const std::string& e) { return c_->exprs.at(e).eval(s); };
  Instruction ins = f_->template_();
  // Operands and attributes that exist in this instance, with their numeric fields.
  auto* ops = ins.mutable_operands();
  for (int i = 0; i < ops->size();) {
    auto* o = ops->Mutable(i);
    if (!o->when().empty() && !eval(o->when()).truth()) {
      ops->erase(ops->begin() + i);
      continue;
    }
    auto num = [&](const std::string& e, const char* field) -> uint32_t {
      Value v = eval(e);
      if (!v.is_int || v.i < 0 || v.i > 0xffffffffll)
        throw FamilyError("operand " + o->name() + ": " + field + " {" + e + "} is " + v.text() + ", not a count");
      return static_cast<uint32_t>(v.i);
    };
    if (!o->values_expr().empty()) o->set_values(num(o->values_expr(), "values"));
    if (!o->registers_expr().empty()) o->set_registers(num(o->registers_expr(), "registers"));
    if (!o->count_expr().empty()) o->set_count(num(o->count_expr(), "count"));
    o->clear_values_expr();
    o->clear_registers_expr();
    o->clear_count_expr();
    o->clear_when();
    ++i;
  }
  auto* attrs = ins.mutable_attributes();
  for (int i = 0; i < attrs->size();) {
    auto* at = attrs->Mutable(i);
    if (!at->when().empty() && !eval(at->when()).truth()) {
      attrs->erase(attrs->begin() + i);
      continue;
    }
    at->clear_when();
    ++i;
  }
  // Every other string, through reflection; maps are handled apart (their keys stay, empty values drop out).
  std::function<void(pb::Message&)> walk = [&](pb::Message& m) {
    const pb::Descriptor* d = m.GetDescriptor();
    const pb::Reflection* r = m.GetReflection();
    for (int k = 0; k < d->field_count(); ++k) {
      const pb::FieldDescriptor* fd = d->field(k);
      if (fd->is_map() || fd->name() == "python_name") continue;
      if (fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_STRING) {
        if (fd->is_repeated()) {
          for (int i = 0; i < r->FieldSize(m, fd); ++i) {
            const std::string& v = r->GetRepeatedString(m, fd, i);
            if (v.find('{') != std::string::npos) r->SetRepeatedString(&m, fd, i, text(v));
          }
        } else {
          const std::string& v = r->GetString(m, fd);
          if (v.find('{') != std::string::npos) r->SetString(&m, fd, text(v));
        }
      } else if (fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
        if (fd->is_repeated()) {
          for (int i = 0; i < r->FieldSize(m, fd); ++i) walk(*r->MutableRepeatedMessage(&m, fd, i));
        } else if (r->HasField(m, fd)) {
          walk(*r->MutableMessage(&m, fd));
        }
      }
    }
  };
  walk(ins);
  for (auto* map : {ins.mutable_python_params(), ins.mutable_python_defaults()}) {
    for (auto it = map->begin(); it != map->end();) {
      std::string v = text(it->second);
      if (v.empty()) {
        it = map->erase(it);
      } else {
        it->second = v;
        ++it;
      }
    }
  }
  return ins;
}

std::vector<Assignment> AtomFamily::all(size_t limit) const {
  std::vector<Assignment> out;
  Assignment a;
  std::function<void(size_t)> rec = [&](size_t p) {
    if (out.size() >= limit) return;
    if (first_broken(a, p) >= 0) return;
    if (p == names_.size()) {
      out.push_back(a);
      return;
    }
    for (auto& v : domains_[p].values) {
      a.push_back(v);
      rec(p + 1);
      a.pop_back();
      if (out.size() >= limit) return;
    }
  };
  rec(0);
  return out;
}

std::vector<Assignment> AtomFamily::corners() const {
  std::vector<Assignment> out;
  std::set<std::string> seen;
  size_t n = names_.size();
  for (uint64_t bits = 0; bits < (uint64_t{1} << n); ++bits) {
    Assignment a;
    for (size_t p = 0; p < n; ++p) {
      const auto& vals = domains_[p].values;
      a.push_back((bits >> p) & 1 ? vals.back() : vals.front());
    }
    if (!broken_rule(a).empty()) continue;
    if (seen.insert(describe(a)).second) out.push_back(a);
  }
  return out;
}

std::vector<Assignment> AtomFamily::sample(uint64_t seed, size_t n) const {
  std::set<std::string> taken;
  for (auto& c : corners()) taken.insert(describe(c));
  // Small families: every instance that is not a corner, when that is no more than asked for.
  std::vector<Assignment> every = all(taken.size() + n + 1);
  std::vector<Assignment> out;
  if (every.size() <= taken.size() + n) {
    for (auto& a : every)
      if (!taken.count(describe(a))) out.push_back(a);
    return out;
  }
  std::mt19937_64 rng(seed);
  for (size_t tries = 0; out.size() < n && tries < 400 * (n + 1); ++tries) {
    Assignment a;
    for (auto& d : domains_) a.push_back(d.values[rng() % d.values.size()]);
    if (!broken_rule(a).empty()) continue;
    if (taken.insert(describe(a)).second) out.push_back(a);
  }
  return out;
}

namespace {

// Every way `parts` spells `s`: the text each expression part stands for (at most `limit` ways).
void match_parts(const std::vector<TemplateText::Part>& parts, size_t k, const std::string& s, size_t pos,
                 std::vector<std::string>& caps, std::vector<std::vector<std::string>>& out, size_t limit) {
  if (out.size() >= limit) return;
  if (k == parts.size()) {
    if (pos == s.size()) out.push_back(caps);
    return;
  }
  const auto& part = parts[k];
  if (!part.expr) {
    if (s.compare(pos, part.literal.size(), part.literal) == 0)
      match_parts(parts, k + 1, s, pos + part.literal.size(), caps, out, limit);
    return;
  }
  size_t lo = pos, hi = s.size();
  if (k + 1 == parts.size()) lo = hi;  // the last part takes the rest
  for (size_t end = lo; end <= hi; ++end) {
    if (k + 1 < parts.size() && !parts[k + 1].expr && s.compare(end, parts[k + 1].literal.size(), parts[k + 1].literal) != 0)
      continue;
    caps.push_back(s.substr(pos, end - pos));
    match_parts(parts, k + 1, s, end, caps, out, limit);
    caps.pop_back();
  }
}

}  // namespace

AtomFamily::Selection AtomFamily::select_text(const std::map<std::string, std::string>& given, bool by_id) const {
  Selection sel;
  const Instruction& t = f_->template_();
  const size_t n = names_.size();
  std::vector<std::optional<Value>> fixed(n);
  std::vector<std::string> origin(n);  // the Python parameter (or "id") a value came from
  auto literal_text = [](const std::string& s) {
    TemplateText tt;
    tt.parts.push_back({s, std::nullopt});
    return tt;
  };
  // Bind what the texts spell.
  for (auto& [key, value] : given) {
    const std::string* tmpl = nullptr;
    if (by_id) {
      tmpl = &t.id();
    } else {
      auto it = t.python_params().find(key);
      if (it == t.python_params().end()) return sel;  // not this family's parameter
      tmpl = &it->second;
    }
    auto ct = c_->texts.find(*tmpl);
    TemplateText tt = ct == c_->texts.end() ? literal_text(*tmpl) : ct->second;
    std::vector<std::vector<std::string>> ways;
    std::vector<std::string> caps;
    match_parts(tt.parts, 0, value, 0, caps, ways, 16);
    if (ways.empty()) {
      // The form differs; a template that is one expression (e.g. {dsl(acc)}) matches anything, so this is a literal
      // mismatch: another family's, or a value no family has.
      return sel;
    }
    // The first way that binds consistently with every value in its domain (an id "x.cta2.3d" against
    // "x{cta == 2 ? '.cta2' : ''}.{rank}d" splits two ways), else the first consistent one, for its error.
    bool ok = false, fallback = false;
    std::vector<std::optional<Value>> fallback_fixed;
    std::vector<std::string> fallback_origin;
    for (auto& way : ways) {
      auto trial = fixed;
      auto trial_origin = origin;
      bool consistent = true;
      size_t e = 0;
      for (auto& part : tt.parts) {
        if (!part.expr) continue;
        const std::string& cap = way[e++];
        std::string name = part.expr->bare_name();
        std::optional<Value> v;
        if (!name.empty()) {
          auto p = std::find(names_.begin(), names_.end(), name) - names_.begin();
          if (static_cast<size_t>(p) == n) continue;  // a derived value: checked by the final comparison
          bool numeric = f_->parameters(p).values_size() == 0;
          auto iv = numeric ? parse_int(cap) : std::nullopt;
          v = numeric ? (iv ? Value::of(*iv) : Value::of("?" + cap)) : Value::of(cap);
          name = names_[p];
        } else {
          auto [fn, arg] = part.expr->call_of_name();
          auto p = std::find(names_.begin(), names_.end(), arg) - names_.begin();
          if (fn != "dsl" || static_cast<size_t>(p) == n || !types_) continue;
          std::string found = "?" + cap;  // no element type has this DSL name: outside every domain
          for (auto& et : *types_)
            if (et.dsl_name == cap && in_domain(p, Value::of(et.name))) found = et.name;
          if (found[0] == '?')
            for (auto& et : *types_)
              if (et.dsl_name == cap) found = et.name;
          v = Value::of(found);
          name = arg;
        }
        size_t p = std::find(names_.begin(), names_.end(), name) - names_.begin();
        if (trial[p] && !(*trial[p] == *v)) {
          consistent = false;
          break;
        }
        trial[p] = v;
        trial_origin[p] = by_id ? "id" : key;
      }
      if (!consistent) continue;
      bool legal = true;
      for (size_t p = 0; p < n; ++p) legal &= !trial[p] || in_domain(p, *trial[p]);
      if (legal) {
        fixed = std::move(trial);
        origin = std::move(trial_origin);
        ok = true;
        break;
      }
      if (!fallback) {
        fallback = true;
        fallback_fixed = std::move(trial);
        fallback_origin = std::move(trial_origin);
      }
    }
    if (!ok && fallback) {
      fixed = std::move(fallback_fixed);
      origin = std::move(fallback_origin);
      ok = true;
    }
    if (!ok) return sel;
  }
  sel.applies = true;
  auto quote = [&](size_t p, const std::string& rule) {
    std::string who = origin[p] == "id" ? "id " + given.begin()->second : origin[p] + " " + given.at(origin[p]);
    return python_name() + ": " + who + " breaks \"" + rule + "\"";
  };
  for (size_t p = 0; p < n; ++p)
    if (fixed[p] && !in_domain(p, *fixed[p])) sel.problems.push_back(quote(p, domains_[p].rule));
  if (!sel.problems.empty()) return sel;
  // Search the parameters left unbound; check the constraints as their parameters become known.
  std::vector<Assignment> found;
  std::vector<int> broken;
  Assignment a;
  size_t visited = 0;
  std::function<void(size_t)> rec = [&](size_t p) {
    if (found.size() >= 64 || ++visited > (1u << 18)) return;
    if (int i = first_broken(a, p); i >= 0) {
      broken.push_back(i);
      return;
    }
    if (p == n) {
      found.push_back(a);
      return;
    }
    if (fixed[p]) {
      a.push_back(*fixed[p]);
      rec(p + 1);
      a.pop_back();
      return;
    }
    for (auto& v : domains_[p].values) {
      a.push_back(v);
      rec(p + 1);
      a.pop_back();
    }
  };
  rec(0);
  std::string mismatch;
  // Only the texts asked about are expanded (not the whole instruction): selection runs once per distinct
  // request, validation once per sampled instance.
  auto text_of = [&](const std::string& tmpl, const Scope& sc) {
    auto it = c_->texts.find(tmpl);
    return it == c_->texts.end() ? tmpl : it->second.expand(sc);
  };
  for (auto& cand : found) {
    std::vector<Value> derived;
    Scope sc = scope_of(cand, derived);
    bool same = true;
    if (by_id) {
      same = text_of(t.id(), sc) == given.begin()->second;
    } else {
      for (auto& [key, value] : given) {
        std::string got = text_of(t.python_params().at(key), sc);
        if (got != value) {
          if (mismatch.empty())
            mismatch = python_name() + ": " + key + " " + value + " is not what " + f_->id() + " offers with the other "
                       "parameters (" + (got.empty() ? std::string("no ") + key : got) + ")";
          same = false;
          break;
        }
      }
    }
    if (same) sel.hits.push_back(cand);
  }
  if (!sel.hits.empty()) return sel;
  if (found.empty()) {
    // Every candidate breaks a constraint: quote each distinct rule once, with the Python values it reads.
    std::set<int> seen;
    for (int i : broken) {
      if (!seen.insert(i).second || seen.size() > 3) continue;
      if (static_cast<size_t>(i) >= c_->constraints.size()) {
        sel.problems.push_back(python_name() + ": " + f_->id() + ": " + rule_of(i) + " fails");
        continue;
      }
      std::string who;
      std::set<std::string> keys;
      for (auto& nm : c_->constraints[i].expr.names()) {
        // Parameters a derived value reads count too.
        std::vector<std::string> reads{nm};
        for (auto& d : c_->derived)
          if (d.first == nm) reads = d.second.names();
        for (auto& r : reads) {
          size_t p = std::find(names_.begin(), names_.end(), r) - names_.begin();
          if (p < n && fixed[p] && keys.insert(origin[p]).second)
            who += (who.empty() ? "" : ", ") + (origin[p] == "id" ? "id " + given.begin()->second
                                                                    : origin[p] + " " + given.at(origin[p]));
        }
      }
      sel.problems.push_back(python_name() + ": " + (who.empty() ? f_->id() : who) + " breaks \"" +
                             c_->constraints[i].rule + "\"");
    }
    if (sel.problems.empty()) sel.problems.push_back(python_name() + ": " + f_->id() + " has no instance here");
  } else if (!mismatch.empty()) {
    sel.problems.push_back(mismatch);
  }
  return sel;
}

AtomFamily::Selection AtomFamily::select_python(const std::map<std::string, std::string>& params) const {
  std::map<std::string, std::string> want(params);
  for (auto& [k, v] : f_->template_().python_defaults()) want.emplace(k, v);
  return select_text(want, false);
}

AtomFamily::Selection AtomFamily::select_id(const std::string& id) const { return select_text({{"id", id}}, true); }

// --- FamilySet ---------------------------------------------------------------------------------------------------

FamilySet::FamilySet(const Manifest& m) : m_(m) {
  for (auto& e : m_.element_types()) types_.push_back({e.name(), static_cast<int64_t>(e.bits()), e.dsl_name()});
  families_.reserve(m_.families_size());
  for (auto& f : m_.families()) families_.emplace_back(f, &types_);
}

const AtomFamily* FamilySet::find(const std::string& family_id) const {
  for (auto& f : families_)
    if (f.id() == family_id) return &f;
  return nullptr;
}

std::string FamilySet::instance_binary(const AtomFamily& f, const Assignment& a) const {
  return f.expand(a).SerializeAsString();
}

std::vector<std::string> FamilySet::instance_problems(const AtomFamily& f, const Assignment& a,
                                                      std::string* binary) const {
  Instruction ins = f.expand(a);
  std::vector<std::string> out = validate_instance(ins, !f.proto().primitive(), m_);
  std::set<std::string> declared;
  for (auto& e : types_) declared.insert(e.name);
  for (auto& o : ins.operands())
    if (!declared.empty() && !o.element_type().empty() && !declared.count(o.element_type()))
      out.push_back("operand " + o.name() + " names the element type \"" + o.element_type() +
                    "\", which element_types does not declare");
  for (auto& p : out) p = "family " + f.id() + ": instance " + f.describe(a) + ": " + p;
  if (binary) *binary = ins.SerializeAsString();
  return out;
}

std::vector<FamilySet::Found> FamilySet::select_python(const std::string& python_name,
                                                       const std::map<std::string, std::string>& params,
                                                       std::vector<std::string>& problems) const {
  std::string key = python_name;
  for (auto& [k, v] : params) key += '\x1f' + k + '\x1e' + v;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_python_.find(key);
  if (it == by_python_.end()) {
    std::vector<Found> found;
    std::vector<std::string> why;
    for (auto& f : families_) {
      if (f.python_name() != python_name) continue;
      auto sel = f.select_python(params);
      for (auto& a : sel.hits) {
        // Loading checked the family's description only: an instance is checked when first selected.
        std::string binary;
        auto bad = instance_problems(f, a, &binary);
        if (bad.empty()) found.push_back({&f, std::move(binary)});
        why.insert(why.end(), bad.begin(), bad.end());
      }
      why.insert(why.end(), sel.problems.begin(), sel.problems.end());
    }
    it = by_python_.emplace(key, std::make_pair(std::move(found), std::move(why))).first;
  }
  problems.insert(problems.end(), it->second.second.begin(), it->second.second.end());
  return it->second.first;
}

std::optional<FamilySet::Found> FamilySet::select_id(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_id_.find(id);
  if (it != by_id_.end()) return it->second;
  std::optional<Found> out;
  for (auto& f : families_) {
    auto sel = f.select_id(id);
    if (!sel.hits.empty()) {
      std::string binary;
      auto bad = instance_problems(f, sel.hits.front(), &binary);
      if (!bad.empty()) {
        std::string all;
        for (auto& p : bad) all += (all.empty() ? "" : "; ") + p;
        throw FamilyError(all);
      }
      out = Found{&f, std::move(binary)};
      break;
    }
  }
  by_id_.emplace(id, out);
  return out;
}

// --- validation --------------------------------------------------------------------------------------------------

void validate_families(const Manifest& m, const std::set<std::string>& ids, std::vector<std::string>& out,
                       bool sample_instances, uint64_t seed, size_t sample) {
  // The element type table: the frontend reads it to pack values, so a manifest that declares one declares every
  // type its operands name.
  std::set<std::string> type_names;
  for (auto& e : m.element_types()) {
    if (e.name().empty() || !type_names.insert(e.name()).second)
      out.push_back("element type \"" + e.name() + "\" is empty or repeated");
    if (e.bits() == 0 || e.bits() > 1024) out.push_back("element type " + e.name() + " needs bits (1 to 1024)");
  }
  auto undeclared = [&](const Instruction& ins, const std::string& what) {
    if (type_names.empty()) return;
    for (auto& o : ins.operands())
      if (!o.element_type().empty() && !type_names.count(o.element_type()))
        out.push_back(what + ": operand " + o.name() + " names the element type \"" + o.element_type() +
                      "\", which element_types does not declare");
  };
  for (auto& a : m.atoms()) undeclared(a, "atom " + a.id());
  for (auto& p : m.primitives()) undeclared(p, "primitive " + p.id());
  if (m.families_size() == 0) return;
  std::unique_ptr<FamilySet> set;
  try {
    set = std::make_unique<FamilySet>(m);
  } catch (const FamilyError& e) {
    out.push_back(e.what());
    return;
  }
  std::set<std::string> family_ids;
  std::map<std::string, std::string> instance_owner;  // instance id -> family id
  for (auto& f : set->families()) {
    const std::string what = "family " + f.id();
    auto err = [&](const std::string& msg) { out.push_back(what + ": " + msg); };
    if (!family_ids.insert(f.id()).second || ids.count(f.id())) err("the id is repeated");
    if (f.id().rfind(m.name() + ".", 0) != 0) err("its id must start with \"" + m.name() + ".\"");
    if (!f.proto().primitive() && f.python_name().empty()) err("needs a python_name (the Python class it appears as)");
    if (!sample_instances) continue;
    std::vector<Assignment> corners = f.corners();
    if (corners.empty()) err("none of its corners (each parameter at its first or last value) is an instance");
    std::vector<Assignment> checked = corners, more = f.sample(seed, sample);
    checked.insert(checked.end(), more.begin(), more.end());
    for (auto& a : checked) {
      const std::string inst = "instance " + f.describe(a);
      Instruction ins;
      try {
        ins = f.expand(a);
      } catch (const FamilyError& e) {
        err(inst + ": " + e.what());
        continue;
      }
      for (auto& p : validate_instance(ins, !f.proto().primitive(), m)) err(inst + ": " + p);
      undeclared(ins, what + ": " + inst);
      auto [pos, fresh] = instance_owner.emplace(ins.id(), f.id());
      if (!fresh && pos->second == f.id()) err(inst + ": its id " + ins.id() + " is that of another instance: the id "
                                               "template must spell every parameter");
      else if (!fresh || ids.count(ins.id())) err(inst + ": its id " + ins.id() + " is also " +
                                                  (fresh ? "a plain entry's" : "an instance of " + pos->second));
      // Selection finds it again, by id and by its Python parameters.
      auto by_id = f.select_id(ins.id());
      if (by_id.hits.size() != 1 || !(by_id.hits[0] == a))
        err(inst + ": selecting by id " + ins.id() + " finds " + std::to_string(by_id.hits.size()) + " instances");
      if (!f.proto().primitive() && !ins.python_params().empty()) {
        std::map<std::string, std::string> params(ins.python_params().begin(), ins.python_params().end());
        auto by_py = f.select_python(params);
        if (by_py.hits.size() != 1 || !(by_py.hits[0] == a))
          err(inst + ": its Python parameters select " + std::to_string(by_py.hits.size()) +
              " instances (the python_params templates must spell every parameter)");
      }
    }
  }
}

}  // namespace ww::plugins
