// `treefarm run` with applications from several masters (papers/bertin2008 §2.2): one tree
// of real processes per origin on loopback, a worker as an origin.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "tests/integration/ProcessTestUtil.hpp"

using namespace treefarm::testing;

namespace {

// m forwards only; w1 and w2 compute. "a" comes from the worker w1, "b" from m. "a"'s
// tasks take ~1 ms each (matmul n = 256), so that w1 cannot finish them all on its own
// before w2's requests come up through m (with n = 32 it sometimes did under CI's load).
constexpr const char* two_origins = R"(
[[node]]
name = "om"
cores = 0
[[node]]
name = "ow1"
parent = "om"
cores = 1
[[node]]
name = "ow2"
parent = "om"
cores = 1
[[app]]
name = "a"
kernel = "matmul"
n = 256
tasks = 150
origin = "ow1"
[[app]]
name = "b"
kernel = "noop"
bytes = 1000
tasks = 300
[run]
buffer = 4
)";

nlohmann::json read_json(const std::filesystem::path& file) {
  std::ifstream f(file);
  return nlohmann::json::parse(f);
}

}  // namespace

TEST(OriginsRunTest, AWorkerAsOriginEveryTaskOnceFromItsOwnMaster) {
  TempDir dir;
  const auto exp = write_file(dir.path() / "origins.toml", two_origins);
  const auto out = dir.path() / "out";
  const auto r = run_command(treefarm_bin + " run " + exp + " --out " + out.string() + " --quiet --timeout 120");
  ASSERT_EQ(r.exit_code, 0) << r.output;

  // The union: every task of both applications exactly once, right results.
  const auto j = read_json(out / "results.json");
  std::map<std::string, std::uint64_t> tasks_of{{"a", 150}, {"b", 300}};
  for (const auto& a : j.at("apps")) {
    const auto name = a.at("name").get<std::string>();
    EXPECT_EQ(a.at("completed").get<std::uint64_t>(), tasks_of.at(name)) << name;
    EXPECT_EQ(a.at("wrong").get<std::uint64_t>(), 0u) << name;
  }
  std::set<std::pair<std::string, std::uint64_t>> seen;
  for (const auto& t : j.at("tasks")) {
    const auto key = std::make_pair(t.at("app").get<std::string>(), t.at("id").get<std::uint64_t>());
    EXPECT_TRUE(seen.insert(key).second) << "task recorded twice: " << key.first << " " << key.second;
    EXPECT_NE(t.at("node").get<std::string>(), "om");  // cores = 0
  }
  EXPECT_EQ(seen.size(), 450u);
  EXPECT_EQ(j.at("duplicates").get<std::uint64_t>(), 0u);

  // "a" was run by its own master at ow1, whose tree hangs from ow1: om below ow1, ow2 below om.
  const auto a = read_json(out / "origin-ow1" / "results.json");
  ASSERT_EQ(a.at("apps").size(), 1u);
  EXPECT_EQ(a.at("apps")[0].at("name"), "a");
  std::map<std::string, std::string> parent_of;
  for (const auto& n : a.at("nodes")) parent_of[n.at("name")] = n.at("parent").is_null() ? "" : n.at("parent").get<std::string>();
  EXPECT_EQ(parent_of["ow1"], "");
  EXPECT_EQ(parent_of["om"], "ow1");
  EXPECT_EQ(parent_of["ow2"], "om");
  const auto b = read_json(out / "origin-om" / "results.json");
  ASSERT_EQ(b.at("apps").size(), 1u);
  EXPECT_EQ(b.at("apps")[0].at("name"), "b");
  // Both workers computed tasks of the application from ow1 (ow2's came up through om).
  std::set<std::string> nodes_of_a;
  for (const auto& t : a.at("tasks")) nodes_of_a.insert(t.at("node").get<std::string>());
  EXPECT_TRUE(nodes_of_a.contains("ow2")) << "no task of 'a' crossed om to ow2";
}

TEST(OriginsRunTest, CalibratingPoliciesWithOriginsAreRefusedNamingTheOrigin) {
  TempDir dir;
  const auto exp = write_file(dir.path() / "origins.toml", two_origins);
  const auto r = run_command(treefarm_bin + " run " + exp + " --policy lp --timeout 60");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("field 'app[0].origin'"), std::string::npos) << r.output;
}
