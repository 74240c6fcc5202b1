// What loading a backend costs at every process start: its manifest parsed from text, validated (every thread-value
// layout a bijection), and written as the JSON that Python reads. Measured on the largest in-tree manifests.
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>
#include <string>

#include "manifest.pb.h"
#include "manifest_validation.hpp"

namespace {

using warpweave::manifest::Manifest;

std::string read_source(const std::string& rel) {
  std::ifstream f(std::string(WW_SOURCE_DIR) + "/" + rel);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const std::string& manifest_text(int which) {
  static const std::string texts[] = {read_source("backends/hopper/hopper.textproto"),
                                      read_source("backends/blackwell/blackwell.textproto")};
  return texts[which];
}

void set_label(benchmark::State& st) { st.SetLabel(st.range(0) == 0 ? "hopper" : "blackwell"); }

void BM_ParseManifest(benchmark::State& st) {
  const std::string& text = manifest_text(static_cast<int>(st.range(0)));
  for (auto _ : st) {
    Manifest m;
    benchmark::DoNotOptimize(ww::plugins::parse_manifest(text, m));
  }
  set_label(st);
}
BENCHMARK(BM_ParseManifest)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_ValidateManifest(benchmark::State& st) {
  Manifest m;
  (void)ww::plugins::parse_manifest(manifest_text(static_cast<int>(st.range(0))), m);
  for (auto _ : st) benchmark::DoNotOptimize(ww::plugins::validate_manifest(m));
  set_label(st);
}
BENCHMARK(BM_ValidateManifest)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_ManifestJson(benchmark::State& st) {
  Manifest m;
  (void)ww::plugins::parse_manifest(manifest_text(static_cast<int>(st.range(0))), m);
  for (auto _ : st) benchmark::DoNotOptimize(ww::plugins::manifest_json(m));
  set_label(st);
}
BENCHMARK(BM_ManifestJson)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
