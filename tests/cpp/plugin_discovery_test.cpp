// Discovery reads a plugin's name, version, targets, Python package and bases from the top-level fields of its
// manifest text without parsing its atoms (core/plugin_host/plugin_discovery.cpp). Its defining property: what it
// reads equals what the whole parse gives, for every manifest in the tree and for texts laid out to mislead a scan
// (braces and quotes inside strings and comments, targets after the atoms, the short `field {` and `field: <...>`
// forms).
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "manifest.pb.h"
#include "manifest_validation.hpp"

namespace {

using warpweave::manifest::Manifest;

std::string read(const std::string& rel) {
  std::ifstream f(std::string(WW_SOURCE_DIR) + "/" + rel);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The summary's fields as the whole parse has them.
void expect_summary_matches(const std::string& text, const std::string& what) {
  Manifest full;
  ASSERT_TRUE(ww::plugins::parse_manifest(text, full).empty()) << what;
  const std::string summary = ww::plugins::summary_fields(text);
  Manifest part;
  ASSERT_TRUE(ww::plugins::parse_manifest(summary, part).empty()) << what << ":\n" << summary;
  Manifest expected;
  expected.set_name(full.name());
  expected.set_version(full.version());
  *expected.mutable_targets() = full.targets();
  if (full.has_python_package()) *expected.mutable_python_package() = full.python_package();  // its module map
  *expected.mutable_extends() = full.extends();  // the bases, loaded first
  std::string report;
  google::protobuf::util::MessageDifferencer diff;
  diff.ReportDifferencesToString(&report);
  EXPECT_TRUE(diff.Compare(expected, part)) << what << ":\n" << report;
}

TEST(PluginDiscovery, SummaryOfEveryInTreeManifest) {
  for (const char* rel : {"backends/ampere/ampere.textproto", "backends/hopper/hopper.textproto",
                          "backends/blackwell/blackwell.textproto",
                          "backends/blackwell_geforce/blackwell_geforce.textproto",
                          "plugins_api/examples/b1_mma/example_b1.textproto"}) {
    const std::string text = read(rel);
    ASSERT_FALSE(text.empty()) << rel;
    expect_summary_matches(text, rel);
    // Proportional to what it keeps: a backend's thousands of atoms are not in it.
    EXPECT_LT(ww::plugins::summary_fields(text).size(), 4096u) << rel;
  }
}

TEST(PluginDiscovery, SummaryIsNotMisledByStringsCommentsOrOrder) {
  const std::string text = R"pb(
# a comment with a brace { and a quote " that a scan must not count
name: "tricky"  # trailing } comment
atoms {
  id: "tricky.one"
  ptx_template: "mov.b32 {$0, $1}, \"}\" # not a comment {"
  description: 'single } quoted { with \' escapes'
}
targets { name: "sm_80" compute_capability: 80 llvm_cpu: "sm_80" jit_arch: "sm_80" also_serves: [86, 87] }
primitives <
  id: "tricky.two"
  ptx_template: "}}}"
>
version: "1.2.3";
targets: {
  name: "sm_90a"  # { }
  compute_capability: 90
  arch_specific: true
}
)pb";
  expect_summary_matches(text, "tricky");
  Manifest part;
  ASSERT_TRUE(ww::plugins::parse_manifest(ww::plugins::summary_fields(text), part).empty());
  ASSERT_EQ(part.targets_size(), 2);
  EXPECT_EQ(part.targets(1).name(), "sm_90a");
  EXPECT_EQ(part.atoms_size(), 0);
  EXPECT_EQ(part.version(), "1.2.3");
}

TEST(PluginDiscovery, UnusualTextGivesAnEmptySummary) {
  // Not a field name where one must be: the caller falls back to the whole parse.
  EXPECT_EQ(ww::plugins::summary_fields("{ name: \"x\" }"), "");
  EXPECT_EQ(ww::plugins::summary_fields(""), "");
}

}  // namespace
