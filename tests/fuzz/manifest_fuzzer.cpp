// libFuzzer target over manifest text (issue 15): whatever a plugin embeds, parsing, validation (families, their
// expressions and expansion included) and the JSON writer end in a list of problems or a valid manifest; never a
// crash, undefined behaviour, a leak, a hang or an allocation sized by an unchecked number. Built in the sanitizer
// build (build-asan/, clang) and run for a bounded time by CTest there.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ww/plugin_host/plugin_host.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::string json, name;
  auto problems = ww::plugins::PluginHost::validate_manifest_text(text, &json, &name);
  // A valid manifest has a name and a JSON form; an invalid one says why.
  if (problems.empty() && (json.empty() || json[0] != '{')) __builtin_trap();
  for (auto& p : problems)
    if (p.empty()) __builtin_trap();
  return 0;
}
