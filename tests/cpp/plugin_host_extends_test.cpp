// Backends that build on others (manifest.proto, Manifest.extends): a base loads before the plugin that extends
// it, wherever its file sorts; a missing base, a refused one and a cycle refuse the dependent with a reason that
// names them; a host hook the dependent lacks is answered by its base.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "ww/plugin_host/plugin_host.hpp"

namespace fs = std::filesystem;
using ww::plugins::PluginError;
using ww::plugins::PluginHost;

namespace {

// A fresh directory holding copies of the named test plugins.
fs::path dir_with(const std::string& name, const std::vector<std::string>& plugins) {
  fs::path d = fs::temp_directory_path() / ("ww_extends_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  for (auto& p : plugins) fs::copy_file(std::string(WW_TEST_PLUGIN_DIR) + "/" + p + ".so", d / (p + ".so"));
  return d;
}

std::string refusal_of(const fs::path& path) {
  for (auto& r : PluginHost::instance().refusals())
    if (r.path == path.string()) return r.reason;
  return {};
}

size_t index_of(const std::string& name) {
  auto& ps = PluginHost::instance().plugins();
  for (size_t i = 0; i < ps.size(); ++i)
    if (ps[i].name == name) return i;
  return ps.size();
}

// Why a plugin loaded from a directory of its own is refused ("" when it loads).
std::string refused_alone(const std::string& plugin) {
  fs::path d = dir_with(plugin, {plugin});
  EXPECT_EQ(PluginHost::instance().load_directories({d.string()}), 0);
  std::string why = refusal_of(d / (plugin + ".so"));
  fs::remove_all(d);
  return why;
}

std::string answer(const std::string& plugin, const std::string& hook) {
  auto out = PluginHost::instance().host_call(plugin, hook, {}, 16);
  return std::string(out.begin(), out.end()).c_str();
}

}  // namespace

// The dependent's file sorts first; its base is loaded before it all the same, and the discovery summary carries
// the bases (the frontend mounts their Python packages first).
TEST(PluginHostExtends, BaseLoadsFirstAndAnswersTheHooksTheDependentLacks) {
  fs::path d = dir_with("order", {"ext_dependent", "ext_zbase"});
  auto found = PluginHost::instance().discover_directories({d.string()});
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].name, "ext_dependent");
  EXPECT_EQ(found[0].extends, std::vector<std::string>{"ext_zbase"});
  EXPECT_TRUE(found[1].extends.empty());
  EXPECT_EQ(PluginHost::instance().load_directories({d.string()}), 2);
  ASSERT_LT(index_of("ext_dependent"), PluginHost::instance().plugins().size());
  EXPECT_LT(index_of("ext_zbase"), index_of("ext_dependent"));
  EXPECT_EQ(PluginHost::instance().find("ext_dependent")->extends, std::vector<std::string>{"ext_zbase"});

  EXPECT_EQ(answer("ext_dependent", "dependent_hook"), "ext_dependent");
  EXPECT_EQ(answer("ext_dependent", "base_hook"), "ext_zbase");  // not the dependent's: its base's
  EXPECT_EQ(answer("ext_zbase", "base_hook"), "ext_zbase");
  try {
    answer("ext_zbase", "dependent_hook");  // a base does not reach up into what extends it
    FAIL() << "the base answered its dependent's hook";
  } catch (const PluginError& e) {
    EXPECT_NE(std::string(e.what()).find("has no host hook \"dependent_hook\""), std::string::npos) << e.what();
  }
  try {
    answer("ext_dependent", "nope");
    FAIL() << "an unknown hook was answered";
  } catch (const PluginError& e) {
    EXPECT_NE(std::string(e.what()).find("nor has its base \"ext_zbase\""), std::string::npos) << e.what();
  }
  fs::remove_all(d);
}

TEST(PluginHostExtends, MissingBaseIsRefusedByName) {
  std::string why = refused_alone("ext_orphan");
  EXPECT_NE(why.find("it extends \"ext_missing\", which no discovered plugin provides"), std::string::npos) << why;
  EXPECT_EQ(PluginHost::instance().find("ext_orphan"), nullptr);
}

TEST(PluginHostExtends, CycleIsRefusedWithItsChain) {
  fs::path d = dir_with("cycle", {"ext_cycle_a", "ext_cycle_b"});
  EXPECT_EQ(PluginHost::instance().load_directories({d.string()}), 0);
  std::string a = refusal_of(d / "ext_cycle_a.so"), b = refusal_of(d / "ext_cycle_b.so");
  EXPECT_NE(b.find("its bases form a cycle: \"ext_cycle_a\" extends \"ext_cycle_b\" extends \"ext_cycle_a\""),
            std::string::npos) << b;
  EXPECT_NE(a.find("it extends \"ext_cycle_b\", which was refused: its bases form a cycle"), std::string::npos) << a;
  fs::remove_all(d);
}

TEST(PluginHostExtends, ExtendingItselfIsAnInvalidManifest) {
  std::string why = refused_alone("ext_self");
  EXPECT_NE(why.find("it extends itself"), std::string::npos) << why;
}
