#pragma once
// Private: parsing and validating manifests (the only place protobuf types are used).
#include <string>
#include <vector>

#include "manifest.pb.h"

namespace ww::plugins {

std::vector<std::string> parse_manifest(const std::string& text, warpweave::manifest::Manifest& m);
std::vector<std::string> validate_manifest(const warpweave::manifest::Manifest& m);
// manifest_json.cpp: the protobuf JSON mapping (field names as in the proto, every scalar printed).
std::string manifest_json(const warpweave::manifest::Manifest& m);

}  // namespace ww::plugins
