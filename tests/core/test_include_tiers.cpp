// The core's tiers hold: every file of core/ lives in a tier's folder, and includes only its own
// tier and the tiers below. The order is core/CMakeLists.txt's (the attnscope_core_tier calls, in
// order), so the rule and the build cannot drift apart; each tier's library links only the one
// below it, so the linker refuses an upward call as this test refuses an upward #include.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

const fs::path kCore = fs::path(ATTNSCOPE_SOURCE_DIR) / "core";

std::string readAll(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Tier {
  std::string name;
  std::set<std::string> sources;  // as listed in its SOURCES
};

// The attnscope_core_tier(NAME SOURCES a.cpp b.cpp ...) calls of core/CMakeLists.txt, in order.
std::vector<Tier> declaredTiers() {
  const std::string cmake = readAll(kCore / "CMakeLists.txt");
  std::vector<Tier> tiers;
  const std::regex call(R"(\n\s*attnscope_core_tier\((\w+)\s+SOURCES([^)]*)\))");
  for (auto it = std::sregex_iterator(cmake.begin(), cmake.end(), call); it != std::sregex_iterator(); ++it) {
    Tier t{(*it)[1], {}};
    std::istringstream words((*it)[2].str());
    for (std::string w; words >> w;) t.sources.insert(w);
    tiers.push_back(t);
  }
  return tiers;
}

// Folders of core/ that are libraries of their own beside the tiers, above all of them.
const std::set<std::string> kBesideTheTiers = {"cupti"};

TEST(IncludeTiers, TheOrderIsDeclared) {
  const auto tiers = declaredTiers();
  ASSERT_GE(tiers.size(), 10u) << "core/CMakeLists.txt declares no tiers this test can read";
  std::vector<std::string> names;
  for (const Tier& t : tiers) names.push_back(t.name);
  const std::vector<std::string> expected = {"base", "spec", "files", "inputs", "trace", "backend", "torch_dispatch",
                                             "check", "result", "store", "export", "engine", "record", "cluster"};
  EXPECT_EQ(names, expected) << "the tiers changed: update docs/ARCHITECTURE.md's Layers and this list together";
}

TEST(IncludeTiers, EveryFileIsInATierAndEverySourceIsBuilt) {
  const auto tiers = declaredTiers();
  std::map<std::string, const Tier*> by_name;
  for (const Tier& t : tiers) by_name[t.name] = &t;
  for (const auto& e : fs::directory_iterator(kCore)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory()) {
      EXPECT_TRUE(by_name.count(name) || kBesideTheTiers.count(name)) << "core/" << name << " is not a declared tier";
      continue;
    }
    EXPECT_EQ(name, "CMakeLists.txt") << "core/" << name << " is outside every tier's folder";
  }
  for (const Tier& t : tiers) {
    std::set<std::string> on_disk;
    for (const auto& e : fs::directory_iterator(kCore / t.name))
      if (e.path().extension() == ".cpp") on_disk.insert(e.path().filename().string());
    EXPECT_EQ(on_disk, t.sources) << "core/" << t.name << ": the .cpp files and the tier's SOURCES differ";
  }
}

TEST(IncludeTiers, NoIncludeGoesUpATier) {
  const auto tiers = declaredTiers();
  std::map<std::string, size_t> rank;
  for (size_t i = 0; i < tiers.size(); ++i) rank[tiers[i].name] = i;
  const std::regex include(R"(#include\s+"core/([^/"]+)/([^"]+)\")");
  size_t includes_seen = 0;
  for (const auto& e : fs::recursive_directory_iterator(kCore)) {
    if (!e.is_regular_file()) continue;
    const std::string ext = e.path().extension().string();
    if (ext != ".h" && ext != ".cpp" && ext != ".cu") continue;
    const fs::path rel = fs::relative(e.path(), kCore);
    const std::string own = rel.begin()->string();
    const std::string text = readAll(e.path());
    for (auto it = std::sregex_iterator(text.begin(), text.end(), include); it != std::sregex_iterator(); ++it) {
      ++includes_seen;
      const std::string to = (*it)[1];
      const std::string what = "core/" + rel.string() + " includes core/" + to + "/" + (*it)[2].str();
      EXPECT_TRUE(fs::exists(kCore / to / (*it)[2].str())) << what << ", which does not exist";
      if (kBesideTheTiers.count(own)) {
        EXPECT_TRUE(rank.count(to) || to == own) << what;
        continue;
      }
      ASSERT_TRUE(rank.count(own)) << "core/" << own << " is not a tier";
      if (kBesideTheTiers.count(to)) {
        ADD_FAILURE() << what << ": a tier never includes core/" << to;
        continue;
      }
      ASSERT_TRUE(rank.count(to)) << what << ": core/" << to << " is not a tier";
      EXPECT_LE(rank[to], rank[own]) << what << ": tier " << to << " is above tier " << own;
    }
  }
  EXPECT_GT(includes_seen, 100u) << "the include pattern matched almost nothing: is the test still reading the code?";
}

// The front ends reach the backends through the session and its settings only
// (kernels/builtin_session.h, kernels/builtin_backends.h): no app/ or ui/ file includes a backend
// folder's header, and their CMake names no backend library.
TEST(IncludeTiers, FrontEndsNameNoBackend) {
  const fs::path root = ATTNSCOPE_SOURCE_DIR;
  const std::set<std::string> allowed = {"kernels/builtin_session.h", "kernels/builtin_backends.h"};
  const std::regex include(R"(#include\s+"(kernels/[^"]+)\")");
  for (const char* front : {"app", "ui"})
    for (const auto& e : fs::recursive_directory_iterator(root / front)) {
      if (!e.is_regular_file()) continue;
      const std::string name = e.path().filename().string(), ext = e.path().extension().string();
      const std::string text = readAll(e.path());
      const std::string where = fs::relative(e.path(), root).string();
      if (name == "CMakeLists.txt") {
        EXPECT_EQ(text.find("attnscope_kernels_"), std::string::npos) << where << " links a backend library by name";
        continue;
      }
      if (ext != ".h" && ext != ".cpp") continue;
      for (auto it = std::sregex_iterator(text.begin(), text.end(), include); it != std::sregex_iterator(); ++it)
        EXPECT_TRUE(allowed.count((*it)[1])) << where << " includes " << (*it)[1] << ": front ends name no backend";
    }
}

}  // namespace
