// The plugin host against hostile files and manifests (issue 15): a truncated or damaged library is refused
// before dlopen (which would die of SIGBUS), an entry point that throws anything is refused, manifest numbers are
// bounded before anything is sized by them, and a target is not silently redefined. Each refusal names the file.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "ww/plugin_host/plugin_host.hpp"

namespace fs = std::filesystem;
using ww::plugins::PluginHost;

namespace {

std::string plugin(const std::string& name) { return std::string(WW_TEST_PLUGIN_DIR) + "/" + name + ".so"; }

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void write_bytes(const fs::path& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary);
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
}

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("ww_hostile_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// The refusal recorded for `path`, or "" if none.
std::string refusal_of(const std::string& path) {
  for (auto& r : PluginHost::instance().refusals())
    if (r.path == path) return r.reason;
  return {};
}

bool loaded(const std::string& name) { return PluginHost::instance().find(name) != nullptr; }

}  // namespace

// Item 1: every cut of a real plugin library is refused with a reason, never loaded (nor crashing the process);
// the intact library next to them still loads.
TEST(PluginHostHostile, TruncatedLibrariesAreRefusedBeforeDlopen) {
  const std::string full = read_bytes(plugin("hostile_good"));
  ASSERT_GT(full.size(), 8192u);
  fs::path dir = fresh_dir("truncated");
  std::vector<size_t> cuts = {0, 1, 4, 16, 63, 64, 100, 4096, full.size() / 3, full.size() / 2, full.size() - 1};
  std::mt19937 rng(15);
  for (int i = 0; i < 20; ++i) cuts.push_back(std::uniform_int_distribution<size_t>(0, full.size() - 1)(rng));
  std::vector<std::string> paths;
  for (size_t i = 0; i < cuts.size(); ++i) {
    fs::path p = dir / ("ww_cut_" + std::to_string(i) + ".so");  // sorted before the intact one
    write_bytes(p, full.substr(0, cuts[i]));
    paths.push_back(p.string());
  }
  fs::copy_file(plugin("hostile_good"), dir / "zz_intact.so");
  int n = PluginHost::instance().load_directories({dir.string()});
  EXPECT_EQ(n, 1);
  EXPECT_TRUE(loaded("hostile_good"));
  for (size_t i = 0; i < paths.size(); ++i) {
    std::string why = refusal_of(paths[i]);
    EXPECT_FALSE(why.empty()) << "a cut at " << cuts[i] << " bytes was not refused";
    if (cuts[i] >= 4096) EXPECT_NE(why.find("truncated"), std::string::npos) << cuts[i] << ": " << why;
  }
  fs::remove_all(dir);
}

// Item 1: program headers that point outside the file, or too many of them, or not an ELF shared object at all.
TEST(PluginHostHostile, DamagedHeadersAreRefused) {
  const std::string full = read_bytes(plugin("hostile_good"));
  fs::path dir = fresh_dir("damaged");
  auto variant = [&](const std::string& name, auto&& edit) {
    std::string bytes = full;
    edit(bytes);
    fs::path p = dir / (name + ".so");
    write_bytes(p, bytes);
    EXPECT_FALSE(PluginHost::instance().load_file(p.string()));
    return refusal_of(p.string());
  };
  // e_phoff far past the end (offset 32, 8 bytes, little-endian)
  EXPECT_NE(variant("phoff", [](std::string& b) { std::memset(&b[32], 0x7f, 8); }).find("truncated"), std::string::npos);
  // e_phnum (offset 56) = 0xffff
  EXPECT_NE(variant("phnum", [](std::string& b) { b[56] = b[57] = '\xff'; }).find("program headers"), std::string::npos);
  // the first program header's p_offset (at e_phoff + 8) huge: e_phoff is 64 in the libraries the toolchain makes
  EXPECT_NE(variant("segment", [](std::string& b) { std::memset(&b[64 + 8], 0x7f, 8); }).find("truncated"),
            std::string::npos);
  // a 32-bit class, an executable type, no ELF magic
  EXPECT_NE(variant("class", [](std::string& b) { b[4] = 1; }).find("64-bit"), std::string::npos);
  EXPECT_NE(variant("type", [](std::string& b) { b[16] = 2; }).find("not a shared library"), std::string::npos);
  EXPECT_NE(variant("magic", [](std::string& b) { b[1] = 'X'; }).find("no ELF header"), std::string::npos);
  // text named .so
  write_bytes(dir / "text.so", "this is not a library\n");
  EXPECT_FALSE(PluginHost::instance().load_file((dir / "text.so").string()));
  EXPECT_NE(refusal_of((dir / "text.so").string()).find("ELF"), std::string::npos);
  fs::remove_all(dir);
}

// Item 1: a FIFO in a plugin's place is refused at once (opening it must not wait for a writer).
TEST(PluginHostHostile, FifoIsRefusedWithoutWaiting) {
  fs::path dir = fresh_dir("fifo");
  fs::path p = dir / "ww_fifo.so";
  ASSERT_EQ(::mkfifo(p.c_str(), 0644), 0);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(PluginHost::instance().load_file(p.string()));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_NE(refusal_of(p.string()).find("not a regular file"), std::string::npos);
  fs::remove_all(dir);
}

// Item 2: an entry point that throws something that is no std::exception is refused and recorded; loading goes on.
TEST(PluginHostHostile, EntryPointThrowingAnythingIsRefused) {
  EXPECT_FALSE(PluginHost::instance().load_file(plugin("hostile_throws")));
  std::string why = refusal_of(plugin("hostile_throws"));
  EXPECT_NE(why.find("entry point threw"), std::string::npos) << why;
  EXPECT_FALSE(loaded("hostile_throws"));
}

// Item 10: a second plugin defining a loaded target with other code-generation settings is refused, naming both.
TEST(PluginHostHostile, RedefinedTargetIsRefused) {
  if (!loaded("hostile_good")) ASSERT_TRUE(PluginHost::instance().load_file(plugin("hostile_good")));
  EXPECT_FALSE(PluginHost::instance().load_file(plugin("hostile_conflict")));
  std::string why = refusal_of(plugin("hostile_conflict"));
  EXPECT_NE(why.find("target sm_80"), std::string::npos) << why;
  EXPECT_NE(why.find("\"hostile_good\""), std::string::npos) << why;
  EXPECT_NE(why.find("sm_86"), std::string::npos) << why;
}

// --- item 3: manifest numbers --------------------------------------------------------------------------------

namespace {

const char* kHead =
    "name: \"t\" version: \"1\" abi_version: 1\n"
    "targets { name: \"sm_80\" compute_capability: 80 llvm_cpu: \"sm_80\" }\n";

// An MMA atom (the shape of ampere's m16n8k16 f16 one) with the given pieces substituted.
std::string mma(const std::string& shape = "(16,8,16)", const std::string& tmpl =
                    "mma {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};",
                const std::string& b_regs = "values: 4 registers: 2") {
  return std::string(kHead) +
         "atoms { id: \"t.mma\" kind: MMA targets: \"sm_80\" python_name: \"warp.T\" shape_mnk: \"" + shape +
         "\" thr_id: \"32:1\"\n"
         "  operands { name: \"d\" role: REGISTERS direction: OUT values: 4 registers: 4 layout_tv: "
         "\"((4,8),(2,2)):((32,1),(16,8))\" }\n"
         "  operands { name: \"a\" role: REGISTERS direction: IN values: 8 registers: 4 layout_tv: "
         "\"((4,8),(2,2,2)):((32,1),(16,8,128))\" }\n"
         "  operands { name: \"b\" role: REGISTERS direction: IN " + b_regs +
         " layout_tv: \"((4,8),(2,2)):((16,1),(8,64))\" }\n"
         "  operands { name: \"c\" role: REGISTERS direction: IN values: 4 registers: 4 layout_tv: "
         "\"((4,8),(2,2)):((32,1),(16,8))\" }\n"
         "  ptx_template: \"" + tmpl + "\" constraints: \"=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f\" }\n";
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (auto& x : v) s += x + "\n";
  return s;
}

// The problems of `text`, checking that finding them took under `seconds`.
std::string problems_of(const std::string& text, double seconds = 1.0) {
  auto t0 = std::chrono::steady_clock::now();
  std::string s = joined(PluginHost::validate_manifest_text(text));
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took, seconds) << text;
  return s;
}

}  // namespace

TEST(ManifestBounds, TheReferenceAtomIsValid) { EXPECT_EQ(problems_of(mma()), ""); }

TEST(ManifestBounds, HugeShapeIsRefusedAtOnce) {
  for (const char* shape : {"(16,8,400000000)", "(4096,4096,4096)", "(16,8,0)", "(-16,8,16)",
                            "(9223372036854775807,2,2)", "(3037000500,3037000500,1)"}) {
    std::string p = problems_of(mma(shape), 0.5);
    EXPECT_NE(p.find("shape_mnk"), std::string::npos) << shape << ": " << p;
  }
}

TEST(ManifestBounds, OperandIndexCannotWrap) {
  // $4294967309 is 13 modulo 2^32: it must not pass as the 14th operand.
  std::string t = "mma {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $4294967309};";
  std::string p = problems_of(mma("(16,8,16)", t));
  EXPECT_NE(p.find("$4294967309"), std::string::npos) << p;
  std::string p2 = problems_of(mma("(16,8,16)", "mma $99999999999999999999999999999999;"));
  EXPECT_NE(p2.find("beyond the largest index"), std::string::npos) << p2;
}

TEST(ManifestBounds, OperandCountsAreBounded) {
  std::string p = problems_of(mma("(16,8,16)", "x", "values: 4 registers: 4294967295"));
  EXPECT_NE(p.find("registers 4294967295 is above"), std::string::npos) << p;
  std::string q = problems_of(mma("(16,8,16)", "x", "values: 4294967295 registers: 2"));
  EXPECT_NE(q.find("values 4294967295 is above"), std::string::npos) << q;
  std::string r = problems_of(std::string(kHead) +
                              "targets { name: \"sm_x\" compute_capability: 4294967295 also_serves: 0 }\n");
  EXPECT_NE(r.find("compute_capability 4294967295 is above"), std::string::npos) << r;
  EXPECT_NE(r.find("also_serves 0"), std::string::npos) << r;
}

TEST(ManifestBounds, HugeThreadLayoutIsRefused) {
  std::string text = mma();
  text.replace(text.find("thr_id: \"32:1\""), 14, "thr_id: \"4294967296:1\"");
  std::string p = problems_of(text);
  EXPECT_NE(p.find("thr_id"), std::string::npos) << p;
}
