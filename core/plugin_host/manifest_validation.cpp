// Manifest validation: the schema and the invariants the core relies on, one message per problem.
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "atom_family.hpp"
#include "manifest.pb.h"
#include "manifest_validation.hpp"
#include "warpweave/plugin_abi.h"
#include "ww/layout/error.hpp"
#include "ww/layout/notation.hpp"

namespace ww::plugins {
namespace {

namespace pb = google::protobuf;
using warpweave::manifest::Instruction;
using warpweave::manifest::Manifest;
using warpweave::manifest::Operand;

class Collector : public pb::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    errors.push_back(std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": " + message);
  }
  void AddWarning(int line, int column, const std::string& message) override {
    errors.push_back(std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": " + message);
  }
  std::vector<std::string> errors;
};

// Bounds on every number a manifest gives, far above what any instruction needs: a hostile or mistyped manifest
// is refused at once with a message, instead of sizing allocations (a tile of 16 x 400000000) or wrapping
// (an operand $4294967309 read as $13).
constexpr int64_t kMaxOperandIndex = 4095;      // $N in a template
constexpr int64_t kMaxRegisters = 1024;         // PTX registers of one operand (an sm_90 accumulator has 128)
constexpr int64_t kMaxCount = 1024;             // operands of a non-register role
constexpr int64_t kMaxValues = int64_t{1} << 16;  // values per thread of one operand
constexpr int64_t kMaxExtent = int64_t{1} << 16;  // each of M, N, K
constexpr int64_t kMaxTile = int64_t{1} << 22;    // M*K, N*K, M*N: the tiles whose coverage is checked point by point
constexpr int64_t kMaxThreads = 4096;           // threads of an atom (thr_id's size)
constexpr int64_t kMaxUnitBits = 1024;          // layout_unit_bits
constexpr int64_t kMaxComputeCapability = 10000;
constexpr int64_t kMaxThreadsPerBlock = 4096;   // a target's launch limits
constexpr int64_t kMaxClusterSize = 64;
// The tensor-map element formats whose loads unpack narrow values into shared memory (Target.tma_unpacking).
const std::set<std::string> kTmaUnpackingFormats = {"16U4_ALIGN8B", "16U4_ALIGN16B", "16U6_ALIGN16B"};

// Count of distinct $N operand references in an inline-asm template, as max index + 1; -1 (and the index as text
// in `bad`) when one is beyond kMaxOperandIndex.
int template_operands(const std::string& t, std::string* bad) {
  int n = 0;
  for (size_t i = 0; i + 1 < t.size(); ++i) {
    if (t[i] == '$' && std::isdigit(static_cast<unsigned char>(t[i + 1]))) {
      size_t j = i + 1;
      int64_t v = 0;
      while (j < t.size() && std::isdigit(static_cast<unsigned char>(t[j]))) {
        if (v <= kMaxOperandIndex) v = v * 10 + (t[j] - '0');
        ++j;
      }
      if (v > kMaxOperandIndex) {
        *bad = t.substr(i, std::min<size_t>(j - i, 24));
        return -1;
      }
      n = std::max(n, static_cast<int>(v) + 1);
    }
  }
  return n;
}

// The attributes a template names as {identifier}. (PTX's own braces hold operand lists, never a bare
// identifier.) A scan, not std::regex: this runs once per instruction of every manifest at load.
std::vector<std::string> template_attributes(const std::string& t) {
  auto ident = [](char c, bool first) {
    const auto u = static_cast<unsigned char>(c);
    return std::isalpha(u) || c == '_' || (!first && std::isdigit(u));
  };
  std::vector<std::string> out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] != '{' || i + 1 >= t.size() || !ident(t[i + 1], true)) continue;
    size_t j = i + 2;
    while (j < t.size() && ident(t[j], false)) ++j;
    if (j < t.size() && t[j] == '}') out.push_back(t.substr(i + 1, j - i - 1));
  }
  return out;
}

int constraint_operands(const std::string& c) {
  if (c.empty()) return 0;
  int n = 0;
  std::stringstream ss(c);
  std::string part;
  while (std::getline(ss, part, ',')) {
    if (part.rfind("~{", 0) == 0) continue;  // clobbers
    ++n;
  }
  return n;
}

// Template operands an operand takes (its registers or count, each bounded by validate_instruction).
int64_t operand_slots(const Operand& o) {
  if (o.role() == Operand::REGISTERS) return std::min<int64_t>(o.registers(), kMaxRegisters);
  return o.count() ? std::min<int64_t>(o.count(), kMaxCount) : 1;
}

// True when the layout's leaves (shape > 1), sorted by stride, have strides 1, s0, s0*s1, ...
bool is_compact_permutation(const Layout& f) {
  std::vector<std::pair<int64_t, int64_t>> leaves;  // (stride, shape)
  std::vector<IntTuple> shapes = flatten_leaves(f.shape()), strides = flatten_leaves(f.stride());
  for (size_t i = 0; i < shapes.size(); ++i) {
    int64_t sh = shapes[i].value().value(), st = strides[i].value().value();
    if (sh == 1) continue;
    if (st <= 0) return false;
    leaves.emplace_back(st, sh);
  }
  std::sort(leaves.begin(), leaves.end());
  int64_t expect = 1;
  for (auto& [st, sh] : leaves) {
    if (st != expect) return false;
    expect *= sh;
  }
  return true;
}

// Layout checks: `size` points of the (thread, value) domain land exactly once on [0, size) once stride-0
// (broadcast) modes are set aside.
std::string check_bijection(const std::string& text, int64_t expect_size, int64_t tile) {
  try {
    Layout l = parse_layout(text);
    if (!l.is_static()) return "layout " + text + " is not static";
    if (expect_size > 0 && l.size().value() != expect_size)
      return "layout " + text + " has size " + std::to_string(l.size().value()) + ", expected " +
             std::to_string(expect_size) + " (threads x values)";
    Layout f = filter_zeros(l);
    int64_t n = f.size().value();
    // A layout is a bijection onto [0, n) exactly when its non-trivial modes, sorted by stride, are compact
    // (strides 1, s0, s0*s1, ...). That takes microseconds where visiting every point of a large atom (a wgmma
    // layout has hundreds of thousands) takes milliseconds; the points are visited only to explain a failure.
    if (is_compact_permutation(f) && (tile <= 0 || n == tile)) return {};
    if (n > (int64_t{1} << 22)) return "layout " + text + " is too large to check";
    std::vector<char> seen(static_cast<size_t>(tile > 0 ? tile : n), 0);
    for (int64_t i = 0; i < n; ++i) {
      int64_t v = f(IntTuple(i)).value().value();
      if (v < 0 || v >= static_cast<int64_t>(seen.size()))
        return "layout " + text + " maps " + std::to_string(i) + " to " + std::to_string(v) + ", outside the tile of " +
               std::to_string(seen.size());
      if (seen[v]++) return "layout " + text + " is not injective: offset " + std::to_string(v) + " is reached twice";
    }
    if (tile > 0 && n != tile)
      return "layout " + text + " covers " + std::to_string(n) + " of the " + std::to_string(tile) +
             " positions of the tile";
    return {};
  } catch (const std::exception& e) {
    return "layout " + text + ": " + e.what();
  }
}

void validate_instruction(const Instruction& ins, bool is_atom, const std::string& backend,
                          const std::set<std::string>& targets, std::vector<std::string>& out) {
  std::string what = std::string(is_atom ? "atom " : "primitive ") + (ins.id().empty() ? "<no id>" : ins.id());
  auto err = [&](const std::string& m) { out.push_back(what + ": " + m); };
  if (ins.id().empty()) err("needs an id");
  if (ins.id().rfind(backend + ".", 0) != 0) err("its id must start with \"" + backend + ".\"");
  if (ins.kind() == warpweave::manifest::KIND_UNSPECIFIED) err("needs a kind");
  if (ins.targets().empty()) err("names no target");
  for (auto& t : ins.targets())
    if (!targets.count(t)) err("names the unknown target \"" + t + "\"");
  bool has_template = !ins.ptx_template().empty(), has_hook = !ins.lowering_hook().empty();
  if (has_template == has_hook) err("needs exactly one of ptx_template and lowering_hook");
  if (is_atom && ins.python_name().empty()) err("needs a python_name (the Python class it appears as)");
  if (!ins.cubin_tool().empty() && ins.cubin_tool() != "ptxas")
    err("cubin_tool \"" + ins.cubin_tool() + "\" is not \"ptxas\" (the only tool an instruction can ask for)");
  if (ins.layout_unit_bits() > kMaxUnitBits)
    err("layout_unit_bits " + std::to_string(ins.layout_unit_bits()) + " is above " + std::to_string(kMaxUnitBits));
  int64_t slots = 0;
  bool seen_input = false;
  for (auto& o : ins.operands()) {
    if (o.registers() > kMaxRegisters)
      err("operand " + o.name() + ": registers " + std::to_string(o.registers()) + " is above " +
          std::to_string(kMaxRegisters));
    if (o.count() > kMaxCount)
      err("operand " + o.name() + ": count " + std::to_string(o.count()) + " is above " + std::to_string(kMaxCount));
    if (o.values() > kMaxValues)
      err("operand " + o.name() + ": values " + std::to_string(o.values()) + " is above " + std::to_string(kMaxValues));
    // The template numbers results first ($0..), then inputs, in the order the operands are listed. An address
    // operand marked OUT names a copy's destination: the instruction takes it as an input.
    bool result = o.direction() == Operand::OUT &&
                  (o.role() == Operand::REGISTERS || o.role() == Operand::SCALAR || o.role() == Operand::PREDICATE ||
                   o.role() == Operand::COORDINATE);
    if (result && seen_input) err("result operand " + o.name() + " is listed after an input");
    if (!result) seen_input = true;
    if (o.direction() == Operand::INOUT) err("operand " + o.name() + ": INOUT is not supported; list an output and an input");
    slots += operand_slots(o);
    if (o.role() == Operand::ROLE_UNSPECIFIED) err("operand " + o.name() + " needs a role");
    if (o.role() == Operand::REGISTERS && (o.registers() == 0 || o.values() == 0))
      err("register operand " + o.name() + " needs values and registers");
  }
  if (has_template) {
    std::string bad;
    int t = template_operands(ins.ptx_template(), &bad), c = constraint_operands(ins.constraints());
    if (t < 0)
      err("the template names the operand " + bad + ", beyond the largest index " + std::to_string(kMaxOperandIndex));
    else if (t != c) err("the template uses " + std::to_string(t) + " operands but the constraints list " + std::to_string(c));
    if (t >= 0 && t != slots) err("the template uses " + std::to_string(t) + " operands but the operands provide " + std::to_string(slots));
    std::set<std::string> declared;
    for (auto& a : ins.attributes()) declared.insert(a.name());
    for (const std::string& name : template_attributes(ins.ptx_template()))
      if (!declared.count(name)) err("the template uses the undeclared attribute {" + name + "}");
  }
  int64_t threads = 0;
  if (!ins.thr_id().empty()) {
    try {
      threads = parse_layout(ins.thr_id()).size().value();
      if (threads < 1 || threads > kMaxThreads) {
        err("thr_id " + ins.thr_id() + " has " + std::to_string(threads) + " threads, outside 1.." +
            std::to_string(kMaxThreads));
        threads = 0;
      }
    } catch (const std::exception& e) {
      err(std::string("thr_id: ") + e.what());
    }
  }
  if (ins.kind() == warpweave::manifest::MMA) {
    int64_t m = 0, n = 0, k = 0;
    try {
      IntTuple s = parse_int_tuple(ins.shape_mnk());
      if (s.rank() != 3) throw LayoutError("expected (M,N,K)");
      m = s[0].value().value(), n = s[1].value().value(), k = s[2].value().value();
      // Each extent bounded first, so that the products below cannot overflow; then the tiles whose coverage is
      // checked point by point (their size is allocated).
      for (int64_t e : {m, n, k})
        if (e < 1 || e > kMaxExtent)
          throw LayoutError("each extent must be in 1.." + std::to_string(kMaxExtent) + ", not " + std::to_string(e));
      for (int64_t tile : {m * k, n * k, m * n})
        if (tile > kMaxTile)
          throw LayoutError("an operand tile of " + std::to_string(tile) + " elements is above " +
                            std::to_string(kMaxTile));
    } catch (const std::exception& e) {
      err("shape_mnk \"" + ins.shape_mnk() + "\": " + e.what());
      m = n = k = 0;
    }
    if (threads == 0 && ins.thr_id().empty()) err("an MMA atom needs thr_id");
    for (auto& o : ins.operands()) {
      if (o.layout_tv().empty() || m == 0 || threads == 0 || o.values() > kMaxValues) continue;
      int64_t tile = (o.name() == "a") ? m * k : (o.name() == "b") ? n * k : m * n;
      if (auto p = check_bijection(o.layout_tv(), threads * o.values(), tile); !p.empty())
        err("operand " + o.name() + ": " + p);
    }
    for (const char* name : {"a", "b", "d"}) {
      bool found = false;
      for (auto& o : ins.operands()) found |= o.name() == name;
      if (!found && !(std::string(name) == "a" && has_hook)) err(std::string("an MMA atom needs an operand named ") + name);
    }
  } else if (ins.kind() == warpweave::manifest::COPY) {
    for (auto& o : ins.operands()) {
      if (o.layout_tv().empty()) continue;
      if (auto p = check_bijection(o.layout_tv(), 0, 0); !p.empty()) err("operand " + o.name() + ": " + p);
    }
  }
}

}  // namespace

std::vector<std::string> validate_manifest(const Manifest& m, bool sample_families) {
  std::vector<std::string> out;
  if (!std::regex_match(m.name(), std::regex("[a-z][a-z0-9_]*")))
    out.push_back("the name \"" + m.name() + "\" must be lower-case letters, digits and _");
  if (m.abi_version() != WW_PLUGIN_ABI_VERSION)
    out.push_back("abi_version " + std::to_string(m.abi_version()) + ", the core expects " +
                  std::to_string(WW_PLUGIN_ABI_VERSION));
  std::set<std::string> bases;
  for (auto& b : m.extends()) {
    if (b == m.name()) out.push_back("it extends itself (extends \"" + b + "\")");
    else if (!std::regex_match(b, std::regex("[a-z][a-z0-9_]*")) || !bases.insert(b).second)
      out.push_back("extends \"" + b + "\": a base is the manifest name of another backend, named once");
  }
  std::set<std::string> targets;
  for (auto& t : m.targets()) {
    if (t.name().empty() || !targets.insert(t.name()).second)
      out.push_back("target \"" + t.name() + "\" is empty or repeated");
    if (t.compute_capability() == 0) out.push_back("target " + t.name() + " needs a compute_capability");
    if (t.compute_capability() > kMaxComputeCapability)
      out.push_back("target " + t.name() + ": compute_capability " + std::to_string(t.compute_capability()) +
                    " is above " + std::to_string(kMaxComputeCapability));
    if (t.max_threads_per_block() > kMaxThreadsPerBlock)
      out.push_back("target " + t.name() + ": max_threads_per_block " + std::to_string(t.max_threads_per_block()) +
                    " is above " + std::to_string(kMaxThreadsPerBlock));
    if (t.max_cluster_size() > kMaxClusterSize)
      out.push_back("target " + t.name() + ": max_cluster_size " + std::to_string(t.max_cluster_size()) +
                    " is above " + std::to_string(kMaxClusterSize));
    for (uint32_t cc : t.also_serves())
      if (cc == 0 || cc > kMaxComputeCapability)
        out.push_back("target " + t.name() + ": also_serves " + std::to_string(cc) + " is not a compute capability");
    std::set<std::string> unpacking;
    for (auto& f : t.tma_unpacking()) {
      if (!kTmaUnpackingFormats.count(f))
        out.push_back("target " + t.name() + ": tma_unpacking \"" + f +
                      "\" is not a tensor-map element format that unpacks (16U4_ALIGN8B 16U4_ALIGN16B 16U6_ALIGN16B)");
      else if (!unpacking.insert(f).second)
        out.push_back("target " + t.name() + ": tma_unpacking \"" + f + "\" is repeated");
    }
  }
  std::set<std::string> ids;
  for (auto& a : m.atoms()) {
    if (!ids.insert(a.id()).second) out.push_back("atom " + a.id() + ": the id is repeated");
    validate_instruction(a, true, m.name(), targets, out);
  }
  for (auto& p : m.primitives()) {
    if (!ids.insert(p.id()).second) out.push_back("primitive " + p.id() + ": the id is repeated");
    validate_instruction(p, false, m.name(), targets, out);
  }
  validate_families(m, ids, out, sample_families);
  return out;
}

std::vector<std::string> validate_family_instances(const Manifest& m, uint64_t seed, size_t sample) {
  std::set<std::string> ids;
  for (auto& a : m.atoms()) ids.insert(a.id());
  for (auto& p : m.primitives()) ids.insert(p.id());
  std::vector<std::string> out;
  validate_families(m, ids, out, /*sample_instances=*/true, seed, sample);
  return out;
}

std::vector<std::string> validate_instance(const Instruction& ins, bool is_atom, const Manifest& m) {
  std::set<std::string> targets;
  for (auto& t : m.targets()) targets.insert(t.name());
  std::vector<std::string> out;
  validate_instruction(ins, is_atom, m.name(), targets, out);
  return out;
}

std::vector<std::string> parse_manifest(const std::string& text, Manifest& m) {
  Collector errors;
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &m)) {
    if (errors.errors.empty()) errors.errors.push_back("the manifest does not parse");
    return errors.errors;
  }
  return {};
}

}  // namespace ww::plugins
