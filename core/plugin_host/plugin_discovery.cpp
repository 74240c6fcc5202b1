// Discovery: what a plugin offers (its name, version and targets) read without parsing its whole manifest, so
// that a process loads only the backends its target needs. A backend's manifest can hold thousands of atoms; its
// targets are a few top-level fields, copied out of the text by a scan that only counts braces and skips strings
// and comments, then parsed on their own.
#define BOOST_DLL_USE_STD_FS 1
#include <algorithm>
#include <array>
#include <boost/dll/shared_library.hpp>
#include <cctype>
#include <mutex>
#include <optional>
#include <string_view>

#include "manifest_validation.hpp"
#include "plugin_library.hpp"
#include "ww/plugin_host/plugin_host.hpp"

namespace ww::plugins {
namespace {

std::mutex g_discovery_mutex;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

size_t skip_space_and_comments(std::string_view t, size_t i) {
  while (i < t.size()) {
    if (is_space(t[i])) {
      ++i;
    } else if (t[i] == '#') {
      size_t nl = t.find('\n', i);
      i = nl == std::string_view::npos ? t.size() : nl + 1;
    } else {
      break;
    }
  }
  return i;
}

// Past the string literal that starts at i (its quote), escapes included.
size_t skip_string(std::string_view t, size_t i) {
  char q = t[i++];
  while (i < t.size() && t[i] != q) {
    if (t[i] == '\\' && i + 1 < t.size()) {
      i += 2;
      continue;
    }
    if (t[i] == '\n') return i;  // an unterminated string: the parse of the extract reports it
    ++i;
  }
  return std::min(i + 1, t.size());
}

// Past the bracketed value that opens at i ('{', '<' or '['): nesting counted, strings and comments skipped.
size_t skip_bracketed(std::string_view t, size_t i) {
  static const auto special = [] {
    std::array<bool, 256> s{};
    for (unsigned char c : std::string_view("{}<>[]\"'#")) s[c] = true;
    return s;
  }();
  int depth = 0;
  while (i < t.size()) {
    const char c = t[i];
    if (!special[static_cast<unsigned char>(c)]) {
      ++i;
      continue;
    }
    switch (c) {
      case '"':
      case '\'':
        i = skip_string(t, i);
        continue;
      case '#': {
        size_t nl = t.find('\n', i);
        i = nl == std::string_view::npos ? t.size() : nl + 1;
        continue;
      }
      case '{':
      case '<':
      case '[':
        ++depth;
        break;
      default:
        if (--depth == 0) return i + 1;
    }
    ++i;
  }
  return i;
}

// Past one value of a field (after its optional ':'): a message, a list, adjacent strings or a bare token.
size_t skip_value(std::string_view t, size_t i) {
  if (i >= t.size()) return i;
  const char c = t[i];
  if (c == '{' || c == '<' || c == '[') return skip_bracketed(t, i);
  if (c == '"' || c == '\'') {
    do {
      i = skip_space_and_comments(t, skip_string(t, i));
    } while (i < t.size() && (t[i] == '"' || t[i] == '\''));
    return i;
  }
  while (i < t.size() && !is_space(t[i]) && std::string_view("#{}[]<>:;,\"'").find(t[i]) == std::string_view::npos)
    ++i;
  return i;
}

// python_package too: its module map says which public module names the backend serves, so that importing one
// loads only that backend; and extends, the bases a backend is loaded after.
bool wanted_field(std::string_view name) {
  return name == "name" || name == "version" || name == "targets" || name == "python_package" || name == "extends";
}

}  // namespace

std::string summary_fields(std::string_view text) {
  std::string out;
  size_t i = skip_space_and_comments(text, 0);
  while (i < text.size()) {
    const size_t start = i;
    while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_' || text[i] == '.' ||
                               text[i] == '[' || text[i] == ']' || text[i] == '/'))
      ++i;
    if (i == start) return {};  // not text format as expected: the caller parses the whole manifest instead
    std::string_view name = text.substr(start, i - start);
    i = skip_space_and_comments(text, i);
    if (i < text.size() && text[i] == ':') i = skip_space_and_comments(text, i + 1);
    i = skip_value(text, i);
    if (wanted_field(name)) {
      out.append(text.substr(start, i - start));
      out += '\n';
    }
    i = skip_space_and_comments(text, i);
    if (i < text.size() && (text[i] == ';' || text[i] == ',')) i = skip_space_and_comments(text, i + 1);
  }
  return out;
}

std::optional<Candidate> PluginHost::discover_file(const std::string& path) {
  {
    std::lock_guard<std::mutex> lock(g_discovery_mutex);
    for (auto& c : candidates_)
      if (c.path == path) return c;
  }
  for (auto& r : refusals_)
    if (r.path == path) return std::nullopt;
  auto refuse = [&](const std::string& reason) -> std::optional<Candidate> {
    refusals_.push_back({path, reason});
    return std::nullopt;
  };
  // One way into the process for a plugin file (plugin_library.cpp): ELF checks before dlopen, any exception.
  std::string why;
  PluginLibrary opened = open_plugin_library(path, why);
  if (!opened.lib) return refuse(why);
  std::shared_ptr<boost::dll::shared_library> lib = opened.lib;
  const ww_plugin_v1* abi = opened.abi;
  std::string_view text(abi->manifest_text, abi->manifest_size);
  std::string summary = summary_fields(text);
  warpweave::manifest::Manifest m;
  // A summary that does not parse on its own (an unusual layout of the text) costs the whole parse. A manifest
  // that does not parse at all makes a candidate without targets: loading it (every plugin is loaded for a
  // listing) refuses it with the parser's line and column.
  bool parsed = true;
  if (summary.empty() || !parse_manifest(summary, m).empty()) {
    m.Clear();
    parsed = parse_manifest(std::string(text), m).empty();
    if (!parsed) m.Clear();
  }
  Candidate c;
  c.path = path;
  c.name = parsed ? m.name() : std::string(abi->name ? abi->name : "");
  c.version = m.version();
  for (auto& t : m.targets()) {
    TargetInfo ti;
    ti.name = t.name();
    ti.compute_capability = t.compute_capability();
    ti.arch_specific = t.arch_specific();
    ti.llvm_cpu = t.llvm_cpu();
    ti.ptx_features = t.ptx_features();
    ti.jit_arch = t.jit_arch();
    ti.also_serves.assign(t.also_serves().begin(), t.also_serves().end());
    c.targets.push_back(std::move(ti));
  }
  for (auto& [public_name, module] : m.python_package().module_map()) c.module_map.emplace(public_name, module);
  c.extends.assign(m.extends().begin(), m.extends().end());
  std::lock_guard<std::mutex> lock(g_discovery_mutex);
  candidates_.push_back(c);
  libraries_.push_back(lib);  // loading it later finds it mapped already
  return c;
}

std::vector<std::string> PluginHost::candidate_paths(const std::string& name) const {
  std::lock_guard<std::mutex> lock(g_discovery_mutex);
  std::vector<std::string> out;
  for (auto& c : candidates_)
    if (c.name == name) out.push_back(c.path);
  return out;
}

std::vector<Candidate> PluginHost::discover_directories(const std::vector<std::string>& dirs) {
  std::vector<Candidate> out;
  for (auto& f : plugin_files(dirs))
    if (auto c = discover_file(f)) out.push_back(std::move(*c));
  return out;
}

}  // namespace ww::plugins
