// Reading a hook's attributes (ww_attr lists): one reader for every backend.
//
// Callers pass integers either as integers or as their decimal/hex spelling (Python builds some attributes from
// text), so every integer accessor accepts both; a malformed value or a missing required one throws HookError
// with a sentence naming the attribute, which the hook wrappers report to the core.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <set>
#include <string>

#include "warpweave/plugin.hpp"

namespace warpweave::plugin {

class Attrs {
 public:
  Attrs(const ww_attr* attrs, size_t n) : a_(attrs), n_(n) {}

  const ww_attr* find(const char* name) const {
    for (size_t i = 0; i < n_; ++i)
      if (a_[i].name && std::strcmp(a_[i].name, name) == 0) return &a_[i];
    return nullptr;
  }
  bool has(const char* name) const { return find(name) != nullptr; }

  int64_t integer(const char* name, int64_t fallback) const {
    const ww_attr* a = find(name);
    if (!a) return fallback;
    if (!a->str_value) return a->int_value;
    int64_t v = 0;
    if (!parse_integer(a->str_value, v))
      throw HookError(std::string("attribute ") + name + " must be an integer, got \"" + a->str_value + "\"");
    return v;
  }
  int64_t required(const char* name) const {
    if (!has(name)) throw HookError(std::string("needs the attribute ") + name);
    return integer(name, 0);
  }
  int64_t integer(const std::string& name, int64_t fallback) const { return integer(name.c_str(), fallback); }
  int64_t required(const std::string& name) const { return required(name.c_str()); }

  // A string; an integer attribute reads as its decimal text.
  std::string text(const char* name, const std::string& fallback) const {
    const ww_attr* a = find(name);
    if (!a) return fallback;
    return a->str_value ? a->str_value : std::to_string(a->int_value);
  }

  // An integer, or one of `names` (case-insensitive) standing for its index, e.g. swizzle "128B" -> 3.
  int64_t enumeration(const char* name, std::initializer_list<const char*> names, int64_t fallback) const {
    const ww_attr* a = find(name);
    if (!a) return fallback;
    if (!a->str_value) return a->int_value;
    int64_t v = 0;
    if (parse_integer(a->str_value, v)) return v;
    int64_t i = 0;
    std::string known;
    for (const char* s : names) {
      if (equal_ignoring_case(s, a->str_value)) return i;
      known += std::string(known.empty() ? "" : ", ") + s;
      ++i;
    }
    throw HookError(std::string("attribute ") + name + "=\"" + a->str_value + "\" is not one of " + known +
                    " (or an integer)");
  }

  // Refuses an attribute the hook does not know (a misspelt one would otherwise be ignored).
  void check_known(const std::set<std::string>& known, const char* what) const {
    for (size_t i = 0; i < n_; ++i) {
      std::string name = a_[i].name ? a_[i].name : "";
      if (!known.count(name)) throw HookError(std::string(what) + " has no attribute \"" + name + "\"");
    }
  }

  static bool parse_integer(const char* s, int64_t& v) {
    if (!s || !*s) return false;
    char* end = nullptr;
    long long x = std::strtoll(s, &end, 0);
    if (*end != '\0') return false;
    v = x;
    return true;
  }

 private:
  static bool equal_ignoring_case(const char* a, const char* b) {
    for (; *a && *b; ++a, ++b)
      if ((*a | 0x20) != (*b | 0x20)) return false;
    return *a == *b;
  }

  const ww_attr* a_;
  size_t n_;
};

}  // namespace warpweave::plugin
