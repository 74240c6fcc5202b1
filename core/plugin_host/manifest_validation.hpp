#pragma once
// Private: parsing and validating manifests (the only place protobuf types are used).
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "manifest.pb.h"

namespace ww::plugins {

std::vector<std::string> parse_manifest(const std::string& text, warpweave::manifest::Manifest& m);
// sample_families: also expand and check each family's corners and a seeded sample (validate_families). Loading a
// plugin leaves that out: each instance is checked when it is first selected (FamilySet), so a load costs what the
// manifest's plain entries and family descriptions cost, not a sample of every family (11 ms for Hopper's).
std::vector<std::string> validate_manifest(const warpweave::manifest::Manifest& m, bool sample_families = true);
// The conformance suite's manifest tier: the instances it enumerates (each family's corners, then `sample` more drawn
// with `seed`) checked as validate_manifest checks its few: as plain entries, ids unique, each found again by
// selection. A loaded plugin's families were checked without instances, so this is where a broken one shows.
std::vector<std::string> validate_family_instances(const warpweave::manifest::Manifest& m, uint64_t seed,
                                                   size_t sample);
// plugin_discovery.cpp: the top-level name, version and targets fields of a text-format manifest, copied out
// verbatim (empty if the text is not laid out as expected).
std::string summary_fields(std::string_view text);
// manifest_json.cpp: the protobuf JSON mapping (field names as in the proto, every scalar printed).
std::string manifest_json(const warpweave::manifest::Manifest& m);
// The same mapping for any message of the schema (an expanded family instance is an Instruction).
std::string message_json(const google::protobuf::Message& m);
// The checks of one atom (is_atom) or primitive against manifest m's targets: what validate_manifest says of a
// plain entry, used for the instances of families.
// atom_family.cpp: the families of a validated manifest, ready to expand.
std::shared_ptr<const class FamilySet> make_family_set(const warpweave::manifest::Manifest& m);
std::vector<std::string> validate_instance(const warpweave::manifest::Instruction& ins, bool is_atom,
                                           const warpweave::manifest::Manifest& m);

}  // namespace ww::plugins
