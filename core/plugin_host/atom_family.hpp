#pragma once
// Atom families (manifest.proto, message Family): one description of an instruction over parameters, expanded into
// instances when one is selected. Private to the plugin host.
//
// An instance is named by an assignment (one value per parameter, in the family's order) that lies in every
// parameter's domain and satisfies every constraint. Selection inverts the template: the Python parameters (or
// the id) are matched against their templated text, which binds the parameters they spell ({n}, or {dsl(t)} through
// the element type table); the parameters left unbound are searched over their domains. A value outside a domain
// or a broken constraint is reported with the rule's own sentence.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "family_expression.hpp"
#include "manifest.pb.h"

namespace ww::plugins {

using Assignment = std::vector<Value>;  // one value per parameter, in the family's order

class AtomFamily {
 public:
  // Checks the family's shape (names, domains, every expression parses and names what exists); throws FamilyError.
  AtomFamily(const warpweave::manifest::Family& f, const std::vector<ElementInfo>* types);

  const warpweave::manifest::Family& proto() const { return *f_; }
  const std::string& id() const { return f_->id(); }
  const std::string& python_name() const { return f_->template_().python_name(); }
  const std::vector<std::string>& parameter_names() const { return names_; }

  // "" when the assignment is an instance, else the rule it breaks (the domain's or a constraint's sentence).
  std::string broken_rule(const Assignment& a) const;
  // The instance: every templated field expanded. Throws FamilyError when an expression fails.
  warpweave::manifest::Instruction expand(const Assignment& a) const;
  std::string describe(const Assignment& a) const;  // "n=128, ab=f16"

  // The legal corners: every combination of each parameter's extremes (first and last value) that is an instance.
  std::vector<Assignment> corners() const;
  // Up to `n` further instances drawn with a seeded generator (distinct, no corner repeated); every remaining
  // instance when fewer than that many remain.
  std::vector<Assignment> sample(uint64_t seed, size_t n) const;
  // Every instance, up to `limit`.
  std::vector<Assignment> all(size_t limit) const;

  struct Selection {
    bool applies = false;                // the parameters have this family's form (names and literal text)
    std::vector<Assignment> hits;        // instances whose Python parameters are exactly those asked for
    std::vector<std::string> problems;   // when applies and no hit: one sentence each, quoting the broken rule
  };
  // By Python parameters (canonical spellings, e.g. {"shape_mnk": "(64,128,16)"}); the template's python_defaults
  // fill the names left out.
  Selection select_python(const std::map<std::string, std::string>& params) const;
  // By instance id.
  Selection select_id(const std::string& id) const;

 private:
  struct Domain {
    std::vector<Value> values;  // every legal value, in order
    std::string rule;
  };
  struct Compiled;  // parsed expressions and templated strings
  Scope scope_of(const Assignment& a, std::vector<Value>& derived) const;
  bool in_domain(size_t p, const Value& v) const;
  // Constraints checkable once parameters [0, depth) are set: index of the first broken one at that depth, or -1.
  int first_broken(const Assignment& a, size_t depth) const;
  std::string rule_of(int constraint) const;
  Selection select_text(const std::map<std::string, std::string>& given, bool by_id) const;

  const warpweave::manifest::Family* f_;
  const std::vector<ElementInfo>* types_;
  std::vector<std::string> names_;
  std::vector<Domain> domains_;
  std::shared_ptr<const Compiled> c_;
};

// The families of one manifest, with the manifest they live in, and memoised expansions.
class FamilySet {
 public:
  // Throws FamilyError naming the family whose description is broken.
  explicit FamilySet(const warpweave::manifest::Manifest& m);

  const std::vector<AtomFamily>& families() const { return families_; }
  const AtomFamily* find(const std::string& family_id) const;
  const std::string& backend() const { return m_.name(); }

  struct Found {
    const AtomFamily* family;
    std::string binary;  // the instance: a serialized Instruction
  };
  // Memoised: each distinct request expands once per process.
  std::vector<Found> select_python(const std::string& python_name, const std::map<std::string, std::string>& params,
                                   std::vector<std::string>& problems) const;
  std::optional<Found> select_id(const std::string& id) const;
  std::string instance_binary(const AtomFamily& f, const Assignment& a) const;

 private:
  // What validate_manifest says of the instance as a plain entry (and of element types it names undeclared).
  std::vector<std::string> instance_problems(const AtomFamily& f, const Assignment& a,
                                             std::string* binary) const;

  warpweave::manifest::Manifest m_;   // owns the families the AtomFamily objects point into
  std::vector<ElementInfo> types_;
  std::vector<AtomFamily> families_;
  mutable std::mutex mutex_;
  mutable std::unordered_map<std::string, std::pair<std::vector<Found>, std::vector<std::string>>> by_python_;
  mutable std::unordered_map<std::string, std::optional<Found>> by_id_;
};

// manifest_validation.cpp calls this: every family's shape, its legal corners and `sample` further instances drawn
// with `seed` expanded and validated as instructions, ids unique (among them and against `ids`, the plain entries'
// ids), and selection by Python parameters and by id returning each sampled instance.
// Without sample_instances: only the element types, the family descriptions and their ids.
void validate_families(const warpweave::manifest::Manifest& m, const std::set<std::string>& ids,
                       std::vector<std::string>& out, bool sample_instances = true, uint64_t seed = 1,
                       size_t sample = 12);

}  // namespace ww::plugins
