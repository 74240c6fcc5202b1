// Atom families (core/plugin_host/atom_family.cpp): the expression language, expansion of a templated
// instruction, corners and seeded samples, selection by Python parameters and by id, and the one-sentence errors.
#include <gtest/gtest.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/message_differencer.h>

#include <set>
#include <string>

#include "atom_family.hpp"
#include "family_expression.hpp"
#include "manifest_validation.hpp"

namespace {

namespace wp = ww::plugins;
using warpweave::manifest::Manifest;

wp::Value eval(const std::string& text, const std::vector<std::pair<std::string, wp::Value>>& vars = {}) {
  static const std::vector<wp::ElementInfo> types{{"f16", 16, "Float16"}, {"f32", 32, "Float32"}, {"s8", 8, "Int8"}};
  wp::Scope s;
  s.types = &types;
  s.lookup = [&](const std::string& n) -> const wp::Value* {
    for (auto& [k, v] : vars)
      if (k == n) return &v;
    return nullptr;
  };
  return wp::Expression::parse(text).eval(s);
}

TEST(FamilyExpression, ArithmeticPrecedenceAndStrings) {
  EXPECT_EQ(eval("1 + 2 * 3 - 4 / 2").i, 5);
  EXPECT_EQ(eval("(1 + 2) * 3 % 5").i, 4);
  EXPECT_EQ(eval("-3 + 10").i, 7);
  EXPECT_EQ(eval("n / 2", {{"n", wp::Value::of(24)}}).i, 12);
  EXPECT_EQ(eval("bits(t) * k", {{"t", wp::Value::of("f16")}, {"k", wp::Value::of(16)}}).i, 256);
  EXPECT_EQ(eval("dsl('s8')").s, "Int8");
  EXPECT_EQ(eval("upper('f32') + '.x'").s, "F32.x");
  EXPECT_EQ(eval("n <= 8 && n != 4 || 0", {{"n", wp::Value::of(8)}}).i, 1);
  EXPECT_EQ(eval("a == 'RS' ? 'rs' : 'ss'", {{"a", wp::Value::of("SS")}}).s, "ss");
  EXPECT_EQ(eval("seq(3, 3, '$', ', ')").s, "$3, $4, $5");
  EXPECT_EQ(eval("repeat('=f', 3)").s, "=f,=f,=f");
  EXPECT_EQ(eval("join(',', '', 'l', repeat('r', 0), 'b')").s, "l,b");
  EXPECT_EQ(eval("one_of(24, 8, 16, 24)").i, 1);
  EXPECT_EQ(eval("replace('a::b::c', '::', '_')").s, "a_b_c");
}

TEST(FamilyExpression, ErrorsNameTheProblem) {
  EXPECT_THROW(wp::Expression::parse("1 +"), wp::FamilyError);
  EXPECT_THROW(wp::Expression::parse("(1"), wp::FamilyError);
  EXPECT_THROW(eval("1 / 0"), wp::FamilyError);
  EXPECT_THROW(eval("bits('f64')"), wp::FamilyError);
  try {
    eval("m + 1");
    FAIL();
  } catch (const wp::FamilyError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown name m"), std::string::npos) << e.what();
  }
}

// A manifest is untrusted: a literal past 64 bits and arithmetic that overflows are refused with a FamilyError
// naming the numbers, never wrapped into another legal-looking value (nor undefined behaviour).
TEST(FamilyExpression, OverflowIsAnError) {
  auto message = [](const std::string& text, const std::vector<std::pair<std::string, wp::Value>>& vars = {}) {
    try {
      eval(text, vars);
    } catch (const wp::FamilyError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto has = [](const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; };
  const wp::Value big = wp::Value::of(INT64_MAX), small = wp::Value::of(INT64_MIN);
  std::string m = message("889849906929769152928 > 0");
  EXPECT_TRUE(has(m, "the integer 889849906929769152928 does not fit in 64 bits") && has(m, "at 1:")) << m;
  EXPECT_TRUE(has(message("9223372036854775808"), "does not fit in 64 bits"));
  EXPECT_EQ(eval("9223372036854775807").i, INT64_MAX);
  EXPECT_TRUE(has(message("x + 1", {{"x", big}}), "9223372036854775807 + 1 overflows a 64-bit integer"));
  EXPECT_TRUE(has(message("x - 1", {{"x", small}}), "overflows a 64-bit integer"));
  EXPECT_TRUE(has(message("x * 2", {{"x", big}}), "9223372036854775807 * 2 overflows"));
  EXPECT_TRUE(has(message("4294967296 * 4294967296"), "overflows"));
  EXPECT_TRUE(has(message("x / (0 - 1)", {{"x", small}}), "-9223372036854775808 / -1 overflows"));
  EXPECT_TRUE(has(message("x % (0 - 1)", {{"x", small}}), "overflows"));
  EXPECT_TRUE(has(message("-x", {{"x", small}}), "overflows a 64-bit integer"));
  EXPECT_TRUE(has(message("seq(x, 2)", {{"x", big}}), "overflows"));
  EXPECT_TRUE(has(message("1 % 0"), "division by zero"));
  // The edges that do fit.
  EXPECT_EQ(eval("x - 1 + 1", {{"x", big}}).i, INT64_MAX);
  EXPECT_EQ(eval("-x - 1", {{"x", big}}).i, INT64_MIN);
  EXPECT_EQ(eval("x / 1", {{"x", small}}).i, INT64_MIN);
  EXPECT_EQ(eval("seq(x, 1)", {{"x", big}}).s, "9223372036854775807");
}

TEST(TemplateText, ExpressionsAttributesAndPtxBraces) {
  auto known = [](const std::string& n) { return n == "n" || n == "d"; };
  auto t = wp::TemplateText::parse("op.m{n} {{seq(0, d, '$', ', ')}}, [$1], {scale};{ .reg .b32 x; }{'{'}n}", known);
  wp::Scope s;
  wp::Value n = wp::Value::of(8), d = wp::Value::of(2);
  s.lookup = [&](const std::string& k) -> const wp::Value* { return k == "n" ? &n : k == "d" ? &d : nullptr; };
  EXPECT_EQ(t.expand(s), "op.m8 {$0, $1}, [$1], {scale};{ .reg .b32 x; }{n}");
  EXPECT_THROW(wp::TemplateText::parse("{n + q}", known), wp::FamilyError);
}

// A family in the shape of a warpgroup MMA: N by 8 up to 64, two input types, two A sources.
const char* kManifest = R"pb(
name: "toy" abi_version: 1
targets { name: "sm_90a" compute_capability: 90 arch_specific: true }
element_types { name: "f16" bits: 16 dsl_name: "Float16" }
element_types { name: "bf16" bits: 16 dsl_name: "BFloat16" }
element_types { name: "f32" bits: 32 dsl_name: "Float32" }
families {
  id: "toy.mma"
  parameters { name: "ab" values: "f16" values: "bf16" }
  parameters { name: "acc" values: "f16" values: "f32" }
  parameters { name: "n" range { min: 8 max: 64 step: 8 } rule: "N is a multiple of 8 from 8 to 64" }
  parameters { name: "a_src" values: "SS" values: "RS" }
  derived { name: "k" expr: "256 / bits(ab)" }
  derived { name: "dregs" expr: "n / 2 * bits(acc) / 32" }
  constraints { rule: "bf16 inputs accumulate in f32" expr: "ab != 'bf16' || acc == 'f32'" }
  template {
    id: "toy.mma.m64n{n}k{k}.{acc}.{ab}.{a_src == 'RS' ? 'rs' : 'ss'}"
    kind: MMA targets: "sm_90a" python_name: "warpgroup.ToyOp"
    python_params { key: "ab_dtype" value: "{dsl(ab)}" }
    python_params { key: "acc_dtype" value: "{dsl(acc)}" }
    python_params { key: "shape_mnk" value: "(64,{n},{k})" }
    python_params { key: "a_src" value: "{a_src}" }
    python_defaults { key: "a_src" value: "SS" }
    shape_mnk: "(64,{n},{k})" thr_id: "128:1"
    operands { name: "d" role: REGISTERS direction: OUT element_type: "{acc}" values_expr: "n / 2"
               registers_expr: "dregs" register_type: "{acc == 'f32' ? 'f32' : 'b32'}"
               layout_tv: "((4,8,4),(2,2,{n / 8})):((128,1,16),(64,8,512))" }
    operands { name: "a" role: REGISTERS direction: IN element_type: "{ab}" values: 8 registers: 4
               register_type: "b32" layout_tv: "((4,8,4),(2,2,2)):((128,1,16),(64,8,512))" when: "a_src == 'RS'" }
    operands { name: "a" role: SMEM_DESCRIPTOR direction: IN element_type: "{ab}" values_expr: "64 * k"
               layout_tv: "(128,(64,{k})):(0,(1,64))" when: "a_src == 'SS'" }
    operands { name: "b" role: SMEM_DESCRIPTOR direction: IN element_type: "{ab}" values_expr: "n * k"
               layout_tv: "(128,({n},{k})):(0,(1,{n}))" }
    attributes { name: "tnsp_a" type: "int" allowed: "0" allowed: "1" default_value: "0" when: "a_src == 'SS'" }
    ptx_template: "mma.m64n{n}k{k}.{acc}.{ab} {{seq(0, dregs, '$', ', ')}}, {a_src == 'RS' ? '{' + seq(dregs, 4, '$', ', ') + '}' : '$' + str(dregs)}, ${dregs + (a_src == 'RS' ? 4 : 1)}{a_src == 'SS' ? ', {tnsp_a}' : ''};"
    constraints: "{join(',', repeat(acc == 'f32' ? '=f' : '=r', dregs), a_src == 'RS' ? 'r,r,r,r' : 'l', 'l')}"
    sass_opcodes: "HGMMA.64x{n}x{k}.{upper(acc)}{ab == 'f16' ? '' : '.' + upper(ab)}"
  }
}
)pb";

Manifest toy() {
  Manifest m;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(kManifest, &m));
  return m;
}

TEST(AtomFamily, ToyManifestValidates) {
  auto problems = wp::validate_manifest(toy());
  std::string all;
  for (auto& p : problems) all += p + "\n";
  EXPECT_TRUE(problems.empty()) << all;
}

TEST(AtomFamily, ExpandsEveryTemplatedField) {
  Manifest m = toy();
  wp::FamilySet set(m);
  const wp::AtomFamily& f = set.families().at(0);
  auto ins = f.expand({wp::Value::of("f16"), wp::Value::of("f32"), wp::Value::of(16), wp::Value::of("SS")});
  EXPECT_EQ(ins.id(), "toy.mma.m64n16k16.f32.f16.ss");
  EXPECT_EQ(ins.shape_mnk(), "(64,16,16)");
  EXPECT_EQ(ins.python_params().at("shape_mnk"), "(64,16,16)");
  EXPECT_EQ(ins.python_params().at("ab_dtype"), "Float16");
  ASSERT_EQ(ins.operands_size(), 3);  // d, a (the SMEM form), b
  EXPECT_EQ(ins.operands(0).values(), 8u);
  EXPECT_EQ(ins.operands(0).registers(), 8u);
  EXPECT_EQ(ins.operands(0).register_type(), "f32");
  EXPECT_EQ(ins.operands(0).layout_tv(), "((4,8,4),(2,2,2)):((128,1,16),(64,8,512))");
  EXPECT_TRUE(ins.operands(0).values_expr().empty());
  EXPECT_EQ(ins.operands(1).role(), warpweave::manifest::Operand::SMEM_DESCRIPTOR);
  EXPECT_EQ(ins.operands(1).values(), 64u * 16u);
  EXPECT_EQ(ins.attributes_size(), 1);
  EXPECT_EQ(ins.ptx_template(), "mma.m64n16k16.f32.f16 {$0, $1, $2, $3, $4, $5, $6, $7}, $8, $9, {tnsp_a};");
  EXPECT_EQ(ins.constraints(), "=f,=f,=f,=f,=f,=f,=f,=f,l,l");
  EXPECT_EQ(ins.sass_opcodes(0), "HGMMA.64x16x16.F32");
  auto rs = f.expand({wp::Value::of("bf16"), wp::Value::of("f32"), wp::Value::of(8), wp::Value::of("RS")});
  EXPECT_EQ(rs.ptx_template(), "mma.m64n8k16.f32.bf16 {$0, $1, $2, $3}, {$4, $5, $6, $7}, $8;");
  EXPECT_EQ(rs.attributes_size(), 0);
  EXPECT_EQ(rs.sass_opcodes(0), "HGMMA.64x8x16.F32.BF16");
}

TEST(AtomFamily, CornersAndSeededSamplesAreInstances) {
  Manifest m = toy();
  wp::FamilySet set(m);
  const wp::AtomFamily& f = set.families().at(0);
  auto corners = f.corners();
  // 2^4 combinations of extremes, less those with bf16 and an f16 accumulator (4 of them).
  EXPECT_EQ(corners.size(), 12u);
  for (auto& c : corners) EXPECT_EQ(f.broken_rule(c), "") << f.describe(c);
  auto s1 = f.sample(7, 10), s2 = f.sample(7, 10), s3 = f.sample(8, 10);
  ASSERT_EQ(s1.size(), 10u);
  std::set<std::string> seen;
  for (auto& c : corners) seen.insert(f.describe(c));
  for (size_t i = 0; i < s1.size(); ++i) {
    EXPECT_EQ(f.describe(s1[i]), f.describe(s2[i]));  // the seed fixes the sample
    EXPECT_EQ(f.broken_rule(s1[i]), "");
    EXPECT_TRUE(seen.insert(f.describe(s1[i])).second) << "repeated " << f.describe(s1[i]);
  }
  bool differs = false;
  for (size_t i = 0; i < s1.size(); ++i) differs |= f.describe(s1[i]) != f.describe(s3[i]);
  EXPECT_TRUE(differs);
  // 3 legal type pairs x 8 N x 2 sources; a sample larger than what remains returns the rest.
  EXPECT_EQ(f.all(1000).size(), 48u);
  EXPECT_EQ(f.sample(1, 1000).size(), 48u - corners.size());
}

TEST(AtomFamily, EveryInstanceIsFoundByIdAndByPythonParameters) {
  Manifest m = toy();
  wp::FamilySet set(m);
  const wp::AtomFamily& f = set.families().at(0);
  std::set<std::string> ids;
  for (auto& a : f.all(1000)) {
    auto ins = f.expand(a);
    EXPECT_TRUE(ids.insert(ins.id()).second) << ins.id();
    auto by_id = f.select_id(ins.id());
    ASSERT_EQ(by_id.hits.size(), 1u) << ins.id();
    EXPECT_EQ(f.describe(by_id.hits[0]), f.describe(a));
    std::map<std::string, std::string> params(ins.python_params().begin(), ins.python_params().end());
    auto by_py = f.select_python(params);
    ASSERT_EQ(by_py.hits.size(), 1u) << f.describe(a);
    EXPECT_EQ(f.describe(by_py.hits[0]), f.describe(a));
  }
  // The default fills a_src.
  auto d = f.select_python({{"ab_dtype", "Float16"}, {"acc_dtype", "Float16"}, {"shape_mnk", "(64,24,16)"}});
  ASSERT_EQ(d.hits.size(), 1u);
  EXPECT_EQ(f.expand(d.hits[0]).id(), "toy.mma.m64n24k16.f16.f16.ss");
}

TEST(AtomFamily, ErrorsQuoteTheBrokenRuleInOneSentence) {
  Manifest m = toy();
  wp::FamilySet set(m);
  const wp::AtomFamily& f = set.families().at(0);
  auto bad_n = f.select_python({{"ab_dtype", "Float16"}, {"acc_dtype", "Float32"}, {"shape_mnk", "(64,12,16)"}});
  EXPECT_TRUE(bad_n.applies);
  ASSERT_EQ(bad_n.problems.size(), 1u);
  EXPECT_EQ(bad_n.problems[0], "warpgroup.ToyOp: shape_mnk (64,12,16) breaks \"N is a multiple of 8 from 8 to 64\"");
  auto bad_pair = f.select_python({{"ab_dtype", "BFloat16"}, {"acc_dtype", "Float16"}, {"shape_mnk", "(64,8,16)"}});
  ASSERT_EQ(bad_pair.problems.size(), 1u);
  EXPECT_EQ(bad_pair.problems[0],
            "warpgroup.ToyOp: ab_dtype BFloat16, acc_dtype Float16 breaks \"bf16 inputs accumulate in f32\"");
  auto bad_src = f.select_python({{"ab_dtype", "Float16"}, {"acc_dtype", "Float32"}, {"shape_mnk", "(64,8,16)"},
                                  {"a_src", "TMEM"}});
  ASSERT_EQ(bad_src.problems.size(), 1u);
  EXPECT_EQ(bad_src.problems[0], "warpgroup.ToyOp: a_src TMEM breaks \"a_src is SS or RS\"");
  auto bad_k = f.select_python({{"ab_dtype", "Float16"}, {"acc_dtype", "Float32"}, {"shape_mnk", "(64,8,32)"}});
  EXPECT_TRUE(bad_k.hits.empty());
  ASSERT_EQ(bad_k.problems.size(), 1u);
  EXPECT_NE(bad_k.problems[0].find("shape_mnk (64,8,32) is not what toy.mma offers"), std::string::npos)
      << bad_k.problems[0];
  // A number past 64 bits is no value of the domain (read unchecked, 2^64 + 8 wrapped to N = 8 and selected it).
  auto huge = f.select_python({{"ab_dtype", "Float16"}, {"acc_dtype", "Float32"},
                               {"shape_mnk", "(64,18446744073709551624,16)"}});
  EXPECT_TRUE(huge.hits.empty());
  ASSERT_EQ(huge.problems.size(), 1u);
  EXPECT_NE(huge.problems[0].find("breaks \"N is a multiple of 8 from 8 to 64\""), std::string::npos)
      << huge.problems[0];
  EXPECT_TRUE(f.select_id("toy.mma.m64n18446744073709551624k16.f32.f16.ss").hits.empty());
  // Another family's form: not an error of this one.
  auto other = f.select_python({{"shape_mnk", "(16,8,16)"}});
  EXPECT_FALSE(other.applies);
  EXPECT_TRUE(f.select_id("toy.mma.m64n12k16.f32.f16.ss").hits.empty());
  EXPECT_TRUE(f.select_id("toy.other").hits.empty());
}

TEST(AtomFamily, ValidationFindsBrokenFamilies) {
  auto problems_of = [](const std::string& from, const std::string& to) {
    std::string text = kManifest;
    size_t p = text.find(from);
    EXPECT_NE(p, std::string::npos) << from;
    text.replace(p, from.size(), to);
    Manifest m;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &m));
    std::string all;
    for (auto& e : wp::validate_manifest(m)) all += e + "\n";
    return all;
  };
  // An id that does not spell a_src: two instances share it.
  EXPECT_NE(problems_of(".{a_src == 'RS' ? 'rs' : 'ss'}\"", "\"").find("is that of another instance"),
            std::string::npos);
  // A constraint naming something that does not exist.
  EXPECT_NE(problems_of("acc == 'f32'\" }", "accum == 'f32'\" }").find("names accum"), std::string::npos);
  // A register count that disagrees with the template's operands, in some instance.
  EXPECT_NE(problems_of("registers_expr: \"dregs\"", "registers_expr: \"dregs + 1\"").find("operands"),
            std::string::npos);
  // A Python parameter that does not spell n: selection cannot tell instances apart.
  EXPECT_NE(problems_of("value: \"(64,{n},{k})\"", "value: \"(64,N,{k})\"").find("select"), std::string::npos);
  // A domain that is empty.
  EXPECT_NE(problems_of("min: 8 max: 64", "min: 80 max: 64").find("the range is empty"), std::string::npos);
  // Ranges at the ends of int64_t: their span and their steps are counted without overflowing.
  EXPECT_NE(problems_of("min: 8 max: 64 step: 8", "min: -9223372036854775808 max: 9223372036854775807")
                .find("the range has over 65536 values"), std::string::npos);
  EXPECT_EQ(problems_of("min: 8 max: 64 step: 8", "min: 9223372036854775800 max: 9223372036854775807 step: 4")
                .find("over 65536"), std::string::npos);
  // So many parameters that their corners (2^n) would not fit a 64-bit mask.
  std::string many;
  for (int i = 0; i < 64; ++i) many += "parameters { name: \"p" + std::to_string(i) + "\" set: 1 } ";
  EXPECT_NE(problems_of("parameters { name: \"a_src\"", many + "parameters { name: \"a_src\"")
                .find("has 68 parameters, more than 16"), std::string::npos);
  // A literal past 64 bits in a constraint: refused when the family is read, not wrapped.
  EXPECT_NE(problems_of("acc == 'f32'\" }", "acc == 'f32' && 889849906929769152928 > 0\" }")
                .find("does not fit in 64 bits"), std::string::npos);
}

// A plugin's load checks its families' descriptions only (validate_manifest without sample_families): an
// instance's own problems are found when it is selected, by id or by Python parameters, and the full validation
// (tools, the conformance manifest tier) still finds them up front.
TEST(AtomFamily, InstanceProblemsAreFoundWhenSelected) {
  std::string text = kManifest;
  const std::string from = "registers_expr: \"dregs\"";
  size_t p = text.find(from);
  ASSERT_NE(p, std::string::npos);
  text.replace(p, from.size(), "registers_expr: \"dregs + 1\"");
  Manifest m;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &m));
  std::string at_load;
  for (auto& e : wp::validate_manifest(m, /*sample_families=*/false)) at_load += e + "\n";
  EXPECT_TRUE(at_load.empty()) << at_load;
  std::string full;
  for (auto& e : wp::validate_manifest(m)) full += e + "\n";
  EXPECT_NE(full.find("operands"), std::string::npos) << full;

  wp::FamilySet set(m);
  const wp::AtomFamily& f = set.families().at(0);
  auto ins = f.expand(f.corners().at(0));
  try {
    set.select_id(ins.id());
    ADD_FAILURE() << "selecting the broken instance " << ins.id() << " by id succeeded";
  } catch (const wp::FamilyError& e) {
    EXPECT_NE(std::string(e.what()).find("operands"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(f.id()), std::string::npos) << e.what();
  }
  std::map<std::string, std::string> params(ins.python_params().begin(), ins.python_params().end());
  std::vector<std::string> problems;
  auto found = set.select_python(f.python_name(), params, problems);
  EXPECT_TRUE(found.empty());
  std::string said;
  for (auto& e : problems) said += e + "\n";
  EXPECT_NE(said.find("operands"), std::string::npos) << said;

  // The unbroken toy selects as before, and its instances are the same as expanded directly.
  Manifest good = toy();
  wp::FamilySet ok(good);
  const wp::AtomFamily& g = ok.families().at(0);
  auto gi = g.expand(g.corners().at(0));
  auto hit = ok.select_id(gi.id());
  ASSERT_TRUE(hit.has_value());
  warpweave::manifest::Instruction back;
  ASSERT_TRUE(back.ParseFromString(hit->binary));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(back, gi)) << back.DebugString();
}

}  // namespace
