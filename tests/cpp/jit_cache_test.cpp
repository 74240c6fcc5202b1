// The JIT cache against hostile files (issue 15, item 9): an entry answers only for its own key, and only a
// regular file of bounded size is read (a FIFO or a link to /dev/zero in an entry's place must not hang).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "ww/jit_cache/jit_cache.hpp"

namespace fs = std::filesystem;
namespace jc = ww::jit_cache;

namespace {

struct TempCache {
  fs::path dir;
  jc::Cache cache;
  explicit TempCache(const std::string& name)
      : dir(fs::temp_directory_path() / ("ww_cache_" + name + "_" + std::to_string(::getpid()))), cache(dir.string()) {
    fs::remove_all(dir);
  }
  ~TempCache() { fs::remove_all(dir); }
};

jc::Entry entry(const std::string& payload, const std::string& meta) {
  jc::Entry e;
  e.payload.assign(payload.begin(), payload.end());
  e.meta = meta;
  return e;
}

std::string text(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }

// Runs load(key) and checks that it returned within a second.
std::optional<jc::Entry> timed_load(const jc::Cache& c, const std::string& key, std::string* problem) {
  auto t0 = std::chrono::steady_clock::now();
  auto r = c.load(key, problem);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  return r;
}

}  // namespace

TEST(JitCacheHostile, RoundTrip) {
  TempCache t("roundtrip");
  std::string key = jc::key_of({"kernel-a"});
  ASSERT_TRUE(t.cache.store(key, entry("cubin-a", "meta-a")));
  std::string problem;
  auto e = t.cache.load(key, &problem);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(text(e->payload), "cubin-a");
  EXPECT_EQ(e->meta, "meta-a");
  EXPECT_EQ(problem, "");
}

// The factor-2.0 kernel's entry copied over the factor-3.0 kernel's file is a miss with a warning, not a hit.
TEST(JitCacheHostile, ForeignEntryIsAMissWithAWarning) {
  TempCache t("foreign");
  std::string a = jc::key_of({"factor 2.0"}), b = jc::key_of({"factor 3.0"});
  ASSERT_TRUE(t.cache.store(a, entry("cubin for 2.0", "k")));
  ASSERT_TRUE(t.cache.store(b, entry("cubin for 3.0", "k")));
  fs::copy_file(t.cache.path_of(a), t.cache.path_of(b), fs::copy_options::overwrite_existing);
  std::string problem;
  EXPECT_FALSE(t.cache.load(b, &problem).has_value());
  EXPECT_NE(problem.find("another key (" + a + ")"), std::string::npos) << problem;
  EXPECT_NE(problem.find(t.cache.path_of(b)), std::string::npos) << problem;
  // storing the right entry again replaces the foreign one
  ASSERT_TRUE(t.cache.store(b, entry("cubin for 3.0", "k")));
  auto e = t.cache.load(b);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(text(e->payload), "cubin for 3.0");
}

TEST(JitCacheHostile, DamagedEntryIsAMissAndRemoved) {
  TempCache t("damaged");
  std::string key = jc::key_of({"k"});
  ASSERT_TRUE(t.cache.store(key, entry("payload bytes", "m")));
  {
    std::fstream f(t.cache.path_of(key), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-3, std::ios::end);
    f.put('X');
  }
  EXPECT_FALSE(t.cache.load(key).has_value());
  EXPECT_FALSE(fs::exists(t.cache.path_of(key)));
  // every truncation of a valid entry is a miss
  ASSERT_TRUE(t.cache.store(key, entry("payload bytes", "meta")));
  std::string full;
  {
    std::ifstream f(t.cache.path_of(key), std::ios::binary);
    full.assign(std::istreambuf_iterator<char>(f), {});
  }
  for (size_t n = 0; n < full.size(); ++n) {
    {
      std::ofstream f(t.cache.path_of(key), std::ios::binary | std::ios::trunc);
      f.write(full.data(), static_cast<std::streamsize>(n));
    }
    EXPECT_FALSE(t.cache.load(key).has_value()) << n;
  }
}

TEST(JitCacheHostile, FifoInAnEntrysPlaceDoesNotHang) {
  TempCache t("fifo");
  std::string key = jc::key_of({"fifo"});
  fs::create_directories(fs::path(t.cache.path_of(key)).parent_path());
  ASSERT_EQ(::mkfifo(t.cache.path_of(key).c_str(), 0644), 0);
  std::string problem;
  EXPECT_FALSE(timed_load(t.cache, key, &problem).has_value());
  EXPECT_NE(problem.find("not a regular file"), std::string::npos) << problem;
  // and a store replaces it with a real entry
  ASSERT_TRUE(t.cache.store(key, entry("x", "")));
  EXPECT_TRUE(t.cache.load(key).has_value());
}

TEST(JitCacheHostile, LinkToDevZeroDoesNotHang) {
  TempCache t("devzero");
  std::string key = jc::key_of({"zero"});
  fs::create_directories(fs::path(t.cache.path_of(key)).parent_path());
  fs::create_symlink("/dev/zero", t.cache.path_of(key));
  std::string problem;
  EXPECT_FALSE(timed_load(t.cache, key, &problem).has_value());
  EXPECT_NE(problem.find("symbolic link"), std::string::npos) << problem;
}

TEST(JitCacheHostile, LinkToAnotherEntryIsNotFollowed) {
  TempCache t("link");
  std::string a = jc::key_of({"a"}), b = jc::key_of({"b"});
  ASSERT_TRUE(t.cache.store(a, entry("A", "")));
  fs::create_directories(fs::path(t.cache.path_of(b)).parent_path());
  fs::create_symlink(t.cache.path_of(a), t.cache.path_of(b));
  std::string problem;
  EXPECT_FALSE(t.cache.load(b, &problem).has_value());
  EXPECT_FALSE(problem.empty());
}

TEST(JitCacheHostile, MissingEntryIsASilentMiss) {
  TempCache t("missing");
  std::string problem;
  EXPECT_FALSE(t.cache.load(jc::key_of({"nothing"}), &problem).has_value());
  EXPECT_EQ(problem, "");
}
