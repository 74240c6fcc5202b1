// The manifest JSON that Python reads at every start is protobuf's JSON mapping, written by our own reflection
// walk (core/plugin_host/manifest_json.cpp). Its defining property: protobuf's own JSON parser reads it back into
// the same message, and every scalar field is there even at its default (Python indexes them directly).
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "manifest.pb.h"
#include "manifest_validation.hpp"

namespace {

namespace pb = google::protobuf;
using warpweave::manifest::Manifest;

std::string read(const std::string& rel) {
  std::ifstream f(std::string(WW_SOURCE_DIR) + "/" + rel);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void expect_round_trip(const Manifest& m, const std::string& what) {
  const std::string json = ww::plugins::manifest_json(m);
  Manifest back;
  const auto status = pb::util::JsonStringToMessage(json, &back);
  ASSERT_TRUE(status.ok()) << what << ": " << status.ToString();
  std::string report;
  pb::util::MessageDifferencer diff;
  diff.ReportDifferencesToString(&report);
  EXPECT_TRUE(diff.Compare(m, back)) << what << ":\n" << report;
}

TEST(ManifestJson, EveryInTreeManifestRoundTrips) {
  for (const char* rel : {"backends/ampere/ampere.textproto", "backends/hopper/hopper.textproto",
                          "backends/blackwell/blackwell.textproto",
                          "backends/blackwell_geforce/blackwell_geforce.textproto",
                          "plugins_api/examples/b1_mma/example_b1.textproto"}) {
    Manifest m;
    const std::string text = read(rel);
    ASSERT_FALSE(text.empty()) << rel;
    ASSERT_TRUE(ww::plugins::parse_manifest(text, m).empty()) << rel;
    expect_round_trip(m, rel);
  }
}

TEST(ManifestJson, ScalarsArePrintedAtTheirDefaults) {
  Manifest m;
  m.set_name("x");
  auto* a = m.add_atoms();
  a->set_id("x.a");
  const std::string json = ww::plugins::manifest_json(m);
  for (const char* key : {"\"has_side_effects\":false", "\"layout_unit_bits\":0", "\"ptx_template\":\"\"",
                          "\"kind\":\"KIND_UNSPECIFIED\"", "\"targets\":[]", "\"python_params\":{}", "\"abi_version\":0"})
    EXPECT_NE(json.find(key), std::string::npos) << key << " in " << json;
  expect_round_trip(m, "defaults");
}

TEST(ManifestJson, StringsAreEscaped) {
  Manifest m;
  m.set_name("quote \" backslash \\ newline \n tab \t control \x01 unicode \xc3\xa9");
  auto* a = m.add_atoms();
  (*a->mutable_python_params())["k\"ey"] = "va\\lue";
  expect_round_trip(m, "escapes");
}

}  // namespace
