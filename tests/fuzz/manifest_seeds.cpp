// The manifest fuzzer's seeds from every backend's manifest (each backends/<dir>/*.textproto, so that a new backend
// is fuzzed with no change here): each atom family, and the plain atoms and primitives a few at a time, as a
// manifest of its own under the backend's header (name, targets, element types, Python package). A whole backend
// manifest is ten times the fuzzer's -max_len, and libFuzzer cuts a longer seed into text that no longer parses.
//
//   ww_manifest_seeds <output dir> <backends dir> <max_len>
#include <google/protobuf/text_format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "manifest.pb.h"

namespace fs = std::filesystem;
using warpweave::manifest::Manifest;

namespace {

std::string text_of(const Manifest& m) {
  std::string out;
  google::protobuf::TextFormat::PrintToString(m, &out);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: ww_manifest_seeds <output dir> <backends dir> <max_len>\n";
    return 2;
  }
  const fs::path out_dir = argv[1], backends = argv[2];
  const size_t max_len = std::strtoul(argv[3], nullptr, 10);
  fs::create_directories(out_dir);
  std::vector<fs::path> manifests;
  for (auto& dir : fs::directory_iterator(backends))
    if (dir.is_directory())
      for (auto& f : fs::directory_iterator(dir.path()))
        if (f.is_regular_file() && f.path().extension() == ".textproto") manifests.push_back(f.path());
  if (manifests.empty()) {
    std::cerr << "no backend manifest (*/*.textproto) under " << backends << "\n";
    return 1;
  }
  size_t seeds = 0, too_long = 0;
  auto write = [&](const std::string& name, const Manifest& m) {
    std::string text = text_of(m);
    too_long += text.size() > max_len;
    std::ofstream(out_dir / (name + "_" + std::to_string(seeds++) + ".textproto"), std::ios::binary) << text;
  };
  for (auto& path : manifests) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buf;
    buf << in.rdbuf();
    Manifest whole;
    if (!google::protobuf::TextFormat::ParseFromString(buf.str(), &whole)) {
      std::cerr << path << " does not parse as a manifest\n";
      return 1;
    }
    Manifest head = whole;
    head.clear_atoms();
    head.clear_primitives();
    head.clear_families();
    const std::string name = whole.name().empty() ? path.stem().string() : whole.name();
    for (auto& f : whole.families()) {
      Manifest m = head;
      *m.add_families() = f;
      write(name, m);
    }
    // Plain entries: as many as fit in max_len together, in manifest order.
    Manifest group = head;
    auto flush = [&] {
      if (group.atoms_size() + group.primitives_size()) write(name, group);
      group = head;
    };
    for (auto& a : whole.atoms()) {
      *group.add_atoms() = a;
      if (text_of(group).size() > max_len && group.atoms_size() + group.primitives_size() > 1) {
        group.mutable_atoms()->RemoveLast();
        flush();
        *group.add_atoms() = a;
      }
    }
    for (auto& p : whole.primitives()) {
      *group.add_primitives() = p;
      if (text_of(group).size() > max_len && group.atoms_size() + group.primitives_size() > 1) {
        group.mutable_primitives()->RemoveLast();
        flush();
        *group.add_primitives() = p;
      }
    }
    flush();
  }
  std::cout << seeds << " seeds from " << manifests.size() << " backend manifests";
  if (too_long) std::cout << " (" << too_long << " longer than " << max_len << " bytes: libFuzzer cuts them)";
  std::cout << "\n";
  return 0;
}
